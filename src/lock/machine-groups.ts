// Keys with many holds in the machine (holds.ts; SPEC "Many holders"; machine.ts `many`, level 3): a
// semaphore of `limit` holds, or shared/exclusive holds, kept as a KeyGroup while the key has holds or
// waiters. Rules, judged at the log time of the entry:
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
//    from its end), and a hold of a run-out session ends with its whole session (machine-sessions.ts);
//  - a group left with neither holds nor waiters is a free key again, keeping its last token.
import type { AcquireCommand, ExpireCommand, HandOffCommand, RevokeCommand } from './commands.js';
import type { LockEventKind } from './events.js';
import { GroupHold, KeyGroup, limitOf } from './holds.js';
import { endsExpired, grantedOutcome, refusalBy, removeLease, sessionIdOf, supersedes } from './machine-leases.js';
import { endSession, sessionOf } from './machine-sessions.js';
import type { MachineState } from './machine-state.js';
import { dequeued, handOff, leaveLine, queue } from './machine-wait-lines.js';
import type { Session } from './session.js';
import type {
  AcquireOutcome,
  AcquireResult,
  ErrorResult,
  ExpireResult,
  HandOffResult,
  HolderView,
  LockView,
  RefusalReason,
  RevokeResult,
  WaiterDecision,
} from './types.js';

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
  // free key again (tidy): the request meets it as one (lock simulation seed 17: the grant went into the
  // dropped group, so Get showed the key free and its slots were granted again).
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

/** A new group for `key`, which has no lease: it takes over the key's free record (its last token). */
export function groupFor(s: MachineState, key: string, limit: number): KeyGroup {
  s.touch(key);
  const lastToken = s.freeKeyLastTokens.get(key)?.lastToken ?? s.forgottenWatermark;
  s.freeKeyLastTokens.delete(key);
  const group = new KeyGroup(key, limit, lastToken);
  s.groups.set(key, group);
  return group;
}

/** A group with neither holds nor waiters is a free key again, with its last token. */
function tidy(s: MachineState, group: KeyGroup): void {
  if (group.holds.length > 0 || s.lines.countFor(group.key) > 0 || s.groups.get(group.key) !== group) return;
  s.groups.delete(group.key);
  s.groupsInLine.delete(group.key);
  s.touch(group.key);
  s.freeKeyLastTokens.free(group.key, group.lastToken, s.logNowMs);
}

/** The holds of `group` with every term start applied. */
function settleGroup(s: MachineState, group: KeyGroup): void {
  for (const hold of group.holds) s.settle(hold);
}

export function firstLiveOf(s: MachineState, group: KeyGroup): GroupHold | undefined {
  settleGroup(s, group);
  return group.firstLive(s.logNowMs);
}

/** Ends the holds of `group` that ran out (their lock-delays start from their ends), so what counts is
 *  exact; a hold under a run-out session ends with its whole session, as in the mutex path. */
function sweepRunOut(s: MachineState, group: KeyGroup, index: number, decided: WaiterDecision[]): void {
  for (;;) {
    settleGroup(s, group);
    const runOut = group.holds.find((hold) => !hold.isLiveAt(s.logNowMs));
    if (runOut === undefined) return;
    if (runOut.session !== null) endSession(s, runOut.session as Session, true, index, decided);
    else removeHold(s, group, runOut, true);
  }
}

/** A new hold of `group` for `owner`, its token `index`; under `session` when given (no times of its own,
 *  in neither lease heap), else filed in the deadline and end-by heaps. */
function grantHold(
  s: MachineState,
  group: KeyGroup,
  owner: string,
  index: number,
  ttlMs: number,
  lockDelayMs: number,
  value: Uint8Array | null,
  session: Session | null,
  shared: boolean,
): GroupHold {
  const nowMs = s.logNowMs;
  if (session !== null && lockDelayMs === 0) lockDelayMs = session.lockDelayMs;
  const ownTtlMs = session === null ? ttlMs : 0;
  const hold = new GroupHold(
    group.key,
    s.countOwner(owner, 1),
    index,
    ownTtlMs,
    nowMs + ownTtlMs,
    0,
    nowMs,
    shared,
    lockDelayMs,
    value !== null && value.length > 0 ? value : null,
  );
  group.add(hold);
  s.groupHoldCount++;
  if (session !== null) {
    hold.session = session;
    session.groupHolds.add(hold);
    s.groupSessionHoldCount++;
    hold.epochsSeen = s.epochs.length;
  } else {
    s.deadlines.push(hold);
    s.granted(hold);
  }
  if (s.eventSink !== null) s.emit('ACQUIRED', group.key, hold.owner, BigInt(index), session?.id ?? 0, hold.value, shared);
  return hold;
}

/** Ends `hold`; `expired`: it ran out, so its lock-delay (if any) starts from its end. `kind` null: no
 *  event (superseded by its owner's new hold). */
export function removeHold(
  s: MachineState,
  group: KeyGroup,
  hold: GroupHold,
  expired: boolean,
  kind: LockEventKind | null = expired ? 'EXPIRED' : 'RELEASED',
): void {
  if (kind !== null && s.eventSink !== null)
    s.emit(kind, group.key, hold.owner, BigInt(hold.fencingToken), sessionIdOf(hold), hold.value, hold.shared);
  if (expired && hold.lockDelayMs > 0) {
    const untilMs = hold.effectiveExpiresAtMs + hold.lockDelayMs;
    if (untilMs > (s.delays.untilMs(group.key) ?? -1)) s.delays.delayKey(group.key, untilMs);
  }
  const session = hold.session as Session | null;
  if (session !== null) {
    session.groupHolds.delete(hold);
    hold.session = null;
    s.groupSessionHoldCount--;
  }
  s.deadlines.remove(hold);
  s.endBy.remove(hold);
  s.countOwner(hold.owner, -1);
  group.remove(hold);
  s.groupHoldCount--;
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

/** Keeps `groupsInLine` true for `group` (see there). */
export function markGrantable(s: MachineState, group: KeyGroup): void {
  if (s.groups.get(group.key) === group && s.lines.countFor(group.key) > 0) s.groupsInLine.add(group.key);
  else s.groupsInLine.delete(group.key);
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

/** `owner`'s hold of `group` (one per owner per key), settled. */
export function holdOf(s: MachineState, group: KeyGroup, owner: string): GroupHold | undefined {
  settleGroup(s, group);
  return group.holdOf(owner);
}

/** refusal() for a key with many holds, where `hold` is the requester's own (by owner). */
export function refusalIn(
  s: MachineState,
  group: KeyGroup,
  hold: GroupHold | undefined,
  request: { owner: string; token: bigint },
  mustBeLive: boolean,
): RefusalReason {
  if (hold === undefined) return group.holds.length === 0 ? 'NOT_HELD' : 'WRONG_OWNER';
  if (BigInt(hold.fencingToken) !== request.token) return 'WRONG_TOKEN';
  if (mustBeLive && !hold.isLiveAt(s.logNowMs)) return 'EXPIRED';
  return 'UNSPECIFIED';
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

/** Get for a key with many holds: its live holds in token order, the first in the single-holder fields. */
export function groupView(s: MachineState, group: KeyGroup): LockView {
  settleGroup(s, group);
  const nowMs = s.logNowMs;
  const live = group.holds.filter((hold) => hold.isLiveAt(nowMs));
  const holders: HolderView[] = live.map((hold) => ({
    owner: hold.owner,
    token: BigInt(hold.fencingToken),
    ttlMs: hold.effectiveExpiresAtMs - nowMs,
    expiresAtMs: hold.effectiveExpiresAtMs,
    shared: hold.shared,
    sessionId: BigInt(sessionIdOf(hold)),
    value: hold.value,
  }));
  const first = live[0];
  const view: LockView =
    first === undefined
      ? { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: BigInt(group.lastToken) }
      : {
          held: true,
          owner: first.owner,
          token: BigInt(first.fencingToken),
          ttlMs: first.effectiveExpiresAtMs - nowMs,
          expiresAtMs: first.effectiveExpiresAtMs,
          lastToken: BigInt(group.lastToken),
        };
  if (first !== undefined && first.session !== null) view.sessionId = BigInt(first.session.fencingToken);
  view.holders = holders;
  view.limit = group.limit;
  return view;
}

/** Up to `limit` keys with many holds whose line's head fits at log time (the entry that made room could
 *  grant only one head), for the leader to propose `handOff`. A read, but it settles the holds it judges,
 *  as Get does: an unsettled deadline is only a lower bound, so a replica that restored a snapshot (its
 *  holds unsettled) offered heads that one which applied the entries did not (unit test seed 404 of the
 *  many-holds random logs). The handOff entry judges again either way. O(groups in line x their holds). */
export function grantableKeys(s: MachineState, limit: number): string[] {
  const keys: string[] = [];
  const nowMs = s.logNowMs;
  for (const key of s.groupsInLine) {
    if (keys.length >= limit) break;
    const group = s.groups.get(key);
    const head = s.lines.head(key);
    if (group === undefined || head === undefined || s.delays.leftMs(key, nowMs) > 0) continue;
    settleGroup(s, group);
    const own = group.holdOf(head.owner);
    // As handOffMany judges the head (a hold of its owner under another session keeps it waiting).
    if (group.fits(head, nowMs, own) && (own === undefined || supersedes(s, own, head.sessionId))) keys.push(key);
  }
  return keys;
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
