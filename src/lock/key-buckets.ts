// A string-keyed map split into a fixed number of buckets by a hash of the key.
//
// Why: a snapshot must be canonical (same state => same bytes) and must not stall the event loop. One big
// Map forces a sort of every key on each snapshot (seconds at a million keys, in one piece). With keys
// partitioned by a deterministic hash, the snapshot is written bucket by bucket — each bucket sorted on its
// own (a few hundred keys) — in slices, and a write to a bucket the snapshot has not reached yet first
// encodes that bucket as it was (copy-on-write at bucket granularity; see snapshot-writer.ts).
// The hash is FNV-1a over UTF-16 code units: pure, the same on every replica and every run.

/** Number of buckets. A power of two; part of the snapshot format (version 3), so never change it alone. */
export const KEY_BUCKETS = 4096;

export function bucketOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) & (KEY_BUCKETS - 1);
}

export class KeyBuckets<V> {
  // Created on first use: a small state (tests, the simulator) pays for the buckets it touches only.
  private readonly buckets: (Map<string, V> | undefined)[] = new Array<Map<string, V> | undefined>(KEY_BUCKETS).fill(undefined);
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.buckets[bucketOf(key)]?.get(key);
  }

  has(key: string): boolean {
    return this.buckets[bucketOf(key)]?.has(key) ?? false;
  }

  set(key: string, value: V): void {
    const b = bucketOf(key);
    let bucket = this.buckets[b];
    if (bucket === undefined) bucket = this.buckets[b] = new Map();
    const before = bucket.size;
    bucket.set(key, value);
    this.count += bucket.size - before;
  }

  delete(key: string): boolean {
    const bucket = this.buckets[bucketOf(key)];
    if (bucket === undefined || !bucket.delete(key)) return false;
    this.count--;
    return true;
  }

  /** The entries of bucket `b` (in no particular order), or undefined when it was never used. */
  bucket(b: number): ReadonlyMap<string, V> | undefined {
    return this.buckets[b];
  }

  *keys(): IterableIterator<string> {
    for (const bucket of this.buckets) if (bucket !== undefined) yield* bucket.keys();
  }

  *values(): IterableIterator<V> {
    for (const bucket of this.buckets) if (bucket !== undefined) yield* bucket.values();
  }

  *entries(): IterableIterator<[string, V]> {
    for (const bucket of this.buckets) if (bucket !== undefined) yield* bucket.entries();
  }
}
