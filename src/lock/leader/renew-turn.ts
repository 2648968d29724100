// The lock renews a leader admits in one turn, collected for one `renews` entry (tag 24, cluster level 7).
// A turn is what the driver hands the leader before its `turnEnd` event: the adapter sends that event from
// its scheduler's `soon` (setImmediate), so every call that arrived in one pass of the event loop's I/O
// travels in one entry. The leader stays pure: it only says when it starts collecting (`collecting`), and
// proposes at `turnEnd`.
//
// Each renew carries its request's own token: the machine judges owner, token and liveness when the entry
// applies, never here — a token read off the state now could be superseded by an entry applied before ours.
import type { RenewItem } from '../command-types.js';
import type { ValidRenew } from '../validate.js';
import type { CallId } from './types.js';

export interface CollectedRenew {
  callId: CallId;
  req: ValidRenew;
  timeoutMs: number;
}

/** One entry's worth of collected renews: the callers (answered in this order) and what the entry carries. */
export interface RenewBatch {
  callIds: CallId[];
  renews: RenewItem[];
  /** The shortest timeout among them: no caller waits for the entry longer than its own call allows. */
  timeoutMs: number;
}

export class RenewTurn {
  private pending: CollectedRenew[] = [];
  /** The keys of the pending renews: an entry for one of them proposed now must come after them. */
  private readonly keys = new Map<string, number>();

  get size(): number {
    return this.pending.length;
  }

  /** Collect a renew; true when it is the turn's first (the driver must then be asked for a turnEnd). */
  add(renew: CollectedRenew): boolean {
    this.pending.push(renew);
    this.keys.set(renew.req.key, (this.keys.get(renew.req.key) ?? 0) + 1);
    return this.pending.length === 1;
  }

  hasKey(key: string): boolean {
    return this.keys.has(key);
  }

  /** Take out the renew of `callId` (its caller went away before it was proposed); false if none. */
  drop(callId: CallId): boolean {
    const at = this.pending.findIndex((r) => r.callId === callId);
    if (at < 0) return false;
    const [gone] = this.pending.splice(at, 1);
    this.forgetKey(gone!.req.key);
    return true;
  }

  /** Every pending renew, in arrival order, in entries of at most `perEntry` renews. */
  takeBatches(perEntry: number): RenewBatch[] {
    const batches: RenewBatch[] = [];
    for (let at = 0; at < this.pending.length; at += perEntry) {
      const slice = this.pending.slice(at, at + perEntry);
      batches.push({
        callIds: slice.map((r) => r.callId),
        renews: slice.map(({ req }) => ({ key: req.key, owner: req.owner, token: req.token, ttlMs: req.ttlMs })),
        timeoutMs: Math.min(...slice.map((r) => r.timeoutMs)),
      });
    }
    this.clear();
    return batches;
  }

  /** Every pending caller, and nothing pending any more (the leadership ended, the node closes). */
  takeCalls(): CallId[] {
    const calls = this.pending.map((r) => r.callId);
    this.clear();
    return calls;
  }

  private clear(): void {
    this.pending = [];
    this.keys.clear();
  }

  private forgetKey(key: string): void {
    const n = this.keys.get(key)! - 1;
    if (n === 0) this.keys.delete(key);
    else this.keys.set(key, n);
  }
}
