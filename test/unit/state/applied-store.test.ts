// The applied store (src/state) over a LevelDB with a crash model (crash-db.ts): a crash after any write
// leaves a store that opens at some batch's point with exactly the state at that point; a new generation
// swapped in (a snapshot installed) is whole or absent, never half; the meta record and the records it
// covers are one batch.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { AppliedStore } from '../../../src/state/applied-store.js';
import { LockStateStore } from '../../../src/state/lock-store.js';
import { CONF, ManualScheduler, same, settle } from './store-fixtures.js';
import { OPTIONS, RandomLog, type SlicedMachine } from '../lock/random-log.js';
import { CrashDb } from './crash-db.js';

/** Timers the test fires by hand. */

/** Drives a machine and its store: entries applied, batches written on the timer; records the state at each
 *  batch's point. Returns the db and the snapshots by index. */
async function run(seed: number, rounds: number): Promise<{ db: CrashDb; states: Map<number, Uint8Array> }> {
  const db = new CrashDb();
  const scheduler = new ManualScheduler();
  const state = new LockStateStore<LockMachine>(() => AppliedStore.open(db), scheduler);
  const machine = new LockMachine(OPTIONS);
  await state.replace(machine, { index: 0, term: 0, conf: CONF });
  const states = new Map<number, Uint8Array>([[0, machine.snapshot()]]);
  const log = new RandomLog(machine as unknown as SlicedMachine, seed);
  for (let round = 0; round < rounds; round++) {
    const before = machine.appliedIndex;
    log.run(30 + (round % 5) * 20);
    for (let i = before + 1; i <= machine.appliedIndex; i++) state.applied(i, 1, null);
    states.set(machine.appliedIndex, machine.snapshot());
    scheduler.fire(); // a batch, taken now, at this index
    await settle();
  }
  await state.persist();
  return { db, states };
}

describe('the applied store under crashes', () => {
  it('a crash after any write reopens at some batch’s point with exactly the state at that point', async () => {
    const { db, states } = await run(5, 40);
    expect(db.log.length).toBeGreaterThan(40);
    const firstSwap = db.log.findIndex((w) => w.kind === 'batch' && w.ops.some((op) => op.key[0] === 0xff));
    let lastIndex = -1;
    for (let writes = 0; writes <= db.log.length; writes++) {
      const crashed = await db.crashedAfter(writes);
      const store = await AppliedStore.open(crashed);
      const loaded = await new LockStateStore<LockMachine>(() => Promise.resolve(store), new ManualScheduler()).load(OPTIONS);
      if (loaded === null) {
        expect(writes, 'only before the first swap is the store empty').toBeLessThanOrEqual(firstSwap);
        continue;
      }
      expect(writes, 'after the first swap the store holds a state').toBeGreaterThan(firstSwap);
      const expected = states.get(loaded.point.index);
      expect(expected, `a point (${loaded.point.index}) no batch reached`).toBeDefined();
      expect(same(loaded.machine.snapshot(), expected!), `crash after ${writes} writes: the state at ${loaded.point.index} differs`).toBe(
        true,
      );
      expect(loaded.point.index).toBeGreaterThanOrEqual(lastIndex); // never back to an older state
      lastIndex = loaded.point.index;
    }
  });

  it('a whole new state (a snapshot installed) is swapped in whole or not at all, and the old one is gone after', async () => {
    const db = new CrashDb();
    const scheduler = new ManualScheduler();
    const state = new LockStateStore<LockMachine>(() => AppliedStore.open(db, 500), scheduler);
    const small = new LockMachine(OPTIONS);
    new RandomLog(small as unknown as SlicedMachine, 1).run(200);
    await state.replace(small, { index: small.appliedIndex, term: 1, conf: CONF });
    const big = new LockMachine(OPTIONS);
    new RandomLog(big as unknown as SlicedMachine, 2).run(8_000); // thousands of records: several batches of 500
    const from = db.log.length;
    await state.replace(big, { index: big.appliedIndex, term: 2, conf: CONF });
    const batches = db.log.slice(from).filter((w) => w.kind === 'batch').length;
    expect(batches, 'the new generation takes several batches').toBeGreaterThan(2);
    for (let writes = from; writes <= db.log.length; writes++) {
      const loaded = await new LockStateStore<LockMachine>(async () => AppliedStore.open(await db.crashedAfter(writes)), scheduler).load(
        OPTIONS,
      );
      const expected = loaded!.point.index === big.appliedIndex ? big : small;
      expect(same(loaded!.machine.snapshot(), expected.snapshot()), `crash after ${writes} writes`).toBe(true);
    }
    // After the swap the old generation is deleted: only the new one's records remain (and the meta record).
    const store = await AppliedStore.open(await db.crashedAfter(db.log.length));
    const read = await store.read();
    let total = 0;
    for await (const _ of (await db.crashedAfter(db.log.length)).db.keys()) total++;
    expect(total).toBe(read!.count + 1);
  });

  it('an entry that changes no record (a term start, a configuration) still moves the store’s point', async () => {
    const db = new CrashDb();
    const scheduler = new ManualScheduler();
    const state = new LockStateStore<LockMachine>(() => AppliedStore.open(db), scheduler);
    const machine = new LockMachine(OPTIONS);
    await state.replace(machine, { index: 0, term: 0, conf: CONF });
    machine.skip(1); // a noop: nothing of the lock state changes
    state.applied(1, 2, null);
    scheduler.fire();
    await settle();
    const reopened = await AppliedStore.open(await db.crashedAfter(db.log.length));
    expect(reopened.point).toMatchObject({ index: 1, term: 2 });
  });

  it('a store of an older record format (rest format 1, build 6261eaa) is read, then written again whole in this build’s', async () => {
    const fixture = JSON.parse(readFileSync(new URL('../lock/fixtures/store-records-format1.json', import.meta.url), 'utf8')) as {
      appliedIndex: number;
      snapshot: string;
      records: [string, string][];
    };
    const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));
    const db = new CrashDb();
    const old = await AppliedStore.open(db);
    const point = { index: fixture.appliedIndex, term: 1, conf: CONF };
    await old.replace([fixture.records.map(([k, v]) => ({ key: bytes(k), value: bytes(v) }))], point);
    const options = { dedupWindowMs: 600_000, dedupMaxEntries: 1000 };
    const state = new LockStateStore<LockMachine>(() => AppliedStore.open(db), new ManualScheduler());
    const loaded = await state.load(options);
    expect(Buffer.from(loaded!.machine.snapshot()).toString('hex')).toBe(fixture.snapshot);
    // Rewritten at open: the rest record is this build's format, and the store restores to the same state.
    const reopened = await AppliedStore.open(db);
    let restFormat = -1;
    await reopened.readInto({
      rest: (value) => (restFormat = value[0]!),
      session: () => {},
      key: () => {},
      dedup: () => {},
      line: () => {},
      keyDelay: () => {},
    });
    expect(restFormat).toBe(2);
    const again = await new LockStateStore<LockMachine>(() => Promise.resolve(reopened), new ManualScheduler()).load(options);
    expect(Buffer.from(again!.machine.snapshot()).toString('hex')).toBe(fixture.snapshot);
    expect(again!.point).toMatchObject({ index: fixture.appliedIndex, term: 1 });
  });
});
