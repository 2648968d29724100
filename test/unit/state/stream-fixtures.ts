// What the snapshot-stream tests share: a leader's store with random entries written behind, a follower's
// store holding a small state of its own (over any LevelDB stand-in), and every chunk of a stream in order.
import { expect } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import type { SnapshotChunk, SnapshotMeta } from '../../../src/raft/core/types.js';
import { AppliedStore, type RecordDb } from '../../../src/state/applied-store.js';
import { LockStateStore } from '../../../src/state/lock-store.js';
import type { StoreStream } from '../../../src/state/snapshot-stream.js';
import { OPTIONS, RandomLog, type SlicedMachine } from '../lock/random-log.js';
import { CrashDb } from './crash-db.js';
import { CONF, ManualScheduler, settle } from './store-fixtures.js';

/** A leader's machine and store: `entries` applied and written behind. */
export async function leader(seed: number, entries: number) {
  const db = new CrashDb();
  const scheduler = new ManualScheduler();
  const state = new LockStateStore<LockMachine>(() => AppliedStore.open(db), scheduler);
  const machine = new LockMachine(OPTIONS);
  await state.replace(machine, { index: 0, term: 0, conf: CONF });
  const log = new RandomLog(machine as unknown as SlicedMachine, seed);
  const apply = async (n: number) => {
    const before = machine.appliedIndex;
    log.run(n);
    for (let i = before + 1; i <= machine.appliedIndex; i++) state.applied(i, 3, null);
    scheduler.fire();
    await settle();
  };
  await apply(entries);
  return { db, state, machine, apply };
}

/** A follower's store holding a small state of its own. */
export async function follower<D extends RecordDb>(db: D) {
  const state = new LockStateStore<LockMachine>(() => AppliedStore.open(db, 50), new ManualScheduler());
  const old = new LockMachine(OPTIONS);
  new RandomLog(old as unknown as SlicedMachine, 99).run(40);
  await state.replace(old, { index: old.appliedIndex, term: 1, conf: CONF });
  return { db, state, old };
}

/** Every chunk of a stream, in order. */
export async function chunksOf(stream: StoreStream, between?: (offset: number) => Promise<void>): Promise<SnapshotChunk[]> {
  const meta: SnapshotMeta = { index: stream.point.index, term: stream.point.term, conf: stream.point.conf };
  const out: SnapshotChunk[] = [];
  let offset = 0;
  for (;;) {
    const chunk = await stream.chunkAt(offset);
    expect(chunk, `a chunk at ${offset}`).not.toBeNull();
    out.push({ meta, offset, data: chunk!.data, done: chunk!.last });
    if (chunk!.last) return out;
    offset += chunk!.data.length;
    await between?.(offset);
  }
}
