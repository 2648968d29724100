// The node's pino logger: JSON lines for collectors, or pino-pretty for people (log.format; `auto` picks
// pretty on a terminal). Both write synchronously, so a fatal line is out before process.exit().
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import { LOG_FORMATS, type LogSettings } from '../../config/types.js';

/** log.format, unless LEASEHOLD_LOG_FORMAT (auto | json | pretty) overrides it, as `leasehold dev` does. */
export function effectiveFormat(format: LogSettings['format'], env: NodeJS.ProcessEnv = process.env): LogSettings['format'] {
  const v = env['LEASEHOLD_LOG_FORMAT'];
  return (LOG_FORMATS as readonly string[]).includes(v ?? '') ? (v as LogSettings['format']) : format;
}

export function prettyWanted(format: LogSettings['format'], out: { isTTY?: boolean } = process.stdout): boolean {
  return format === 'pretty' || (format === 'auto' && out.isTTY === true);
}

const require = createRequire(import.meta.url);

/** pino-pretty, loaded only when a person reads the log: importing it was ~30 ms of CPU at every JSON-logging
 *  node's start (issue 36). Synchronously (a CommonJS package), so createNodeLogger stays synchronous. */
function pinoPretty(): typeof PinoPretty {
  return require('pino-pretty') as typeof PinoPretty;
}

export function createNodeLogger(log: LogSettings, base: Record<string, unknown> = { pid: process.pid }): Logger {
  if (!prettyWanted(effectiveFormat(log.format))) return pino({ level: log.level, base });
  const colorize = process.stdout.isTTY === true || (process.env['FORCE_COLOR'] !== undefined && process.env['FORCE_COLOR'] !== '0');
  const stream = pinoPretty()({ colorize, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  return pino({ level: log.level, base }, stream);
}
