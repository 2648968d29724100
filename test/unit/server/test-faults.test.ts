// The node's test-fault clock and storage wrapper, on a hand-driven true clock (no timers waited on).
import { describe, expect, it, vi } from 'vitest';
import { FaultClock } from '../../../src/test-faults/clock.js';
import { FaultyStorage } from '../../../src/test-faults/disk.js';
import { parseTestFaults, type DiskFaults } from '../../../src/test-faults/spec.js';
import { corruptingFsm } from '../../../src/test-faults/snapshot.js';
import type { SnapshotChunk } from '../../../src/raft/core/types.js';
import type { StateMachine, StoredStateMachine } from '../../../src/raft/fsm.js';
import type { PersistBatch, RaftStorage } from '../../../src/raft/storage/types.js';
import { StorageFailedError } from '../../../src/raft/storage/errors.js';
import { emptyHardState } from '../../../src/raft/core/types.js';

describe('FaultClock', () => {
  const driven = (startMs = 1_000_000) => {
    let t = startMs;
    return { now: () => t, advance: (ms: number) => (t += ms) };
  };

  it('anchors the wall offset at start; a later wall jump (either way) moves the wall clock, never the stamps', () => {
    const t = driven();
    const clock = new FaultClock({ offsetMs: 5000 }, t.now);
    expect(clock.nowMs()).toBe(1_005_000);
    t.advance(100);
    clock.set({ offsetMs: -3_600_000 });
    expect(clock.wallMs()).toBe(1_000_100 - 3_600_000);
    expect(clock.nowMs()).toBe(1_005_100);
    clock.set({ offsetMs: 3_600_000 });
    t.advance(100);
    expect(clock.nowMs()).toBe(1_005_200);
  });

  it('drift bends the clock from the moment it is set, and the clock never goes back when it changes', () => {
    const t = driven();
    const clock = new FaultClock({}, t.now);
    t.advance(1000);
    clock.set({ driftPpm: 20_000 });
    t.advance(1000);
    expect(clock.nowMs()).toBe(1_000_000 + 1000 + 1020);
    const before = clock.nowMs();
    clock.set({ driftPpm: -20_000 });
    expect(clock.nowMs()).toBe(before);
    t.advance(1000);
    expect(clock.nowMs()).toBe(before + 980);
  });

  it('the file parser refuses nonsense instead of applying it', () => {
    expect(
      parseTestFaults('{"clock":{"offsetMs":-5,"driftPpm":100},"disk":{"fsyncDelayMs":3,"failWrites":true,"crashAfterBatches":null}}'),
    ).toEqual({
      clock: { offsetMs: -5, driftPpm: 100 },
      disk: { fsyncDelayMs: 3, failWrites: true, crashAfterBatches: null },
    });
    expect(() => parseTestFaults('{"clock":{"driftPpm":2000000}}')).toThrow(/beyond/);
    expect(() => parseTestFaults('{"disk":{"failWrites":"yes"}}')).toThrow(/boolean/);
    expect(() => parseTestFaults('{"disk":{"crashAfterBatches":1.5}}')).toThrow(/whole number/);
    expect(() => parseTestFaults('[]')).toThrow(/object/);
    expect(parseTestFaults('{"snapshot":{"corruptStreams":2}}')).toEqual({ snapshot: { corruptStreams: 2 } });
    expect(() => parseTestFaults('{"snapshot":{"corruptStreams":-1}}')).toThrow(/snapshot.corruptStreams must be a whole number/);
  });
});

describe('corruptingFsm (snapshot.corruptStreams)', () => {
  it('flips the last byte of the first chunk of the next N snapshots only; everything else passes through', async () => {
    const seen: SnapshotChunk[] = [];
    const stored: StoredStateMachine = {
      open: () => Promise.resolve(null),
      install: () => Promise.resolve(),
      persist: () => Promise.resolve(0),
      receiveChunk: (chunk) => {
        seen.push(chunk);
        return Promise.resolve({ ok: true });
      },
    };
    const fsm: StateMachine<number> = { apply: () => 7, snapshot: () => new Uint8Array(0), restore: () => {}, stored };
    const corruption = { left: 2 };
    const wrapped = corruptingFsm(fsm, corruption);
    const meta = { index: 5, term: 1, conf: { clusterId: '', voters: [], learners: [], addresses: {}, removed: [] } };
    const chunk = (offset: number, done: boolean) => ({ meta, offset, data: Uint8Array.of(1, 2, 3), done });
    for (const [offset, done] of [
      [0, false],
      [3, true],
      [0, true],
      [0, false],
      [3, true],
    ] as const)
      await wrapped.stored!.receiveChunk!(chunk(offset, done));
    expect(seen.map((c) => [c.offset, [...c.data]])).toEqual([
      [0, [1, 2, 3]],
      [3, [1, 2, 2]],
      [0, [1, 2, 2]],
      [0, [1, 2, 3]],
      [3, [1, 2, 3]],
    ]);
    expect(corruption.left).toBe(0);
    expect(wrapped.apply({ index: 1, term: 1, kind: 'normal', data: new Uint8Array(0) })).toBe(7);
    expect(await wrapped.stored!.persist()).toBe(0);
  });
});

describe('FaultyStorage', () => {
  const batch = (index: number): PersistBatch => ({
    hardState: { ...emptyHardState(), term: 1 },
    snapshot: null,
    entries: [{ index, term: 1, kind: 'normal', data: new Uint8Array([index]) }],
  });
  /** The real store's part is only "the write was made": a recording stand-in is enough. */
  class Recording implements RaftStorage {
    readonly written: number[] = [];
    load = () => Promise.resolve(null);
    save = (b: PersistBatch) => {
      this.written.push(...b.entries.map((e) => e.index));
      return Promise.resolve();
    };
    compact = () => Promise.resolve();
    close = () => Promise.resolve();
  }
  const setup = () => {
    let disk: DiskFaults = {};
    const crashes: number[] = [];
    const inner = new Recording();
    const s = new FaultyStorage(inner, { current: () => disk, crash: (n) => crashes.push(n) });
    return { s, inner, crashes, set: (d: DiskFaults) => (disk = d) };
  };

  it('fsyncDelayMs delays every save that syncs, and no save that only moves the commit index', async () => {
    vi.useFakeTimers();
    try {
      const { s, inner, set } = setup();
      set({ fsyncDelayMs: 200 });
      /** Resolves to true once `p` settles; fake time moves only when the test says so. */
      const settledAfter = async (p: Promise<void>, ms: number) => {
        let done = false;
        void p.then(() => (done = true));
        await vi.advanceTimersByTimeAsync(ms);
        return done;
      };
      const entries = s.save(batch(1));
      expect(await settledAfter(entries, 199)).toBe(false);
      expect(await settledAfter(entries, 1)).toBe(true);
      expect(inner.written).toEqual([1]);
      const commitOnly: PersistBatch = { hardState: { ...emptyHardState(), term: 1, commitIndex: 1 }, snapshot: null, entries: [] };
      expect(await settledAfter(s.save(commitOnly), 0)).toBe(true);
      // A new term (or vote) is synced: delayed like entries.
      const vote: PersistBatch = {
        hardState: { ...emptyHardState(), term: 2, votedFor: 'b', commitIndex: 1 },
        snapshot: null,
        entries: [],
      };
      const voted = s.save(vote);
      expect(await settledAfter(voted, 199)).toBe(false);
      expect(await settledAfter(voted, 1)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('failWrites refuses the write without making it', async () => {
    const { s, inner, set } = setup();
    await s.save(batch(1));
    set({ failWrites: true });
    await expect(s.save(batch(2))).rejects.toBeInstanceOf(StorageFailedError);
    expect(inner.written).toEqual([1]);
  });

  it('crashAfterBatches crashes right after the Nth durable batch once armed, and again only when re-armed with a new value', async () => {
    const { s, inner, crashes } = setup();
    s.arm(2);
    await s.save(batch(1));
    expect(crashes).toEqual([]);
    await s.save(batch(2));
    expect(crashes).toEqual([2]);
    // The crash point comes after the write: batch 2 is durable.
    expect(inner.written).toEqual([1, 2]);
    s.arm(2); // the same setting read again: not re-armed
    await s.save(batch(3));
    await s.save(batch(4));
    expect(crashes).toEqual([2]);
    s.arm(1);
    await s.save(batch(5));
    expect(crashes).toEqual([2, 1]);
  });
});
