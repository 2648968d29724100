// The durable store of one Raft node on LevelDB. Each save() or compact() is ONE batch written with
// sync: true: LevelDB's write-ahead log makes a batch all-or-nothing across a crash, and the fsync makes it
// durable before the promise resolves — so "persist before you speak" holds for every Ready.
// One exception: a batch that only moves the commit index (same term and vote, no entries, no snapshot)
// is not written at all when it is saved: it rides in the next write (entries, a vote, a compaction) or
// in close(). The commit index is volatile state in Raft (Figure 2): a node that loses it re-learns it
// from the leader. With an fsync, every commit would cost each node one more synced write; written
// without one, it would still cost a LevelDB write per commit on every node, and the next entries — the
// next proposal on the leader, the next append on a follower — would wait behind it in the write queue
// (a commit-only write took 1.3 ms p50, 8 ms p90 on a busy machine, on every commit's path).
import { Level } from 'level';
import { emptyHardState, type Entry, type RestoredState, type Snapshot } from '../core/types.js';
import {
  ENTRY_RANGE,
  HARD_STATE_KEY,
  SNAPSHOT_DATA_KEY,
  SNAPSHOT_META_KEY,
  decodeEntry,
  decodeHardState,
  decodeSnapshotData,
  decodeSnapshotMeta,
  encodeEntry,
  encodeHardState,
  encodeSnapshotData,
  encodeSnapshotMeta,
  entryKey,
  entryKeyIndex,
} from './codec.js';
import { StoreCallQueue } from './call-queue.js';
import { CorruptRecordError, StorageCorruptionError } from './errors.js';
import { boundsAfterCompact, boundsAfterSave, checkBatchShape, movesOnlyCommit, type LogBounds, type WrittenVote } from './rules.js';
import type { PersistBatch, RaftStorage } from './types.js';
import { mark } from '../../trace/stages.js';

type Db = Level<Uint8Array, Uint8Array>;
type Op = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

/** What the last load() found and repaired. Empty lists mean the store was clean. */
export interface LoadReport {
  /** Entry keys at or below the snapshot index, or malformed: never part of the log, deleted. */
  staleEntriesRemoved: number;
  /** Entry indexes dropped because the log stopped being readable or contiguous there: deleted. */
  droppedEntries: number[];
  /** Why the log was cut, when it was (e.g. a CRC failure at index 42). */
  truncatedBecause: string | null;
}

export class LevelStorage implements RaftStorage {
  /** Invariant: the entry keys on disk are exactly snapshotIndex+1 .. lastIndex. */
  private bounds: LogBounds = { hasSnapshot: false, snapshotIndex: 0, lastIndex: 0 };
  /** Writes, loads and close run one at a time in call order. */
  private readonly calls: StoreCallQueue;
  private report: LoadReport = { staleEntriesRemoved: 0, droppedEntries: [], truncatedBecause: null };
  /** What open() recovered, handed to the first load() unless a write came first (its report stays valid). */
  private opened: RestoredState | null | undefined;
  /** Term and vote as last written (a batch that changes only the commit index needs no write). */
  private writtenVote: WrittenVote | null = null;
  /** The hard state of commit-only batches saved since the last write: it goes out with the next one. */
  private deferredHardState: Op | null = null;

  private constructor(
    private readonly db: Db,
    readonly dir: string,
  ) {
    this.calls = new StoreCallQueue(dir);
  }

  /**
   * Opens (creating if needed) the store in `dir` and recovers it: the log is cut at the first unreadable
   * or missing entry so new writes continue a contiguous log. Corrupt hard state or snapshot does not fail
   * open(); load() reports it and every write is refused.
   */
  static async open(dir: string): Promise<LevelStorage> {
    const db: Db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    await db.open();
    const storage = new LevelStorage(db, dir);
    try {
      storage.opened = await storage.recover();
    } catch (err) {
      // Corrupt data is reported by load() (and refuses writes) so the driver can show the message;
      // anything else (I/O, permissions) means there is no usable store at all.
      if (!(err instanceof StorageCorruptionError)) {
        await db.close();
        throw err;
      }
    }
    return storage;
  }

  /** What the recovery behind the latest load() (done by open() for the first one) found and repaired. */
  get loadReport(): LoadReport {
    return this.report;
  }

  load(): Promise<RestoredState | null> {
    return this.calls.run(async () => {
      await this.writeDeferred(); // a load reads what was saved, commit-only batches included
      const opened = this.opened;
      this.opened = undefined;
      return opened !== undefined ? opened : this.recover();
    });
  }

  save(batch: PersistBatch): Promise<void> {
    // Encode now: the bytes written are the batch as it was at the call, even if the caller reuses buffers.
    let puts: { snapshot: Op[]; entries: Op[]; hardState: Op[] };
    try {
      checkBatchShape(batch);
      puts = {
        snapshot: batch.snapshot ? snapshotOps(batch.snapshot) : [],
        entries: batch.entries.map((e) => ({ type: 'put', key: entryKey(e.index), value: encodeEntry(e) })),
        hardState: batch.hardState ? [{ type: 'put', key: HARD_STATE_KEY, value: encodeHardState(batch.hardState) }] : [],
      };
    } catch (err) {
      return Promise.reject(err);
    }
    return this.calls.run(async () => {
      const next = boundsAfterSave(this.bounds, batch);
      const ops: Op[] = [];
      let physicalLast = this.bounds.lastIndex;
      if (batch.snapshot) {
        // Raft §7: a snapshot from the leader replaces the whole log.
        this.deleteEntries(ops, this.bounds.snapshotIndex + 1, physicalLast);
        physicalLast = batch.snapshot.meta.index;
        ops.push(...puts.snapshot);
      }
      // Raft §5.3: a conflicting suffix goes. Puts overwrite [first, newLast]; delete only what lies beyond.
      if (batch.entries.length > 0) this.deleteEntries(ops, next.lastIndex + 1, physicalLast);
      const hs = batch.hardState;
      if (movesOnlyCommit(batch, this.writtenVote)) {
        this.opened = undefined; // what open() recovered is no longer what is saved
        this.deferredHardState = puts.hardState[0]!;
        return;
      }
      ops.push(...puts.entries, ...this.takeDeferred(puts.hardState));
      await this.write(ops);
      this.bounds = next;
      if (hs) this.writtenVote = { term: hs.term, votedFor: hs.votedFor };
    });
  }

  compact(snapshot: Snapshot): Promise<void> {
    let puts: Op[];
    try {
      checkBatchShape({ hardState: null, snapshot, entries: [] });
      puts = snapshotOps(snapshot);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.calls.run(async () => {
      const next = boundsAfterCompact(this.bounds, snapshot);
      const ops: Op[] = [...puts, ...this.takeDeferred([])];
      this.deleteEntries(ops, this.bounds.snapshotIndex + 1, snapshot.meta.index);
      await this.write(ops);
      this.bounds = next;
    });
  }

  /** Always closes the database, also after a failure; calls queued before close() still run first. */
  close(): Promise<void> {
    // A failed store writes nothing more; otherwise the deferred commit index goes out first.
    return this.calls.close(async () => {
      if (!this.calls.failure) await this.writeDeferred().catch(() => undefined);
      await this.db.close();
    });
  }

  /** The hard state to write with a batch: its own (which supersedes a deferred one), else the deferred. */
  private takeDeferred(own: Op[]): Op[] {
    const deferred = this.deferredHardState;
    this.deferredHardState = null;
    if (own.length > 0 || deferred === null) return own;
    return [deferred];
  }

  /** Writes a deferred commit-only hard state on its own, unsynced (see the top of this file). */
  private async writeDeferred(): Promise<void> {
    const ops = this.takeDeferred([]);
    if (ops.length > 0) await this.write(ops, false);
  }

  private async write(ops: Op[], sync = true): Promise<void> {
    this.opened = undefined;
    if (ops.length === 0) return;
    try {
      if (sync) mark('disk.start');
      await this.db.batch(ops, { sync });
      if (sync) mark('disk.end');
    } catch (err) {
      this.calls.failure = err instanceof Error ? err : new Error(String(err));
      throw err;
    }
  }

  private deleteEntries(ops: Op[], from: number, to: number): void {
    for (let i = from; i <= to; i++) ops.push({ type: 'del', key: entryKey(i) });
  }

  /** Corrupt term/vote/snapshot: every later call fails with the same message until the data is fixed. */
  private async recover(): Promise<RestoredState | null> {
    try {
      return await this.scan();
    } catch (err) {
      if (err instanceof StorageCorruptionError) this.calls.failure = err;
      throw err;
    }
  }

  /**
   * Reads the whole store, checks every CRC, and deletes (synced) entry keys that cannot be part of the
   * log, so the on-disk entries are exactly snapshotIndex+1 .. lastIndex afterwards.
   */
  private async scan(): Promise<RestoredState | null> {
    const hsRaw = await this.db.get(HARD_STATE_KEY);
    const metaRaw = await this.db.get(SNAPSHOT_META_KEY);
    const dataRaw = await this.db.get(SNAPSHOT_DATA_KEY);
    const hardState = hsRaw === undefined ? null : this.decodeOrFail('hard state', () => decodeHardState(hsRaw));
    this.writtenVote = hardState ? { term: hardState.term, votedFor: hardState.votedFor } : null;
    const snapshot = metaRaw === undefined ? null : this.readSnapshot(metaRaw, dataRaw);
    const snapshotIndex = snapshot?.meta.index ?? 0;

    const report: LoadReport = { staleEntriesRemoved: 0, droppedEntries: [], truncatedBecause: null };
    const entries: Entry[] = [];
    const doomed: Uint8Array[] = [];
    let sawAnyEntry = false;
    for await (const [key, value] of this.db.iterator(ENTRY_RANGE)) {
      sawAnyEntry = true;
      const index = entryKeyIndex(key);
      // Keys at or below the snapshot, or not entry keys at all (index null): never part of the log.
      if (index === null || index <= snapshotIndex) {
        report.staleEntriesRemoved++;
        doomed.push(key);
        continue;
      }
      if (report.truncatedBecause === null) {
        const expected = snapshotIndex + entries.length + 1;
        const problem = checkEntry(value, index, expected);
        if (typeof problem !== 'string') {
          entries.push(problem);
          continue;
        }
        report.truncatedBecause = problem;
      }
      // Everything after the first bad or missing entry: Raft needs a contiguous log, the leader resends it.
      report.droppedEntries.push(index);
      doomed.push(key);
    }

    if (!snapshot) {
      if (hardState === null && !sawAnyEntry && dataRaw === undefined) {
        this.report = report;
        this.bounds = { hasSnapshot: false, snapshotIndex: 0, lastIndex: 0 };
        return null;
      }
      throw new StorageCorruptionError(
        `storage at ${this.dir} holds Raft state but no snapshot, so the voter set is unknown. ` +
          'The first save() of a new node must include the bootstrap snapshot. Restore the directory from a ' +
          'backup, or remove this node from the cluster and add a fresh one.',
      );
    }
    if (doomed.length > 0) await this.write(doomed.map((key) => ({ type: 'del', key })));
    this.report = report;
    this.bounds = { hasSnapshot: true, snapshotIndex, lastIndex: snapshotIndex + entries.length };
    return { hardState: hardState ?? emptyHardState(), snapshot, entries };
  }

  private readSnapshot(metaRaw: Uint8Array, dataRaw: Uint8Array | undefined): Snapshot {
    const meta = this.decodeOrFail('snapshot meta', () => decodeSnapshotMeta(metaRaw));
    if (dataRaw === undefined) throw this.corrupt('snapshot data', `missing (meta says index ${meta.index})`);
    const data = this.decodeOrFail('snapshot data', () => decodeSnapshotData(dataRaw));
    if (data.index !== meta.index) {
      throw this.corrupt('snapshot data', `belongs to index ${data.index}, but the snapshot meta is at ${meta.index}`);
    }
    return { meta, data: data.data };
  }

  private decodeOrFail<T>(what: string, decode: () => T): T {
    try {
      return decode();
    } catch (err) {
      if (err instanceof CorruptRecordError) throw this.corrupt(what, err.message);
      throw err;
    }
  }

  /** Term, vote and snapshot cannot be cut back like a log tail: guessing them could break Raft safety. */
  private corrupt(what: string, detail: string): StorageCorruptionError {
    const risk = what === 'hard state' ? 'forget a vote or a term' : 'lose or invent committed state';
    return new StorageCorruptionError(
      `storage at ${this.dir}: the ${what} record is unusable (${detail}). Starting this node on it could ` +
        `make it ${risk}. Restore the directory from a backup, or remove this node from the cluster and ` +
        'add a fresh one.',
    );
  }
}

function snapshotOps(snapshot: Snapshot): Op[] {
  return [
    { type: 'put', key: SNAPSHOT_META_KEY, value: encodeSnapshotMeta(snapshot.meta) },
    { type: 'put', key: SNAPSHOT_DATA_KEY, value: encodeSnapshotData(snapshot.meta.index, snapshot.data) },
  ];
}

/** The decoded entry when it is the one the log needs next, else why the log stops here. */
function checkEntry(value: Uint8Array, index: number, expected: number): Entry | string {
  if (index !== expected) return `gap: expected entry ${expected}, found ${index}`;
  try {
    const entry = decodeEntry(value);
    if (entry.index !== index) return `entry under key ${index} says it is entry ${entry.index}`;
    return entry;
  } catch (err) {
    if (err instanceof CorruptRecordError) return `entry ${index}: ${err.message}`;
    throw err;
  }
}
