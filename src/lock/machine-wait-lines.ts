// The machine's wait lines (wait-line.ts keeps them; SPEC "The wait queue is replicated"; machine.ts `wait`):
// joining and leaving one. Rules:
//  - a blocking acquire that cannot be granted joins its key's line in the entry that judged it, its ticket
//    that entry's index; a waiter under a session is also its session's (so the session's end takes it out);
//  - a waiter leaves its line granted, refused or cancelled, and a request id names one place in line: a
//    copy of it for another key, or (level 6) with other terms, is refused REQUEST_ID_REUSED, its place kept.
// Who gets a key when its hold ends, and the entries that take a waiter out, are machine-hand-off.ts's: it
// calls these, nothing here calls it.
import type { AcquireCommand } from './commands.js';
import type { MachineState } from './machine-state.js';
import type { Session } from './session.js';
import type { ErrorResult } from './types.js';
import { Waiter } from './wait-line.js';
import { acquireTerms, describeAcquireTerms } from './dedup.js';

/** `w` takes its place in its key's line, and in its session's waiters (whose end takes it out). */
export function joinLine(s: MachineState, w: Waiter): void {
  s.lines.join(w);
  if (w.sessionId > 0) s.sessions.get(w.sessionId)?.waiters.add(w);
}

/** `command` cannot be granted now and may wait: it joins its key's line, its ticket `index`. Not an answer
 *  yet, so nothing is remembered; the entry that decides it remembers that. */
export function queue(s: MachineState, index: number, command: AcquireCommand, session: Session | null, limit = 1, shared = false): Waiter {
  const w = new Waiter(
    command.key,
    index,
    s.ownerName(command.owner),
    command.ttlMs,
    command.requestId,
    s.logNowMs + command.waitMs!,
    command.lockDelayMs ?? 0,
    command.value ?? null,
    session?.id ?? 0,
    limit,
    shared,
  );
  joinLine(s, w);
  if (s.eventSink !== null) s.emit('QUEUED', w.key, w.owner, 0n, w.sessionId, w.value, w.shared);
  return w;
}

/** `w` leaves its key's line and its session's waiters (granted, refused, cancelled). */
export function leaveLine(s: MachineState, w: Waiter): void {
  s.lines.leave(w);
  if (w.sessionId > 0) s.sessions.get(w.sessionId)?.waiters.delete(w);
}

/** `w` left its line without the key (its wait ran out, its call was cancelled, its session ended). */
export function dequeued(s: MachineState, w: Waiter): void {
  if (s.eventSink !== null) s.emit('DEQUEUED', w.key, w.owner, 0n, w.sessionId, w.value, w.shared);
}

/** A request id that waits in another key's line, reused for `key`: refused, its place kept. */
export function reusedInLine(index: number, w: Waiter, key: string, terms: bigint): ErrorResult {
  const asked =
    key !== w.key ? `not ${JSON.stringify(key)}` : `with ${describeAcquireTerms(waiterTerms(w))}, not ${describeAcquireTerms(terms)}`;
  return {
    type: 'error',
    index,
    code: 'REQUEST_ID_REUSED',
    message:
      `request_id ${JSON.stringify(w.requestId)} of owner ${JSON.stringify(w.owner)} waits in line for key ` +
      `${JSON.stringify(w.key)}, ${asked}; use a new request_id for a different request`,
  };
}

/** A waiter's acquire terms (dedup.ts `acquireTerms`). */
export function waiterTerms(w: Waiter): bigint {
  return acquireTerms(w.sessionId, w.limit, w.shared);
}
