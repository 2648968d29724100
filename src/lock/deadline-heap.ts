// A hand-written indexed binary min-heap of leases ordered by (leaseDeadlineMs, fencingToken).
//
// Why: the leader asks "which leases are past their deadline?" on every tick; scanning a million leases
// each time would be O(n). The heap answers in O(k) for k due leases, and keeps each lease's position in
// `lease.heapIndex` so a renew (deadline moves) or release (lease leaves) is O(log n) instead of a search.
// The token tie-break makes the order total, hence deterministic across replicas.
import type { Lease } from './lease.js';

function before(a: Lease, b: Lease): boolean {
  return a.leaseDeadlineMs < b.leaseDeadlineMs || (a.leaseDeadlineMs === b.leaseDeadlineMs && a.fencingToken < b.fencingToken);
}

export class DeadlineHeap {
  private readonly items: Lease[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): Lease | undefined {
    return this.items[0];
  }

  push(lease: Lease): void {
    lease.heapIndex = this.items.length;
    this.items.push(lease);
    this.siftUp(lease.heapIndex);
  }

  remove(lease: Lease): void {
    const at = lease.heapIndex;
    if (at < 0 || this.items[at] !== lease) return;
    const last = this.items.pop()!;
    lease.heapIndex = -1;
    if (last === lease) return;
    this.items[at] = last;
    last.heapIndex = at;
    this.restore(at);
  }

  /** Call after the lease's deadline (or token) changed. */
  update(lease: Lease): void {
    if (lease.heapIndex >= 0 && this.items[lease.heapIndex] === lease) this.restore(lease.heapIndex);
  }

  /** Add many leases at once (snapshot restore): O(n) instead of O(n log n) pushes. */
  pushAll(leases: Iterable<Lease>): void {
    for (const lease of leases) {
      lease.heapIndex = this.items.length;
      this.items.push(lease);
    }
    this.rebuild();
  }

  /** Re-establish heap order after many keys changed at once (a term start touches every lease): O(n). */
  rebuild(): void {
    for (let i = (this.items.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /**
   * Up to `limit` leases with leaseDeadlineMs <= nowMs, earliest first. Walks only the due part of the
   * heap: if a node is not due, neither is anything below it. Cost O(k log k) for k returned.
   */
  due(nowMs: number, limit: number): Lease[] {
    const out: Lease[] = [];
    if (limit <= 0 || this.items.length === 0 || this.items[0]!.leaseDeadlineMs > nowMs) return out;
    // Best-first walk with a small frontier heap of positions, so the result is exactly the earliest k.
    const frontier: number[] = [0];
    const earlier = (a: number, b: number) => before(this.items[a]!, this.items[b]!);
    while (frontier.length > 0 && out.length < limit) {
      const at = popMin(frontier, earlier);
      out.push(this.items[at]!);
      for (const child of [2 * at + 1, 2 * at + 2]) {
        const lease = this.items[child];
        if (lease !== undefined && lease.leaseDeadlineMs <= nowMs) pushMin(frontier, child, earlier);
      }
    }
    return out;
  }

  /** Test hook: the heap invariant and the back-pointers hold. */
  checkInvariant(): boolean {
    return this.items.every(
      (lease, i) => lease.heapIndex === i && (i === 0 || !before(lease, this.items[(i - 1) >> 1]!)),
    );
  }

  private restore(at: number): void {
    if (at > 0 && before(this.items[at]!, this.items[(at - 1) >> 1]!)) this.siftUp(at);
    else this.siftDown(at);
  }

  private siftUp(start: number): void {
    const items = this.items;
    const lease = items[start]!;
    let at = start;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parent = items[parentAt]!;
      if (!before(lease, parent)) break;
      items[at] = parent;
      parent.heapIndex = at;
      at = parentAt;
    }
    items[at] = lease;
    lease.heapIndex = at;
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
      const child = right < count && before(items[right]!, items[left]!) ? right : left;
      if (!before(items[child]!, lease)) break;
      items[at] = items[child]!;
      items[at]!.heapIndex = at;
      at = child;
    }
    items[at] = lease;
    lease.heapIndex = at;
  }
}

// A plain array min-heap of positions for the best-first walk in `due` (small: at most k + 1 entries).
function pushMin(heap: number[], value: number, earlier: (a: number, b: number) => boolean): void {
  let at = heap.length;
  heap.push(value);
  while (at > 0) {
    const parentAt = (at - 1) >> 1;
    if (!earlier(heap[at]!, heap[parentAt]!)) break;
    [heap[at], heap[parentAt]] = [heap[parentAt]!, heap[at]!];
    at = parentAt;
  }
}

function popMin(heap: number[], earlier: (a: number, b: number) => boolean): number {
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
