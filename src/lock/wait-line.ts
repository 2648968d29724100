// The replicated wait queue: who is in line for which key, in the order the log put them there.
//
// Rule (SPEC "The wait queue is replicated"): a blocking acquire that cannot be granted joins its key's line
// in the entry that judged it, and its place is that entry's index — its *ticket*. Tickets only grow, so a
// key's line is in ticket order, and the order is a fact of the log: every replica has the same lines, and
// a leader change loses nobody's place. A retry of the same (owner, request_id) finds its waiter by request
// (byRequest) and keeps the ticket it has — it never takes a new place at the back.
// A waiter leaves the line when the machine grants it (machine-hand-off.ts, handOff), when its wait deadline (log time)
// has passed and a `dequeue` entry says so, when a `dequeue` entry cancels it, or when its key's line is
// handed off past it because its deadline passed. Invariant kept by the machine: a key has waiters only while
// it has a lease (live, or past its deadline awaiting the entry that ends it and hands off), many holds
// (holds.ts), or a lock-delay (key-delays.ts) — what a restore checks (machine-restore.ts).
// Memory is bounded by the leader's admission limits (maxWaiters, maxWaitersPerKey): every waiter joined
// through a proposal the leader admitted.

/** One request in line. A class, so every waiter shares one hidden class. */
export class Waiter {
  /** Position in the deadline heap (-1 = not in it); maintained by the heap only. */
  heapIndex = -1;

  constructor(
    readonly key: string,
    /** The raft index of the entry that put it in line: its place, and its identity in `dequeue`. */
    readonly ticket: number,
    readonly owner: string,
    /** The lease it asked for, granted from the entry that hands the key to it. */
    readonly ttlMs: number,
    /** '' = none (then it cannot be re-attached to by a retry). */
    readonly requestId: string,
    /** Log time after which it is no longer waiting: a hand-off skips it, a `dequeue` removes it. */
    readonly deadlineMs: number,
    /** The lock-delay its hold will carry once granted (machine.ts `delay`); 0 = none. */
    readonly lockDelayMs: number = 0,
    /** The value its hold will carry once granted; null = none. */
    readonly value: Uint8Array | null = null,
    /** The session its hold will live under once granted (session.ts); 0 = none. */
    readonly sessionId: number = 0,
    /** The key's limit it named (holds.ts): 1 = one exclusive hold or shared ones; >= 2 a semaphore. */
    readonly limit: number = 1,
    /** It asks for a shared hold (holds.ts). */
    readonly shared: boolean = false,
  ) {}
}

/** A waiter whose deadline has passed, for the leader to propose `dequeue {key, ticket}`. */
export interface DueWaiter {
  key: string;
  ticket: number;
  deadlineMs: number;
}

export class WaitLines {
  /** Per key, its waiters by ticket; a Map keeps insertion order, which is ticket order (tickets grow). */
  private readonly lines = new Map<string, Map<number, Waiter>>();
  private readonly byRequest = new Map<string, Waiter>();
  private readonly deadlines = new WaiterHeap();
  private count = 0;
  /** Keys whose line changed since the applied store last took them (store-records.ts); null while nothing
   *  persists the state record by record. */
  changed: Set<string> | null = null;

  get size(): number {
    return this.count;
  }

  get keyCount(): number {
    return this.lines.size;
  }

  countFor(key: string): number {
    return this.lines.get(key)?.size ?? 0;
  }

  head(key: string): Waiter | undefined {
    const line = this.lines.get(key);
    if (line === undefined) return undefined;
    for (const w of line.values()) return w;
    return undefined;
  }

  /** `key`'s line, in ticket order (empty when nobody waits). */
  lineOf(key: string): Iterable<Waiter> {
    return this.lines.get(key)?.values() ?? [];
  }

  get(key: string, ticket: number): Waiter | undefined {
    return this.lines.get(key)?.get(ticket);
  }

  /** The waiter of (owner, request_id) on any key; requestId '' never matches. */
  byRequestOf(owner: string, requestId: string): Waiter | undefined {
    return requestId === '' ? undefined : this.byRequest.get(requestKey(owner, requestId));
  }

  /** Adds `w` at the back of its key's line. Its ticket must be above every ticket already in line. */
  join(w: Waiter): void {
    let line = this.lines.get(w.key);
    if (line === undefined) this.lines.set(w.key, (line = new Map()));
    line.set(w.ticket, w);
    this.changed?.add(w.key);
    if (w.requestId !== '') this.byRequest.set(requestKey(w.owner, w.requestId), w);
    this.deadlines.push(w);
    this.count++;
  }

  leave(w: Waiter): void {
    const line = this.lines.get(w.key);
    if (line === undefined || line.get(w.ticket) !== w) return;
    line.delete(w.ticket);
    this.changed?.add(w.key);
    if (line.size === 0) this.lines.delete(w.key);
    if (w.requestId !== '') this.byRequest.delete(requestKey(w.owner, w.requestId));
    this.deadlines.remove(w);
    this.count--;
  }

  /** Up to `limit` waiters whose deadline is <= atMs, earliest first. */
  due(atMs: number, limit: number): DueWaiter[] {
    return this.deadlines.due(atMs, limit).map((w) => ({ key: w.key, ticket: w.ticket, deadlineMs: w.deadlineMs }));
  }

  /** Every waiter, by key then ticket (any order of keys; the snapshot sorts). */
  *all(): IterableIterator<Waiter> {
    for (const line of this.lines.values()) yield* line.values();
  }

  /** Keys with a line. */
  keys(): IterableIterator<string> {
    return this.lines.keys();
  }
}

function requestKey(owner: string, requestId: string): string {
  return `${owner}\u0000${requestId}`;
}

function earlier(a: Waiter, b: Waiter): boolean {
  return a.deadlineMs < b.deadlineMs || (a.deadlineMs === b.deadlineMs && a.ticket < b.ticket);
}

/** An indexed binary min-heap of waiters by (deadlineMs, ticket), written by hand for the same reason as
 *  deadline-heap.ts: removal from the middle (a grant, a cancel) must be O(log n), not a search. */
class WaiterHeap {
  private readonly items: Waiter[] = [];

  push(w: Waiter): void {
    w.heapIndex = this.items.length;
    this.items.push(w);
    this.siftUp(w.heapIndex);
  }

  remove(w: Waiter): void {
    const at = w.heapIndex;
    if (at < 0 || this.items[at] !== w) return;
    const last = this.items.pop()!;
    w.heapIndex = -1;
    if (last === w) return;
    this.items[at] = last;
    last.heapIndex = at;
    if (at > 0 && earlier(last, this.items[(at - 1) >> 1]!)) this.siftUp(at);
    else this.siftDown(at);
  }

  /** The due part only: a node that is not due has no due node below it. O(k log k) for k returned. */
  due(atMs: number, limit: number): Waiter[] {
    const out: Waiter[] = [];
    const frontier: number[] = this.items.length > 0 && this.items[0]!.deadlineMs <= atMs ? [0] : [];
    while (frontier.length > 0 && out.length < limit) {
      // The frontier is small (at most k + 1 positions): pick its earliest by a scan.
      let best = 0;
      for (let i = 1; i < frontier.length; i++) if (earlier(this.items[frontier[i]!]!, this.items[frontier[best]!]!)) best = i;
      const at = frontier[best]!;
      frontier[best] = frontier[frontier.length - 1]!;
      frontier.pop();
      out.push(this.items[at]!);
      for (const child of [2 * at + 1, 2 * at + 2]) {
        const w = this.items[child];
        if (w !== undefined && w.deadlineMs <= atMs) frontier.push(child);
      }
    }
    return out;
  }

  private siftUp(start: number): void {
    const items = this.items;
    const w = items[start]!;
    let at = start;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parent = items[parentAt]!;
      if (!earlier(w, parent)) break;
      items[at] = parent;
      parent.heapIndex = at;
      at = parentAt;
    }
    items[at] = w;
    w.heapIndex = at;
  }

  private siftDown(start: number): void {
    const items = this.items;
    const w = items[start]!;
    let at = start;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && earlier(items[right]!, items[left]!) ? right : left;
      if (!earlier(items[child]!, w)) break;
      items[at] = items[child]!;
      items[at]!.heapIndex = at;
      at = child;
    }
    items[at] = w;
    w.heapIndex = at;
  }
}
