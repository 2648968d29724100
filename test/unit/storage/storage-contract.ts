// One behavioural suite run against every RaftStorage, so the in-memory double used by the simulation
// cannot drift from the LevelDB store a real node runs on.
import { afterEach, describe, expect, it } from 'vitest';
import { bootstrapSnapshot, type Entry, type HardState, type RestoredState, type Snapshot } from '../../../src/raft/core/types.js';
import { InvalidBatchError, SnapshotOutOfDateError, StorageClosedError } from '../../../src/raft/storage/errors.js';
import type { RaftStorage } from '../../../src/raft/storage/types.js';

export interface StorageHarness {
  /** A new, empty store. */
  create(): Promise<RaftStorage>;
  /** Close `store` and open what survived of it, as a restarted node would. */
  reopen(store: RaftStorage): Promise<RaftStorage>;
  /** Release everything create() made (temp dirs). */
  cleanup(): Promise<void>;
}

export function entry(index: number, term: number, text = `cmd-${index}-${term}`): Entry {
  return { index, term, kind: 'normal', data: new TextEncoder().encode(text) };
}

export function entries(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(entry(i, term));
  return out;
}

export function snapshotAt(index: number, term: number, text = `state@${index}`): Snapshot {
  return {
    meta: { index, term, conf: { clusterId: '', voters: ['n1', 'n2', 'n3'], learners: [], addresses: {}, removed: [] } },
    data: new TextEncoder().encode(text),
  };
}

export const HS: HardState = { term: 1, votedFor: 'n1', commitIndex: 0 };
export const BOOT = bootstrapSnapshot(['n1', 'n2', 'n3']);

function indexes(state: RestoredState | null): Array<[number, number]> {
  return (state?.entries ?? []).map((e) => [e.index, e.term]);
}

export function storageContract(name: string, harness: StorageHarness): void {
  describe(`${name}: RaftStorage contract`, () => {
    const open: RaftStorage[] = [];
    async function fresh(): Promise<RaftStorage> {
      const s = await harness.create();
      open.push(s);
      return s;
    }
    async function restart(s: RaftStorage): Promise<RaftStorage> {
      const r = await harness.reopen(s);
      open.push(r);
      return r;
    }
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close().catch(() => undefined);
      await harness.cleanup();
    });

    it('loads null from an empty store (first boot)', async () => {
      const s = await fresh();
      expect(await s.load()).toBeNull();
      expect(await (await restart(s)).load()).toBeNull();
    });

    it('round-trips hard state, snapshot and entries across a restart', async () => {
      const s = await fresh();
      await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 3, 1) });
      const loaded = await (await restart(s)).load();
      expect(loaded).toEqual({ hardState: HS, snapshot: BOOT, entries: entries(1, 3, 1) });
    });

    it('keeps votedFor null and non-null apart', async () => {
      const s = await fresh();
      await s.save({ hardState: { term: 7, votedFor: null, commitIndex: 0 }, snapshot: BOOT, entries: [] });
      expect((await (await restart(s)).load())?.hardState).toEqual({ term: 7, votedFor: null, commitIndex: 0 });
    });

    it('refuses state before the bootstrap snapshot, so load() can always return one', async () => {
      const s = await fresh();
      await expect(s.save({ hardState: HS, snapshot: null, entries: [] })).rejects.toThrow(InvalidBatchError);
      expect(await (await restart(s)).load()).toBeNull();
    });

    it('a hard state alone leaves the log untouched', async () => {
      const s = await fresh();
      await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 2, 1) });
      await s.save({ hardState: { term: 2, votedFor: 'n2', commitIndex: 2 }, snapshot: null, entries: [] });
      const loaded = await (await restart(s)).load();
      expect(loaded?.hardState).toEqual({ term: 2, votedFor: 'n2', commitIndex: 2 });
      expect(indexes(loaded)).toEqual([
        [1, 1],
        [2, 1],
      ]);
    });

    it('§5.3: new entries replace every stored entry from their first index on', async () => {
      const s = await fresh();
      await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 5, 1) });
      await s.save({ hardState: null, snapshot: null, entries: entries(3, 3, 2) });
      let loaded = await s.load();
      expect(indexes(loaded)).toEqual([
        [1, 1],
        [2, 1],
        [3, 2],
      ]);
      // ...and the deleted 4 and 5 must not come back after a restart.
      const r = await restart(s);
      loaded = await r.load();
      expect(indexes(loaded)).toEqual([
        [1, 1],
        [2, 1],
        [3, 2],
      ]);
      expect(loaded?.entries[2]).toEqual(entry(3, 2));
      await r.save({ hardState: null, snapshot: null, entries: entries(4, 4, 2) });
      expect(indexes(await (await restart(r)).load())).toEqual([
        [1, 1],
        [2, 1],
        [3, 2],
        [4, 2],
      ]);
    });

    it('§7: a snapshot in a batch discards the whole stored log; entries after it may ride along', async () => {
      const s = await fresh();
      await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 8, 1) });
      const snap = snapshotAt(5, 2);
      await s.save({ hardState: { term: 2, votedFor: null, commitIndex: 5 }, snapshot: snap, entries: entries(6, 6, 2) });
      const loaded = await (await restart(s)).load();
      expect(loaded?.snapshot).toEqual(snap);
      expect(indexes(loaded)).toEqual([[6, 2]]);
    });

    it('compact() stores the snapshot and drops entries up to its index, keeping the rest', async () => {
      const s = await fresh();
      await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 6, 1) });
      await s.compact(snapshotAt(4, 1));
      const r = await restart(s);
      let loaded = await r.load();
      expect(loaded?.snapshot).toEqual(snapshotAt(4, 1));
      expect(indexes(loaded)).toEqual([
        [5, 1],
        [6, 1],
      ]);
      // Compacting everything leaves an empty log that continues at snapshot index + 1.
      await r.compact(snapshotAt(6, 1));
      await r.save({ hardState: null, snapshot: null, entries: entries(7, 7, 3) });
      loaded = await (await restart(r)).load();
      expect(loaded?.snapshot.meta.index).toBe(6);
      expect(indexes(loaded)).toEqual([[7, 3]]);
    });

    it('refuses a batch that would leave a gap or overlap the snapshot, and writes nothing of it', async () => {
      const s = await fresh();
      await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 3, 1) });
      await expect(
        s.save({ hardState: { term: 9, votedFor: null, commitIndex: 0 }, snapshot: null, entries: entries(5, 6, 1) }),
      ).rejects.toThrow(InvalidBatchError);
      await expect(s.save({ hardState: null, snapshot: null, entries: [entry(4, 1), entry(6, 1)] })).rejects.toThrow(InvalidBatchError);
      await s.compact(snapshotAt(2, 1));
      await expect(s.save({ hardState: null, snapshot: null, entries: entries(2, 4, 1) })).rejects.toThrow(/must start in 3\.\.4/);
      const loaded = await (await restart(s)).load();
      expect(loaded?.hardState).toEqual(HS);
      expect(indexes(loaded)).toEqual([[3, 1]]);
    });

    it('refuses a malformed batch at call time', async () => {
      const s = await fresh();
      await expect(s.save({ hardState: HS, snapshot: BOOT, entries: [entry(1.5, 1)] })).rejects.toThrow(InvalidBatchError);
      await expect(s.save({ hardState: { ...HS, term: -1 }, snapshot: BOOT, entries: [] })).rejects.toThrow(InvalidBatchError);
      expect(await s.load()).toBeNull();
    });

    it('refuses to compact backwards or past the last entry', async () => {
      const s = await fresh();
      await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 5, 1) });
      await s.compact(snapshotAt(3, 1));
      await expect(s.compact(snapshotAt(2, 1))).rejects.toThrow(SnapshotOutOfDateError);
      await expect(s.compact(snapshotAt(6, 1))).rejects.toThrow(InvalidBatchError);
      expect(indexes(await s.load())).toEqual([
        [4, 1],
        [5, 1],
      ]);
    });

    it('applies concurrent save()/compact() calls in call order', async () => {
      const s = await fresh();
      const calls = [
        s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 4, 1) }),
        s.save({ hardState: { term: 2, votedFor: 'n2', commitIndex: 1 }, snapshot: null, entries: entries(3, 5, 2) }),
        s.compact(snapshotAt(2, 1)),
        s.save({ hardState: { term: 2, votedFor: 'n2', commitIndex: 4 }, snapshot: null, entries: entries(6, 6, 2) }),
      ];
      await Promise.all(calls);
      const loaded = await (await restart(s)).load();
      expect(loaded?.hardState.commitIndex).toBe(4);
      expect(loaded?.snapshot.meta.index).toBe(2);
      expect(indexes(loaded)).toEqual([
        [3, 2],
        [4, 2],
        [5, 2],
        [6, 2],
      ]);
    });

    it('stores the bytes as they were at the call, even if the caller reuses the buffer', async () => {
      const s = await fresh();
      const e = entry(1, 1, 'original');
      const pending = s.save({ hardState: HS, snapshot: BOOT, entries: [e] });
      e.data.fill(0x21);
      await pending;
      expect(new TextDecoder().decode((await (await restart(s)).load())?.entries[0]?.data)).toBe('original');
    });

    it('rejects calls after close()', async () => {
      const s = await fresh();
      await s.close();
      await expect(s.save({ hardState: HS, snapshot: BOOT, entries: [] })).rejects.toThrow(StorageClosedError);
      await expect(s.load()).rejects.toThrow(StorageClosedError);
    });
  });
}
