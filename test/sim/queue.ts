// The simulator's event queue: a binary min-heap ordered by (time, seq). `seq` is a global insertion
// counter, so two events at the same virtual time always pop in the order they were scheduled — the
// run is a pure function of the seed, never of heap internals.

export interface Timed {
  time: number;
  seq: number;
}

export class EventQueue<E extends Timed> {
  private heap: E[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.heap.length;
  }

  /** Assigns `seq` and inserts. */
  push(ev: E): void {
    ev.seq = this.nextSeq++;
    const h = this.heap;
    let i = h.length;
    h.push(ev);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = h[p]!;
      if (less(parent, ev)) break;
      h[i] = parent;
      i = p;
    }
    h[i] = ev;
  }

  peek(): E | undefined {
    return this.heap[0];
  }

  pop(): E | undefined {
    const h = this.heap;
    const top = h[0];
    if (top === undefined) return undefined;
    const last = h.pop()!;
    const n = h.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && less(h[r]!, h[l]!) ? r : l;
        if (!less(h[c]!, last)) break;
        h[i] = h[c]!;
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}

function less(a: Timed, b: Timed): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
