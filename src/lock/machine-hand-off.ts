// Who gets a key when its hold ends, in the entry that ends it (SPEC "The wait queue is replicated";
// machine.ts `wait`), and the entries whose job is ending what frees keys: dequeue, undelay, a session's
// end. Rules:
//  - every entry that ends a hold hands the key to the line in that same entry (handOff): the first waiter
//    still within its wait deadline, and whose session (if any) still lives, is granted with the entry's
//    index as its token; the ones before it leave refused. Nothing while the key is in lock-delay: the line
//    waits for the `undelay` entry. A shared head turns a mutex key into a key with many holds, whose line
//    gets one head per entry that fits (handOffMany; the rest by the leader's `handOff` entries);
//  - a `dequeue` takes a waiter out: its wait deadline passed (refused), or its call was cancelled (no
//    outcome: nothing is remembered, a retry queues again);
//  - a session ends (closeSession by its owner, expireSession once due, or an entry that meets a hold of a
//    run-out session) in one entry: its waiters leave their lines refused, then its holds go — into their
//    lock-delays only when it expired (machine-leases.ts `endsExpired`: from cluster level 5 a close of a
//    session that has run out counts, as its expireSession would) — and each freed key is handed to its
//    line. Waiters in ticket order, holds in key order, so every replica decides (and remembers) in the
//    same order whatever order they were taken in;
//  - every decision is remembered under the waiter's request id, as if its own entry had decided it, and
//    named in the entry's result (`decided`), so whichever node holds the waiter's call answers it from the
//    log — never from a leader's memory.
// These call each other (a hand-off meets a hold of a run-out session, whose end hands off its keys), so
// they live together; what they use (machine-wait-lines.ts, machine-sessions.ts, machine-groups.ts,
// machine-leases.ts) calls nothing here.
import type { CloseSessionCommand, DequeueCommand, ExpireSessionCommand, UndelayCommand } from './commands.js';
import type { KeyGroup } from './holds.js';
import { groupFor, grantHold, markGrantable, removeHold, settleGroup, tidy } from './machine-groups.js';
import { endsExpired, grantedOutcome, hold, refusalBy, removeLease, supersedes } from './machine-leases.js';
import { requestKeyOf, sessionOf } from './machine-sessions.js';
import type { MachineState } from './machine-state.js';
import { dequeued, leaveLine } from './machine-wait-lines.js';
import type { Session } from './session.js';
import type { AcquireOutcome, DequeueResult, SessionEndResult, UndelayResult, WaiterDecision } from './types.js';

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

/**
 * Hands `group`'s key to the first head of its line that fits (holds.ts), in entry `index`: heads whose
 * wait ran out, or whose session ended, leave refused on the way. At most one grant per key per entry;
 * if the next head fits too, the key is marked for the leader's `handOff` (grantableKeys).
 */
export function handOffMany(s: MachineState, group: KeyGroup, index: number, decided: WaiterDecision[]): void {
  sweepRunOut(s, group, index, decided);
  const key = group.key;
  const nowMs = s.logNowMs;
  if (s.delays.leftMs(key, nowMs) === 0) {
    for (let w = s.lines.head(key); w !== undefined; w = s.lines.head(key)) {
      const session = w.sessionId > 0 ? (sessionOf(s, w.sessionId) ?? null) : null;
      if (w.deadlineMs <= nowMs || (w.sessionId > 0 && (session === null || !session.isLiveAt(nowMs)))) {
        leaveLine(s, w);
        const outcome = refusalBy(undefined, nowMs);
        s.rememberAcquire(w, outcome);
        decided.push({ key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled: false });
        dequeued(s, w);
        continue;
      }
      const own = group.holdOf(w.owner);
      if (group.lastToken === index || !group.fits(w, nowMs, own)) break;
      // The head's owner holds the key under another session (level 4): it waits, at the head, for that
      // hold to end — a second hold would break one-per-owner, superseding it would end a trusted hold.
      if (own !== undefined && !supersedes(s, own, w.sessionId)) break;
      leaveLine(s, w);
      if (own !== undefined) removeHold(s, group, own, false, null);
      const outcome = grantedOutcome(grantHold(s, group, w.owner, index, w.ttlMs, w.lockDelayMs, w.value, session, w.shared));
      s.rememberAcquire(w, outcome);
      decided.push({ key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled: false });
      break;
    }
  }
  markGrantable(s, group);
  tidy(s, group);
}

/** Ends the holds of `group` that ran out (their lock-delays start from their ends), so what counts is
 *  exact; a hold under a run-out session ends with its whole session, as in the mutex path. */
export function sweepRunOut(s: MachineState, group: KeyGroup, index: number, decided: WaiterDecision[]): void {
  for (;;) {
    settleGroup(s, group);
    const runOut = group.holds.find((hold) => !hold.isLiveAt(s.logNowMs));
    if (runOut === undefined) return;
    if (runOut.session !== null) endSession(s, runOut.session as Session, true, index, decided);
    else removeHold(s, group, runOut, true);
  }
}

/**
 * Ends `session` in entry `index`: its waiters leave their lines refused, then its holds go (into their
 * lock-delays when `expired`) and each freed key is handed to its line. Keys in key order, so every
 * replica decides (and remembers) in the same order whatever order the holds were taken in. Returns the
 * keys released.
 */
export function endSession(s: MachineState, session: Session, expired: boolean, index: number, decided: WaiterDecision[]): string[] {
  const waiters = [...session.waiters].sort((a, b) => a.ticket - b.ticket);
  for (const w of waiters) {
    leaveLine(s, w);
    const outcome = refusalBy(s.leaseOf(w.key), s.logNowMs);
    s.rememberAcquire(w, outcome);
    decided.push({ key: w.key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled: false });
    dequeued(s, w);
  }
  // In a key with many holds a waiter that left may have kept the ones behind it waiting (or was the last
  // one there): its line is served, and an emptied group goes back to a free key.
  for (const key of new Set(waiters.map((w) => w.key))) {
    const group = s.groups.get(key);
    if (group !== undefined) handOffMany(s, group, index, decided);
  }
  const keys = [...session.holds.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (const key of keys) {
    const lease = s.leases.get(key)!;
    removeLease(s, lease, expired);
    handOff(s, key, index, decided);
  }
  // One hold per owner per key, so (key) orders them; the keys join the released list after the mutexes.
  const groupHolds = [...session.groupHolds].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const hold of groupHolds) {
    const group = s.groups.get(hold.key)!;
    removeHold(s, group, hold, expired);
    handOffMany(s, group, index, decided);
    keys.push(hold.key);
  }
  s.sessions.delete(session.id);
  s.touchSession(session.id);
  if (session.requestId !== '') s.sessionsByRequest.delete(requestKeyOf(session.owner, session.requestId));
  s.sessionDeadlines.remove(session);
  s.sessionEndBy.remove(session);
  return keys;
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

/** closeSession (by its owner; no lock-delay while the session lives) or expireSession (only once due in log
 *  time). A close of a session that ran out ends it as its expiry would (endsExpired, level 5). */
export function sessionEnd(s: MachineState, index: number, command: CloseSessionCommand | ExpireSessionCommand): SessionEndResult {
  const session = sessionOf(s, command.sessionId);
  const result: SessionEndResult = {
    type: command.type,
    index,
    sessionId: BigInt(command.sessionId),
    ended: false,
    reason: 'UNSPECIFIED',
    released: [],
  };
  if (session === undefined) {
    result.reason = 'NOT_HELD';
    return result;
  }
  if (command.type === 'closeSession' && command.owner !== '' && command.owner !== session.owner) {
    result.reason = 'WRONG_OWNER';
    return result;
  }
  if (command.type === 'expireSession' && session.isLiveAt(s.logNowMs)) return result;
  const decided: WaiterDecision[] = [];
  result.released = endSession(s, session, endsExpired(s, session, command.type === 'expireSession'), index, decided);
  result.ended = true;
  if (decided.length > 0) result.decided = decided;
  return result;
}
