// In-memory RaftStorage for tests and the simulation, with the same rules (rules.ts) and errors as the
// node's WalStorage.
// It can model a crash: with { manualSync: true } a write stays pending (not durable, promise unresolved)
// until sync()/syncAll(); crash() then loses every pending write, as a power cut loses unsynced data.
import { copyConf } from '../core/conf.js';
import { emptyHardState, type Entry, type HardState, type RestoredState, type Snapshot } from '../core/types.js';
import { StorageClosedError, StorageCorruptionError, StorageCrashedError } from './errors.js';
import { boundsAfterCompact, boundsAfterSave, checkBatchShape, type LogBounds } from './rules.js';
import type { PersistBatch, RaftStorage } from './types.js';

export interface MemoryStorageOptions {
  /** Writes become durable (and their promises resolve) only on sync()/syncAll(). Default false. */
  manualSync?: boolean;
}

/** What survives a crash. Entries are snapshot.meta.index+1 .. in order, no gaps. */
interface DurableState {
  hardState: HardState | null;
  snapshot: Snapshot | null;
  entries: Entry[];
}

type Write = { kind: 'save'; batch: PersistBatch } | { kind: 'compact'; snapshot: Snapshot };

interface PendingWrite {
  write: Write;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class MemoryStorage implements RaftStorage {
  private durable: DurableState;
  private pending: PendingWrite[] = [];
  private state: 'open' | 'closed' | 'crashed' = 'open';
  private readonly manualSync: boolean;

  constructor(options: MemoryStorageOptions = {}, durable?: DurableState) {
    this.manualSync = options.manualSync ?? false;
    this.durable = durable ?? { hardState: null, snapshot: null, entries: [] };
  }

  /** Writes issued but not yet durable. */
  get pendingCount(): number {
    return this.pending.length;
  }

  /** The durable state only: what a restart would see. Pending writes are not visible. */
  async load(): Promise<RestoredState | null> {
    this.checkUsable();
    const { hardState, snapshot, entries } = this.durable;
    if (!snapshot) {
      if (hardState === null && entries.length === 0) return null;
      throw new StorageCorruptionError(
        'memory storage holds Raft state but no snapshot; the first save() must include the bootstrap snapshot',
      );
    }
    return {
      hardState: hardState ? { ...hardState } : emptyHardState(),
      snapshot: copySnapshot(snapshot),
      entries: entries.map(copyEntry),
    };
  }

  save(batch: PersistBatch): Promise<void> {
    try {
      checkBatchShape(batch); // at call time, as WalStorage does before encoding
    } catch (err) {
      return Promise.reject(err);
    }
    // Copy now: the caller may reuse its buffers, and a real disk would hold the bytes as they were.
    return this.submit({
      kind: 'save',
      batch: {
        hardState: batch.hardState ? { ...batch.hardState } : null,
        snapshot: batch.snapshot ? copySnapshot(batch.snapshot) : null,
        entries: batch.entries.map(copyEntry),
      },
    });
  }

  compact(snapshot: Snapshot): Promise<void> {
    return this.submit({ kind: 'compact', snapshot: copySnapshot(snapshot) });
  }

  /** Makes the oldest `count` pending writes durable, in call order, and settles their promises. */
  sync(count = Number.POSITIVE_INFINITY): number {
    let synced = 0;
    while (synced < count && this.pending.length > 0) {
      const p = this.pending.shift()!;
      synced++;
      try {
        this.apply(p.write);
        p.resolve();
      } catch (err) {
        p.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    return synced;
  }

  syncAll(): number {
    return this.sync();
  }

  /** Power cut: every pending write is lost and its promise rejects. The durable state is untouched. */
  crash(): void {
    const lost = this.pending;
    this.pending = [];
    this.state = 'crashed';
    for (const p of lost) p.reject(new StorageCrashedError('memory storage crashed before this write was synced'));
  }

  /** A new store over a copy of the durable state: restart a crashed (or running) node from it. */
  clone(options: MemoryStorageOptions = { manualSync: this.manualSync }): MemoryStorage {
    const { hardState, snapshot, entries } = this.durable;
    return new MemoryStorage(options, {
      hardState: hardState ? { ...hardState } : null,
      snapshot: snapshot ? copySnapshot(snapshot) : null,
      entries: entries.map(copyEntry),
    });
  }

  /** A clean shutdown flushes pending writes, as closing a durable store would. */
  async close(): Promise<void> {
    if (this.state !== 'open') return;
    this.sync();
    this.state = 'closed';
  }

  private submit(write: Write): Promise<void> {
    try {
      this.checkUsable();
    } catch (err) {
      return Promise.reject(err);
    }
    if (!this.manualSync) {
      try {
        this.apply(write);
        return Promise.resolve();
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise<void>((resolve, reject) => this.pending.push({ write, resolve, reject }));
  }

  private checkUsable(): void {
    if (this.state === 'closed') throw new StorageClosedError('memory storage is closed');
    if (this.state === 'crashed') throw new StorageCrashedError('memory storage crashed; restart from clone()');
  }

  /** All-or-nothing: validation throws before any field of the durable state changes. */
  private apply(write: Write): void {
    const d = this.durable;
    const snapshotIndex = d.snapshot?.meta.index ?? 0;
    const bounds: LogBounds = { hasSnapshot: d.snapshot !== null, snapshotIndex, lastIndex: snapshotIndex + d.entries.length };
    if (write.kind === 'compact') {
      boundsAfterCompact(bounds, write.snapshot);
      const dropped = write.snapshot.meta.index - snapshotIndex;
      this.durable = { ...d, snapshot: write.snapshot, entries: d.entries.slice(dropped) };
      return;
    }
    const { batch } = write;
    boundsAfterSave(bounds, batch);
    let { snapshot, entries } = d;
    if (batch.snapshot) {
      snapshot = batch.snapshot;
      entries = [];
    }
    if (batch.entries.length > 0) {
      const keep = batch.entries[0]!.index - (snapshot?.meta.index ?? 0) - 1;
      entries = entries.slice(0, keep).concat(batch.entries);
    }
    this.durable = { hardState: batch.hardState ?? d.hardState, snapshot, entries };
  }
}

// new Uint8Array(x) always copies; x.slice() would alias when x is a Node Buffer.
function copyEntry(e: Entry): Entry {
  return { index: e.index, term: e.term, kind: e.kind, data: new Uint8Array(e.data) };
}

function copySnapshot(s: Snapshot): Snapshot {
  return { meta: { index: s.meta.index, term: s.meta.term, conf: copyConf(s.meta.conf) }, data: new Uint8Array(s.data) };
}
