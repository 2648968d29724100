// A snapshot streamed from the leader's applied store (snapshot-stream.ts) into a follower's (snapshot-sink.ts):
// the stream is one LevelDB view (batches written while it runs never leak into it) at exactly the point the
// store held; the follower writes each chunk into a new generation and swaps it in only once the last chunk
// is written and verified; a crash anywhere leaves the old state or the whole new one; a chunk out of order,
// a record lost or changed, is refused — the stream thrown away with what was written of it, the state in
// force kept, and the same stream sent again installs.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { AppliedStore } from '../../../src/state/applied-store.js';
import { LockStateStore } from '../../../src/state/lock-store.js';
import { decodeChunk } from '../../../src/state/snapshot-stream.js';
import { ByteWriter } from '../../../src/lock/bytes.js';
import { ManualScheduler, same } from './store-fixtures.js';
import { OPTIONS } from '../lock/random-log.js';
import { CrashDb } from './crash-db.js';
import { chunksOf, follower, leader } from './stream-fixtures.js';

describe('a snapshot streamed from the applied store', () => {
  it('is the state at the point the store held, read from one view: batches written while it runs do not leak into it', async () => {
    const l = await leader(3, 600);
    const stream = (await l.state.openStream(512))!;
    expect(stream.point.index).toBe(l.machine.appliedIndex); // the write-behind flushed before the view
    const atPoint = l.machine.snapshot();
    // Entries keep applying and their batches land while the stream is read.
    const chunks = await chunksOf(stream, () => l.apply(15));
    await stream.close();
    expect(chunks.length, 'many chunks').toBeGreaterThan(10);
    expect(l.machine.appliedIndex).toBeGreaterThan(stream.point.index);
    expect(same(l.machine.snapshot(), atPoint), 'the leader moved on while streaming').toBe(false);

    const f = await follower(new CrashDb());
    for (const chunk of chunks) await f.state.receiveChunk(chunk);
    const installed = await f.state.installReceived(chunks[0]!.meta, OPTIONS);
    expect('machine' in installed).toBe(true);
    const got = installed as { machine: LockMachine; point: { index: number; term: number } };
    expect(got.point.index).toBe(stream.point.index);
    expect(got.point.term).toBe(3);
    expect(same(got.machine.snapshot(), atPoint), 'the follower holds the leader state at the stream point').toBe(true);
    // And so does its store, reopened.
    const reopened = await new LockStateStore<LockMachine>(() => AppliedStore.open(f.db), new ManualScheduler()).load(OPTIONS);
    expect(same(reopened!.machine.snapshot(), atPoint)).toBe(true);
  });

  it('reads a chunk again from where it began, and a fresh stream of the same view walks on to a later offset', async () => {
    const l = await leader(4, 300);
    const stream = (await l.state.openStream(256))!;
    const chunks = await chunksOf(stream);
    expect(chunks.length).toBeGreaterThan(4);
    for (const i of [0, 2, 1, chunks.length - 1, 3])
      expect(same((await stream.chunkAt(chunks[i]!.offset))!.data, chunks[i]!.data)).toBe(true);
    expect(await stream.chunkAt(chunks[1]!.offset + 1), 'no chunk starts inside another').toBeNull();
    await stream.close();
    const again = (await l.state.openStream(256))!;
    expect(same((await again.chunkAt(chunks[3]!.offset))!.data, chunks[3]!.data)).toBe(true);
    await again.close();
  });

  it('is swapped in only after its last chunk is written: a crash at any write leaves the old state or the whole new one', async () => {
    const l = await leader(5, 400);
    const stream = (await l.state.openStream(300))!;
    const atPoint = l.machine.snapshot();
    const chunks = await chunksOf(stream);
    await stream.close();
    const f = await follower(new CrashDb());
    const from = f.db.log.length;
    for (const chunk of chunks) await f.state.receiveChunk(chunk);
    await f.state.installReceived(chunks[0]!.meta, OPTIONS);
    const writes = f.db.log.slice(from);
    const swap = writes.findIndex((w) => w.kind === 'batch' && w.ops.some((op) => op.key[0] === 0xff));
    let lastRecords = -1;
    writes.forEach((w, i) => {
      if (w.kind === 'batch' && w.ops.some((op) => op.key[0] !== 0xff)) lastRecords = i;
    });
    expect(swap, 'one swap').toBeGreaterThan(0);
    expect(lastRecords, 'every record is written before the swap').toBeLessThan(swap);
    for (let n = from; n <= f.db.log.length; n++) {
      const loaded = await new LockStateStore<LockMachine>(
        async () => AppliedStore.open(await f.db.crashedAfter(n)),
        new ManualScheduler(),
      ).load(OPTIONS);
      const expected = loaded!.point.index === stream.point.index ? atPoint : f.old.snapshot();
      expect(same(loaded!.machine.snapshot(), expected), `crash after ${n} writes (swap at ${from + swap})`).toBe(true);
    }
  });

  it('refuses a chunk at the wrong offset, a stream whose records do not verify, and an install before its last chunk', async () => {
    const l = await leader(6, 300);
    const stream = (await l.state.openStream(256))!;
    const chunks = await chunksOf(stream);
    await stream.close();

    const skip = await follower(new CrashDb());
    expect(await skip.state.receiveChunk(chunks[0]!)).toEqual({ ok: true });
    const skipped = await skip.state.receiveChunk(chunks[2]!);
    expect(skipped.ok).toBe(false);
    expect(!skipped.ok && skipped.reason).toMatch(/offset \d+ .* but offset \d+ .* is next/);
    expect(await generationsIn(skip.db), 'what was written of it is deleted').toEqual([1]);

    const early = await follower(new CrashDb());
    for (const chunk of chunks.slice(0, -1)) await early.state.receiveChunk(chunk);
    await expect(early.state.installReceived(chunks[0]!.meta, OPTIONS)).rejects.toThrow(/last chunk was not received/);

    // One byte of one record's value changed: the checksum differs at the last chunk; nothing is swapped in.
    const bad = await follower(new CrashDb());
    const victim = chunks[1]!;
    expect(decodeChunk(victim.data, 1 << 20).trailer, 'a chunk inside the stream').toBeNull();
    const at = victim.data.length - 1; // the last byte of its last record's value
    const changed = victim.data.slice();
    changed[at] = changed[at]! ^ 0x01;
    const verdicts = [];
    for (const chunk of chunks) verdicts.push(await bad.state.receiveChunk(chunk === victim ? { ...chunk, data: changed } : chunk));
    expect(
      verdicts.slice(0, -1).every((v) => v.ok),
      'the records decode: refused only at the last chunk',
    ).toBe(true);
    const last = verdicts[verdicts.length - 1]!;
    expect(last.ok).toBe(false);
    expect(!last.ok && last.reason).toMatch(/does not verify: \d+ records received, the leader sent \d+; the checksum differs/);
    await expect(bad.state.installReceived(chunks[0]!.meta, OPTIONS)).rejects.toThrow(/last chunk was not received/);
    const reopened = await new LockStateStore<LockMachine>(() => AppliedStore.open(bad.db), new ManualScheduler()).load(OPTIONS);
    expect(same(reopened!.machine.snapshot(), bad.old.snapshot()), 'the old state stays in force').toBe(true);
  });

  it('a refused stream is thrown away at once (no disk left to it, however often), the state in force kept; the stream sent again installs', async () => {
    const l = await leader(7, 300);
    const stream = (await l.state.openStream(200))!;
    const atPoint = l.machine.snapshot();
    const chunks = await chunksOf(stream);
    await stream.close();
    const f = await follower(new CrashDb());
    expect(await generationsIn(f.db)).toEqual([1]);
    const lastChunk = chunks[chunks.length - 1]!;
    // The last chunk's trailer counting one record more than were sent (the checksum still right), and its
    // checksum changed: each refused at the last chunk, every record of the stream written by then.
    const decoded = decodeChunk(lastChunk.data, 1 << 20);
    const wrongCount = encodeLastChunk(decoded.records.length, decoded.hashed, { ...decoded.trailer!, total: decoded.trailer!.total + 1 });
    const wrongSum = lastChunk.data.slice();
    wrongSum[wrongSum.length - 1] = wrongSum[wrongSum.length - 1]! ^ 0x80;
    for (const [data, reason] of [
      [wrongCount, /\d+ records received, the leader sent \d+$/],
      [wrongSum, /the checksum differs/],
      [wrongCount, /the leader sent/],
    ] as const) {
      for (const chunk of chunks.slice(0, -1)) expect((await f.state.receiveChunk(chunk)).ok).toBe(true);
      expect((await generationsIn(f.db)).length, 'the stream is written into a generation of its own').toBe(2);
      const verdict = await f.state.receiveChunk({ ...lastChunk, data });
      expect(!verdict.ok && verdict.reason).toMatch(reason);
      expect(await generationsIn(f.db), 'refused: its generation is gone').toEqual([1]);
      const kept = await new LockStateStore<LockMachine>(() => AppliedStore.open(f.db), new ManualScheduler()).load(OPTIONS);
      expect(same(kept!.machine.snapshot(), f.old.snapshot())).toBe(true);
    }
    // The leader sends it again, intact: verified at its last chunk and swapped in.
    for (const chunk of chunks) expect(await f.state.receiveChunk(chunk)).toEqual({ ok: true });
    const installed = await f.state.installReceived(lastChunk.meta, OPTIONS);
    expect(same((installed as { machine: LockMachine }).machine.snapshot(), atPoint)).toBe(true);
    expect(await generationsIn(f.db)).toEqual([2]);
  });

  it('a stream received whole that the core no longer wants is thrown away with its records', async () => {
    const l = await leader(8, 200);
    const stream = (await l.state.openStream(256))!;
    const chunks = await chunksOf(stream);
    await stream.close();
    const f = await follower(new CrashDb());
    for (const chunk of chunks) expect(await f.state.receiveChunk(chunk)).toEqual({ ok: true });
    expect(await generationsIn(f.db)).toEqual([1, 2]);
    await f.state.discardReceived();
    expect(await generationsIn(f.db)).toEqual([1]);
    await expect(f.state.installReceived(chunks[0]!.meta, OPTIONS)).rejects.toThrow(/last chunk was not received/);
  });
});

/** The generations that hold records in `db`, in order. */
async function generationsIn(db: CrashDb): Promise<number[]> {
  const out = new Set<number>();
  for await (const [key] of db.db.iterator({ lt: Uint8Array.of(0xff) })) out.add(Buffer.from(key).readUInt32BE(0));
  return [...out];
}

/** A last chunk ("LHR" format 1, last) made of `count` records' bytes and a trailer, as snapshot-stream.ts lays it out. */
function encodeLastChunk(
  count: number,
  records: Uint8Array,
  trailer: { total: number; index: number; term: number; sha256: Uint8Array },
): Uint8Array {
  const out = new ByteWriter(records.length + 64);
  for (const b of [0x4c, 0x48, 0x52, 1, 1]) out.byte(b);
  out.uint(count);
  out.raw(records);
  out.uint(trailer.total);
  out.uint(trailer.index);
  out.uint(trailer.term);
  out.raw(trailer.sha256);
  return out.finish();
}
