// A test-only wrapper around the node's real storage (WalStorage) that adds write latency, fails writes,
// or crashes the process between batches, as the current fault setting says. The real store still does
// every write it is asked to do, so a restart from the same directory recovers whatever was durable.
import { StorageFailedError } from '../raft/storage/errors.js';
import type { Snapshot } from '../raft/core/types.js';
import { movesOnlyCommit, type WrittenVote } from '../raft/storage/rules.js';
import type { PersistBatch, RaftStorage } from '../raft/storage/types.js';
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
  /** Term and vote of the last batch passed to the store: a batch that only moves the commit index past
   *  them makes no synced write in either store (rules.ts movesOnlyCommit), so no fsync delay applies. */
  private written: WrittenVote | null = null;

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

  async load() {
    const restored = await this.inner.load();
    if (restored) this.written = { term: restored.hardState.term, votedFor: restored.hardState.votedFor };
    return restored;
  }

  async save(batch: PersistBatch): Promise<void> {
    // The delay models a slow fsync, so it applies only where the store syncs. Delaying commit-only
    // batches too held every follower's heartbeat answer 200 ms behind a write that does no I/O, and under
    // CPU load node-faults.test.ts met elections (in 3 of 10 runs).
    await this.beforeWrite(!movesOnlyCommit(batch, this.written));
    await this.inner.save(batch);
    if (batch.hardState) this.written = { term: batch.hardState.term, votedFor: batch.hardState.votedFor };
    this.afterWrite();
  }

  async compact(snapshot: Snapshot): Promise<void> {
    await this.beforeWrite(true);
    await this.inner.compact(snapshot);
    this.afterWrite();
  }

  close() {
    return this.inner.close();
  }

  private async beforeWrite(syncs: boolean): Promise<void> {
    const d = this.hooks.current();
    if (syncs && d.fsyncDelayMs && d.fsyncDelayMs > 0) await sleep(d.fsyncDelayMs);
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
