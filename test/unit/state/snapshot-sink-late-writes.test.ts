// The follower's side of a streamed snapshot (snapshot-sink.ts, LockStateStore.installReceived) over a disk
// whose writes land later than asked and out of order (late-db.ts): the swap — the meta record moved to the
// new generation — must land only after every chunk's records have, so a crash right after it finds the whole
// new state. Issue 36, planted bug 5 (the last chunk's put not awaited before the swap): the other unit tests'
// stores land writes in the order they are asked for, so the swap asked for after an unawaited put still
// landed after it and only the lock simulation (some seeds) saw the store lose its last chunk.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { AppliedStore, META_KEY, decodeMeta } from '../../../src/state/applied-store.js';
import { LockStateStore } from '../../../src/state/lock-store.js';
import type { BatchOp } from '../../sim/collecting-batch.js';
import { OPTIONS } from '../lock/random-log.js';
import { LateDb } from './late-db.js';
import { ManualScheduler, same } from './store-fixtures.js';
import { chunksOf, follower, leader } from './stream-fixtures.js';

const isMeta = (key: Uint8Array) => key.length === 2 && key[0] === META_KEY[0] && key[1] === META_KEY[1];

/** The first four bytes of a record key: its generation. */
function generationOf(key: Uint8Array): number {
  return new DataView(key.buffer, key.byteOffset, 4).getUint32(0);
}

async function streamInto(seed: number, entries: number, chunkBytes: number): Promise<void> {
  const l = await leader(seed, entries);
  const stream = (await l.state.openStream(chunkBytes))!;
  const atPoint = l.machine.snapshot();
  const chunks = await chunksOf(stream);
  await stream.close();
  expect(chunks.length, 'several chunks').toBeGreaterThan(3);

  // Every landing of the follower's disk: the swap to the stream's generation (2), and the record batches
  // of that generation, by their place in landing order.
  let swapAt = -1;
  const recordLandings: number[] = [];
  const db = new LateDb((ops: readonly BatchOp[] | null, landed: number) => {
    for (const op of ops ?? []) {
      if (op.type === 'put' && isMeta(op.key) && decodeMeta(op.value).generation === 2) swapAt = landed;
    }
    if (ops?.some((op) => !isMeta(op.key) && generationOf(op.key) === 2)) recordLandings.push(landed);
  });
  const f = await follower(db);
  for (const chunk of chunks) expect(await f.state.receiveChunk(chunk), `chunk at ${chunk.offset}`).toEqual({ ok: true });
  const installed = await f.state.installReceived(chunks[0]!.meta, OPTIONS);
  expect(swapAt, 'the swap landed').toBeGreaterThan(0);

  const after = recordLandings.filter((at) => at > swapAt);
  // (soft: the crash below says what a record landing after the swap costs)
  expect
    .soft(after, `writes of the new state's records that landed after the swap (write ${swapAt} of ${db.landed.log.length})`)
    .toEqual([]);

  // A crash right after the swap landed: the store reopens at the stream's point with every record of it.
  const crashed = await AppliedStore.open(await db.landed.crashedAfter(swapAt));
  let loaded: { machine: LockMachine; point: { index: number } } | null;
  try {
    loaded = await new LockStateStore<LockMachine>(() => Promise.resolve(crashed), new ManualScheduler()).load(OPTIONS);
  } catch (err) {
    return expect.fail(`a crash right after the swap landed: the store does not load: ${(err as Error).message}`);
  }
  expect(loaded?.point.index, 'a crash right after the swap: the stream point').toBe(stream.point.index);
  expect(same(loaded!.machine.snapshot(), atPoint), 'a crash right after the swap: the leader state at the stream point, whole').toBe(true);

  // And the node itself, once installReceived resolved, holds it.
  expect('machine' in installed).toBe(true);
  expect(same((installed as { machine: LockMachine }).machine.snapshot(), atPoint)).toBe(true);
}

describe('a streamed snapshot over a disk that lands writes late and out of order', () => {
  it('(the disk model) two writes in flight at once land the newest first; one awaited before the next, in order', async () => {
    const db = new LateDb();
    const key = Uint8Array.of(1);
    const put = (v: number): BatchOp[] => [{ type: 'put', key, value: Uint8Array.of(v) }];
    await Promise.all([db.batch(put(1)), db.batch(put(2))]);
    expect([...(await db.get(key))!], 'the first asked landed last').toEqual([1]);
    await db.batch(put(3));
    await db.batch(put(4));
    expect([...(await db.get(key))!]).toEqual([4]);
  });
  it('small chunks: the swap lands after every chunk’s records', async () => {
    await streamInto(5, 400, 300);
  });
  it('large chunks (a chunk more than one batch of records): the swap lands after every chunk’s records', async () => {
    await streamInto(9, 1500, 4000);
  });
});
