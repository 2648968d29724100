// The durable store of one Raft node: entries and hard state in an append-only write-ahead log, snapshots in
// files beside it. Why not LevelDB for everything (leveldb.ts, kept to read older data dirs): every Ready's
// synced batch went through abstract-level's JS layers and LevelDB's own log, memtable and compactions —
// the largest package in the nodes' CPU profiles — while a Raft log only ever appends, cuts a suffix or
// drops a prefix; and putting a 40 MB snapshot into LevelDB copied it on the event loop (350 ms). etcd keeps its log the same way
// (wal/ + snap/). The root LevelDB of the data dir stays for the directory's lock and to read data dirs of the
// older layouts; the lock state lives in its own LevelDB under state/ (src/state), so the snapshot a node with
// a stored state machine hands here carries no data — only where the log starts (index, term, configuration).
//
// Layout under dataDir: wal/<seq>.wal segments (wal-frame.ts) and snap/<index>.snap (a length-prefixed
// header — meta, data length, data CRC — then the data, empty but in older data dirs). Each save() is one frame, written with one
// positional write on a descriptor opened O_DSYNC: durable when the write returns, all-or-nothing across a
// crash because a torn frame fails its CRC and is cut at the next open. Segments are written full of zeros
// when they are made (etcd preallocates too): a synced write into blocks the file already has changes no
// file metadata, so it needs no journal commit — measured (scripts/bench/floors.ts, three stores on one
// disk): p50 0.29-0.32 ms per save against 0.34-0.42 appending, and a fifth less CPU.
//
// A snapshot (from the leader, or compact()) is written to its own file FIRST, synced; then a new segment is
// written aside, synced and renamed into place. It starts with a base frame — the snapshot's index and
// term, the hard state, every entry after the snapshot — so the newest segment alone is the log, and the
// rename is the one moment the snapshot takes effect. A crash before it leaves the old segment and the old
// snapshot in force; after it, older segments and snapshots are garbage, deleted at the next open.
//
// The commit-only rule of leveldb.ts holds here too: a batch that only moves the commit index is not
// written; it rides in the next frame or in close() (Raft Figure 2: the commit index is volatile).
import { constants as fsConstants } from 'node:fs';
import { join } from 'node:path';
import { Level } from 'level';
import { emptyHardState, type Entry, type RestoredState, type Snapshot } from '../core/types.js';
import {
  ENTRY_RANGE,
  HARD_STATE_KEY,
  SNAPSHOT_DATA_KEY,
  SNAPSHOT_META_KEY,
  SNAPSHOT_RANGE,
  crc32,
  decodeSnapshotHeader,
  encodeHardState,
  encodeSnapshotHeader,
  snapshotKey,
  snapshotKeyIndex,
} from './codec.js';
import { StoreCallQueue } from './call-queue.js';
import { CorruptRecordError, StorageCorruptionError, StorageFailedError } from './errors.js';
import { LevelStorage } from './leveldb.js';
import { boundsAfterCompact, boundsAfterSave, checkBatchShape, movesOnlyCommit, type LogBounds, type WrittenVote } from './rules.js';
import type { PersistBatch, RaftStorage } from './types.js';
import { encodeEntryRecords, encodeFrame, recordsOfEncoded, replaySegment, type WalBase } from './wal-frame.js';
import { LiveEntries } from './live-entries.js';
import { nodeWalFs, type WalFileSystem } from './wal-fs.js';
import { mark } from '../../trace/stages.js';

type Db = Level<Uint8Array, Uint8Array>;

export const WAL_DIR = 'wal';
export const SNAP_DIR = 'snap';
const SNAP_SUFFIX = '.snap';
/** A segment's preallocated size: a snapshot (every 10,000 entries by default) starts a new one, and
 *  10,000 small entries fit; a segment that outgrows it keeps growing, only its writes cost a little more. */
export const DEFAULT_SEGMENT_BYTES = 4 * 1024 * 1024;
const SEGMENT_SUFFIX = '.wal';
const TMP_SUFFIX = '.tmp';

export interface WalStorageOptions {
  segmentBytes?: number;
  /** The file system; default node:fs. The simulator passes its in-memory disk (wal-fs.ts says why). */
  files?: WalFileSystem;
  /** False: no LevelDB beside the WAL, so no lock on the directory and no older layouts read — for the
   *  simulator's in-memory disk, which has neither. Default true. */
  levelDb?: boolean;
}

/** What the last load() found and repaired. */
export interface WalLoadReport {
  /** A torn last frame cut off the newest segment (the crash came mid-save), or null when it ended cleanly. */
  truncatedBecause: string | null;
  /** Older segments, half-written segments and superseded snapshots deleted. */
  removedFiles: number;
  removedSnapshots: number;
  /** The directory held the older all-LevelDB layout (leveldb.ts) and was moved to this one. */
  migratedFromLevelDb: boolean;
}

export class WalStorage implements RaftStorage {
  private bounds: LogBounds = { hasSnapshot: false, snapshotIndex: 0, lastIndex: 0 };
  /** Writes, loads and close run one at a time in call order. */
  private readonly calls: StoreCallQueue;
  private report: WalLoadReport = { truncatedBecause: null, removedFiles: 0, removedSnapshots: 0, migratedFromLevelDb: false };
  private opened: RestoredState | null | undefined;
  private writtenVote: WrittenVote | null = null;
  /** The newest hard state, written or not: a rotation's base frame carries it. */
  private hardState: Uint8Array | null = null;
  /** True when `hardState` is a commit-only one not written yet. */
  private hardStateDeferred = false;
  /** Entries snapshotIndex+1 .. lastIndex as written: a rotation copies them into the new segment. */
  private readonly live = new LiveEntries();
  private segment: { seq: number; fd: number; size: number } | null = null;

  private constructor(
    /** Null without LevelDB (WalStorageOptions.levelDb false). */
    private readonly db: Db | null,
    readonly dir: string,
    /** The all-LevelDB state found at open, to be moved into the WAL by the first recovery. */
    private legacy: RestoredState | null,
    private readonly segmentBytes: number,
    private readonly files: WalFileSystem,
  ) {
    this.calls = new StoreCallQueue(dir);
  }

  /** Opens (creating if needed) the store in `dir` and recovers it. Corrupt data does not fail open();
   *  load() reports it and every write is refused. */
  static async open(dir: string, options: WalStorageOptions = {}): Promise<WalStorage> {
    const files = options.files ?? nodeWalFs;
    const withLevelDb = options.levelDb ?? true;
    const walDir = join(dir, WAL_DIR);
    let legacy: RestoredState | null = null;
    let legacyFailure: Error | null = null;
    if (withLevelDb && (await segmentsIn(files, walDir)).length === 0 && (await exists(files, join(dir, 'CURRENT')))) {
      // An all-LevelDB directory from before the WAL: read it with the store that wrote it.
      const old = await LevelStorage.open(dir);
      try {
        legacy = await old.load();
      } catch (err) {
        legacyFailure = err instanceof Error ? err : new Error(String(err));
      } finally {
        await old.close();
      }
    }
    const db: Db | null = withLevelDb ? new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' }) : null;
    await db?.open();
    const storage = new WalStorage(db, dir, legacy, options.segmentBytes ?? DEFAULT_SEGMENT_BYTES, files);
    if (legacyFailure) {
      if (!(legacyFailure instanceof StorageCorruptionError)) {
        await db?.close();
        throw legacyFailure;
      }
      storage.calls.failure = legacyFailure;
      return storage;
    }
    try {
      await files.promises.mkdir(walDir, { recursive: true });
      await files.promises.mkdir(join(dir, SNAP_DIR), { recursive: true });
      storage.opened = await storage.recover();
    } catch (err) {
      if (!(err instanceof StorageCorruptionError)) {
        await db?.close();
        throw err;
      }
    }
    return storage;
  }

  get loadReport(): WalLoadReport {
    return this.report;
  }

  private get walDir(): string {
    return join(this.dir, WAL_DIR);
  }

  private get snapDir(): string {
    return join(this.dir, SNAP_DIR);
  }

  load(): Promise<RestoredState | null> {
    return this.calls.run(async () => {
      await this.writeDeferred();
      const opened = this.opened;
      this.opened = undefined;
      if (opened !== undefined) return opened;
      this.closeSegment();
      return this.recover();
    });
  }

  save(batch: PersistBatch): Promise<void> {
    let records: Uint8Array;
    let hardState: Uint8Array | null;
    let snapshotOps: SnapshotFile | null;
    try {
      checkBatchShape(batch);
      records = encodeEntryRecords(batch.entries);
      hardState = batch.hardState ? encodeHardState(batch.hardState) : null;
      snapshotOps = batch.snapshot ? snapshotFile(batch.snapshot) : null;
    } catch (err) {
      return Promise.reject(err);
    }
    return this.calls.run(async () => {
      const next = boundsAfterSave(this.bounds, batch);
      this.opened = undefined;
      const vote = batch.hardState ? { term: batch.hardState.term, votedFor: batch.hardState.votedFor } : null;
      if (batch.snapshot && snapshotOps) {
        // Raft §7: the leader's snapshot replaces the whole log; the new segment starts from it.
        await this.putSnapshot(batch.snapshot.meta.index, snapshotOps);
        if (hardState) this.hardState = hardState;
        await this.rotate({ index: batch.snapshot.meta.index, term: batch.snapshot.meta.term }, records);
        this.bounds = next;
        if (vote) this.writtenVote = vote;
        await this.dropSnapshotsOtherThan(batch.snapshot.meta.index);
        return;
      }
      if (movesOnlyCommit(batch, this.writtenVote)) {
        this.hardState = hardState;
        this.hardStateDeferred = true;
        return;
      }
      // Raft §5.3: entries replace the stored suffix from their first index on (replay does the same).
      const own = hardState ?? (this.hardStateDeferred ? this.hardState : null);
      await this.append(encodeFrame({ base: null, records, hardState: own }), true);
      if (batch.entries.length > 0) {
        this.live.truncate(batch.entries[0]!.index - this.bounds.snapshotIndex - 1);
        this.live.append(records);
      }
      if (hardState) this.hardState = hardState;
      this.hardStateDeferred = false;
      this.bounds = next;
      if (vote) this.writtenVote = vote;
    });
  }

  compact(snapshot: Snapshot): Promise<void> {
    let file: SnapshotFile;
    try {
      checkBatchShape({ hardState: null, snapshot, entries: [] });
      file = snapshotFile(snapshot);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.calls.run(async () => {
      const next = boundsAfterCompact(this.bounds, snapshot);
      this.opened = undefined;
      await this.putSnapshot(snapshot.meta.index, file);
      const kept = this.live.recordsFrom(snapshot.meta.index - this.bounds.snapshotIndex);
      await this.rotate({ index: snapshot.meta.index, term: snapshot.meta.term }, kept);
      this.bounds = next;
      await this.dropSnapshotsOtherThan(snapshot.meta.index);
    });
  }

  /** Always closes the database, also after a failure; calls queued before close() still run first. */
  close(): Promise<void> {
    return this.calls.close(async () => {
      if (!this.calls.failure) await this.writeDeferred().catch(() => undefined);
      this.closeSegment();
      await this.db?.close();
    });
  }

  private async writeDeferred(): Promise<void> {
    if (!this.hardStateDeferred || !this.hardState || !this.segment) return;
    await this.append(encodeFrame({ base: null, records: new Uint8Array(0), hardState: this.hardState }), false);
    this.hardStateDeferred = false;
  }

  /** One frame at the segment's end; durable when it resolves (the descriptor is O_DSYNC). */
  private async append(frame: Uint8Array, traced: boolean): Promise<void> {
    const segment = this.segment;
    if (!segment) throw new StorageFailedError(`storage at ${this.dir} has no open WAL segment`);
    try {
      if (traced) mark('disk.start');
      await writeAt(this.files, segment.fd, frame, segment.size);
      if (traced) mark('disk.end');
      segment.size += frame.length;
    } catch (err) {
      this.fail(err);
    }
  }

  /** Starts a new segment from `base` with `entries` after it, and makes it the log (see the top of this file). */
  private async rotate(base: WalBase, records: Uint8Array): Promise<void> {
    const seq = (this.segment?.seq ?? 0) + 1;
    const frame = encodeFrame({ base, records, hardState: this.hardState });
    const path = segmentPath(this.walDir, seq);
    try {
      const file = new Uint8Array(Math.max(this.segmentBytes, frame.length)); // zeros after the frame
      file.set(frame, 0);
      await writeFileSynced(this.files, path + TMP_SUFFIX, file);
      await this.files.promises.rename(path + TMP_SUFFIX, path);
      await syncDir(this.files, this.walDir);
      const old = this.segment;
      this.segment = { seq, fd: await openForAppend(this.files, path, false), size: frame.length };
      if (old) {
        this.files.closeSync(old.fd);
        await this.files.promises.unlink(segmentPath(this.walDir, old.seq));
      }
    } catch (err) {
      this.fail(err);
    }
    this.live.reset(records);
    this.hardStateDeferred = false;
  }

  /** snap/<index>.snap, written aside, synced and renamed in; the data goes to the kernel as it is, with
   *  no copy (a LevelDB put copied a 40 MB snapshot on the event loop: 350 ms with a million held locks). */
  private async putSnapshot(index: number, file: SnapshotFile): Promise<void> {
    const path = snapshotPath(this.snapDir, index);
    try {
      const length = new Uint8Array(4);
      new DataView(length.buffer).setUint32(0, file.header.length);
      const handle = await this.files.promises.open(path + TMP_SUFFIX, 'w', 0o644);
      try {
        await handle.writev([length, file.header, file.data], 0);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await this.files.promises.rename(path + TMP_SUFFIX, path);
      await syncDir(this.files, this.snapDir);
    } catch (err) {
      this.fail(err);
    }
  }

  /** Snapshots other than the one the newest segment starts from are never read again (older ones are
   *  superseded; a newer one was stored by a rotation the crash interrupted), nor is the all-LevelDB layout
   *  (nor the snapshots the first WAL layout kept in LevelDB). */
  private async dropSnapshotsOtherThan(index: number): Promise<number> {
    let removed = 0;
    const keep = snapshotPath(this.snapDir, index);
    for (const name of await this.files.promises.readdir(this.snapDir)) {
      const path = join(this.snapDir, name);
      if (path === keep) continue;
      await this.files.promises.rm(path, { force: true });
      removed++;
    }
    if (this.db === null) return removed;
    const doomed: Op[] = [];
    for await (const key of this.db.keys(SNAPSHOT_RANGE)) doomed.push({ type: 'del', key });
    for (const key of [SNAPSHOT_META_KEY, SNAPSHOT_DATA_KEY, HARD_STATE_KEY]) doomed.push({ type: 'del', key });
    await this.db.batch(doomed);
    await this.db.clear(ENTRY_RANGE);
    return removed;
  }

  private fail(err: unknown): never {
    this.calls.failure = err instanceof Error ? err : new Error(String(err));
    throw err;
  }

  private closeSegment(): void {
    if (this.segment) this.files.closeSync(this.segment.fd);
    this.segment = null;
  }

  private async recover(): Promise<RestoredState | null> {
    try {
      return await this.scan();
    } catch (err) {
      const failure =
        err instanceof CorruptRecordError
          ? new StorageCorruptionError(
              `storage at ${this.dir}: the write-ahead log is unusable (${err.message}). Starting this node on it could ` +
                'make it forget a vote or an acknowledged entry. Restore the directory from a backup, or remove this ' +
                'node from the cluster and add a fresh one.',
            )
          : err;
      if (failure instanceof StorageCorruptionError) this.calls.failure = failure;
      throw failure;
    }
  }

  private async scan(): Promise<RestoredState | null> {
    const report: WalLoadReport = { truncatedBecause: null, removedFiles: 0, removedSnapshots: 0, migratedFromLevelDb: false };
    this.report = report;
    const walDir = this.walDir;
    for (const name of await this.files.promises.readdir(walDir)) {
      if (name.endsWith(TMP_SUFFIX)) {
        await this.files.promises.rm(join(walDir, name), { force: true }); // a rotation the crash interrupted before its rename
        report.removedFiles++;
      }
    }
    const seqs = await segmentsIn(this.files, walDir);
    if (seqs.length === 0) {
      const legacy = this.legacy;
      this.legacy = null;
      if (legacy === null) {
        this.bounds = { hasSnapshot: false, snapshotIndex: 0, lastIndex: 0 };
        return null;
      }
      await this.migrate(legacy);
      report.migratedFromLevelDb = true;
      report.removedSnapshots = await this.dropSnapshotsOtherThan(legacy.snapshot.meta.index);
      return legacy;
    }
    const seq = seqs[seqs.length - 1]!;
    for (const older of seqs.slice(0, -1)) {
      await this.files.promises.unlink(segmentPath(walDir, older));
      report.removedFiles++;
    }
    const path = segmentPath(walDir, seq);
    const bytes = new Uint8Array(await this.files.promises.readFile(path));
    const replayed = replaySegment(bytes);
    if (replayed.tornTail !== null) {
      // Zero the torn bytes (synced by openForAppend below), so no later open mistakes them for frames.
      report.truncatedBecause = replayed.tornTail;
      await this.files.promises.writeFile(path, bytes.fill(0, replayed.validBytes), { flag: 'r+' });
    }
    const snapshot = await this.readSnapshot(replayed.base);
    report.removedSnapshots = await this.dropSnapshotsOtherThan(replayed.base.index);
    const fd = await openForAppend(this.files, path, replayed.tornTail !== null);
    this.segment = { seq, fd, size: replayed.validBytes };
    this.live.reset(recordsOfEncoded(replayed.entries));
    this.hardState = replayed.hardState ? encodeHardState(replayed.hardState) : null;
    this.hardStateDeferred = false;
    this.writtenVote = replayed.hardState ? { term: replayed.hardState.term, votedFor: replayed.hardState.votedFor } : null;
    const entries: Entry[] = replayed.decoded;
    this.bounds = { hasSnapshot: true, snapshotIndex: replayed.base.index, lastIndex: replayed.base.index + entries.length };
    return { hardState: replayed.hardState ?? emptyHardState(), snapshot, entries };
  }

  /** Moves an all-LevelDB store into the WAL layout: snapshot under its index, then the first segment. */
  private async migrate(state: RestoredState): Promise<void> {
    await this.putSnapshot(state.snapshot.meta.index, snapshotFile(state.snapshot));
    this.hardState = encodeHardState(state.hardState);
    await this.rotate({ index: state.snapshot.meta.index, term: state.snapshot.meta.term }, encodeEntryRecords(state.entries));
    this.writtenVote = { term: state.hardState.term, votedFor: state.hardState.votedFor };
    this.bounds = {
      hasSnapshot: true,
      snapshotIndex: state.snapshot.meta.index,
      lastIndex: state.snapshot.meta.index + state.entries.length,
    };
  }

  private async readSnapshot(base: WalBase): Promise<Snapshot> {
    const stored = (await this.readSnapshotFile(base.index)) ?? (await this.readSnapshotKeys(base.index));
    if (stored === null) {
      throw new StorageCorruptionError(
        `storage at ${this.dir}: the write-ahead log starts after the snapshot at index ${base.index}, but no such ` +
          'snapshot is stored, so the state before it is unknown. Restore the directory from a backup, or remove ' +
          'this node from the cluster and add a fresh one.',
      );
    }
    const { header: metaRaw, data: dataRaw } = stored;
    const { meta, dataBytes, dataCrc } = decodeSnapshotHeader(metaRaw);
    if (meta.index !== base.index || meta.term !== base.term) {
      throw new CorruptRecordError(
        `the snapshot stored for index ${base.index} says index ${meta.index} term ${meta.term}; the log expects term ${base.term}`,
      );
    }
    if (dataRaw.length !== dataBytes || crc32(dataRaw) !== dataCrc) {
      throw new CorruptRecordError(
        `the data of the snapshot at index ${base.index} is ${dataRaw.length} bytes with CRC ${crc32(dataRaw)}; its header says ${dataBytes} bytes with CRC ${dataCrc}`,
      );
    }
    // A plain Uint8Array view of the bytes (a Buffer from the file): what the caller saved.
    return { meta, data: new Uint8Array(dataRaw.buffer, dataRaw.byteOffset, dataRaw.length) };
  }

  private async readSnapshotFile(index: number): Promise<SnapshotFile | null> {
    let bytes: Uint8Array;
    try {
      bytes = await this.files.promises.readFile(snapshotPath(this.snapDir, index));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    const headerBytes = bytes.length >= 4 ? new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0) : -1;
    if (headerBytes < 0 || 4 + headerBytes > bytes.length)
      throw new CorruptRecordError(`snapshot file for index ${index} is cut short (${bytes.length} bytes)`);
    return { header: bytes.subarray(4, 4 + headerBytes), data: bytes.subarray(4 + headerBytes) };
  }

  /** The first WAL layout (2026-12-02, before snapshot files) kept snapshots in LevelDB: still read. */
  private async readSnapshotKeys(index: number): Promise<SnapshotFile | null> {
    if (this.db === null) return null;
    const header = await this.db.get(snapshotKey(index, 'meta'));
    const data = await this.db.get(snapshotKey(index, 'data'));
    if (header === undefined || data === undefined) return null;
    // Moved to a file now, so dropping the LevelDB copy below loses nothing.
    const file = { header, data };
    await this.putSnapshot(index, file);
    return file;
  }
}

type Op = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

/** A snapshot file: its header (meta, data length and CRC: codec.ts encodeSnapshotHeader), then the data. */
interface SnapshotFile {
  header: Uint8Array;
  data: Uint8Array;
}

function snapshotFile(snapshot: Snapshot): SnapshotFile {
  return { header: encodeSnapshotHeader(snapshot.meta, snapshot.data), data: snapshot.data };
}

function snapshotPath(snapDir: string, index: number): string {
  return join(snapDir, index.toString(16).padStart(16, '0') + SNAP_SUFFIX);
}

function segmentPath(walDir: string, seq: number): string {
  return join(walDir, seq.toString(16).padStart(16, '0') + SEGMENT_SUFFIX);
}

/** Segment sequence numbers in `walDir`, oldest first (none when the directory does not exist). */
async function segmentsIn(files: WalFileSystem, walDir: string): Promise<number[]> {
  let names: string[];
  try {
    names = await files.promises.readdir(walDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .filter((n) => /^[0-9a-f]{16}\.wal$/.test(n))
    .map((n) => parseInt(n.slice(0, 16), 16))
    .sort((a, b) => a - b);
}

async function exists(files: WalFileSystem, path: string): Promise<boolean> {
  try {
    await files.promises.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** The whole buffer at `position`; the callback API is one thread-pool hop, with no FileHandle promise around it. */
function writeAt(files: WalFileSystem, fd: number, bytes: Uint8Array, position: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = (offset: number, at: number): void => {
      files.write(fd, bytes, offset, bytes.length - offset, at, (err, written) => {
        if (err) reject(err);
        else if (offset + written >= bytes.length) resolve();
        else step(offset + written, at + written);
      });
    };
    step(0, position);
  });
}

async function writeFileSynced(files: WalFileSystem, path: string, bytes: Uint8Array): Promise<void> {
  const file = await files.promises.open(path, 'w', 0o644);
  try {
    await file.write(bytes, 0, bytes.length, 0);
    await file.sync();
  } finally {
    await file.close();
  }
}

/** The segment's descriptor for appends: O_DSYNC, so a write returns once its bytes are durable. A
 *  truncated tail is synced first, so no later frame can land after bytes a crash might bring back. */
function openForAppend(files: WalFileSystem, path: string, syncFirst: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    files.open(path, fsConstants.O_WRONLY | fsConstants.O_DSYNC, (err, fd) => {
      if (err) return reject(err);
      if (!syncFirst) return resolve(fd);
      files.fsync(fd, (syncErr) => (syncErr ? (files.closeSync(fd), reject(syncErr)) : resolve(fd)));
    });
  });
}

/** A rename is durable only once the directory itself is synced. */
async function syncDir(files: WalFileSystem, dir: string): Promise<void> {
  const handle = await files.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
