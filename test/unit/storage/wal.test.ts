import { mkdtemp, open, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { afterEach, describe, expect, it } from 'vitest';
import { ENTRY_RANGE, HARD_STATE_KEY, encodeEntry, encodeSnapshotHeader, snapshotKey } from '../../../src/raft/storage/codec.js';
import { StorageCorruptionError } from '../../../src/raft/storage/errors.js';
import { LevelStorage } from '../../../src/raft/storage/leveldb.js';
import { encodeFrame, recordsOfEncoded, replaySegment } from '../../../src/raft/storage/wal-frame.js';
import { DEFAULT_SEGMENT_BYTES, SNAP_DIR, WAL_DIR, WalStorage } from '../../../src/raft/storage/wal-storage.js';
import { BOOT, HS, entries, entry, snapshotAt, storageContract } from './storage-contract.js';

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-wal-'));
  dirs.push(dir);
  return dir;
}
async function removeDirs(): Promise<void> {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
}

storageContract('WalStorage', {
  create: async () => WalStorage.open(await tempDir()),
  reopen: async (store) => {
    await store.close();
    return WalStorage.open((store as WalStorage).dir);
  },
  cleanup: removeDirs,
});

async function segments(dir: string): Promise<string[]> {
  return (await readdir(join(dir, WAL_DIR))).sort();
}
async function onlySegment(dir: string): Promise<string> {
  const names = await segments(dir);
  expect(names).toHaveLength(1);
  return join(dir, WAL_DIR, names[0]!);
}
/** Where the written frames end (the rest of a segment is preallocated zeros). */
async function writtenBytes(path: string): Promise<number> {
  return replaySegment(new Uint8Array(await readFile(path))).validBytes;
}
/** Writes `bytes` where the next frame would go, as a save cut short by a crash leaves them. */
async function writeAtEnd(path: string, bytes: Uint8Array): Promise<void> {
  const at = await writtenBytes(path);
  const file = await open(path, 'r+');
  await file.write(bytes, 0, bytes.length, at);
  await file.close();
}
const isZeroFrom = (bytes: Uint8Array, from: number): boolean => bytes.subarray(from).every((b) => b === 0);
const indexesOf = (state: { entries: { index: number; term: number }[] } | null) => state?.entries.map((e) => [e.index, e.term]);

describe('WalStorage on disk', () => {
  const stores: WalStorage[] = [];
  async function openStore(dir: string): Promise<WalStorage> {
    const s = await WalStorage.open(dir);
    stores.push(s);
    return s;
  }
  /** Bootstrap snapshot, hard state, entries 1..5 (term 1), closed again. */
  async function seeded(): Promise<string> {
    const dir = await tempDir();
    const s = await WalStorage.open(dir);
    await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 3, 1) });
    await s.save({ hardState: null, snapshot: null, entries: entries(4, 5, 1) });
    await s.close();
    return dir;
  }
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    await removeDirs();
  });

  it('a torn last frame is cut at the next open; writes after it survive another restart', async () => {
    const dir = await seeded();
    const path = await onlySegment(dir);
    const whole = await writtenBytes(path);
    const size = (await stat(path)).size;
    expect(size).toBe(DEFAULT_SEGMENT_BYTES); // preallocated
    // The first 25 bytes of the frame a save of entry 6 would write: the crash came mid-write.
    await writeAtEnd(
      path,
      encodeFrame({ base: null, records: recordsOfEncoded([encodeEntry(entry(6, 1))]), hardState: null }).subarray(0, 25),
    );
    let s = await openStore(dir);
    expect(indexesOf(await s.load())).toEqual(entries(1, 5, 1).map((e) => [e.index, e.term]));
    expect(s.loadReport.truncatedBecause).toMatch(/torn write at byte \d+: CRC mismatch/);
    expect(await writtenBytes(path)).toBe(whole);
    expect(isZeroFrom(new Uint8Array(await readFile(path)), whole)).toBe(true); // the torn bytes are zeroed
    expect((await stat(path)).size).toBe(size);
    await s.save({ hardState: { ...HS, term: 2 }, snapshot: null, entries: [entry(6, 2)] });
    await s.close();
    s = await openStore(dir);
    const loaded = await s.load();
    expect(indexesOf(loaded)?.at(-1)).toEqual([6, 2]);
    expect(loaded?.hardState.term).toBe(2);
    expect(s.loadReport.truncatedBecause).toBeNull();
  });

  it('a last frame whose bytes fail the CRC is torn too', async () => {
    const dir = await seeded();
    const path = await onlySegment(dir);
    const bytes = new Uint8Array(await readFile(path));
    bytes[(await writtenBytes(path)) - 3]! ^= 0x40; // inside the last frame (entries 4..5)
    await writeFile(path, bytes);
    const s = await openStore(dir);
    expect(indexesOf(await s.load())).toEqual(entries(1, 3, 1).map((e) => [e.index, e.term]));
    expect(s.loadReport.truncatedBecause).toMatch(/CRC mismatch/);
  });

  it('a torn write whose header never reached the disk (zeros, then its later bytes) is cut too', async () => {
    const dir = await seeded();
    const path = await onlySegment(dir);
    const frame = encodeFrame({ base: null, records: recordsOfEncoded([encodeEntry(entry(6, 1))]), hardState: null });
    frame.fill(0, 0, 8);
    await writeAtEnd(path, frame);
    const s = await openStore(dir);
    expect(indexesOf(await s.load())).toEqual(entries(1, 5, 1).map((e) => [e.index, e.term]));
    expect(s.loadReport.truncatedBecause).toMatch(/non-zero bytes after the last frame/);
  });

  it('a bad frame with frames after it is corruption, not a torn write: the store refuses to start', async () => {
    const dir = await seeded();
    const path = await onlySegment(dir);
    const bytes = new Uint8Array(await readFile(path));
    bytes[12]! ^= 0x40; // inside the first (base) frame; the frame of entries 4..5 follows it
    await writeFile(path, bytes);
    const s = await openStore(dir);
    await expect(s.load()).rejects.toThrow(StorageCorruptionError);
    await expect(s.load()).rejects.toThrow(
      /write-ahead log is unusable \(WAL frame at byte 0: CRC mismatch, and a whole frame follows at byte \d+\)/,
    );
    await expect(s.save({ hardState: HS, snapshot: null, entries: [] })).rejects.toThrow(StorageCorruptionError);
  });

  it('compaction starts a new segment from the snapshot; the old segment and snapshot are gone', async () => {
    const dir = await seeded();
    let s = await openStore(dir);
    await s.load();
    const before = await segments(dir);
    await s.compact(snapshotAt(3, 1));
    const after = await segments(dir);
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    const replayed = replaySegment(new Uint8Array(await readFile(join(dir, WAL_DIR, after[0]!))));
    expect(replayed.base).toEqual({ index: 3, term: 1 });
    expect(replayed.decoded.map((e) => e.index)).toEqual([4, 5]);
    expect(replayed.hardState).toEqual(HS);
    await s.close();
    s = await openStore(dir);
    const loaded = await s.load();
    expect(loaded?.snapshot.meta.index).toBe(3);
    expect(indexesOf(loaded)).toEqual([
      [4, 1],
      [5, 1],
    ]);
    await s.close();
    // The bootstrap snapshot was superseded: only the one the segment starts from is left.
    expect(await readdir(join(dir, SNAP_DIR))).toEqual(['0000000000000003.snap']);
  });

  it('a compaction after a replaced suffix and saves of many entries keeps exactly the log after it, data and all', async () => {
    const dir = await tempDir();
    let s = await openStore(dir);
    await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 6, 1) });
    await s.save({ hardState: null, snapshot: null, entries: [entry(7, 1, 'seven'), entry(8, 1, 'eight')] });
    // A new leader replaces 5.. (inside the first save's entries), then more arrive one by one.
    await s.save({ hardState: { ...HS, term: 2 }, snapshot: null, entries: [entry(5, 2, 'five at term 2'), entry(6, 2)] });
    await s.save({ hardState: null, snapshot: null, entries: [entry(7, 2, 'a longer seventh entry at term 2')] });
    await s.save({ hardState: null, snapshot: null, entries: entries(8, 9, 2) });
    await s.compact(snapshotAt(3, 1));
    const expected = [
      entry(4, 1),
      entry(5, 2, 'five at term 2'),
      entry(6, 2),
      entry(7, 2, 'a longer seventh entry at term 2'),
      ...entries(8, 9, 2),
    ];
    const replayed = replaySegment(new Uint8Array(await readFile(await onlySegment(dir))));
    expect(replayed.decoded).toEqual(expected);
    // Saved after the rotation, then rotated again: the kept entries and the new ones.
    await s.save({ hardState: null, snapshot: null, entries: [entry(10, 2, 'ten')] });
    await s.compact(snapshotAt(6, 2));
    await s.close();
    s = await openStore(dir);
    const loaded = await s.load();
    expect(loaded?.snapshot.meta.index).toBe(6);
    expect(loaded?.entries).toEqual([...expected.slice(3), entry(10, 2, 'ten')]);
  });

  it('a crash after a snapshot was stored but before its segment was renamed in leaves the old state in force', async () => {
    const dir = await seeded();
    // What compact(snapshotAt(4, 1)) leaves when killed between its two steps: the snapshot's file, a
    // half-written segment beside the old one.
    const snap = snapshotAt(4, 1);
    const header = encodeSnapshotHeader(snap.meta, snap.data);
    await writeFile(
      join(dir, SNAP_DIR, '0000000000000004.snap'),
      Buffer.concat([Buffer.from([0, 0, 0, header.length]), header, snap.data]),
    );
    await writeFile(
      join(dir, WAL_DIR, '0000000000000009.wal.tmp'),
      encodeFrame({ base: { index: 4, term: 1 }, records: new Uint8Array(0), hardState: null }).subarray(0, 10),
    );
    const s = await openStore(dir);
    const loaded = await s.load();
    expect(loaded?.snapshot.meta.index).toBe(0);
    expect(indexesOf(loaded)).toEqual(entries(1, 5, 1).map((e) => [e.index, e.term]));
    expect(s.loadReport).toMatchObject({ removedFiles: 1, removedSnapshots: 1 }); // the tmp segment; the snapshot at 4
    expect(await segments(dir)).toHaveLength(1);
  });

  it('a leader snapshot replaces the log through a new segment; older segments left by a crash are deleted', async () => {
    const dir = await seeded();
    let s = await openStore(dir);
    await s.load();
    const old = await segments(dir);
    await s.save({ hardState: { term: 3, votedFor: null, commitIndex: 20 }, snapshot: snapshotAt(20, 3), entries: [entry(21, 3)] });
    await s.close();
    // As if the crash came after the rename, before the old segment was unlinked.
    const current = await segments(dir);
    await writeFile(join(dir, WAL_DIR, old[0]!), encodeFrame({ base: { index: 0, term: 0 }, records: new Uint8Array(0), hardState: null }));
    s = await openStore(dir);
    const loaded = await s.load();
    expect(loaded?.snapshot.meta).toMatchObject({ index: 20, term: 3 });
    expect(indexesOf(loaded)).toEqual([[21, 3]]);
    expect(loaded?.hardState).toEqual({ term: 3, votedFor: null, commitIndex: 20 });
    expect(await segments(dir)).toEqual(current);
  });

  it('snapshot data that does not match its header (length, CRC) is refused', async () => {
    const dir = await seeded();
    const first = await WalStorage.open(dir);
    await first.compact(snapshotAt(3, 1));
    await first.close();
    const path = join(dir, SNAP_DIR, '0000000000000003.snap');
    const bytes = new Uint8Array(await readFile(path));
    bytes[bytes.length - 1]! ^= 0x01; // the last byte of the data
    await writeFile(path, bytes);
    const s = await openStore(dir);
    await expect(s.load()).rejects.toThrow(
      /the data of the snapshot at index 3 is \d+ bytes with CRC \d+; its header says \d+ bytes with CRC \d+/,
    );
  });

  it('a snapshot kept in LevelDB by the first WAL layout is still read, and moved to its file', async () => {
    const dir = await seeded();
    await rm(join(dir, SNAP_DIR, '0000000000000000.snap'));
    const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    await db.open();
    await db.put(snapshotKey(0, 'meta'), encodeSnapshotHeader(BOOT.meta, BOOT.data));
    await db.put(snapshotKey(0, 'data'), BOOT.data);
    await db.close();
    const s = await openStore(dir);
    expect(indexesOf(await s.load())).toEqual(entries(1, 5, 1).map((e) => [e.index, e.term]));
    expect(await readdir(join(dir, SNAP_DIR))).toEqual(['0000000000000000.snap']);
  });

  it('a segment that names a snapshot LevelDB does not hold is refused', async () => {
    const dir = await seeded();
    const path = await onlySegment(dir);
    await writeFile(path, encodeFrame({ base: { index: 7, term: 1 }, records: new Uint8Array(0), hardState: null }));
    const s = await openStore(dir);
    await expect(s.load()).rejects.toThrow(/starts after the snapshot at index 7, but no such snapshot is stored/);
  });

  it('moves an all-LevelDB directory (the layout before the WAL) into the WAL, once', async () => {
    const dir = await tempDir();
    const old = await LevelStorage.open(dir);
    await old.save({
      hardState: { term: 2, votedFor: 'n2', commitIndex: 3 },
      snapshot: snapshotAt(2, 1),
      entries: [entry(3, 1), entry(4, 2)],
    });
    await old.close();
    let s = await openStore(dir);
    const expected = {
      hardState: { term: 2, votedFor: 'n2', commitIndex: 3 },
      entries: [
        [3, 1],
        [4, 2],
      ],
    };
    let loaded = await s.load();
    expect({ hardState: loaded?.hardState, entries: indexesOf(loaded) }).toEqual(expected);
    expect(loaded?.snapshot.meta.index).toBe(2);
    expect(s.loadReport.migratedFromLevelDb).toBe(true);
    await s.save({ hardState: null, snapshot: null, entries: [entry(5, 2)] });
    await s.close();
    const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    await db.open();
    expect(await db.get(HARD_STATE_KEY)).toBeUndefined();
    expect(await db.keys(ENTRY_RANGE).all()).toEqual([]);
    await db.close();
    s = await openStore(dir);
    loaded = await s.load();
    expect(indexesOf(loaded)).toEqual([
      [3, 1],
      [4, 2],
      [5, 2],
    ]);
    expect(s.loadReport.migratedFromLevelDb).toBe(false);
  });

  it('writes one frame per save; a commit-only batch is not written until the next frame or close', async () => {
    const dir = await tempDir();
    const s = await openStore(dir);
    await s.save({ hardState: HS, snapshot: BOOT, entries: entries(1, 3, 1) });
    const path = await onlySegment(dir);
    const size = async () => writtenBytes(path);
    const afterBoot = await size();
    await s.save({ hardState: { ...HS, commitIndex: 2 }, snapshot: null, entries: [] });
    expect(await size()).toBe(afterBoot);
    await s.save({ hardState: null, snapshot: null, entries: [entry(4, 1)] });
    const withEntry = await size();
    expect(withEntry).toBeGreaterThan(afterBoot);
    const tail = replaySegment(new Uint8Array(await readFile(path)));
    expect(tail.hardState).toEqual({ ...HS, commitIndex: 2 }); // rode in the entry's frame
    await s.save({ hardState: { term: 2, votedFor: 'n2', commitIndex: 3 }, snapshot: null, entries: [] }); // a vote: written
    expect(await size()).toBeGreaterThan(withEntry);
    const withVote = await size();
    await s.save({ hardState: { term: 2, votedFor: 'n2', commitIndex: 4 }, snapshot: null, entries: [] });
    expect(await size()).toBe(withVote);
    await s.close();
    const again = await openStore(dir);
    expect((await again.load())?.hardState).toEqual({ term: 2, votedFor: 'n2', commitIndex: 4 });
  });
});
