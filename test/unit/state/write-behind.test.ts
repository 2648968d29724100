// A write-behind batch is fed to LevelDB in slices with the event loop let run between them (a follower's
// burst of tens of thousands of changes held the loop for half a second in classic-level's array batch),
// and is still ONE batch: nothing of it is visible, or survives a crash, until it is written whole — the
// changed records and the meta record together. A failure while it is fed writes nothing and stops the node.
import { describe, expect, it } from 'vitest';
import type { RecordOp } from '../../../src/lock/store-records.js';
import type { Scheduler } from '../../../src/raft/env.js';
import {
  AppliedStore,
  META_KEY,
  decodeMeta,
  generationPrefix,
  type AppliedPoint,
  type RecordBatch,
} from '../../../src/state/applied-store.js';
import { toTextForm } from '../../../src/state/text-form.js';
import { WriteBehind } from '../../../src/state/write-behind.js';
import { CONF } from './store-fixtures.js';
import { CrashDb } from './crash-db.js';

const SLICE = 500;

function opsOf(count: number): RecordOp[] {
  const ops: RecordOp[] = [];
  for (let i = 0; i < count; i++) {
    const key = Uint8Array.of(0x6b, i >> 16, (i >> 8) & 0xff, i & 0xff);
    ops.push({ key, value: i % 7 === 6 ? null : Uint8Array.of(i & 0xff, 1, 2, 3) });
  }
  return ops;
}

/** A scheduler whose soon() is a macrotask (setImmediate, as in production) and which lets the test look
 *  (and wait for its look to finish) each time one runs, before the queued function goes on. */
class ObservedScheduler implements Scheduler {
  constructor(private readonly onSoon: () => Promise<void> | void) {}
  soon(fn: () => void): void {
    setImmediate(() => {
      void Promise.resolve(this.onSoon()).then(fn);
    });
  }
  after(): never {
    throw new Error('not used');
  }
  every() {
    return { cancel: () => {} };
  }
}

/** A store at point 0 (an empty generation swapped in) over `db`, its write-behind fed by `take`. */
async function setUp(
  db: CrashDb,
  take: () => { ops: RecordOp[]; point: AppliedPoint },
  onSoon: () => Promise<void> | void = () => {},
): Promise<{ store: AppliedStore; writeBehind: WriteBehind; failures: unknown[] }> {
  const store = await AppliedStore.open(db, 10_000, SLICE);
  await store.replace([], { index: 0, term: 0, conf: CONF });
  const failures: unknown[] = [];
  const source = { pending: 0, appliedIndex: 0, take };
  const writeBehind = new WriteBehind(store, source, new ObservedScheduler(onSoon), { intervalMs: 100, maxChanges: 10 }, (err) =>
    failures.push(err),
  );
  return { store, writeBehind, failures };
}

async function metaIndexOf(db: CrashDb): Promise<number> {
  const reopened = await AppliedStore.open(await db.crashedAfter(db.log.length));
  return reopened.point?.index ?? -1;
}

describe('a write-behind batch fed in slices', () => {
  it('is one batch, with nothing of it visible or durable until it is written, the loop let run between slices', async () => {
    const db = new CrashDb();
    const ops = opsOf(5_000);
    const point: AppliedPoint = { index: 42, term: 3, conf: CONF };
    const seen: { batches: number; firstKey: Uint8Array | undefined; metaIndex: number }[] = [];
    const firstKey = new Uint8Array([...generationPrefix(1), ...ops[0]!.key]);
    let logAtTake = 0;
    const { store, writeBehind, failures } = await setUp(
      db,
      () => {
        logAtTake = db.log.length;
        return { ops, point };
      },
      async () => {
        // Between two slices: what a crash now would leave, and what a reader sees.
        seen.push({ batches: db.log.length - logAtTake, firstKey: await db.get(firstKey), metaIndex: await metaIndexOf(db) });
      },
    );
    expect(await writeBehind.flush(false)).toBe(42);
    expect(failures).toEqual([]);
    // 5,000 ops in slices of 500: nine pauses between ten slices, each a macrotask of its own.
    expect(seen.length).toBe(Math.ceil(ops.length / SLICE) - 1);
    for (const s of seen) {
      expect(s.batches, 'a batch was written while the take was still being fed').toBe(0);
      expect(s.firstKey, 'a record of the take is visible before the batch is written').toBeUndefined();
      expect(s.metaIndex, 'a crash while the take is fed keeps the point before it').toBe(0);
    }
    // One batch: every op in the take's order, prefixed with the generation, and the meta record last.
    const written = db.log.slice(logAtTake);
    expect(written.length).toBe(1);
    const batch = written[0]!;
    if (batch.kind !== 'batch') throw new Error('a clear, not a batch');
    expect(batch.ops.length).toBe(ops.length + 1);
    ops.forEach((op, i) => {
      const got = batch.ops[i]!;
      expect([...got.key]).toEqual([...generationPrefix(1), ...op.key]);
      expect(got.type).toBe(op.value === null ? 'del' : 'put');
      // A generation this build writes keeps its values in text form (text-form.ts).
      if (got.type === 'put') expect([...got.value]).toEqual([...toTextForm(op.value!)]);
    });
    const last = batch.ops[ops.length]!;
    expect([...last.key]).toEqual([...META_KEY]);
    if (last.type !== 'put') throw new Error('the meta record deleted');
    expect(decodeMeta(last.value).point.index).toBe(42);
    expect(decodeMeta(last.value).textValues).toBe(true);
    expect(store.point?.index).toBe(42);
    expect(await metaIndexOf(db)).toBe(42);
  });

  it('a small take is written without a pause', async () => {
    const db = new CrashDb();
    let pauses = 0;
    const { writeBehind } = await setUp(
      db,
      () => ({ ops: opsOf(SLICE), point: { index: 7, term: 1, conf: CONF } }),
      () => {
        pauses++;
      },
    );
    expect(await writeBehind.flush(false)).toBe(7);
    expect(pauses).toBe(0);
    expect(await metaIndexOf(db)).toBe(7);
  });

  it('takes are written one at a time and in order, a later one after an earlier one being fed', async () => {
    const db = new CrashDb();
    const takes = [opsOf(2_000), opsOf(10)];
    let taken = 0;
    const { writeBehind } = await setUp(db, () => {
      const ops = takes[taken]!;
      taken++;
      return { ops, point: { index: taken * 10, term: 1, conf: CONF } };
    });
    const from = db.log.length;
    const first = writeBehind.flush(false);
    const second = writeBehind.flush(false); // taken while the first is fed
    expect(await Promise.all([first, second])).toEqual([10, 20]);
    const points = db.log
      .slice(from)
      .filter((w) => w.kind === 'batch')
      .map((w) => {
        const meta = w.kind === 'batch' ? w.ops[w.ops.length - 1]! : null;
        return meta?.type === 'put' ? decodeMeta(meta.value).point.index : -1;
      });
    expect(points).toEqual([10, 20]);
  });

  it('a failure while the take is fed writes nothing of it and stops the node', async () => {
    class FailingDb extends CrashDb {
      closed = 0;
      protected override chained(): RecordBatch {
        const inner = super.chained();
        let puts = 0;
        return {
          put: (key, value) => {
            if (++puts === 1_234) throw new Error('disk on fire');
            return inner.put(key, value);
          },
          del: (key) => inner.del(key),
          write: (options) => inner.write(options),
          close: () => {
            this.closed++;
            return inner.close();
          },
        };
      }
    }
    const db = new FailingDb();
    const { store, writeBehind, failures } = await setUp(db, () => ({ ops: opsOf(3_000), point: { index: 9, term: 1, conf: CONF } }));
    const from = db.log.length;
    await expect(writeBehind.flush(false)).rejects.toThrow('disk on fire');
    await writeBehind.stop();
    expect(failures.map((e) => (e as Error).message)).toEqual(['disk on fire']);
    expect(db.log.length - from, 'nothing of the failed take was written').toBe(0);
    expect(db.closed, 'the abandoned batch is closed').toBe(1);
    expect(store.point?.index).toBe(0);
    expect(await metaIndexOf(db)).toBe(0);
    // A store that no longer follows what the node applies writes nothing more.
    await expect(writeBehind.flush(false)).rejects.toThrow('disk on fire');
  });
});
