// What an entry does to a key with many holds (holds.ts; SPEC "Many holders"; machine.ts `many`, level 3):
// a semaphore of `limit` holds, or shared/exclusive holds, kept as a KeyGroup (machine-groups.ts) while the
// key has holds or waiters. Rules, judged at the log time of the entry:
//  - limit: every request names the key's current limit while it has holds or waiters (a mutex key's is 1),
//    else LIMIT_MISMATCH; one hold per owner per key: a re-acquire of the same mode supersedes the old hold
//    (its token dies) — from level 4 only under the same session, else it waits or is refused like any
//    request that does not fit (machine-leases.ts `supersedes`) — of the other mode it is refused
//    (HOLD_MODE_MISMATCH);
//  - admission (holds.ts fits): FIFO — a newcomer never overtakes the line, an owner's own hold is replaced
//    in place — then the slots or modes; nothing during a lock-delay;
//  - one grant per key per entry: a hold's token is its entry's index, so tokens of a key's holds differ and
//    only grow. When an entry frees room for more heads than one, the key is listed (grantableKeys) and the
//    leader proposes a `handOff {key}` for each next head;
//  - a hold past its deadline counts for nothing: the entry that meets it ends it (EXPIRED, its lock-delay
//    from its end), and a hold of a run-out session ends with its whole session (machine-hand-off.ts);
//  - a group left with neither holds nor waiters is a free key again, keeping its last token.
import type { AcquireCommand, ExpireCommand, HandOffCommand, RevokeCommand } from './commands.js';
import type { KeyGroup } from './holds.js';
import { limitOf } from './holds.js';
import { groupFor, grantHold, markGrantable, removeHold, settleGroup, tidy } from './machine-groups.js';
import { endSession, handOff, handOffMany, sweepRunOut } from './machine-hand-off.js';
import { endsExpired, grantedOutcome, refusalBy, removeLease, supersedes } from './machine-leases.js';
import type { MachineState } from './machine-state.js';
import { queue } from './machine-wait-lines.js';
import type { Session } from './session.js';
import type { AcquireOutcome, AcquireResult, ErrorResult, ExpireResult, HandOffResult, RevokeResult, WaiterDecision } from './types.js';

/** An acquire with limit >= 2 or shared, or any acquire of a key that has many holds. */
export function acquireOfMany(
  s: MachineState,
  index: number,
  command: AcquireCommand,
  session: Session | null,
  decided: WaiterDecision[] = [],
): AcquireResult | ErrorResult {
  const key = command.key;
  const nowMs = s.logNowMs;
  const limit = limitOf(command.limit);
  const shared = command.shared === true;
  const delayedUntilMs = s.delays.untilMs(key);
  if (delayedUntilMs !== undefined && delayedUntilMs <= nowMs) {
    // As in the mutex path: a passed lock-delay ends here, the line served before the newcomer.
    s.delays.undelay(key);
    handOff(s, key, index, decided);
  }
  let group = s.groups.get(key);
  if (group === undefined) {
    // A mutex key, or a free one. A run-out hold ends here, as the mutex path ends it.
    let lease = s.leaseOf(key);
    if (lease !== undefined && lease.session !== null && !lease.isLiveAt(nowMs)) {
      endSession(s, lease.session as Session, true, index, decided);
      lease = s.leaseOf(key);
    }
    if (lease !== undefined && !lease.isLiveAt(nowMs)) {
      removeLease(s, lease, true);
      handOff(s, key, index, decided);
      lease = s.leaseOf(key);
    }
    group = s.groups.get(key); // the hand-off may have reached a shared head
    if (group === undefined && (lease !== undefined || s.lines.countFor(key) > 0)) {
      // In use as a mutex: limit 1, exclusive holds — a shared request waits its turn in the same line.
      if (limit !== 1) return withDecided(limitMismatch(index, key, 1, limit), decided);
      if (lease !== undefined && lease.owner === command.owner) return withDecided(modeMismatch(index, key, command.owner, false), decided);
      return blockedOfMany(s, index, command, session, refusalBy(lease, nowMs), limit, shared, decided);
    }
    if (group === undefined) {
      if (s.delays.leftMs(key, nowMs) > 0 && (command.waitMs ?? 0) === 0) {
        // Refused without a record of the key's mode: nothing holds or waits for it.
        return blockedOfMany(s, index, command, session, refusalBy(undefined, nowMs), limit, shared, decided);
      }
      group = groupFor(s, key, limit);
    }
  }
  if (group.limit !== limit) {
    tidy(s, group);
    return withDecided(limitMismatch(index, key, group.limit, limit), decided);
  }
  sweepRunOut(s, group, index, decided);
  // A run-out session ended by the sweep may have left the key with neither holds nor waiters, and so a
  // free key again (tidy): the request meets it as one (a grant into the dropped group would leave Get
  // showing the key free, and its slots granted again).
  if (s.groups.get(key) !== group) group = groupFor(s, key, limit);
  const own = group.holdOf(command.owner);
  if (own !== undefined && own.shared !== shared) return withDecided(modeMismatch(index, key, command.owner, own.shared), decided);
  const fits =
    s.delays.leftMs(key, nowMs) === 0 &&
    // One hold per owner per key: its hold under another session is neither superseded nor joined (level 4).
    (own === undefined || !own.isLiveAt(nowMs) || supersedes(s, own, session?.id ?? 0)) &&
    group.lastToken !== index && // one grant per key per entry: a grant's token is its entry's index
    (own !== undefined || s.lines.countFor(key) === 0) && // FIFO, but an owner's own hold is replaced in place
    group.fits({ owner: command.owner, limit, shared }, nowMs, own);
  if (!fits) {
    const first = group.firstLive(nowMs);
    const result = blockedOfMany(s, index, command, session, refusalBy(first, nowMs), limit, shared, decided);
    markGrantable(s, group);
    tidy(s, group);
    return result;
  }
  if (own !== undefined) removeHold(s, group, own, false, null); // superseded: its ACQUIRED successor says so
  const hold = grantHold(s, group, command.owner, index, command.ttlMs, command.lockDelayMs ?? 0, command.value ?? null, session, shared);
  const outcome = grantedOutcome(hold);
  s.rememberAcquire(command, outcome);
  markGrantable(s, group);
  const result: AcquireResult = { type: 'acquire', index, replayed: false, ...outcome };
  if (decided.length > 0) result.decided = decided;
  return result;
}

/** Not granted now: in line when it may wait (its answer comes with the entry that decides it), else
 *  refused and remembered. */
function blockedOfMany(
  s: MachineState,
  index: number,
  command: AcquireCommand,
  session: Session | null,
  outcome: AcquireOutcome,
  limit: number,
  shared: boolean,
  decided: WaiterDecision[],
): AcquireResult {
  const result: AcquireResult = { type: 'acquire', index, replayed: false, ...outcome };
  if ((command.waitMs ?? 0) > 0) {
    queue(s, index, command, session, limit, shared);
    result.waitTicket = index;
  } else {
    s.rememberAcquire(command, outcome);
  }
  const delayLeftMs = s.delays.leftMs(command.key, s.logNowMs);
  if (delayLeftMs > 0) result.delayMsLeft = delayLeftMs;
  if (decided.length > 0) result.decided = decided;
  return result;
}

/** A `handOff {key}` entry (the leader's, from grantableKeys): the next head that fits is granted. */
export function handOffEntry(s: MachineState, index: number, command: HandOffCommand): HandOffResult {
  const group = s.groups.get(command.key);
  const result: HandOffResult = { type: 'handOff', index, key: command.key, granted: false };
  if (group === undefined) return result;
  const decided: WaiterDecision[] = [];
  handOffMany(s, group, index, decided);
  result.granted = group.lastToken === index;
  if (decided.length > 0) result.decided = decided;
  return result;
}

/** An `expire` entry for a hold of a key with many holds: it ends only if it ran out (not under a
 *  session: a session's end is its own entry), and the line is served. */
export function expireInGroup(s: MachineState, index: number, command: ExpireCommand, group: KeyGroup): ExpireResult {
  settleGroup(s, group);
  const hold = group.holds.find((h) => BigInt(h.fencingToken) === command.token);
  const due = hold !== undefined && hold.session === null && !hold.isLiveAt(s.logNowMs);
  const result: ExpireResult = { type: 'expire', index, expired: due, key: command.key, token: command.token };
  if (due) {
    removeHold(s, group, hold, true);
    const decided: WaiterDecision[] = [];
    handOffMany(s, group, index, decided);
    if (decided.length > 0) result.decided = decided;
  }
  return result;
}

/** A `revoke` of a key with many holds: the hold with that token, or every hold (token 0), ends with no
 *  lock-delay (one that had run out, as its expiry would: endsExpired), and the line is served. */
export function revokeInGroup(s: MachineState, index: number, command: RevokeCommand, group: KeyGroup): RevokeResult {
  const result: RevokeResult = { type: 'revoke', index, replayed: false, key: command.key, revoked: [] };
  settleGroup(s, group);
  const ending = group.holds.filter((h) => command.token === 0n || BigInt(h.fencingToken) === command.token);
  if (ending.length === 0) return result;
  for (const hold of ending) {
    result.revoked.push(BigInt(hold.fencingToken));
    removeHold(s, group, hold, endsExpired(s, hold, false), 'REVOKED');
  }
  const decided: WaiterDecision[] = [];
  handOffMany(s, group, index, decided);
  if (decided.length > 0) result.decided = decided;
  return result;
}

/** The error result `error` with the waiters `decided` before it was found (the entry changed them). */
function withDecided(error: ErrorResult, decided: WaiterDecision[]): ErrorResult {
  if (decided.length > 0) error.decided = decided;
  return error;
}

function limitMismatch(index: number, key: string, keyLimit: number, asked: number): ErrorResult {
  return {
    type: 'error',
    index,
    code: 'LIMIT_MISMATCH',
    message: `limit: key ${JSON.stringify(key)} has limit ${keyLimit} while it has holders or waiters, and this request names ${asked}; every request on a key must name its current limit`,
  };
}

function modeMismatch(index: number, key: string, owner: string, heldShared: boolean): ErrorResult {
  return {
    type: 'error',
    index,
    code: 'HOLD_MODE_MISMATCH',
    message: `shared: owner ${JSON.stringify(owner)} holds key ${JSON.stringify(key)} ${heldShared ? 'shared' : 'exclusive'}; release that hold before asking for it ${heldShared ? 'exclusive' : 'shared'}`,
  };
}
