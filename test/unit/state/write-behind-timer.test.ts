// When write-behind batches go: `intervalMs` after the first change that waits (or at once when maxChanges
// wait), with no timer at all while nothing waits — an idle node's event loop is not woken ten times a
// second for nothing, and no change waits longer than intervalMs for its batch.
import { describe, expect, it } from 'vitest';
import type { RecordOp } from '../../../src/lock/store-records.js';
import type { Scheduler } from '../../../src/raft/env.js';
import type { AppliedPoint, AppliedStore } from '../../../src/state/applied-store.js';
import { WriteBehind } from '../../../src/state/write-behind.js';
import { CONF } from './store-fixtures.js';

/** Virtual time: timers run only when the test advances it. */
class ManualScheduler implements Scheduler {
  nowMs = 0;
  private timers: { atMs: number; fn: () => void; live: boolean }[] = [];
  readonly soonQueue: (() => void)[] = [];
  soon(fn: () => void): void {
    this.soonQueue.push(fn);
  }
  after(delayMs: number, fn: () => void) {
    const t = { atMs: this.nowMs + delayMs, fn, live: true };
    this.timers.push(t);
    return { cancel: () => void (t.live = false) };
  }
  every(): never {
    throw new Error('write-behind arms one-shot timers only');
  }
  get armed(): number {
    return this.timers.filter((t) => t.live).length;
  }
  advance(ms: number): void {
    this.nowMs += ms;
    for (const t of [...this.timers]) {
      if (t.live && t.atMs <= this.nowMs) {
        t.live = false;
        t.fn();
      }
    }
    this.timers = this.timers.filter((t) => t.live);
  }
}

function setUp(maxChanges = 1_000) {
  const scheduler = new ManualScheduler();
  const written: { atMs: number; index: number; ops: number }[] = [];
  const store = {
    point: { index: 0, term: 0, conf: CONF },
    write: (ops: readonly RecordOp[], point: AppliedPoint) => {
      written.push({ atMs: scheduler.nowMs, index: point.index, ops: ops.length });
      return Promise.resolve();
    },
  } as unknown as AppliedStore;
  const source = {
    pending: 0,
    appliedIndex: 0,
    take: () => {
      const ops = Array.from({ length: source.pending }, () => ({ key: Uint8Array.of(1), value: null }) as RecordOp);
      source.pending = 0;
      return { ops, point: { index: source.appliedIndex, term: 1, conf: CONF } };
    },
  };
  const writeBehind = new WriteBehind(store, source, scheduler, { intervalMs: 100, maxChanges });
  /** An entry applied that changed `changes` records. */
  const apply = (changes: number) => {
    source.appliedIndex++;
    source.pending += changes;
    writeBehind.noteApplied();
  };
  return { scheduler, written, writeBehind, apply };
}

const settle = () => new Promise<void>((r) => setImmediate(r));

describe('write-behind batch timing', () => {
  it('arms no timer while nothing waits, and writes a change intervalMs after it', async () => {
    const { scheduler, written, writeBehind, apply } = setUp();
    writeBehind.start();
    expect(scheduler.armed).toBe(0);
    scheduler.advance(10_000);
    expect(written).toEqual([]);

    scheduler.advance(30);
    apply(2); // at 10,030
    apply(1); // the same batch
    expect(scheduler.armed).toBe(1);
    scheduler.advance(99);
    await settle();
    expect(written).toEqual([]);
    scheduler.advance(1);
    await settle();
    expect(written).toEqual([{ atMs: 10_130, index: 2, ops: 3 }]);
    expect(scheduler.armed).toBe(0);

    // Idle again: nothing armed, nothing written however long.
    scheduler.advance(5_000);
    await settle();
    expect(written).toHaveLength(1);
    expect(scheduler.armed).toBe(0);

    // An entry that changes no record still moves the stored point (its batch carries only the point).
    apply(0);
    scheduler.advance(100);
    await settle();
    expect(written[1]).toEqual({ atMs: 15_230, index: 3, ops: 0 });
  });

  it('a change that waits when batching starts is written within intervalMs', async () => {
    const { scheduler, written, writeBehind, apply } = setUp();
    apply(4); // before start(): not yet batching
    expect(scheduler.armed).toBe(0);
    writeBehind.start();
    expect(scheduler.armed).toBe(1);
    scheduler.advance(100);
    await settle();
    expect(written).toEqual([{ atMs: 100, index: 1, ops: 4 }]);
  });

  it('maxChanges waiting go at once, and nothing is armed after stop', async () => {
    const { scheduler, written, writeBehind, apply } = setUp(10);
    writeBehind.start();
    apply(10);
    expect(scheduler.soonQueue).toHaveLength(1);
    scheduler.soonQueue.shift()!();
    await settle();
    expect(written).toEqual([{ atMs: 0, index: 1, ops: 10 }]);
    await writeBehind.stop();
    apply(3);
    scheduler.advance(1_000);
    await settle();
    expect(written).toHaveLength(1);
  });
});
