// The node's state machine adapter (src/lock-on-raft/lock-fsm.ts) over the real applied store (src/state, on
// memory-level as the simulator runs it): whatever the adapter tells the store, every batch it writes holds
// the records of exactly the entries up to the point it claims — not one entry ahead of it, not one behind
// (issue 36, planted bug 2: the store told, before the machine applies an entry, the point the machine is at,
// so every batch claims the index before the records it holds). The other unit tests of the store call
// LockStateStore.applied() themselves; only this one goes through LockFsm.apply(), as the driver does.
// Seeded random lock entries with noop and configuration entries between them; write-behind batches taken
// between entries at random; after each persist(), the store as a crash right after any of its batches
// leaves it, reopened at its point, must be what a fresh machine makes of exactly the entries up to that
// point, and the persist's own batch must reach the entry last applied.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { LockFsm } from '../../../src/lock-on-raft/lock-fsm.js';
import { encodeConfEntry } from '../../../src/raft/core/conf.js';
import type { ConfState, Entry } from '../../../src/raft/core/types.js';
import type { Scheduler } from '../../../src/raft/env.js';
import { AppliedStore, META_KEY, type AppliedPoint } from '../../../src/state/applied-store.js';
import { LockStateStore } from '../../../src/state/lock-store.js';
import { SimRng } from '../../sim/rng.js';
import { OPTIONS, RandomLog, type SlicedMachine } from '../lock/random-log.js';
import { CrashDb } from './crash-db.js';
import { CONF, ManualScheduler, same } from './store-fixtures.js';

/** Timers and soon() held until the test fires them: a write-behind batch is taken exactly where the test
 *  says (between two entries, as the driver's loop turns allow). */
class HeldTimers implements Scheduler {
  private due: (() => void)[] = [];
  soon(fn: () => void): void {
    this.due.push(fn);
  }
  after(_delayMs: number, fn: () => void) {
    let live = true;
    this.due.push(() => live && fn());
    return { cancel: () => (live = false) };
  }
  every() {
    return { cancel: () => {} };
  }
  fire(): void {
    const due = this.due;
    this.due = [];
    for (const fn of due) fn();
  }
}

/** A fresh machine that applied exactly entries 1..index of `entries` (noop and config: skipped). */
function freshAt(entries: readonly Entry[], index: number): LockMachine {
  return new Reference(entries).at(index);
}

/** A fresh machine walked forward through the entries to each point asked (points only grow in a correct
 *  run; one asked below where it is starts a new machine). */
class Reference {
  private machine = new LockMachine(OPTIONS);
  constructor(private readonly entries: readonly Entry[]) {}
  at(index: number): LockMachine {
    if (this.machine.appliedIndex > index) this.machine = new LockMachine(OPTIONS);
    while (this.machine.appliedIndex < index) {
      const e = this.entries[this.machine.appliedIndex]!;
      if (e.kind === 'normal') this.machine.apply(e.index, e.term, e.data);
      else this.machine.skip(e.index);
    }
    return this.machine;
  }
}

/** The configuration a store at `index` must carry: the last configuration entry's at or below it. */
function confAt(entries: readonly Entry[], index: number, initial: ConfState): ConfState {
  let conf = initial;
  for (const e of entries.slice(0, index)) if (e.kind === 'config') conf = JSON.parse(new TextDecoder().decode(e.data)).conf as ConfState;
  return conf;
}

const isMeta = (key: Uint8Array) => key.length === 2 && key[0] === META_KEY[0] && key[1] === META_KEY[1];

/** Which fresh state, near `index`, the stored one is (for the failure message). */
function whichState(entries: readonly Entry[], index: number, stored: Uint8Array): string {
  for (const d of [1, -1, 2, -2]) {
    const at = index + d;
    if (at >= 0 && at <= entries.length && same(freshAt(entries, at).snapshot(), stored)) return `it is the state at ${at}`;
  }
  return 'it is no state within two entries of it';
}

/** The store as a crash right after a write leaves it (`disk`: every write up to it), opened and loaded as a
 *  restart does: it must be exactly what a fresh machine makes of the entries up to the point it claims. */
async function checkReopened(disk: CrashDb, entries: readonly Entry[], reference: Reference, what: string): Promise<AppliedPoint> {
  const reopened = await AppliedStore.open(disk);
  const loaded = await new LockStateStore<LockMachine>(() => Promise.resolve(reopened), new ManualScheduler()).load(OPTIONS);
  expect(loaded, `${what}: the store holds a state`).not.toBeNull();
  const point = loaded!.point;
  expect(point.index, `${what}: a point past every entry applied (${entries.length})`).toBeLessThanOrEqual(entries.length);
  const stored = loaded!.machine.snapshot();
  if (!same(stored, reference.at(point.index).snapshot())) {
    expect.fail(
      `${what}: the store reopened at its point ${point.index} (${entries.length} entries applied by now) holds another state ` +
        `than a fresh machine that applied entries 1..${point.index}: ${whichState(entries, point.index, stored)}`,
    );
  }
  expect(point.term, `${what}: the point's term is its entry's`).toBe(point.index === 0 ? 0 : entries[point.index - 1]!.term);
  expect(point.conf, `${what}: the point's configuration`).toEqual(confAt(entries, point.index, CONF));
  return point;
}

async function run(seed: number, rounds: number): Promise<void> {
  const rng = new SimRng(seed * 7919 + 1);
  const db = new CrashDb();
  const timers = new HeldTimers();
  // Small batches (16 changes): the write-behind's full-batch path (soon) is taken as well as its timer.
  const state = new LockStateStore<LockMachine>(() => AppliedStore.open(db), timers, undefined, { intervalMs: 100, maxChanges: 16 });
  const fsm = new LockFsm<LockMachine>(LockMachine, OPTIONS, null, undefined, state);
  const stored = fsm.stored!;
  expect(await stored.open(), 'a new store is empty').toBeNull();
  await stored.install({ meta: { index: 0, term: 0, conf: CONF }, data: new Uint8Array(0) });

  // Every entry the fsm applied, in order (entries[i] is index i + 1); the random lock entries reach the fsm
  // through this stand-in machine, as committed entries reach it from the driver.
  const entries: Entry[] = [];
  let term = 1;
  const applyEntry = (e: Entry) => {
    entries.push(e);
    return fsm.apply(e);
  };
  const driven = {
    get appliedIndex() {
      return fsm.machine.appliedIndex;
    },
    apply(index: number, entryTerm: number, data: Uint8Array) {
      term = Math.max(term, entryTerm);
      return applyEntry({ index, term: entryTerm, kind: 'normal', data })!;
    },
    get: (key: string) => fsm.machine.get(key),
    expiredLeases: (nowMs: number, limit: number) => fsm.machine.expiredLeases(nowMs, limit),
    snapshot: () => fsm.machine.snapshot(),
    beginSnapshot: (sizeHint?: number, sliceItems?: number) => fsm.machine.beginSnapshot(sizeHint, sliceItems),
  };
  const log = new RandomLog(driven as unknown as SlicedMachine, seed);
  let learners = 0;
  const reference = new Reference(entries);
  // The disk as a crash right after the last write checked leaves it: the writes replayed one by one.
  const disk = await db.crashedAfter(db.log.length); // the install's writes: the empty state at 0
  let checkedWrites = db.log.length;

  for (let round = 1; round <= rounds; round++) {
    const count = 10 + rng.int(50);
    for (let i = 0; i < count; i++) {
      const roll = rng.float();
      const index = fsm.machine.appliedIndex + 1;
      if (roll < 0.04) applyEntry({ index, term, kind: 'noop', data: new Uint8Array(0) });
      else if (roll < 0.06) {
        const id = `n${4 + learners++}`;
        const last = confAt(entries, entries.length, CONF);
        const conf: ConfState = { ...last, learners: [...last.learners, id], addresses: { ...last.addresses, [id]: `${id}:7001` } };
        applyEntry({
          index,
          term,
          kind: 'config',
          data: encodeConfEntry({ conf, change: { type: 'add', id, address: `${id}:7001`, learner: true } }),
        });
      } else log.run(1);
      // A batch now and then between two entries (its timer, or a full batch's soon()).
      if (rng.float() < 0.1) timers.fire();
    }
    timers.fire();
    const durable = await stored.persist();
    const applied = fsm.machine.appliedIndex;
    expect(applied).toBe(entries.length);
    // Every batch written since the last check (the timers' and the persist's, in order), opened as a restart
    // after a crash right after it would open it; the last is the persist's.
    let point: AppliedPoint | null = null;
    for (; checkedWrites < db.log.length; checkedWrites++) {
      const write = db.log[checkedWrites]!;
      if (write.kind === 'batch') await disk.db.batch(write.ops);
      else await disk.db.clear(write);
      if (write.kind !== 'batch' || !write.ops.some((op) => op.type === 'put' && isMeta(op.key))) continue;
      const last = checkedWrites === db.log.length - 1;
      point = await checkReopened(disk, entries, reference, `${last ? 'persist' : 'a batch before persist'} ${round} (seed ${seed})`);
    }
    expect(point, `persist ${round}: persist() wrote a batch`).not.toBeNull();
    // persist() writes everything applied: the store holds the applied index, durably.
    expect(durable, `persist ${round}: persist() resolves with the index the store holds`).toBe(point!.index);
    expect(point!.index, `persist ${round}: persist() writes up to the entry last applied`).toBe(applied);
  }
  expect(learners, 'configuration entries were applied').toBeGreaterThan(0);
  await fsm.closeStore();
}

describe('LockFsm over the applied store', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: after every persist the store, reopened, and after every batch before it, is exactly the entries up to its point — never one ahead or behind`, async () => {
      await run(seed, 30);
    });
  }
});
