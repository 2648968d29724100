// A set of records keyed by their `key` string, split into a fixed number of buckets by a hash of the key.
//
// Why buckets: a snapshot must be canonical (same state => same bytes) and must not stall the event loop. One
// big table forces a sort of every key on each snapshot (seconds at a million keys, in one piece). With keys
// partitioned by a deterministic hash, the snapshot is written bucket by bucket — each bucket sorted on its
// own (a few hundred keys) — in slices, and a write to a bucket the snapshot has not reached yet first
// encodes that bucket as it was (copy-on-write at bucket granularity; see snapshot-writer.ts).
// The hash is FNV-1a over UTF-16 code units: pure, the same on every replica and every run.
//
// Why not a Map per bucket (as before): a Map entry costs its key, its value and a chain link plus its share
// of the hash buckets, at up to half load after a growth — ~44 bytes per key at a million keys (heap
// snapshot), and a restore spent 0.8 s of its ~5 s growing 4,096 Maps. A record already holds its key, so a
// bucket is an open-addressing table (linear probing) of the records alone: one 8-byte slot per record at
// 3/8-3/4 load, ~17 bytes per key; a restore sizes every bucket once (reserve). Iteration order is no
// contract: every reader that needs an order sorts (snapshot sections, List).

/** Number of buckets. A power of two; part of the snapshot format (version 3), so never change it alone. */
export const KEY_BUCKETS = 4096;
const BUCKET_BITS = 12;

/** FNV-1a of `key` over UTF-16 code units (32 bits). Its low bits choose the bucket, the rest the slot. */
export function hashOfKey(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

export function bucketOf(key: string): number {
  return hashOfKey(key) & (KEY_BUCKETS - 1);
}

/** A bucket's first table: small, since a small state (tests, the simulator) has few keys per bucket. */
const MIN_SLOTS = 4;

/** A record's home slot in a table of `slots.length` (a power of two): the hash's bits above the bucket's,
 *  multiplied (Fibonacci hashing) so that keys sharing a bucket still spread over the table. */
function homeOf(hash: number, mask: number): number {
  return (Math.imul(hash >>> BUCKET_BITS, 0x9e3779b1) >>> 0) & mask;
}

export class KeyBuckets<V extends { readonly key: string }> {
  // Created on first use: a small state pays for the buckets it touches only. undefined = an empty slot.
  private readonly buckets: (V | undefined)[][] = new Array<(V | undefined)[]>(KEY_BUCKETS);
  private readonly counts = new Int32Array(KEY_BUCKETS);
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    const hash = hashOfKey(key);
    const slots = this.buckets[hash & (KEY_BUCKETS - 1)];
    if (slots === undefined) return undefined;
    const mask = slots.length - 1;
    for (let at = homeOf(hash, mask); ; at = (at + 1) & mask) {
      const found = slots[at];
      if (found === undefined || found.key === key) return found;
    }
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Adds `value` under its key, replacing the record that had it. */
  set(value: V): void {
    const key = value.key;
    const hash = hashOfKey(key);
    const b = hash & (KEY_BUCKETS - 1);
    let slots = this.buckets[b];
    if (slots === undefined) slots = this.buckets[b] = newSlots<V>(MIN_SLOTS);
    else if ((this.counts[b]! + 1) * 4 > slots.length * 3) slots = this.resize(b, slots.length * 2);
    const mask = slots.length - 1;
    let at = homeOf(hash, mask);
    for (; slots[at] !== undefined; at = (at + 1) & mask) {
      if (slots[at]!.key === key) {
        slots[at] = value;
        return;
      }
    }
    slots[at] = value;
    this.counts[b]!++;
    this.count++;
  }

  /**
   * Adds `values` — of distinct keys, none in the set: the caller knows it (a restore, whose decoders refuse a
   * key read twice) — bucket by bucket, each bucket's in their given order, so every table ends as adding them
   * one by one with set() leaves it. Added in their own order, each was a random slot of a 16 MB table (a
   * cache miss, ~0.17 s a million) and set() read the key of every record it probed past (as many again);
   * here a bucket's table is written while it is in cache and no key is read twice.
   */
  addAllAbsent(values: readonly V[]): void {
    const count = values.length;
    const hashes = new Uint32Array(count);
    /** Where each bucket's values start in `byBucket` (a counting sort by bucket, stable). */
    const starts = new Int32Array(KEY_BUCKETS + 1);
    for (let i = 0; i < count; i++) {
      const hash = hashOfKey(values[i]!.key);
      hashes[i] = hash;
      starts[(hash & (KEY_BUCKETS - 1)) + 1]!++;
    }
    for (let b = 0; b < KEY_BUCKETS; b++) starts[b + 1]! += starts[b]!;
    const byBucket = new Array<V>(count);
    const bucketHashes = new Uint32Array(count);
    const next = starts.slice(0, KEY_BUCKETS);
    for (let i = 0; i < count; i++) {
      const at = next[hashes[i]! & (KEY_BUCKETS - 1)]!++;
      byBucket[at] = values[i]!;
      bucketHashes[at] = hashes[i]!;
    }
    for (let b = 0; b < KEY_BUCKETS; b++) {
      const end = starts[b + 1]!;
      if (starts[b] === end) continue;
      let slots = this.buckets[b] ?? (this.buckets[b] = newSlots<V>(MIN_SLOTS));
      for (let i = starts[b]!; i < end; i++) {
        if ((this.counts[b]! + 1) * 4 > slots.length * 3) slots = this.resize(b, slots.length * 2);
        const mask = slots.length - 1;
        let at = homeOf(bucketHashes[i]!, mask);
        while (slots[at] !== undefined) at = (at + 1) & mask;
        slots[at] = byBucket[i]!;
        this.counts[b]!++;
      }
    }
    this.count += count;
  }

  delete(key: string): boolean {
    const hash = hashOfKey(key);
    const b = hash & (KEY_BUCKETS - 1);
    const slots = this.buckets[b];
    if (slots === undefined) return false;
    const mask = slots.length - 1;
    let hole = homeOf(hash, mask);
    for (; ; hole = (hole + 1) & mask) {
      const found = slots[hole];
      if (found === undefined) return false;
      if (found.key === key) break;
    }
    // Backward-shift deletion: a record after the hole, in the same run, moves into it unless its home lies
    // cyclically in (hole, at] — then a lookup from its home still reaches it without crossing the hole.
    for (let at = (hole + 1) & mask; ; at = (at + 1) & mask) {
      const next = slots[at];
      if (next === undefined) break;
      const home = homeOf(hashOfKey(next.key), mask);
      const reachable = hole <= at ? hole < home && home <= at : hole < home || home <= at;
      if (reachable) continue;
      slots[hole] = next;
      hole = at;
    }
    slots[hole] = undefined;
    this.counts[b]!--;
    this.count--;
    // Shrink a table a mass release left mostly empty (its memory returns; a bucket never drops below MIN_SLOTS).
    if (slots.length > MIN_SLOTS && this.counts[b]! * 8 < slots.length) this.resize(b, slots.length / 2);
    return true;
  }

  /** About to add `count` records to an empty set (a restore): every bucket's table sized once for its share,
   *  instead of doubling its way up. */
  reserve(count: number): void {
    if (this.count !== 0) return;
    const perBucket = Math.ceil(count / KEY_BUCKETS);
    let slots = MIN_SLOTS;
    while (perBucket * 4 > slots * 3) slots *= 2;
    if (slots === MIN_SLOTS) return;
    for (let b = 0; b < KEY_BUCKETS; b++) this.buckets[b] = newSlots<V>(slots);
  }

  /** The records of bucket `b` (in no particular order), or undefined when it was never used. */
  bucket(b: number): Iterable<V> | undefined {
    const slots = this.buckets[b];
    return slots === undefined ? undefined : present(slots);
  }

  *keys(): IterableIterator<string> {
    for (const value of this.values()) yield value.key;
  }

  *values(): IterableIterator<V> {
    for (const slots of this.buckets) if (slots !== undefined) yield* present(slots);
  }

  private resize(b: number, size: number): (V | undefined)[] {
    const old = this.buckets[b]!;
    const slots = newSlots<V>(size);
    const mask = size - 1;
    for (const value of old) {
      if (value === undefined) continue;
      let at = homeOf(hashOfKey(value.key), mask);
      while (slots[at] !== undefined) at = (at + 1) & mask;
      slots[at] = value;
    }
    this.buckets[b] = slots;
    return slots;
  }
}

function newSlots<V>(size: number): (V | undefined)[] {
  return new Array<V | undefined>(size).fill(undefined);
}

function* present<V>(slots: (V | undefined)[]): IterableIterator<V> {
  for (const value of slots) if (value !== undefined) yield value;
}
