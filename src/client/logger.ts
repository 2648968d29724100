// The logging surface the client needs: pino-compatible (`logger.warn({ key }, 'lock lost')`), silent by default.
export interface ClientLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

const noop = (): void => {};

export const silentLogger: ClientLogger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });
