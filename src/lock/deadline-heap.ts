// Hand-written indexed binary min-heaps of leases (no package keeps an element's position in the element,
// which is what makes an update O(log n) instead of a search).
// - DeadlineHeap, by (expiresAtMs, fencingToken): the leader asks "which leases are past their
//   deadline?" on every tick; scanning a million leases each time would be O(n). It answers in O(k) for k
//   due leases, and a renew (deadline moves) or release (lease leaves) is O(log n).
// - EndByHeap, by (end-by key, fencingToken): which leases a term start ends (lazy epochs: machine-state.ts
//   `epochs`, machine-time.ts startEpoch). The key is derived from the lease (endByKeyOf), not stored in it.
// The token tie-break makes each order total, hence deterministic across replicas.
import { endByMs } from './epoch.js';
import type { Lease } from './lease.js';

function before(a: Lease, b: Lease): boolean {
  return a.expiresAtMs < b.expiresAtMs || (a.expiresAtMs === b.expiresAtMs && a.fencingToken < b.fencingToken);
}

/**
 * A lease's EndByHeap key: when the current term will have observed it for its whole TTL (epoch.ts endByMs),
 * minus the shift of the term starts it has seen (`shiftsMs[i]`: the sum of T - P over the first i). Every
 * term start a lease in the heap has not seen yet extends it (one that ends it, or finds it expired, pops it
 * first: machine-time.ts endingAt), and an extension moves endByMs by exactly that epoch's T - P, so settling
 * a lease never changes its key and an unsettled lease's key is exact. Derived, not a field: a field of log
 * time is a double, boxed by V8 — 24 of a lease's bytes (the slot and its box).
 */
export function endByKeyOf(lease: Lease, shiftsMs: readonly number[]): number {
  return endByMs(lease) - shiftsMs[lease.epochsSeen]!;
}

/** Which of a lease's two position fields a heap owns. */
type Slot = 'heapIndex' | 'endByIndex';

class LeaseHeap {
  protected items: Lease[] = [];

  constructor(
    /** The order: by key(), then by token. */
    protected readonly before: (a: Lease, b: Lease) => boolean,
    /** The key `before` compares first (rebuild reads each once). */
    private readonly key: (lease: Lease) => number,
    private readonly slot: Slot,
  ) {}

  get size(): number {
    return this.items.length;
  }

  peek(): Lease | undefined {
    return this.items[0];
  }

  push(lease: Lease): void {
    lease[this.slot] = this.items.length;
    this.items.push(lease);
    this.siftUp(lease[this.slot]);
  }

  remove(lease: Lease): void {
    const at = lease[this.slot];
    if (at < 0 || this.items[at] !== lease) return;
    const last = this.items.pop()!;
    lease[this.slot] = -1;
    if (last === lease) return;
    this.items[at] = last;
    last[this.slot] = at;
    this.restore(at);
  }

  /** Call after the lease's deadline (or token) changed. */
  update(lease: Lease): void {
    if (lease[this.slot] >= 0 && this.items[lease[this.slot]] === lease) this.restore(lease[this.slot]);
  }

  /** Add many leases at once (snapshot restore): O(n) instead of O(n log n) pushes (rebuild sets their
   *  positions). */
  pushAll(leases: Iterable<Lease>): void {
    for (const lease of leases) this.items.push(lease);
    this.rebuild();
  }

  /** Takes `leases` as the items of this empty heap (a restore), ordered in O(n) by rebuild: no copy pushed one
   *  at a time. The heap owns the array from then on; the caller keeps no reference to it. */
  adopt(leases: Lease[]): void {
    if (this.items.length !== 0) throw new Error('adopt: the heap is not empty');
    this.items = leases;
    this.rebuild();
  }

  /** Re-establish heap order after many keys changed at once: O(n). The sift-down of every parent, as
   *  siftDown does it, on each lease's key and token read once into arrays beside the items: a restore of a
   *  million leases spent ~0.4 s deriving the end-by key (endByKeyOf) two at a time, four times a lease, and
   *  reading tokens through the leases is a cache miss a comparison. */
  rebuild(): void {
    const items = this.items;
    const count = items.length;
    const keys = new Float64Array(count);
    const tokens = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      const lease = items[i]!;
      keys[i] = this.key(lease);
      tokens[i] = lease.fencingToken;
    }
    for (let start = (count >> 1) - 1; start >= 0; start--) {
      const lease = items[start]!;
      const key = keys[start]!;
      const token = tokens[start]!;
      let at = start;
      for (;;) {
        const left = 2 * at + 1;
        if (left >= count) break;
        const right = left + 1;
        const child =
          right < count && (keys[right]! < keys[left]! || (keys[right] === keys[left] && tokens[right]! < tokens[left]!)) ? right : left;
        const childKey = keys[child]!;
        if (!(childKey < key || (childKey === key && tokens[child]! < token))) break;
        items[at] = items[child]!;
        keys[at] = childKey;
        tokens[at] = tokens[child]!;
        at = child;
      }
      items[at] = lease;
      keys[at] = key;
      tokens[at] = token;
    }
    this.placeAll();
  }

  /** Every item's position field set to where it is (the subclass knows which field: a store to a field
   *  named at run time is a slow keyed store, two million of them at a restore). */
  protected placeAll(): void {
    for (let i = 0; i < this.items.length; i++) this.items[i]![this.slot] = i;
  }

  /** Test hook: the heap invariant and the back-pointers hold. */
  checkInvariant(): boolean {
    return this.items.every((lease, i) => lease[this.slot] === i && (i === 0 || !this.before(lease, this.items[(i - 1) >> 1]!)));
  }

  private restore(at: number): void {
    if (at > 0 && this.before(this.items[at]!, this.items[(at - 1) >> 1]!)) this.siftUp(at);
    else this.siftDown(at);
  }

  private siftUp(start: number): void {
    const items = this.items;
    const lease = items[start]!;
    let at = start;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parent = items[parentAt]!;
      if (!this.before(lease, parent)) break;
      items[at] = parent;
      parent[this.slot] = at;
      at = parentAt;
    }
    items[at] = lease;
    lease[this.slot] = at;
  }

  private siftDown(start: number): void {
    const items = this.items;
    const lease = items[start]!;
    const count = items.length;
    let at = start;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= count) break;
      const right = left + 1;
      const child = right < count && this.before(items[right]!, items[left]!) ? right : left;
      if (!this.before(items[child]!, lease)) break;
      items[at] = items[child]!;
      items[at]![this.slot] = at;
      at = child;
    }
    items[at] = lease;
    lease[this.slot] = at;
  }
}

export class DeadlineHeap extends LeaseHeap {
  constructor() {
    super(before, (lease) => lease.expiresAtMs, 'heapIndex');
  }

  protected override placeAll(): void {
    const items = this.items;
    for (let i = 0; i < items.length; i++) items[i]!.heapIndex = i;
  }

  /**
   * Up to `limit` leases with expiresAtMs <= nowMs (and `only`, when given), earliest first. Walks only the due part of the
   * heap: if a node is not due, neither is anything below it. Cost O(k log k) for k returned.
   */
  due(nowMs: number, limit: number, only?: (lease: Lease) => boolean): Lease[] {
    const out: Lease[] = [];
    if (limit <= 0 || this.items.length === 0 || this.items[0]!.expiresAtMs > nowMs) return out;
    // Best-first walk with a small frontier heap of positions, so the result is exactly the earliest k.
    const frontier: number[] = [0];
    const earlier = (a: number, b: number) => this.before(this.items[a]!, this.items[b]!);
    while (frontier.length > 0 && out.length < limit) {
      const at = popMin(frontier, earlier);
      if (only === undefined || only(this.items[at]!)) out.push(this.items[at]!);
      for (const child of [2 * at + 1, 2 * at + 2]) {
        const lease = this.items[child];
        if (lease !== undefined && lease.expiresAtMs <= nowMs) pushMin(frontier, child, earlier);
      }
    }
    return out;
  }
}

export class EndByHeap extends LeaseHeap {
  /** `shiftsMs`: the machine's (MachineState.epochShiftsMs), read at every comparison. */
  constructor(private readonly shiftsMs: readonly number[]) {
    super(
      (a, b) => {
        const aKey = endByKeyOf(a, shiftsMs);
        const bKey = endByKeyOf(b, shiftsMs);
        return aKey < bKey || (aKey === bKey && a.fencingToken < b.fencingToken);
      },
      (lease) => endByKeyOf(lease, shiftsMs),
      'endByIndex',
    );
  }

  protected override placeAll(): void {
    const items = this.items;
    for (let i = 0; i < items.length; i++) items[i]!.endByIndex = i;
  }

  /** The end-by key of `lease` (endByKeyOf). */
  keyOf(lease: Lease): number {
    return endByKeyOf(lease, this.shiftsMs);
  }
}

// A plain array min-heap (no positions kept in the items): the best-first walk in `due` uses it for heap
// positions (small: at most k + 1 entries), key-delays.ts for its (until, key) pairs.
export function pushMin<T>(heap: T[], value: T, earlier: (a: T, b: T) => boolean): void {
  let at = heap.length;
  heap.push(value);
  while (at > 0) {
    const parentAt = (at - 1) >> 1;
    if (!earlier(heap[at]!, heap[parentAt]!)) break;
    [heap[at], heap[parentAt]] = [heap[parentAt]!, heap[at]!];
    at = parentAt;
  }
}

export function popMin<T>(heap: T[], earlier: (a: T, b: T) => boolean): T {
  const top = heap[0]!;
  const last = heap.pop()!;
  if (heap.length > 0) {
    heap[0] = last;
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && earlier(heap[right]!, heap[left]!) ? right : left;
      if (!earlier(heap[child]!, heap[at]!)) break;
      [heap[at], heap[child]] = [heap[child]!, heap[at]!];
      at = child;
    }
  }
  return top;
}
