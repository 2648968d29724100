// FIFO wait queues per key, held by the leader only (see README "Waiting for a lock"). Exactly the head
// of a key's queue is ever offered the lock, so a release wakes one waiter, not a herd.
import type { AcquireResult } from '../lock/types.js';
import type { ValidAcquire } from '../lock/validate.js';

export interface Waiter {
  req: ValidAcquire;
  resolve(r: AcquireResult): void;
  reject(e: Error): void;
  /** An acquire for this waiter is in flight through Raft. */
  granting: boolean;
  /** Its wait deadline passed while a grant was in flight. */
  expired?: boolean;
  timer: NodeJS.Timeout | null;
}

export class WaitQueues {
  private queues = new Map<string, Waiter[]>();

  push(w: Waiter): void {
    const q = this.queues.get(w.req.key);
    if (q) q.push(w);
    else this.queues.set(w.req.key, [w]);
  }

  has(key: string): boolean {
    return this.queues.has(key);
  }

  head(key: string): Waiter | undefined {
    return this.queues.get(key)?.[0];
  }

  /** Removes `w`; false when it was no longer queued. */
  remove(w: Waiter): boolean {
    const q = this.queues.get(w.req.key);
    if (!q) return false;
    const i = q.indexOf(w);
    if (i < 0) return false;
    q.splice(i, 1);
    if (q.length === 0) this.queues.delete(w.req.key);
    if (w.timer) clearTimeout(w.timer);
    return true;
  }

  failAll(err: Error): void {
    const all = [...this.queues.values()].flat();
    this.queues.clear();
    for (const w of all) {
      if (w.timer) clearTimeout(w.timer);
      w.reject(err);
    }
  }
}

/** Acquire refusals the leader answered without a log entry (wait deadline passed, or refused behind
 *  waiters), by (owner, request_id): bounded in count and age, oldest forgotten first. */
export class RecentRefusals {
  private readonly byRequest = new Map<string, { result: AcquireResult; at: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly maxAgeMs: number,
  ) {}

  set(owner: string, requestId: string, result: AcquireResult): void {
    if (requestId === '') return;
    const k = `${owner.length}:${owner}${requestId}`;
    this.byRequest.delete(k);
    this.byRequest.set(k, { result, at: Date.now() });
    this.prune();
  }

  get(owner: string, requestId: string): AcquireResult | undefined {
    if (requestId === '') return undefined;
    const hit = this.byRequest.get(`${owner.length}:${owner}${requestId}`);
    if (!hit || Date.now() - hit.at > this.maxAgeMs) return undefined;
    return { ...hit.result, replayed: true };
  }

  private prune(): void {
    const now = Date.now();
    for (const [k, v] of this.byRequest) {
      if (this.byRequest.size <= this.maxEntries && now - v.at <= this.maxAgeMs) break;
      this.byRequest.delete(k);
    }
  }
}
