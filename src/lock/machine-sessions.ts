// Sessions in the machine (session.ts; SPEC "Sessions"; machine.ts `session`): one lease for many holds.
// Rules, judged at the log time of the entry:
//  - open: the session's id is its entry's index (never reused); a retry of the same (owner, request_id)
//    while the session lives answers the same session (replayed);
//  - renew: by its owner, only while it lives — a session that ran out cannot come back, even before the
//    entry that ends it applies;
//  - end: its waiters, holds and freed keys go in one entry (machine-hand-off.ts `endSession`).
// A session rides the lease epochs like a lease (machine-state.ts settle), in its own heaps.
import type { OpenSessionCommand, RenewSessionCommand } from './commands.js';
import type { MachineState } from './machine-state.js';
import { Session } from './session.js';
import type { ErrorResult, OpenSessionResult, RenewSessionResult } from './types.js';

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
