// The hand-written indexed min-heap behind expiredLeases, checked against brute force.
import { describe, expect, it } from 'vitest';
import { DeadlineHeap } from '../../../src/lock/deadline-heap.js';
import { Lease } from '../../../src/lock/lease.js';
import { SimRng } from '../../sim/rng.js';

function lease(key: string, token: number, expiresAtMs: number): Lease {
  return new Lease(key, 'o', token, 100, expiresAtMs, 0, 0);
}

describe('DeadlineHeap', () => {
  it('random push/remove/update/rebuild keeps the invariant and answers due() like a sorted scan', () => {
    const rng = new SimRng(42);
    const random = () => rng.float();
    const heap = new DeadlineHeap();
    const live: Lease[] = [];
    let token = 0;
    for (let step = 0; step < 5000; step++) {
      const roll = random();
      if (roll < 0.4 || live.length === 0) {
        const l = lease(`k${step}`, ++token, Math.floor(random() * 1000));
        heap.push(l);
        live.push(l);
      } else if (roll < 0.6) {
        const l = live.splice(Math.floor(random() * live.length), 1)[0]!;
        heap.remove(l);
        expect(l.heapIndex).toBe(-1);
        heap.remove(l); // removing twice is harmless
      } else if (roll < 0.9) {
        const l = live[Math.floor(random() * live.length)]!;
        l.expiresAtMs = Math.floor(random() * 1000);
        heap.update(l);
      } else {
        for (const l of live) if (random() < 0.5) l.expiresAtMs += Math.floor(random() * 500);
        heap.rebuild();
      }
      expect(heap.size).toBe(live.length);
      if (step % 50 === 0) {
        expect(heap.checkInvariant()).toBe(true);
        const now = Math.floor(random() * 1200);
        const limit = Math.floor(random() * 20);
        const expected = live
          .filter((l) => l.expiresAtMs <= now)
          .sort((a, b) => a.expiresAtMs - b.expiresAtMs || a.fencingToken - b.fencingToken)
          .slice(0, limit);
        expect(heap.due(now, limit)).toEqual(expected);
      }
    }
  });

  it('adopt (a restore) orders its items as pushes would, ties by token, and the heap works on from there', () => {
    const rng = new SimRng(9);
    const leases = Array.from({ length: 3000 }, (_, i) => lease(`k${i}`, i + 1, Math.floor(rng.float() * 200)));
    const adopted = new DeadlineHeap();
    adopted.adopt(leases.slice());
    expect(adopted.size).toBe(leases.length);
    expect(adopted.checkInvariant()).toBe(true);
    const sorted = leases.slice().sort((a, b) => a.expiresAtMs - b.expiresAtMs || a.fencingToken - b.fencingToken);
    expect(adopted.due(150, 500)).toEqual(sorted.filter((l) => l.expiresAtMs <= 150).slice(0, 500));
    for (const l of leases.slice(0, 1000)) adopted.remove(l);
    adopted.push(lease('late', 5000, -1)); // earlier than any
    expect(adopted.checkInvariant()).toBe(true);
    expect(adopted.peek()?.key).toBe('late');
    expect(() => adopted.adopt([lease('x', 1, 1)])).toThrow(/not empty/);
  });

  it('peek is the earliest deadline, ties broken by token', () => {
    const heap = new DeadlineHeap();
    heap.push(lease('b', 2, 10));
    heap.push(lease('a', 1, 10));
    heap.push(lease('c', 3, 5));
    expect(heap.peek()?.key).toBe('c');
    expect(heap.due(10, 10).map((l) => l.key)).toEqual(['c', 'a', 'b']);
  });
});
