// KeyBuckets (the open-addressing tables behind the machine's leases and free keys) checked against a Map
// under seeded random adds, replacements and deletions — most of them in a few buckets, so runs of linear
// probing wrap around, grow, shrink and are cut by backward-shift deletion.
import { describe, expect, it } from 'vitest';
import { KEY_BUCKETS, KeyBuckets, bucketOf } from '../../../src/lock/key-buckets.js';
import { SimRng } from '../../sim/rng.js';

interface Rec {
  readonly key: string;
  readonly n: number;
}

/** `count` keys that all fall in bucket `b`. */
function keysOfBucket(b: number, count: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) if (bucketOf(`key-${i}`) === b) keys.push(`key-${i}`);
  return keys;
}

function expectSame(table: KeyBuckets<Rec>, model: Map<string, Rec>, pool: string[]): void {
  expect(table.size).toBe(model.size);
  for (const key of pool) {
    expect(table.get(key)).toBe(model.get(key));
    expect(table.has(key)).toBe(model.has(key));
  }
  expect([...table.keys()].sort()).toEqual([...model.keys()].sort());
  for (const b of new Set(pool.map(bucketOf))) {
    const inBucket = [...model.values()].filter((r) => bucketOf(r.key) === b);
    expect([...(table.bucket(b) ?? [])].sort((x, y) => x.n - y.n)).toEqual(inBucket.sort((x, y) => x.n - y.n));
  }
}

describe('KeyBuckets', () => {
  for (const seed of [1, 2, 3]) {
    it(`agrees with a Map under random set/replace/delete, mostly in two buckets (seed ${seed})`, () => {
      const rng = new SimRng(seed);
      const pool = [...keysOfBucket(0, 150), ...keysOfBucket(KEY_BUCKETS - 1, 150), ...Array.from({ length: 100 }, (_, i) => `other-${i}`)];
      const table = new KeyBuckets<Rec>();
      const model = new Map<string, Rec>();
      let n = 0;
      for (let step = 0; step < 6000; step++) {
        const key = pool[Math.floor(rng.float() * pool.length)]!;
        // Phases: fill up (grow), then drain (shrink), then mixed.
        const addBias = step < 2000 ? 0.8 : step < 4000 ? 0.2 : 0.5;
        if (rng.float() < addBias) {
          const rec = { key, n: ++n };
          table.set(rec);
          model.set(key, rec);
        } else {
          expect(table.delete(key)).toBe(model.delete(key));
        }
        if (step % 250 === 0) expectSame(table, model, pool);
      }
      expectSame(table, model, pool);
      for (const key of [...model.keys()]) expect(table.delete(key)).toBe(true);
      expect(table.size).toBe(0);
      expect([...table.values()]).toEqual([]);
    });
  }

  it('a reserved table holds what a grown one holds', () => {
    const reserved = new KeyBuckets<Rec>();
    const grown = new KeyBuckets<Rec>();
    const count = 20_000;
    reserved.reserve(count);
    for (let i = 0; i < count; i++) {
      const rec = { key: `held-${i}`, n: i };
      reserved.set(rec);
      grown.set(rec);
    }
    expect(reserved.size).toBe(count);
    for (let i = 0; i < count; i += 7) expect(reserved.get(`held-${i}`)).toBe(grown.get(`held-${i}`));
    expect(reserved.get('held-x')).toBeUndefined();
    expect([...reserved.keys()].sort()).toEqual([...grown.keys()].sort());
  });

  it('addAllAbsent (a restore: keys known distinct) leaves the tables set() would, and later sets and deletes find its records', () => {
    const keys = [...keysOfBucket(0, 200), ...keysOfBucket(KEY_BUCKETS - 1, 200), ...Array.from({ length: 300 }, (_, i) => `held-${i}`)];
    for (const reserve of [false, true]) {
      const added = new KeyBuckets<Rec>();
      const setOneByOne = new KeyBuckets<Rec>();
      const model = new Map<string, Rec>();
      if (reserve) added.reserve(keys.length);
      if (reserve) setOneByOne.reserve(keys.length);
      const recs = keys.map((key, n) => ({ key, n }));
      added.addAllAbsent(recs);
      for (const rec of recs) {
        setOneByOne.set(rec);
        model.set(rec.key, rec);
      }
      expectSame(added, model, keys);
      // The same slots, not only the same records: a table's layout is as if each were set in turn.
      for (let b = 0; b < KEY_BUCKETS; b++) expect([...(added.bucket(b) ?? [])]).toEqual([...(setOneByOne.bucket(b) ?? [])]);
      const rng = new SimRng(7);
      for (let step = 0; step < 2000; step++) {
        const key = keys[Math.floor(rng.float() * keys.length)]!;
        if (rng.float() < 0.5) {
          const rec = { key, n: -step };
          added.set(rec);
          model.set(key, rec);
        } else expect(added.delete(key)).toBe(model.delete(key));
      }
      expectSame(added, model, keys);
    }
  });
});
