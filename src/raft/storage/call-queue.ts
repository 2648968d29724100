// The order and failure rules both disk stores share: calls run one at a time in call order; after a
// failed write every later call is refused (after a failed fsync the disk state is unknown, so the
// in-memory view of the log cannot be trusted either); corruption is refused with its own message.
import { StorageClosedError, StorageCorruptionError, StorageFailedError } from './errors.js';

export class StoreCallQueue {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The failure that refuses every later call (a write error or corrupt data), or null. */
  failure: Error | null = null;

  constructor(private readonly dir: string) {}

  run<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new StorageClosedError(`storage at ${this.dir} is closed`));
    const run = this.queue.then(() => {
      if (this.failure instanceof StorageCorruptionError) throw this.failure;
      if (this.failure) {
        throw new StorageFailedError(`storage at ${this.dir} refused the call after an earlier write failed: ${this.failure.message}`, {
          cause: this.failure,
        });
      }
      return task();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Refuses calls made from now on; calls queued before still run, then `last` (always, also after a failure). */
  close(last: () => Promise<void>): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.queue = this.queue.then(last);
    }
    return this.queue.then(() => undefined);
  }
}
