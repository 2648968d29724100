// Keys that had a lease once and have none now, with the highest token ever issued for each and the log
// time it was freed (see machine-state.ts, freeKeyLastTokens). Two views of one set:
//  - by key, in hash buckets (KeyBuckets), for lookups and for the bucket-by-bucket snapshot;
//  - in freeing order, a FIFO of the records, for `forget`, which drops the oldest first and stops at the
//    first one freed after its cut. Log time never goes back, so push order IS freeing-time order.
// A key freed again (after a new lease) gets a new record at the back; its old slot goes stale (the map no
// longer points at that record) and is skipped. Stale slots are dropped when the front passes them, or by a
// rebuild once they outnumber the live ones, so a hot key cycling without forget entries cannot grow it.
import { KeyBuckets } from './key-buckets.js';

export interface FreeKey {
  readonly key: string;
  lastToken: number;
  freedAtMs: number;
}

export class FreeKeys {
  private readonly byKey = new KeyBuckets<FreeKey>();
  private order: (FreeKey | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): FreeKey | undefined {
    return this.byKey.get(key);
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  /** Record `key` as freed at `freedAtMs` (>= every earlier freeing time). */
  free(key: string, lastToken: number, freedAtMs: number): void {
    const record: FreeKey = { key, lastToken, freedAtMs };
    this.byKey.set(record);
    this.order.push(record);
    if (this.order.length - this.head > 2 * this.byKey.size + 1024) this.dropStale();
  }

  delete(key: string): void {
    this.byKey.delete(key);
  }

  /** Drop every record freed at or before `upToMs`, oldest first; calls `onForget` for each. */
  forgetUpTo(upToMs: number, onForget: (record: FreeKey) => void): void {
    while (this.head < this.order.length) {
      const record = this.order[this.head]!;
      if (this.isCurrent(record)) {
        if (record.freedAtMs > upToMs) break;
        onForget(record);
        this.byKey.delete(record.key);
      }
      this.order[this.head++] = undefined;
    }
    if (this.head >= 1024 && this.head * 2 >= this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }

  /** When the `n`-th oldest free key (1-based) was freed; undefined with fewer free keys. */
  freedAtOfOldest(n: number): number | undefined {
    if (n < 1 || n > this.byKey.size) return undefined;
    let seen = 0;
    for (let i = this.head; i < this.order.length; i++) {
      const record = this.order[i]!;
      if (this.isCurrent(record) && ++seen === n) return record.freedAtMs;
    }
    return undefined;
  }

  /** Bucket `b` of the by-key view (the snapshot writer's unit). */
  bucket(b: number): Iterable<FreeKey> | undefined {
    return this.byKey.bucket(b);
  }

  values(): IterableIterator<FreeKey> {
    return this.byKey.values();
  }

  private isCurrent(record: FreeKey): boolean {
    return this.byKey.get(record.key) === record;
  }

  private dropStale(): void {
    const live: FreeKey[] = [];
    for (let i = this.head; i < this.order.length; i++) {
      const record = this.order[i]!;
      if (this.isCurrent(record)) live.push(record);
    }
    this.order = live;
    this.head = 0;
  }
}
