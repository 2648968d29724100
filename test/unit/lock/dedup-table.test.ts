// The arena-backed dedup table against a plain model (a Map and a FIFO of record objects, what it replaced):
// the same finds, sizes and oldest-first order through many records, replacements, pruning by time and by
// the cap, index rebuilds and the queue moving to the front of its arrays.
import { describe, expect, it } from 'vitest';
import { ByteWriter } from '../../../src/lock/bytes.js';
import { DedupTable, type DedupRecord } from '../../../src/lock/dedup.js';
import { SimRng } from '../../sim/rng.js';

class ModelTable {
  readonly byPair = new Map<string, DedupRecord>();
  queue: DedupRecord[] = [];
  constructor(
    readonly windowMs: number,
    readonly maxEntries: number,
  ) {}
  private current(r: DedupRecord): boolean {
    return this.byPair.get(`${r.owner}\u0000${r.requestId}`) === r;
  }
  private forgetOldest(): void {
    const r = this.queue.shift()!;
    if (this.current(r)) this.byPair.delete(`${r.owner}\u0000${r.requestId}`);
  }
  prune(nowMs: number): void {
    while (this.queue.length > 0 && this.queue[0]!.recordedAtMs + this.windowMs <= nowMs) this.forgetOldest();
  }
  remember(r: DedupRecord): void {
    this.byPair.set(`${r.owner}\u0000${r.requestId}`, r);
    this.queue.push(r);
    while (this.byPair.size > this.maxEntries) this.forgetOldest();
  }
  inOrder(): DedupRecord[] {
    return this.queue.filter((r) => this.current(r));
  }
}

function record(rng: SimRng, owner: string, requestId: string, recordedAtMs: number): DedupRecord {
  const key = `key-${rng.int(50)}`;
  switch (rng.int(3)) {
    case 0:
      return { owner, requestId, recordedAtMs, key, token: 0n, type: 'acquire', outcome: { acquired: rng.int(2) === 0, token: BigInt(rng.int(1e9)), ttlMs: rng.int(1e6), expiresAtMs: recordedAtMs + 5, holderOwner: rng.int(2) === 0 ? '' : `h${rng.int(9)}`, holderTtlMs: rng.int(999) } };
    case 1:
      return { owner, requestId, recordedAtMs, key, token: (1n << 63n) + BigInt(rng.int(99)), type: 'renew', outcome: { renewed: true, ttlMs: 7, expiresAtMs: recordedAtMs + 7, reason: 'UNSPECIFIED' } };
    default:
      return { owner, requestId, recordedAtMs, key, token: BigInt(1 + rng.int(99)), type: 'release', outcome: { released: false, reason: 'WRONG_TOKEN' } };
  }
}

/** Every current record, oldest first, through a snapshot reader: the table's bytes of each. */
function snapshotBytes(table: DedupTable, nowMs: number): Uint8Array {
  const out = new ByteWriter();
  const reader = table.openSnapshot((seq) => table.writeSnapshotRecord(out, seq, nowMs));
  reader.read(Number.MAX_SAFE_INTEGER);
  return out.finish();
}

describe('DedupTable (arena) behaves like the plain table', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: finds, sizes and order agree through 20,000 operations`, () => {
      const rng = new SimRng(seed);
      const table = new DedupTable(5_000, 700);
      const model = new ModelTable(5_000, 700);
      let now = 1_000;
      let ids = 0;
      for (let op = 0; op < 20_000; op++) {
        now += rng.int(3);
        table.prune(now);
        model.prune(now);
        const owner = `owner-${rng.int(7)}`;
        if (rng.float() < 0.6) {
          // A fresh id, or (a queued acquire's replacement) one still remembered.
          const live = rng.float() < 0.1 ? model.inOrder() : [];
          const again = live.length > 0 ? live[rng.int(live.length)]! : null;
          const r = record(rng, again?.owner ?? owner, again?.requestId ?? `req-${++ids}`, now);
          table.remember(r);
          model.remember(r);
        } else {
          const requestId = `req-${Math.max(1, ids - rng.int(900))}`;
          expect(table.find(owner, requestId)).toEqual(model.byPair.get(`${owner}\u0000${requestId}`));
        }
        expect(table.size).toBe(model.byPair.size);
        if (op % 3_000 === 0) {
          const expected = new ByteWriter();
          for (const r of model.inOrder()) {
            const mirror = new DedupTable(1e15, 1);
            mirror.remember(r);
            expected.raw(snapshotBytes(mirror, now));
          }
          expect(Buffer.from(snapshotBytes(table, now)).equals(Buffer.from(expected.finish()))).toBe(true);
        }
      }
    });
  }
});
