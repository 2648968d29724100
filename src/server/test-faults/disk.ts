// A test-only wrapper around the node's real storage (LevelStorage) that adds write latency, fails writes,
// or crashes the process between batches, as the current fault setting says. The real store still does
// every write it is asked to do, so a restart from the same directory recovers whatever was durable.
import { StorageFailedError } from '../../raft/storage/errors.js';
import type { Snapshot } from '../../raft/core/types.js';
import type { PersistBatch, RaftStorage } from '../../raft/storage/types.js';
import type { DiskFaults } from './spec.js';

export interface FaultyStorageHooks {
  /** The disk setting in force now (re-read on every write). */
  current(): DiskFaults;
  /** A crash point was reached: kill the process without cleanup. */
  crash(after: number): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class FaultyStorage implements RaftStorage {
  /** Durable batches since crashAfterBatches was armed (null: not armed). */
  private sinceArmed: number | null = null;
  private armedFor: number | null = null;

  constructor(
    private readonly inner: RaftStorage,
    private readonly hooks: FaultyStorageHooks,
  ) {}

  /** (Re)arm the crash counter when the setting changes; called by the switch on every new setting. */
  arm(crashAfterBatches: number | null | undefined): void {
    const n = crashAfterBatches ?? null;
    if (n === this.armedFor) return;
    this.armedFor = n;
    this.sinceArmed = n === null ? null : 0;
    if (n === 0) this.hooks.crash(0);
  }

  load() {
    return this.inner.load();
  }

  async save(batch: PersistBatch): Promise<void> {
    await this.beforeWrite();
    await this.inner.save(batch);
    this.afterWrite();
  }

  async compact(snapshot: Snapshot): Promise<void> {
    await this.beforeWrite();
    await this.inner.compact(snapshot);
    this.afterWrite();
  }

  close() {
    return this.inner.close();
  }

  private async beforeWrite(): Promise<void> {
    const d = this.hooks.current();
    if (d.fsyncDelayMs && d.fsyncDelayMs > 0) await sleep(d.fsyncDelayMs);
    // Re-read: the setting may have changed while we waited.
    if (this.hooks.current().failWrites) throw new StorageFailedError('test fault: disk.failWrites (the write was not made)');
  }

  private afterWrite(): void {
    if (this.sinceArmed === null || this.armedFor === null) return;
    this.sinceArmed++;
    // Durable on disk, not yet acted on: nothing the node was about to send or apply for it gets out.
    if (this.sinceArmed >= this.armedFor) {
      this.sinceArmed = null; // one crash per setting (the hook normally never returns)
      this.hooks.crash(this.armedFor);
    }
  }
}
