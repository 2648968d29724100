// The structured logger the driver, transport and server write to (pino satisfies it).
export interface NodeLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export const silentNodeLogger: NodeLogger = { info() {}, warn() {}, error() {}, debug() {} };
