// FIFO wait queues per key, held by the leader only (README "Waiting for a lock"). Exactly the head of a
// key's queue is ever offered the lock, so a release wakes one waiter, not a herd. A waiter joins at the
// moment its request is handled — before its first acquire is decided — so arrival order is grant order.
import type { ValidAcquire } from '../validate.js';
import type { CallId } from './types.js';

export interface Waiter {
  /** The call that created the waiter (its identity; it may have left since, see `calls`). */
  callId: CallId;
  /** Every open call waiting on this request: the first, plus duplicates and retries of the same
   *  (owner, request_id) that arrived while it waited. One request, one place in the queue, one answer. */
  calls: CallId[];
  req: ValidAcquire;
  /** Arrival time + wait_ms, in the leader's injected time. */
  deadlineMs: number;
  /** An acquire for this waiter is in flight through Raft (its first one, or the grant offered to it). */
  granting: boolean;
  /** Its wait deadline passed while an acquire for it was in flight: that acquire decides. */
  expired: boolean;
  /** Every caller went away while an acquire for it was in flight (already failed; kept until the
   *  outcome so that one acquire per key is in flight at a time). */
  cancelled: boolean;
  /** Still in its key's queue. */
  queued: boolean;
}

/** A wait_ms = 0 request that arrived while the head's acquire was in flight: it is refused (no barging),
 *  but only once that acquire has decided, so the refusal reflects a holder the log knows about. */
export interface ParkedRefusal {
  callId: CallId;
  req: ValidAcquire;
  timeoutMs: number;
}

interface KeyQueue {
  waiters: Waiter[];
  parked: ParkedRefusal[];
}

export class WaitQueues {
  private readonly queues = new Map<string, KeyQueue>();
  private readonly byCall = new Map<CallId, Waiter | ParkedRefusal>();
  /** Waiters in every queue, kept as a count: the maxWaiters admission reads it on every waiting acquire. */
  private waiterTotal = 0;

  /** Waiters queued for `key` (parked refusals do not count). */
  has(key: string): boolean {
    return (this.queues.get(key)?.waiters.length ?? 0) > 0;
  }

  head(key: string): Waiter | undefined {
    return this.queues.get(key)?.waiters[0];
  }

  get size(): number {
    return this.waiterTotal;
  }

  /** Waiters queued for `key`. */
  countFor(key: string): number {
    return this.queues.get(key)?.waiters.length ?? 0;
  }

  push(w: Waiter): void {
    this.waiterTotal++;
    this.queue(w.req.key).waiters.push(w);
    w.queued = true;
    for (const id of w.calls) this.byCall.set(id, w);
  }

  /** The waiter of the same request (owner and request_id) queued for `key`, if any. */
  waiterFor(key: string, owner: string, requestId: string): Waiter | undefined {
    if (requestId === '') return undefined;
    return this.queues.get(key)?.waiters.find((w) => w.req.owner === owner && w.req.requestId === requestId);
  }

  /** Another call of the same request joins waiter `w` (it gets w's answer). */
  attach(w: Waiter, id: CallId): void {
    w.calls.push(id);
    this.byCall.set(id, w);
  }

  /** Call `id` leaves waiter `w` (the waiter stays while other calls wait on it). */
  detach(w: Waiter, id: CallId): void {
    const i = w.calls.indexOf(id);
    if (i >= 0) w.calls.splice(i, 1);
    if (this.byCall.get(id) === w) this.byCall.delete(id);
  }

  park(p: ParkedRefusal): void {
    this.queue(p.req.key).parked.push(p);
    this.byCall.set(p.callId, p);
  }

  /** The waiter or parked refusal of call `id`. */
  call(id: CallId): Waiter | ParkedRefusal | undefined {
    return this.byCall.get(id);
  }

  /** Removes a waiter or parked refusal; false when it was no longer there. */
  remove(item: Waiter | ParkedRefusal): boolean {
    if ('deadlineMs' in item) {
      if (!item.queued) return false;
      item.queued = false;
      this.waiterTotal--;
      for (const id of item.calls) if (this.byCall.get(id) === item) this.byCall.delete(id);
    } else {
      if (this.byCall.get(item.callId) !== item) return false;
      this.byCall.delete(item.callId);
    }
    const q = this.queues.get(item.req.key)!;
    const list: (Waiter | ParkedRefusal)[] = 'deadlineMs' in item ? q.waiters : q.parked;
    list.splice(list.indexOf(item), 1);
    if (q.waiters.length === 0 && q.parked.length === 0) this.queues.delete(item.req.key);
    return true;
  }

  /** Takes every parked refusal of `key`, in arrival order. */
  takeParked(key: string): ParkedRefusal[] {
    const q = this.queues.get(key);
    if (!q || q.parked.length === 0) return [];
    const parked = q.parked;
    q.parked = [];
    for (const p of parked) this.byCall.delete(p.callId);
    if (q.waiters.length === 0) this.queues.delete(key);
    return parked;
  }

  /** Every waiter, key by key in FIFO order. */
  waiters(): Waiter[] {
    return [...this.queues.values()].flatMap((q) => q.waiters);
  }

  /** Empties every queue; returns the call ids of everyone who was in one, still to be answered. */
  clear(): CallId[] {
    const open: CallId[] = [];
    for (const q of this.queues.values()) {
      for (const w of q.waiters) {
        w.queued = false;
        open.push(...w.calls);
      }
      for (const p of q.parked) open.push(p.callId);
    }
    this.queues.clear();
    this.byCall.clear();
    this.waiterTotal = 0;
    return open;
  }

  private queue(key: string): KeyQueue {
    let q = this.queues.get(key);
    if (!q) {
      q = { waiters: [], parked: [] };
      this.queues.set(key, q);
    }
    return q;
  }
}
