// MAX HOLD (true time): a holder that stopped renewing loses its lease within a bound of TRUE time, however
// often the leader changes — the liveness side of the lease scheme (LEASES.md "Liveness", etcd issue 9395;
// issue 22 planted bug 3: no checkpoints, or observed time overwritten instead of summed, let a chain of
// elections keep a dead lease alive). "min hold" (lock-invariants.ts) is the safety side.
//
// Checked at every judged entry e, for every key whose lease is still live after e (its deadline is ahead
// of log time: no other owner could take it). Let the lease be granted/renewed by an entry stamped at true
// time r, with TTL ttl, carried through k epoch starts since. Stamps are floor(C(t)) of the stamping
// leader's clock, rate in [1-ρ, 1+ρ]; at cluster level 2 log time within a term moves by the stamps'
// progress (machine.ts), so a log-time difference d inside one term spans less than (d + 1)/(1-ρ) of true
// time.
//  - The term in office at e: log time is below the deadline, at most (its start or r) + ttl, so e is less
//    than (ttl + 1)/(1-ρ) after that term's first entry (or r).
//  - The k completed terms: each epoch start adds what its term observed (its last entry's log time less
//    its first's, or r's) and ends the lease once the sum reaches ttl; the lease is live, so the sum is
//    below ttl and the observed spans together last less than (ttl + k)/(1-ρ) of true time.
//  - Between them, k gaps: from a term's last entry to the next termStart. What the log cannot see there is
//    excused only while nobody could write (lock-served.ts: no ready leader in contact with a quorum and
//    keeping up); a leader that COULD write owes the log its time in office, so the served part of each gap
//    may be at most SERVED_TAIL — its last checkpoint interval and housekeeping tick, the commit round
//    of that checkpoint, and the detection lag of "served" (sized below).
// So: true(e) - r < (ttl + 1)/(1-ρ) + [k > 0] (ttl + k)/(1-ρ) + Σ_gaps min(gap, unserved(gap) + SERVED_TAIL).
// Two violations, one per line of that argument:
//  - "max hold (true time)": a live lease held longer than the bound (the sum; catches observed time
//    overwritten instead of summed, lock mutant r);
//  - "max hold (term tail)": a gap a live lease crossed whose served part exceeds SERVED_TAIL (the premise
//    per term; catches a leader that never checkpoints, which the sum rarely sees because clients' own
//    entries end most dead leases in time anyway).
// SERVED_TAIL = checkpointIdle/(1-ρ) + housekeeping period + 4 heartbeats + 4 max network delays + max disk
// write. Measured on the real code over lock seeds 1-3000 (issue 22): the largest served tail was 0.70 of it
// (seed 2749: 124.6 of 179.1 ms), and the sum's tightest margin was 1.1 ms (seed 578): it is exact up to stamp rounding. A leader in a
// leadership transfer counts as unable to write (it refuses proposals): before lock-served.ts knew that,
// seed 638 showed a 130 ms "served" tail with a transfer to a cut-off node in it.
// Leases granted before the log reached cluster level 2 are not checked: level 1's max() rule lets log time
// stand still after a fast-clocked leader (issue 22 finding 1), which is what level 2 fixed.
import type { StateCapture, StampWindow } from './lock-invariants.js';
import type { ServedTimeline } from './lock-served.js';
import type { LockProfile } from './lock-clock.js';
import type { SimProfile } from './profile.js';

/** The oracle's view of a hold (lock-invariants.ts OracleLease). */
export interface HoldView {
  owner: string;
  token: bigint;
  ttlMs: number;
  grantIndex: number;
  grantAt: StampWindow;
  /** The session it lives under: its times are the session's. */
  session?: HoldView;
}

export interface MaxHoldStats {
  checks: number;
  /** Smallest (bound - true time held) over all checks, ms. */
  tightestMarginMs: number;
  /** Epoch starts seen, and the largest served part of a gap that a live lease crossed (what SERVED_TAIL
   *  must cover). */
  gaps: number;
  maxServedGapMs: number;
}

export class MaxHoldCheck {
  violation: string | null = null;
  readonly stats: MaxHoldStats = { checks: 0, tightestMarginMs: Infinity, gaps: 0, maxServedGapMs: 0 };
  /** Index of each epoch start, and the excused gap time summed up to and including it. */
  private readonly epochIndex: number[] = [];
  private readonly excusedSum: number[] = [];
  private lastStamp: StampWindow | null = null;

  constructor(
    private readonly maxDrift: number,
    /** The served part of a gap that is excused (see the header). */
    private readonly servedTailMs: number,
    private readonly timeline: ServedTimeline,
  ) {}

  /** After the oracle judged entry `index`: `holdOf(key)` is its model of the key's hold after the entry;
   *  `level2From` the first index at cluster level 2 (Infinity while the log is at level 1). */
  afterEntry(
    index: number,
    at: string,
    stamp: StampWindow,
    pre: StateCapture,
    post: StateCapture,
    keys: readonly string[],
    holdOf: (key: string) => HoldView | undefined,
    level2From: number,
  ): void {
    if (post.epochTerm !== pre.epochTerm && this.lastStamp !== null)
      this.gap(
        index,
        this.lastStamp,
        stamp,
        pre.views.some((v) => v.held && v.expiresAtMs > pre.nowMs),
      );
    this.lastStamp = stamp;
    if (this.violation !== null) return;
    for (let i = 0; i < keys.length; i++) {
      const v = post.views[i]!;
      if (!v.held || v.expiresAtMs <= post.nowMs) continue;
      const hold = holdOf(keys[i]!);
      if (hold === undefined) continue; // the oracle reports the disagreement itself
      const lease = hold.session ?? hold;
      if (lease.grantIndex < level2From) continue;
      this.check(keys[i]!, lease, at, stamp);
      if (this.violation !== null) return;
    }
  }

  /** An epoch start at `index`: the gap from the previous entry's stamp to this termStart's. */
  private gap(index: number, before: StampWindow, start: StampWindow, leasesLive: boolean): void {
    // Lenient ends: the gap as wide as the stamp windows allow.
    const length = Math.max(0, start.max - before.min);
    const unserved = this.timeline.unservedBetween(before.min, start.max);
    const served = length - unserved;
    this.stats.gaps++;
    // Only a gap a live lease crossed owes the log its time: without leases the leader checkpoints nothing.
    if (leasesLive) {
      if (served > this.stats.maxServedGapMs) this.stats.maxServedGapMs = served;
      // The bound's premise, checked on each term by itself: a term whose leader could still write left at
      // most SERVED_TAIL unobserved. (A leader that never checkpoints shows here long before the sum does:
      // clients' own entries usually end the dead lease anyway.)
      if (served > this.servedTailMs + 1e-6 && this.violation === null) {
        this.violation =
          `max hold (term tail): a live lease crossed the gap between the entry stamped by ${before.node} at true t=${before.min.toFixed(3)} and the termStart (entry ${index}) stamped by ${start.node} at t=${start.max.toFixed(3)}; ` +
          `for ${served.toFixed(3)}ms of it a ready leader in contact with its quorum could write, yet the log shows nothing — more than the ${this.servedTailMs.toFixed(1)}ms its last checkpoint interval, housekeeping tick and commit round explain. ` +
          `A leader must write its time in office into the log while leases live, or a chain of such terms keeps a dead lease alive (LEASES.md "Liveness", etcd #9395)`;
      }
    }
    const prev = this.excusedSum.length > 0 ? this.excusedSum[this.excusedSum.length - 1]! : 0;
    this.epochIndex.push(index);
    this.excusedSum.push(prev + Math.min(length, unserved + this.servedTailMs));
  }

  private check(key: string, lease: HoldView, at: string, stamp: StampWindow): void {
    // Epoch starts after the grant: the first whose index is above grantIndex.
    let lo = 0;
    let hi = this.epochIndex.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.epochIndex[mid]! > lease.grantIndex) hi = mid;
      else lo = mid + 1;
    }
    const epochs = this.epochIndex.length - lo;
    const excused = epochs === 0 ? 0 : this.excusedSum[this.excusedSum.length - 1]! - (lo > 0 ? this.excusedSum[lo - 1]! : 0);
    const slow = 1 - this.maxDrift;
    const bound = (lease.ttlMs + 1) / slow + (epochs > 0 ? (lease.ttlMs + epochs) / slow : 0) + excused;
    const held = stamp.min - lease.grantAt.max;
    const margin = bound - held;
    this.stats.checks++;
    if (margin < this.stats.tightestMarginMs) this.stats.tightestMarginMs = margin;
    if (margin < -1e-6 && this.violation === null) {
      this.violation =
        `max hold (true time): ${key}'s lease (${lease.owner}, token ${lease.token}, ttl ${lease.ttlMs}ms) granted/renewed by entry ${lease.grantIndex} ` +
        `stamped by ${lease.grantAt.node} at true t=${lease.grantAt.max.toFixed(3)} is still live after ${at}, stamped by ${stamp.node} at true t=${stamp.min.toFixed(3)}: ` +
        `held ${held.toFixed(3)}ms of true time without a renew, more than the bound ${bound.toFixed(3)}ms = (ttl + 1)/(1 - maxDrift ${this.maxDrift})` +
        `${epochs > 0 ? ` + (ttl + ${epochs} epochs)/(1 - maxDrift) + ${excused.toFixed(3)}ms of gaps between terms excused (unserved, or at most ${this.servedTailMs.toFixed(1)}ms served each)` : ''}` +
        ` — a run of leader changes must not keep a dead holder's lease alive (LEASES.md "Liveness", etcd #9395)`;
    }
  }
}

/** SERVED_TAIL for one run (see the header). */
export function servedTailMs(lock: LockProfile, sim: SimProfile): number {
  return (
    lock.checkpointIdleMs / (1 - lock.maxDrift) +
    lock.housekeepingEveryTicks * sim.tickMs +
    4 * (sim.raft.heartbeatTicks ?? 1) * sim.tickMs +
    4 * sim.netDelayMaxMs +
    sim.diskMaxMs
  );
}
