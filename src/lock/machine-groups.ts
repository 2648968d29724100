// A key's holds when it has many (holds.ts; SPEC "Many holders"; machine.ts `many`, level 3), kept as a
// KeyGroup while the key has holds or waiters: made from the key's free record (groupFor), a hold granted
// (grantHold: its token the entry's index) and ended (removeHold: into its lock-delay when it ran out),
// tidied back to a free key with its last token once neither holds nor waiters are left (tidy), and read
// (Get, grantableKeys). A group's holds are settled (term starts applied) before they are judged. The rules
// an entry keeps with these are machine-group-entries.ts's and machine-hand-off.ts's.
import type { LockEventKind } from './events.js';
import { GroupHold, KeyGroup } from './holds.js';
import { sessionIdOf, supersedes } from './machine-leases.js';
import type { MachineState } from './machine-state.js';
import type { Session } from './session.js';
import type { HolderView, LockView, RefusalReason } from './types.js';

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
export function tidy(s: MachineState, group: KeyGroup): void {
  if (group.holds.length > 0 || s.lines.countFor(group.key) > 0 || s.groups.get(group.key) !== group) return;
  s.groups.delete(group.key);
  s.groupsInLine.delete(group.key);
  s.touch(group.key);
  s.freeKeyLastTokens.free(group.key, group.lastToken, s.logNowMs);
}

/** The holds of `group` with every term start applied. */
export function settleGroup(s: MachineState, group: KeyGroup): void {
  for (const hold of group.holds) s.settle(hold);
}

export function firstLiveOf(s: MachineState, group: KeyGroup): GroupHold | undefined {
  settleGroup(s, group);
  return group.firstLive(s.logNowMs);
}

/** A new hold of `group` for `owner`, its token `index`; under `session` when given (no times of its own,
 *  in neither lease heap), else filed in the deadline and end-by heaps. */
export function grantHold(
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

/** Keeps `groupsInLine` true for `group` (see there). */
export function markGrantable(s: MachineState, group: KeyGroup): void {
  if (s.groups.get(group.key) === group && s.lines.countFor(group.key) > 0) s.groupsInLine.add(group.key);
  else s.groupsInLine.delete(group.key);
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
 *  holds unsettled) would offer heads that one which applied the entries does not, and replicas must list
 *  alike. The handOff entry judges again either way. O(groups in line x their holds). */
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
