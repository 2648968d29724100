// Issue 36: an entry whose log time is past the whole dedup window (the first after a cluster stopped for
// longer than it) forgets or keeps every record in one prune. The table then clears its index at once instead
// of a backward-shift deletion a record, and asks its keep rule only about acquires' records — with the same
// outcome as the record-by-record path: the same records kept, in the same order, and the same listener
// calls (the store's ops) in the same order, checked against the plain model.
import { describe, expect, it } from 'vitest';
import { ByteReader, ByteWriter } from '../../../src/lock/bytes.js';
import { DedupTable, type DedupListener } from '../../../src/lock/dedup.js';
import { readDedupIdentity } from '../../../src/lock/dedup-codec.js';
import { SimRng } from '../../sim/rng.js';
import { ModelTable, record } from './dedup-model.js';

/** What a listener hears, as the model writes it. */
function hearing(into: string[]): DedupListener {
  const identity = (bytes: Uint8Array, start: number, split: number) =>
    readDedupIdentity(new ByteReader(bytes.subarray(start, split), (m) => new Error(m)));
  return {
    remembered(bytes, start, split, _end, recordedAtMs) {
      const { owner, requestId } = identity(bytes, start, split);
      into.push(`+${owner}/${requestId}@${recordedAtMs}`);
    },
    forgotten(bytes, start, split) {
      const { owner, requestId } = identity(bytes, start, split);
      into.push(`-${owner}/${requestId}`);
    },
  };
}

/** Every current record's snapshot bytes, oldest first, through a reader opened now and read to its end. */
function snapshotBytes(table: DedupTable, nowMs: number): Uint8Array {
  const out = new ByteWriter();
  table.openSnapshot((seq) => table.writeSnapshotRecord(out, seq, nowMs)).read(Number.MAX_SAFE_INTEGER);
  return out.finish();
}

/** The model's current records as the table's snapshot would write them. */
function modelBytes(model: ModelTable, nowMs: number): Uint8Array {
  const mirror = new DedupTable(1e15, model.maxEntries);
  for (const r of model.inOrder()) mirror.remember(r); // one record a pair: none replaces another
  return snapshotBytes(mirror, nowMs);
}

/** A keep rule that changes its mind over time (holds come and go): some owners' acquires of some keys. */
const keepRule = (round: number) => (owner: string, key: string) => (owner.length + key.length + round) % 3 !== 0;

const WINDOW_MS = 5_000;

describe('DedupTable: an entry past the whole window', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: forgets or keeps every record with no index deletion a record, exactly as the model`, () => {
      const rng = new SimRng(seed);
      const table = new DedupTable(WINDOW_MS, 900);
      const model = new ModelTable(WINDOW_MS, 900);
      const heard: string[] = [];
      table.listener = hearing(heard);
      let now = 1_000;
      let ids = 0;
      let wholeExpiries = 0;
      let keepAsked = 0;
      let heardChecked = 0;
      for (let round = 0; round < 40; round++) {
        // A burst of requests, some within the window of each other's, then a stop longer than the window.
        for (let op = 0; op < 1_500; op++) {
          now += rng.int(3);
          const keep = keepRule(round);
          table.prune(now, keep);
          model.prune(now, keep);
          const live = rng.float() < 0.05 ? model.inOrder() : [];
          const again = live.length > 0 ? live[rng.int(live.length)]! : null;
          const r = record(rng, again?.owner ?? `owner-${rng.int(7)}`, again?.requestId ?? `req-${++ids}`, now);
          table.remember(r);
          model.remember(r);
        }
        // An open snapshot across the expiry still reads the records current when it was opened.
        const openedAt = now;
        const expectedSnapshot = modelBytes(model, openedAt);
        const out = new ByteWriter();
        const reader = table.openSnapshot((seq) => table.writeSnapshotRecord(out, seq, openedAt));
        reader.read(rng.int(300));
        now += WINDOW_MS + rng.int(3 * WINDOW_MS);
        const removalsBefore = table.indexRemovals;
        const acquires = model.inOrder().filter((r) => r.type === 'acquire').length;
        const keep = keepRule(round);
        let asked = 0;
        table.prune(now, (owner, key) => {
          asked++;
          return keep(owner, key);
        });
        model.prune(now, keep);
        reader.read(Number.MAX_SAFE_INTEGER);
        expect(Buffer.from(out.finish()).equals(Buffer.from(expectedSnapshot))).toBe(true);
        // The bound: no record taken out of the index one by one, and the keep rule asked of acquires only.
        expect(table.indexRemovals).toBe(removalsBefore);
        expect(asked).toBe(acquires);
        keepAsked += asked;
        wholeExpiries++;
        // (Compared a round at a time: the whole log grows with every request.)
        expect(heard.length).toBe(model.heard.length);
        expect(heard.slice(heardChecked)).toEqual(model.heard.slice(heardChecked));
        heardChecked = heard.length;
        expect(table.size).toBe(model.byPair.size);
        expect(Buffer.from(snapshotBytes(table, now)).equals(Buffer.from(modelBytes(model, now)))).toBe(true);
        for (const r of model.queue) expect(table.find(r.owner, r.requestId)).toEqual(model.byPair.get(`${r.owner}\u0000${r.requestId}`));
      }
      expect(wholeExpiries).toBe(40);
      expect(keepAsked).toBeGreaterThan(1_000);
      // The record-by-record path still deletes from the index (the count counts).
      expect(table.indexRemovals).toBeGreaterThan(10_000);
    });
  }

  it('a few records in a big index are deleted one by one (filling the index would cost more)', () => {
    const table = new DedupTable(WINDOW_MS, 10_000);
    const rng = new SimRng(4);
    for (let i = 0; i < 8_000; i++) table.remember(record(rng, 'o', `fill-${i}`, 0));
    table.prune(WINDOW_MS); // the whole table, at once
    const before = table.indexRemovals;
    for (let i = 0; i < 10; i++) table.remember(record(rng, 'o', `late-${i}`, 2 * WINDOW_MS));
    table.prune(3 * WINDOW_MS);
    expect(table.size).toBe(0);
    expect(table.indexRemovals).toBe(before + 10);
  });
});
