// Two shortcuts of a restore from the applied store, against what they stand for: the remembered requests
// handed over in their stored order (remembered-records.ts places them by order instead of sorting, and
// sorts as before when it cannot), and the owners' names decoded once (owner-names.ts).
import { describe, expect, it } from 'vitest';
import { decodeUtf8, encodeUtf8 } from '../../../src/lock/bytes.js';
import { OWNER_NAMES_KEPT, OwnerNames } from '../../../src/lock/owner-names.js';
import { RememberedRecords } from '../../../src/lock/remembered-records.js';
import { SimRng } from '../../sim/rng.js';

/** The records' identities (one byte: their index as added) in the order feed() hands them over. */
function fedOrder(seqs: readonly number[]): number[] {
  const records = new RememberedRecords();
  seqs.forEach((seq, i) => records.add(seq, 1000 + i, Uint8Array.of(0, i & 0xff, i >> 8), 1, Uint8Array.of(7), 0));
  const order: number[] = [];
  records.feed({
    reserve: () => {},
    record: (bytes, start) => order.push(bytes[start]! | (bytes[start + 1]! << 8)),
  });
  return order;
}

/** What feed() stood for: the indexes sorted by stored order, ties by index. */
function sortedOrder(seqs: readonly number[]): number[] {
  return seqs
    .map((seq, i) => ({ seq, i }))
    .sort((a, b) => a.seq - b.seq || a.i - b.i)
    .map((r) => r.i);
}

describe('the remembered requests of a restore, in their stored order', () => {
  it('nearly consecutive orders (a table that forgets the oldest first), in any read order', () => {
    const rng = new SimRng(36);
    for (let round = 0; round < 50; round++) {
      const count = 1 + rng.int(300);
      const first = rng.int(1_000_000);
      const seqs = Array.from({ length: count }, (_, i) => first + i);
      // Gaps where replaced records were: drop some, then shuffle (the store's key order is by identity).
      const kept = seqs.filter(() => rng.int(5) !== 0);
      for (let i = kept.length - 1; i > 0; i--) {
        const j = rng.int(i + 1);
        [kept[i], kept[j]] = [kept[j]!, kept[i]!];
      }
      expect(fedOrder(kept)).toEqual(sortedOrder(kept));
    }
  });

  it('orders spread too thin to place, and two records of one order (a corrupt store), sorted as before', () => {
    expect(fedOrder([5, 1_000_000_000, 3, 70])).toEqual(sortedOrder([5, 1_000_000_000, 3, 70]));
    expect(fedOrder([4, 2, 4, 3, 2])).toEqual([1, 4, 3, 0, 2]);
    expect(fedOrder([])).toEqual([]);
  });
});

describe('owners decoded once', () => {
  it('the name of the bytes, one string for the same bytes, null for what is not UTF-8', () => {
    const names = new OwnerNames();
    const record = (owner: string) => Uint8Array.of(9, ...encodeUtf8(owner), 9);
    const a1 = record('bench-1-1');
    const a2 = record('bench-1-1');
    const first = names.nameOf(a1, 1, a1.length - 1);
    expect(first).toBe('bench-1-1');
    expect(names.nameOf(a2, 1, a2.length - 1)).toBe(first);
    a1.fill(0); // the bytes it was read from are a scratch array the next read overwrites
    expect(names.nameOf(a2, 1, a2.length - 1)).toBe('bench-1-1');
    expect(names.nameOf(record('bench-1-10'), 1, 11)).toBe('bench-1-10');
    expect(names.nameOf(record('ünïcode'), 1, 1 + encodeUtf8('ünïcode').length)).toBe('ünïcode');
    expect(names.nameOf(Uint8Array.of(0xc3, 0x28), 0, 2)).toBeNull();
    expect(names.nameOf(Uint8Array.of(0xc3, 0x28), 0, 2)).toBeNull();
  });

  it('past the owners it keeps, every name still decoded right', () => {
    const names = new OwnerNames();
    const rng = new SimRng(7);
    for (let i = 0; i < OWNER_NAMES_KEPT * 2 + 10; i++) {
      const owner = `o-${rng.int(OWNER_NAMES_KEPT * 3)}`;
      const bytes = encodeUtf8(owner);
      expect(names.nameOf(bytes, 0, bytes.length)).toBe(decodeUtf8(bytes));
    }
  });
});
