// Write-behind: applying an entry changes the machine in memory and marks its records; batches of what
// changed are written to the applied store every `intervalMs` or once `maxChanges` changes wait (etcd's
// backend commits every 100 ms or 10,000 changes), never synced, one at a time, in order. Nothing waits for
// them: the WAL is what makes an entry durable, and a crash loses only batches the log replays on restart.
// A sync (persist) is asked for only before the WAL drops entries whose effects the store must then hold.
import type { RecordOp } from '../lock/store-records.js';
import type { Scheduler, TimerHandle } from '../raft/env.js';
import type { AppliedPoint, AppliedStore } from './applied-store.js';

export interface WriteBehindOptions {
  /** A batch at least this often while changes wait (ms). */
  intervalMs: number;
  /** A batch at once when this many changes wait. */
  maxChanges: number;
}

export const DEFAULT_WRITE_BEHIND: WriteBehindOptions = { intervalMs: 100, maxChanges: 10_000 };

/** What the store writes: the changes since the last take and the point they reach (taken together, at one
 *  applied index, between two entries). */
export interface ChangeSource {
  readonly pending: number;
  /** The applied index the next batch would reach: an entry that changes no record (a term's first entry,
   *  a configuration) still moves the point, and the store must follow it or its point lags forever. */
  readonly appliedIndex: number;
  take(): { ops: RecordOp[]; point: AppliedPoint };
}

export class WriteBehind {
  /** The batch due while changes wait; null when nothing waits. */
  private timer: TimerHandle | null = null;
  private started = false;
  private soonQueued = false;
  /** The write in flight (and every write before it): the next waits for it. */
  private tail: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private stopped = false;
  /** The index the last batch taken reaches. */
  private takenIndex: number;

  /** Between two slices of a batch being fed to LevelDB: the loop runs what queued meanwhile (applies,
   *  messages, timers), so a batch of tens of thousands of changes never holds it for long. */
  private readonly pause = (): Promise<void> => new Promise((resolve) => this.scheduler.soon(resolve));

  constructor(
    private readonly store: AppliedStore,
    private readonly source: ChangeSource,
    private readonly scheduler: Scheduler,
    private readonly options: WriteBehindOptions = DEFAULT_WRITE_BEHIND,
    /** A write failed: the node must stop (its store no longer follows what it applies). */
    private readonly onFailure: (err: unknown) => void = () => {},
  ) {
    this.takenIndex = store.point?.index ?? 0;
  }

  /** Begins batching (what is already pending is written within `intervalMs`). */
  start(): void {
    this.started = true;
    this.armIfWaiting();
  }

  /** Called after every applied entry: a full batch goes at once (after the current event), else one is
   *  due `intervalMs` after the first change that waits. The timer is armed only while something waits
   *  (not a fixed 10 Hz grid): an idle node's event loop is not woken for nothing (issue 37's idle goal). */
  noteApplied(): void {
    if (this.stopped) return;
    this.armIfWaiting();
    if (this.source.pending < this.options.maxChanges || this.soonQueued) return;
    this.soonQueued = true;
    this.scheduler.soon(() => {
      this.soonQueued = false;
      void this.flush(false);
    });
  }

  private armIfWaiting(): void {
    if (!this.started || this.stopped || this.timer !== null) return;
    if (this.source.pending === 0 && this.source.appliedIndex <= this.takenIndex) return;
    this.timer = this.scheduler.after(this.options.intervalMs, () => {
      this.timer = null;
      if (this.source.pending > 0 || this.source.appliedIndex > this.takenIndex) void this.flush(false);
    });
  }

  /** Writes what waits (synced if asked) after the writes before it; resolves with the index written. */
  flush(sync: boolean): Promise<number> {
    if (this.failure !== null) return Promise.reject(this.failure as Error);
    // The changes are taken now, at the current applied index, whatever applies while earlier writes finish.
    const { ops, point } = this.source.take();
    this.takenIndex = point.index;
    const write = this.tail.then(() => this.store.write(ops, point, sync, this.pause));
    this.tail = write.then(
      () => {},
      (err: unknown) => {
        if (this.failure === null) {
          this.failure = err;
          this.onFailure(err);
        }
      },
    );
    return write.then(() => point.index);
  }

  /** Every change so far written and synced: the store holds (durably) the index it resolves with. */
  persist(): Promise<number> {
    return this.flush(true);
  }

  /** Waits for the writes in flight; no more batches after it (a replace or a close follows). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
    await this.tail;
  }
}
