// `await using` needs Symbol.asyncDispose at run time. Node >= 20.4 has it; older runtimes get the same
// registered symbol TypeScript's downlevel helpers look up. Imported first by every module that uses it.
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for('Symbol.asyncDispose');
(Symbol as { dispose?: symbol }).dispose ??= Symbol.for('Symbol.dispose');

import type { ClientLogger } from './logger.js';

/** What `[Symbol.asyncDispose]` of a handle or a session does: end it (release, close) and never throw —
 *  a failure is logged, and the lease lapses on the server by itself within its ttl. */
export async function endAtDispose(end: () => Promise<unknown>, logger: ClientLogger, fields: object, failed: string): Promise<void> {
  try {
    await end();
  } catch (err) {
    logger.warn({ ...fields, err: (err as Error).message }, failed);
  }
}
