// A mutex key's one lease (SPEC "Guarantees"; machine.ts `acquire`, `release`, `expire`, `delay`): how it
// is granted and how it ends, whichever entry does it (an acquire, a hand-off to a waiter, a release, an
// expiry, a revoke, its session's end). Rules:
//  - a grant's fencing token is the index of the entry that grants it, so tokens only grow, per key and in
//    all, and are never reused; a grant to the lease's own owner supersedes its old token in place;
//  - a hold keeps its value and lock-delay beside its lease (holdValues, key-delays.ts); a hold under a
//    session takes the session's lock-delay when it names none, keeps no times of its own (its session's
//    are its times) and is in neither lease heap;
//  - a lease that EXPIRES puts its key in lock-delay until the lease's end plus its delay — measured from
//    the lease's end, not from the entry that noticed it. Which endings are expiries is `endsExpired`'s one
//    rule: an expiry entry, and from cluster level 5 any entry that ends a hold which ran out by log time (a
//    late release, close or revoke); a live hold released or revoked starts no delay;
//  - a key whose lease ends is a free key, keeping its last token (Get's last_token survives release).
// Every change copies the key's snapshot section first (writer.beforeKeyWrite), so a sliced snapshot in
// progress still writes the state it began with.
import type { LockEventKind } from './events.js';
import { Lease } from './lease.js';
import type { MachineState } from './machine-state.js';
import type { Session } from './session.js';
import type { AcquireOutcome } from './types.js';

/** Grants `key` to `owner` with token `index` at log time now: a new lease, or `lease` re-granted; under
 *  `session` when given (then the hold keeps no times of its own and is in neither lease heap). */
export function hold(
  s: MachineState,
  key: string,
  lease: Lease | undefined,
  ownerName: string,
  index: number,
  ttlMs: number,
  lockDelayMs: number,
  value: Uint8Array | null,
  session: Session | null = null,
): Lease {
  // A hold that ran out and is re-granted in place ends here (a live one superseded by its own owner
  // does not: the new ACQUIRED replaces it).
  if (s.eventSink !== null && lease !== undefined && !lease.isLiveAt(s.logNowMs)) {
    s.emit('EXPIRED', key, lease.owner, BigInt(lease.fencingToken), sessionIdOf(lease), s.holdValues.get(key) ?? null);
  }
  if (value !== null && value.length > 0) s.holdValues.set(key, value);
  else s.holdValues.delete(key);
  if (session !== null && lockDelayMs === 0) lockDelayMs = session.lockDelayMs;
  s.delays.setHoldDelay(key, lockDelayMs);
  const nowMs = s.logNowMs;
  s.touch(key);
  if (lease === undefined) {
    s.freeKeyLastTokens.delete(key);
    const owner = s.countOwner(ownerName, 1);
    lease = new Lease(key, owner, index, ttlMs, nowMs + ttlMs, 0, nowMs);
    s.leases.set(lease);
    if (session === null) s.deadlines.push(lease);
  } else {
    let owner = lease.owner;
    if (owner !== ownerName) {
      s.countOwner(owner, -1);
      owner = s.countOwner(ownerName, 1);
    }
    detachFromSession(s, lease);
    lease.grant(owner, index, ttlMs, nowMs);
    if (session !== null) {
      s.deadlines.remove(lease);
      s.endBy.remove(lease);
    } else if (lease.heapIndex >= 0) {
      s.deadlines.update(lease);
    } else {
      s.deadlines.push(lease);
    }
  }
  if (session !== null) {
    lease.session = session;
    session.holds.add(lease);
    s.sessionHoldCount++;
    lease.epochsSeen = s.epochs.length;
  } else {
    s.granted(lease);
  }
  if (s.eventSink !== null)
    s.emit('ACQUIRED', key, lease.owner, BigInt(index), session?.id ?? 0, value !== null && value.length > 0 ? value : null);
  return lease;
}

/** Whether an entry ending `lease` (settled) at log time now ends it as EXPIRED, so that its lock-delay, if
 *  any, begins from its end — the one rule of every path that ends a hold (machine.ts `delay`). `expiry`:
 *  the entry is an expiry (expire, expireSession, or an acquire or hand-off that finds the hold run out).
 *  From cluster level 5 any other entry that ends a hold which ran out by log time — a release, a
 *  closeSession or a revoke that came before the expiry entry — ends it as expired too: the delay exists
 *  for a holder that went away, and one that comes back late must not skip it by releasing or closing.
 *  Below level 5 only an expiry does (versions.ts): every replica judges an entry alike. */
export function endsExpired(s: MachineState, lease: Lease, expiry: boolean): boolean {
  return expiry || (s.lateEndExpires && !lease.isLiveAt(s.logNowMs));
}

/** Ends `lease`; `expired`: it ran out (see `endsExpired`), so its lock-delay, if any, begins — measured
 *  from the lease's end, not from the entry that noticed it. */
export function removeLease(s: MachineState, lease: Lease, expired: boolean, kind: LockEventKind = expired ? 'EXPIRED' : 'RELEASED'): void {
  if (s.eventSink !== null) {
    s.emit(kind, lease.key, lease.owner, BigInt(lease.fencingToken), sessionIdOf(lease), s.holdValues.get(lease.key) ?? null);
  }
  const lockDelayMs = s.delays.holdDelayOf(lease.key);
  s.delays.setHoldDelay(lease.key, 0);
  s.holdValues.delete(lease.key);
  if (expired && lockDelayMs > 0) s.delays.delayKey(lease.key, lease.effectiveExpiresAtMs + lockDelayMs);
  detachFromSession(s, lease);
  s.touch(lease.key);
  s.leases.delete(lease.key);
  s.deadlines.remove(lease);
  s.endBy.remove(lease);
  s.countOwner(lease.owner, -1);
  s.freeKeyLastTokens.free(lease.key, lease.fencingToken, s.logNowMs);
}

/** `lease` no longer lives under its session (released, superseded, or its session ended). */
function detachFromSession(s: MachineState, lease: Lease): void {
  const session = lease.session as Session | null;
  if (session === null) return;
  session.holds.delete(lease);
  lease.session = null;
  s.sessionHoldCount--;
}

/** "Not acquired", naming the live holder (if any) and its time left at `nowMs`. */
export function refusalBy(lease: Lease | undefined, nowMs: number): AcquireOutcome {
  const live = lease !== undefined && lease.isLiveAt(nowMs);
  return {
    acquired: false,
    token: 0n,
    ttlMs: 0,
    expiresAtMs: 0,
    holderOwner: live ? lease.owner : '',
    holderTtlMs: live ? lease.effectiveExpiresAtMs - nowMs : 0,
  };
}

/** The id of the session `lease` is held under; 0 = none. */
export function sessionIdOf(lease: Lease): number {
  return lease.session === null ? 0 : lease.session.fencingToken;
}

/** Whether an acquire by `own`'s owner under session `sessionId` (0: none) may supersede `own` in place.
 *  From cluster level 4 only under the same session: a hold under another session may still be trusted by
 *  a client that never sent this request (a late duplicate past the dedup window, an old session kept alive
 *  by elections), so it counts as another holder's (versions.ts, level 4). */
export function supersedes(s: MachineState, own: Lease, sessionId: number): boolean {
  return !s.supersedeSameSessionOnly || sessionIdOf(own) === sessionId;
}

export function grantedOutcome(lease: Lease): AcquireOutcome {
  return {
    acquired: true,
    token: BigInt(lease.fencingToken),
    ttlMs: lease.grantedTtlMs,
    expiresAtMs: lease.effectiveExpiresAtMs,
    holderOwner: '',
    holderTtlMs: 0,
  };
}
