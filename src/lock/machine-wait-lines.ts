// What the machine does with its wait lines (wait-line.ts keeps them; SPEC "The wait queue is replicated";
// machine.ts `wait`). Rules:
//  - a blocking acquire that cannot be granted joins its key's line in the entry that judged it, its ticket
//    that entry's index; a waiter under a session is also its session's (so the session's end takes it out);
//  - every entry that ends a hold hands the key to the line in that same entry (handOff): the first waiter
//    still within its wait deadline, and whose session (if any) still lives, is granted with the entry's
//    index as its token; the ones before it leave refused. Nothing while the key is in lock-delay: the line
//    waits for the `undelay` entry. A shared head turns a mutex key into a key with many holds
//    (machine-groups.ts, which hands those off);
//  - a `dequeue` takes a waiter out: its wait deadline passed (refused), or its call was cancelled (no
//    outcome: nothing is remembered, a retry queues again);
//  - every decision is remembered under the waiter's request id, as if its own entry had decided it, and
//    named in the entry's result (`decided`), so whichever node holds the waiter's call answers it from the
//    log — never from a leader's memory.
import type { AcquireCommand, DequeueCommand, UndelayCommand } from './commands.js';
import { groupFor, handOffMany } from './machine-groups.js';
import { grantedOutcome, hold, refusalBy } from './machine-leases.js';
import { sessionOf } from './machine-sessions.js';
import type { MachineState } from './machine-state.js';
import type { Session } from './session.js';
import type { AcquireOutcome, DequeueResult, ErrorResult, UndelayResult, WaiterDecision } from './types.js';
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

/**
 * `key`'s hold just ended in entry `index`: the first waiter still within its wait deadline gets the key,
 * with token `index`; the ones before it whose deadline passed leave the line refused. Each decision is
 * remembered under its request id, as if its own entry had decided it. Nothing while the key is in
 * lock-delay: the line waits for the `undelay` entry.
 */
export function handOff(s: MachineState, key: string, index: number, decided: WaiterDecision[]): void {
  if (s.delays.leftMs(key, s.logNowMs) > 0) return;
  const group = s.groups.get(key);
  if (group !== undefined) {
    handOffMany(s, group, index, decided);
    return;
  }
  for (let w = s.lines.head(key); w !== undefined; w = s.lines.head(key)) {
    if (w.shared && s.leases.get(key) === undefined) {
      // A shared request reached the head of a mutex key's line (first, or behind heads refused just
      // now): from here the key has many holds, and it gets a shared one.
      handOffMany(s, groupFor(s, key, 1), index, decided);
      return;
    }
    leaveLine(s, w);
    let outcome: AcquireOutcome;
    const session = w.sessionId > 0 ? (sessionOf(s, w.sessionId) ?? null) : null;
    if (w.deadlineMs <= s.logNowMs) {
      outcome = refusalBy(undefined, s.logNowMs);
    } else if (w.sessionId > 0 && (session === null || !session.isLiveAt(s.logNowMs))) {
      outcome = refusalBy(undefined, s.logNowMs); // its session ran out: it cannot hold anything
    } else {
      outcome = grantedOutcome(hold(s, key, s.leaseOf(key), w.owner, index, w.ttlMs, w.lockDelayMs, w.value, session));
    }
    s.rememberAcquire(w, outcome);
    decided.push({ key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled: false });
    if (outcome.acquired) return;
    dequeued(s, w);
  }
}

/** A `dequeue` entry: the waiter leaves its line if it is still there — refused (and remembered) when its
 *  wait deadline has passed by log time, without an outcome when its call was cancelled. In a key with many
 *  holds, the heads behind it may fit now. */
export function dequeue(s: MachineState, index: number, command: DequeueCommand): DequeueResult {
  const w = s.lines.get(command.key, command.ticket);
  const result: DequeueResult = { type: 'dequeue', index, dequeued: false, key: command.key, ticket: command.ticket };
  if (w === undefined || (command.cause === 'deadline' && w.deadlineMs > s.logNowMs)) return result;
  leaveLine(s, w);
  dequeued(s, w);
  const outcome = refusalBy(s.leaseOf(command.key), s.logNowMs);
  const cancelled = command.cause === 'cancel';
  if (!cancelled) s.rememberAcquire(w, outcome);
  result.dequeued = true;
  result.decided = [{ key: w.key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled }];
  const group = s.groups.get(command.key);
  if (group !== undefined) {
    // The one who left may have been what kept the next heads waiting (an exclusive request ahead of
    // shared ones): they may fit now.
    handOffMany(s, group, index, result.decided);
  }
  return result;
}

/** `key`'s lock-delay has passed in log time: it ends, and the line (if any) gets the key. */
export function undelay(s: MachineState, index: number, command: UndelayCommand): UndelayResult {
  const result: UndelayResult = { type: 'undelay', index, undelayed: false, key: command.key };
  const untilMs = s.delays.untilMs(command.key);
  if (untilMs === undefined || untilMs > s.logNowMs) return result;
  s.delays.undelay(command.key);
  result.undelayed = true;
  if (s.groups.has(command.key) || s.leaseOf(command.key) === undefined) {
    const decided: WaiterDecision[] = [];
    handOff(s, command.key, index, decided);
    if (decided.length > 0) result.decided = decided;
  }
  return result;
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
