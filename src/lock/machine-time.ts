// Log time, lease epochs and cluster levels as entries apply (machine.ts `time`, `level`, `ran`, `forget`;
// LEASES.md):
//  - log time moves only here: at the first entry of a higher Raft term it becomes max(log time, stamp) and
//    a lease epoch starts (epoch.ts: live leases and sessions carried into the new term, lazily — see
//    machine-state.ts `epochs`; running lock-delays carried from level 6); within a term, at cluster level 1,
//    max(log time, stamp), and from level 2 the stamp's progress past the term's highest stamp;
//  - a `clusterLevel` entry raises the level (never lowers it) and sets the rules the parts read from it; a
//    level this build does not read stops the node (UnknownCommandError);
//  - `memberRan` records a Raft member as having run (from level 2);
//  - `forget` drops the free keys freed at or before its `upToMs`, folding their last tokens into the
//    watermark.
import { UnknownCommandError } from './commands.js';
import type { ClusterLevelCommand, ForgetCommand, MemberRanCommand } from './commands.js';
import type { EndByHeap } from './deadline-heap.js';
import { endByMs } from './epoch.js';
import type { LeaseCarryOver, LeaseEpoch } from './epoch.js';
import type { Lease } from './lease.js';
import type { MachineState } from './machine-state.js';
import type { ClusterLevelResult, ForgetResult, MemberRanResult } from './types.js';
import {
  LEVEL_ACQUIRE_KEPT_WHILE_HELD,
  LEVEL_CLOCK_PROGRESS,
  LEVEL_DELAY_CARRIED,
  LEVEL_LATE_END_EXPIRES,
  LEVEL_SUPERSEDE_SAME_SESSION,
} from './versions.js';
/** The cluster level, and the rules the state's parts read from it (set together, on apply and restore). */
export function useClusterLevel(s: MachineState, level: number): void {
  s.clusterLevel = level;
  s.supersedeSameSessionOnly = level >= LEVEL_SUPERSEDE_SAME_SESSION;
  s.lateEndExpires = level >= LEVEL_LATE_END_EXPIRES;
  s.keepAcquiresWhileHeld = level >= LEVEL_ACQUIRE_KEPT_WHILE_HELD;
  s.acquireTermsKept = level >= LEVEL_ACQUIRE_KEPT_WHILE_HELD;
}

/** Log time after an entry of the current term stamped `stampMs` (machine.ts `time`). */
export function advanceLogTime(s: MachineState, stampMs: number): void {
  if (s.clusterLevel < LEVEL_CLOCK_PROGRESS) {
    s.logNowMs = Math.max(s.logNowMs, stampMs);
    return;
  }
  // max(0, …): a stamp below the term's last one (a clock that stepped back) adds nothing.
  s.logNowMs += Math.max(0, stampMs - s.termLastStampMs);
  s.termLastStampMs = Math.max(s.termLastStampMs, stampMs);
}

/**
 * The first entry of a higher raft term (normally the new leader's termStart) starts a lease epoch: live
 * leases are carried into the new term by the rule in epoch.ts (safety argument: LEASES.md). Keyed on the
 * entry's raft term rather than on the termStart command, so a driver that forgets to lead with termStart
 * still gets a correct epoch at its first entry. T = max(P, stamp) keeps log time monotone.
 */
export function startLeaseEpoch(s: MachineState, term: number, stampedMs: number): LeaseCarryOver {
  const previousTermEndMs = s.logNowMs;
  const epochStartMs = Math.max(previousTermEndMs, stampedMs);
  const carried = startEpoch(s, { previousTermEndMs, epochStartMs });
  // Running lock-delays cross the jump as live leases do (key-delays.ts carryOver).
  if (s.clusterLevel >= LEVEL_DELAY_CARRIED) s.delays.carryOver(previousTermEndMs, epochStartMs);
  s.epochTerm = term;
  s.epochStartMs = epochStartMs;
  s.logNowMs = epochStartMs;
  if (s.clusterLevel >= LEVEL_CLOCK_PROGRESS) s.termLastStampMs = stampedMs;
  return carried;
}

/**
 * Starts epoch (P, T) without walking the leases (see `epochs`): the leases it ends are popped from the
 * EndByHeap and settled at once; every other live lease is extended, lazily. Counts as the walk would.
 */
function startEpoch(s: MachineState, epoch: LeaseEpoch): LeaseCarryOver {
  const P = epoch.previousTermEndMs;
  // Leases past their deadline at P (awaiting their expire entry) are untouched by the epoch.
  s.settleDue(P, s.deadlines);
  const expiredAtP = s.deadlines.due(P, Number.MAX_SAFE_INTEGER).length;
  const ending = endingAt(s, P, s.endBy);
  const endingSessions = endingAt(s, P, s.sessionEndBy);
  s.epochs.push(epoch);
  s.epochShiftMs += epoch.epochStartMs - P;
  s.epochShiftsMs.push(s.epochShiftMs);
  for (const lease of ending) s.settle(lease); // ends it: deadline min(deadline, T)
  for (const session of endingSessions) s.settle(session);
  const ownLeases = s.leases.size - s.sessionHoldCount + s.groupHoldCount - s.groupSessionHoldCount;
  return { extended: ownLeases - expiredAtP - ending.length, ended: ending.length };
}

/** The leases (or sessions) of `heap` that an epoch whose previous term ended at P ends: popped from it. */
function endingAt(s: MachineState, P: number, heap: EndByHeap): Lease[] {
  const ending: Lease[] = [];
  for (let top = heap.peek(); top !== undefined && heap.keyOf(top) + s.epochShiftMs <= P; top = heap.peek()) {
    heap.remove(top);
    s.settle(top); // the epochs before this one
    if (!top.isLiveAt(P)) continue; // already expired: no epoch touches it until a grant or renew re-adds it
    if (endByMs(top) <= P) ending.push(top);
    else s.granted(top); // cannot happen while the shift rule holds; re-filed with its true endBy
  }
  return ending;
}

export function raiseClusterLevel(s: MachineState, index: number, command: ClusterLevelCommand): ClusterLevelResult {
  if (command.level > s.options.readLevel) {
    // The cluster moved to rules this build does not know: applying more entries could misapply them.
    throw new UnknownCommandError(19, s.options.readLevel, `cluster level ${command.level} (entry ${index})`);
  }
  if (command.level > s.clusterLevel) {
    useClusterLevel(s, command.level);
    // Progress is measured from this entry's stamp on: replicas that restored a level-1 snapshot never
    // knew the term's earlier stamps, and must agree with those that applied them.
    s.termLastStampMs = command.timeMs;
  }
  return { type: 'clusterLevel', index, level: s.clusterLevel };
}

export function memberRan(s: MachineState, index: number, command: MemberRanCommand): MemberRanResult {
  // Below level 2 a snapshot could not carry the record (versions up to 6 have no place for it), so a
  // replica restored from one would disagree with one that applied the entry: it changes nothing then.
  const recorded = s.clusterLevel >= LEVEL_CLOCK_PROGRESS && !s.ranMembers.has(command.memberId);
  if (recorded) s.ranMembers.add(command.memberId);
  return { type: 'memberRan', index, memberId: command.memberId, recorded };
}

/** Drops the free keys freed at or before `upToMs` (log time), oldest first; machine.ts `forget`. */
export function forget(s: MachineState, index: number, command: ForgetCommand): ForgetResult {
  let forgotten = 0;
  s.freeKeyLastTokens.forgetUpTo(command.upToMs, (free) => {
    s.touch(free.key);
    if (free.lastToken > s.forgottenWatermark) s.forgottenWatermark = free.lastToken;
    forgotten++;
  });
  return { type: 'forget', index, forgotten, watermark: BigInt(s.forgottenWatermark) };
}
