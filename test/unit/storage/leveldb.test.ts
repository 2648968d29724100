import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { afterEach, describe, expect, it } from 'vitest';
import {
  HARD_STATE_KEY,
  SNAPSHOT_DATA_KEY,
  SNAPSHOT_META_KEY,
  encodeEntry,
  encodeSnapshotData,
  entryKey,
} from '../../../src/raft/storage/codec.js';
import { StorageCorruptionError, StorageFailedError } from '../../../src/raft/storage/errors.js';
import { LevelStorage } from '../../../src/raft/storage/leveldb.js';
import { BOOT, HS, entries, entry, snapshotAt, storageContract } from './storage-contract.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-storage-'));
  dirs.push(dir);
  return dir;
}
async function removeDirs(): Promise<void> {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
}

storageContract('LevelStorage', {
  create: async () => LevelStorage.open(await tempDir()),
  reopen: async (store) => {
    await store.close();
    return LevelStorage.open((store as LevelStorage).dir);
  },
  cleanup: removeDirs,
});

/** Edits the LevelDB directory behind the store's back, as bit rot or a buggy tool would. */
async function tamper(dir: string, edit: (db: Level<Uint8Array, Uint8Array>) => Promise<void>): Promise<void> {
  const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  try {
    await edit(db);
  } finally {
    await db.close();
  }
}

async function flipByte(db: Level<Uint8Array, Uint8Array>, key: Uint8Array, at = 5): Promise<void> {
  const value = await db.get(key);
  if (value === undefined) throw new Error('tamper: key not found');
  const bad = value.slice();
  bad[at]! ^= 0x10;
  await db.put(key, bad);
}

describe('LevelStorage on disk', () => {
  const stores: LevelStorage[] = [];
  async function openStore(dir: string): Promise<LevelStorage> {
    const s = await LevelStorage.open(dir);
    stores.push(s);
    return s;
  }
  /** A store with bootstrap snapshot, hard state and entries 1..5 (term 1), closed again. */
  async function seeded(): Promise<string> {
    const dir = await tempDir();
    const s = await LevelStorage.open(dir);
    await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 5, 1) });
    await s.close();
    return dir;
  }
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await removeDirs();
  });

  it('reports a clean load', async () => {
    const s = await openStore(await seeded());
    expect((await s.load())?.entries).toHaveLength(5);
    expect(s.loadReport).toEqual({ staleEntriesRemoved: 0, droppedEntries: [], truncatedBecause: null });
  });

  it('a corrupt entry cuts the log at the last good contiguous entry and deletes the rest', async () => {
    const dir = await seeded();
    await tamper(dir, (db) => flipByte(db, entryKey(3)));
    let s = await openStore(dir);
    const loaded = await s.load();
    expect(loaded?.entries.map((e) => e.index)).toEqual([1, 2]);
    expect(loaded?.hardState).toEqual(HS);
    expect(s.loadReport.droppedEntries).toEqual([3, 4, 5]);
    expect(s.loadReport.truncatedBecause).toMatch(/entry 3: entry record fails its CRC32 check/);
    // The old 4 and 5 were deleted, so a fresh 3 cannot be followed by stale entries after a restart.
    await s.save({ hardState: null, snapshot: null, entries: [entry(3, 2)] });
    await s.close();
    s = await openStore(dir);
    expect((await s.load())?.entries.map((e) => [e.index, e.term])).toEqual([
      [1, 1],
      [2, 1],
      [3, 2],
    ]);
    expect(s.loadReport.droppedEntries).toEqual([]);
  });

  it('a missing entry (gap) cuts the log there too', async () => {
    const dir = await seeded();
    await tamper(dir, (db) => db.del(entryKey(2)));
    const s = await openStore(dir);
    expect((await s.load())?.entries.map((e) => e.index)).toEqual([1]);
    expect(s.loadReport).toMatchObject({ droppedEntries: [3, 4, 5], truncatedBecause: 'gap: expected entry 2, found 3' });
  });

  it('an intact entry stored under the wrong key is not trusted', async () => {
    const dir = await seeded();
    await tamper(dir, (db) => db.put(entryKey(4), encodeEntry(entry(5, 1))));
    const s = await openStore(dir);
    expect((await s.load())?.entries.map((e) => e.index)).toEqual([1, 2, 3]);
    expect(s.loadReport.truncatedBecause).toBe('entry under key 4 says it is entry 5');
  });

  it('entries at or below the snapshot index are ignored and deleted', async () => {
    const dir = await tempDir();
    let s = await LevelStorage.open(dir);
    await s.save({ hardState: HS, snapshot: snapshotAt(4, 1), entries: entries(5, 6, 1) });
    await s.close();
    await tamper(dir, async (db) => {
      await db.put(entryKey(2), encodeEntry(entry(2, 1)));
      await db.put(entryKey(4), encodeEntry(entry(4, 1)));
    });
    s = await openStore(dir);
    expect((await s.load())?.entries.map((e) => e.index)).toEqual([5, 6]);
    expect(s.loadReport.staleEntriesRemoved).toBe(2);
    await s.close();
    await tamper(dir, async (db) => expect(await db.get(entryKey(2))).toBeUndefined());
  });

  it('a corrupt hard state is a clear StorageCorruptionError, not a crash, and blocks writes', async () => {
    const dir = await seeded();
    await tamper(dir, (db) => flipByte(db, HARD_STATE_KEY, 2));
    const s = await openStore(dir);
    const err = await s.load().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StorageCorruptionError);
    expect((err as Error).message).toContain(dir);
    expect((err as Error).message).toMatch(
      /the hard state record is unusable \(hard state record fails its CRC32 check.*\)\. .*forget a vote or a term\. Restore/,
    );
    await expect(s.save({ hardState: HS, snapshot: null, entries: [] })).rejects.toBe(err);
  });

  it('a corrupt snapshot meta is a clear StorageCorruptionError', async () => {
    const dir = await seeded();
    await tamper(dir, (db) => flipByte(db, SNAPSHOT_META_KEY, 9));
    const s = await openStore(dir);
    await expect(s.load()).rejects.toThrow(/the snapshot meta record is unusable \(snapshot meta record fails its CRC32 check/);
  });

  it('snapshot data from another snapshot, or missing, is a StorageCorruptionError', async () => {
    const dir = await seeded();
    await tamper(dir, (db) => db.put(SNAPSHOT_DATA_KEY, encodeSnapshotData(7, new Uint8Array(1))));
    let s = await openStore(dir);
    await expect(s.load()).rejects.toThrow(/belongs to index 7, but the snapshot meta is at 0/);
    await s.close();
    await tamper(dir, (db) => db.del(SNAPSHOT_DATA_KEY));
    s = await openStore(dir);
    await expect(s.load()).rejects.toThrow(/snapshot data record is unusable \(missing/);
  });

  it('after a failed write every later call is refused: the in-memory log view may no longer match the disk', async () => {
    const s = await openStore(await seeded());
    await s.load();
    // Pull the database out from under the store, so the next batch fails as an I/O error would.
    await (s as unknown as { db: Level<Uint8Array, Uint8Array> }).db.close();
    await expect(s.save({ hardState: null, snapshot: null, entries: [entry(6, 1)] })).rejects.toThrow(/not open/i);
    await expect(s.save({ hardState: null, snapshot: null, entries: [entry(6, 1)] })).rejects.toThrow(StorageFailedError);
    await expect(s.close()).resolves.toBeUndefined();
  });

  it('Raft state without any snapshot (e.g. a deleted key) is a StorageCorruptionError', async () => {
    const dir = await seeded();
    await tamper(dir, async (db) => {
      await db.del(SNAPSHOT_META_KEY);
      await db.del(SNAPSHOT_DATA_KEY);
    });
    const s = await openStore(dir);
    await expect(s.load()).rejects.toThrow(/holds Raft state but no snapshot/);
  });
});

describe('LevelStorage: which writes are synced', () => {
  afterEach(removeDirs);

  /** Records every db.batch call of `s`: its sync flag and whether it writes the hard state. */
  function recordBatches(s: LevelStorage): { sync: boolean; hardState: boolean }[] {
    const seen: { sync: boolean; hardState: boolean }[] = [];
    const db = (s as unknown as { db: { batch: (ops: { key: Uint8Array }[], o: { sync: boolean }) => Promise<void> } }).db;
    const batch = db.batch.bind(db);
    db.batch = (ops, o) => {
      seen.push({ sync: o.sync, hardState: ops.some((op) => Buffer.from(op.key).equals(Buffer.from(HARD_STATE_KEY))) });
      return batch(ops, o);
    };
    return seen;
  }

  it('fsyncs entries, snapshots, term and vote; a batch that only moves the commit index is not written until the next write or close', async () => {
    const s = await LevelStorage.open(await tempDir());
    const seen = recordBatches(s);
    await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 3, 1) }); // first boot: synced
    await s.save({ hardState: { ...HS, commitIndex: 2 }, snapshot: null, entries: [] }); // commit only: no write
    expect(seen).toEqual([{ sync: true, hardState: true }]);
    await s.save({ hardState: null, snapshot: null, entries: entries(4, 4, 1) }); // entries: carry the commit
    await s.save({ hardState: { term: 2, votedFor: null, commitIndex: 3 }, snapshot: null, entries: [] }); // a new term
    await s.save({ hardState: { term: 2, votedFor: 'n2', commitIndex: 3 }, snapshot: null, entries: [] }); // a vote
    await s.save({ hardState: { term: 2, votedFor: 'n2', commitIndex: 4 }, snapshot: null, entries: [] }); // commit only
    expect(seen.map((b) => b.sync)).toEqual([true, true, true, true]);
    expect(seen[1]!.hardState).toBe(true); // the deferred commit index 2 went out with entry 4
    // close() writes the deferred one (unsynced, like any commit index), so a clean reopen has it.
    await s.close();
    expect(seen.slice(4)).toEqual([{ sync: false, hardState: true }]);
    const again = await LevelStorage.open(s.dir);
    expect((await again.load())?.hardState).toEqual({ term: 2, votedFor: 'n2', commitIndex: 4 });
    await again.close();
  });

  it('a load() after a commit-only save reads that commit index; a compaction carries a deferred one', async () => {
    const s = await LevelStorage.open(await tempDir());
    await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 4, 1) });
    await s.save({ hardState: { ...HS, commitIndex: 3 }, snapshot: null, entries: [] });
    expect((await s.load())?.hardState).toEqual({ ...HS, commitIndex: 3 });
    const seen = recordBatches(s);
    await s.save({ hardState: { ...HS, commitIndex: 4 }, snapshot: null, entries: [] });
    await s.compact(snapshotAt(2, 1));
    expect(seen).toEqual([{ sync: true, hardState: true }]);
    expect((await s.load())?.hardState).toEqual({ ...HS, commitIndex: 4 });
    await s.close();
  });
});
