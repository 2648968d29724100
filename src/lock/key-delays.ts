// Lock-delay state (machine.ts, the header's `delay`): which current holds carry a lock-delay, and which
// keys are in one — until when, in log time. Both are replicated state (in the snapshot). The due-list is
// only the leader's question "which delays have passed?", answered from a heap of (until, key) whose stale
// entries (a key undelayed, or delayed again) are dropped as they surface.
import { popMin, pushMin } from './deadline-heap.js';

/** A key whose lock-delay has passed, for the leader to propose `undelay {key}`. */
export interface DueDelay {
  key: string;
  untilMs: number;
}

export class KeyDelays {
  /** key -> lockDelayMs of its current hold (only holds that carry one). */
  private readonly holdDelays = new Map<string, number>();
  /** key -> log time until which nobody is granted the key. */
  private readonly keyDelays = new Map<string, number>();
  /** (untilMs, key) of every delay set, possibly stale; min-heap by untilMs then key. */
  private readonly heap: DueDelay[] = [];
  /** Keys whose delay was set or lifted since the applied store last took them (store-records.ts); null while
   *  nothing persists the state record by record. */
  changedKeys: Set<string> | null = null;

  get holdCount(): number {
    return this.holdDelays.size;
  }

  get keyCount(): number {
    return this.keyDelays.size;
  }

  holdDelayOf(key: string): number {
    return this.holdDelays.get(key) ?? 0;
  }

  /** The current hold of `key` carries `lockDelayMs` (0 = none). */
  setHoldDelay(key: string, lockDelayMs: number): void {
    if (lockDelayMs > 0) this.holdDelays.set(key, lockDelayMs);
    else this.holdDelays.delete(key);
  }

  untilMs(key: string): number | undefined {
    return this.keyDelays.get(key);
  }

  leftMs(key: string, nowMs: number): number {
    const until = this.keyDelays.get(key);
    return until === undefined ? 0 : Math.max(0, until - nowMs);
  }

  /** `key` grants nobody until `untilMs` (a later delay of the same key replaces an earlier one). */
  delayKey(key: string, untilMs: number): void {
    this.keyDelays.set(key, untilMs);
    this.changedKeys?.add(key);
    this.push({ key, untilMs });
  }

  undelay(key: string): void {
    if (this.keyDelays.delete(key)) this.changedKeys?.add(key);
  }

  /**
   * A term start moved log time from P to T > P (machine-time.ts startLeaseEpoch): every delay still running at P
   * is carried across by T - P, as live leases are (epoch.ts). The jump is the new leader's clock being
   * ahead, not time that passed for the holder that went away; counted as time passed, it would let a
   * leader whose clock runs ahead grant the key inside its delay. A delay that had passed by P only awaits
   * its undelay entry and is left alone.
   */
  carryOver(P: number, T: number): void {
    const shift = T - P;
    if (shift <= 0) return;
    for (const [key, until] of this.keyDelays) {
      if (until <= P) continue; // passed before the term ended: awaiting its undelay entry
      this.keyDelays.set(key, until + shift);
      this.changedKeys?.add(key);
      this.push({ key, untilMs: until + shift });
    }
  }

  /** Up to `limit` keys whose delay is <= atMs, earliest first. Stale heap entries are dropped here. */
  due(atMs: number, limit: number): DueDelay[] {
    const out: DueDelay[] = [];
    const kept: DueDelay[] = [];
    while (this.heap.length > 0 && this.heap[0]!.untilMs <= atMs && out.length < limit) {
      const top = this.pop();
      if (this.keyDelays.get(top.key) !== top.untilMs) continue; // undelayed, or delayed anew since
      out.push(top);
      kept.push(top);
    }
    for (const d of kept) this.push(d); // still delayed until its undelay entry applies
    return out;
  }

  /** Every hold delay and key delay, sorted by key (the snapshot's canonical order). */
  sortedHoldDelays(): [string, number][] {
    return [...this.holdDelays].sort(byKey);
  }

  sortedKeyDelays(): [string, number][] {
    return [...this.keyDelays].sort(byKey);
  }

  private push(d: DueDelay): void {
    pushMin(this.heap, d, earlier);
  }

  private pop(): DueDelay {
    return popMin(this.heap, earlier);
  }
}

function earlier(a: DueDelay, b: DueDelay): boolean {
  return a.untilMs < b.untilMs || (a.untilMs === b.untilMs && a.key < b.key);
}

function byKey(a: [string, number], b: [string, number]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}
