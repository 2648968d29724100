// Sessions in the machine (session.ts; SPEC "Sessions"; machine.ts `session`): one lease for many holds.
// Rules, judged at the log time of the entry:
//  - open: the session's id is its entry's index (never reused); a retry of the same (owner, request_id)
//    while the session lives answers the same session (replayed);
//  - renew: by its owner, only while it lives — a session that ran out cannot come back, even before the
//    entry that ends it applies;
//  - end (closeSession by its owner, expireSession once due, or an entry that meets a hold of a run-out
//    session): in that one entry its waiters leave their lines refused, then its holds go — into their
//    lock-delays only when it expired (machine-leases.ts `endsExpired`: from cluster level 5 a close of a
//    session that has run out counts, as its expireSession would) — and each freed key is handed to its
//    line. Waiters in ticket order, holds in key order, so every replica decides (and remembers) in the
//    same order whatever order they were taken in.
// A session rides the lease epochs like a lease (machine-state.ts settle), in its own heaps.
import type { CloseSessionCommand, ExpireSessionCommand, OpenSessionCommand, RenewSessionCommand } from './commands.js';
import { handOffMany, removeHold } from './machine-groups.js';
import { endsExpired, refusalBy, removeLease } from './machine-leases.js';
import type { MachineState } from './machine-state.js';
import { dequeued, handOff, leaveLine } from './machine-wait-lines.js';
import { Session } from './session.js';
import type { ErrorResult, OpenSessionResult, RenewSessionResult, SessionEndResult, WaiterDecision } from './types.js';

/** Session `id` with every term start applied (settle), or undefined. */
export function sessionOf(s: MachineState, id: number): Session | undefined {
  const session = s.sessions.get(id);
  if (session !== undefined) s.settle(session);
  return session;
}

/** An `openSession` entry: a new session whose id is the entry's index, or the live one a retry opened. */
export function openSession(s: MachineState, index: number, command: OpenSessionCommand): OpenSessionResult {
  const nowMs = s.logNowMs;
  if (command.requestId !== '') {
    // A retry of an open whose answer was lost: the session it opened, while that one lives.
    const earlier = s.sessionsByRequest.get(requestKeyOf(command.owner, command.requestId));
    if (earlier !== undefined) {
      s.settle(earlier);
      return {
        type: 'openSession',
        index,
        sessionId: BigInt(earlier.id),
        ttlMs: earlier.ttlMs,
        expiresAtMs: earlier.expiresAtMs,
        replayed: true,
      };
    }
  }
  const session = new Session(
    index,
    s.ownerName(command.owner),
    command.ttlMs,
    nowMs + command.ttlMs,
    0,
    nowMs,
    command.lockDelayMs,
    command.requestId,
  );
  s.sessions.set(index, session);
  s.touchSession(index);
  if (command.requestId !== '') s.sessionsByRequest.set(requestKeyOf(command.owner, command.requestId), session);
  s.sessionDeadlines.push(session);
  s.granted(session);
  return { type: 'openSession', index, sessionId: BigInt(index), ttlMs: session.ttlMs, expiresAtMs: session.expiresAtMs, replayed: false };
}

/** A `renewSession` entry: a full TTL again from log time now, only while the session lives. */
export function renewSession(s: MachineState, index: number, command: RenewSessionCommand): RenewSessionResult {
  const session = sessionOf(s, command.sessionId);
  const refused = (reason: RenewSessionResult['reason']): RenewSessionResult => ({
    type: 'renewSession',
    index,
    renewed: false,
    ttlMs: 0,
    expiresAtMs: 0,
    reason,
  });
  if (session === undefined) return refused('NOT_HELD');
  if (command.owner !== '' && command.owner !== session.owner) return refused('WRONG_OWNER');
  if (!session.isLiveAt(s.logNowMs)) return refused('EXPIRED');
  s.touchSession(session.id);
  session.grant(session.owner, session.id, session.ttlMs, s.logNowMs);
  s.sessionDeadlines.update(session);
  s.granted(session);
  return { type: 'renewSession', index, renewed: true, ttlMs: session.ttlMs, expiresAtMs: session.expiresAtMs, reason: 'UNSPECIFIED' };
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

/** An acquire or renew refused for its session (SPEC "Sessions"). */
export function sessionError(
  index: number,
  code: 'SESSION_NOT_OPEN' | 'SESSION_OWNER_MISMATCH' | 'RENEW_THE_SESSION',
  message: string,
): ErrorResult {
  return { type: 'error', index, code, message };
}

/** The key of (owner, request_id) in `sessionsByRequest`. */
export function requestKeyOf(owner: string, requestId: string): string {
  return `${owner}\u0000${requestId}`;
}
