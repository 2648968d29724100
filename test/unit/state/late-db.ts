// A LevelDB stand-in whose writes land later than asked, and in the order a busy disk thread pool may land
// them: every batch or clear is held, and once per event-loop turn (setImmediate) all that are held land,
// the newest first; each one's promise resolves when it has landed. classic-level runs each write on
// libuv's pool, so two writes in flight at once may land in either order: a caller that needs one before
// the other must await the first. Reads see only what has landed. Underneath, a CrashDb logs the writes in
// the order they LANDED, so a test can reopen the store as a crash right after any landing leaves it.
import type { RecordBatch, RecordDb, StoreView } from '../../../src/state/applied-store.js';
import { collectingBatch, type BatchOp } from '../../sim/collecting-batch.js';
import { CrashDb } from './crash-db.js';

export class LateDb implements RecordDb {
  /** What has landed, logged in landing order. */
  readonly landed = new CrashDb();
  private held: { land: () => Promise<void>; done: () => void; fail: (err: unknown) => void }[] = [];
  private turnQueued = false;

  /** Told after each write lands, with how many writes have landed so far. */
  constructor(private readonly onLanded: (ops: readonly BatchOp[] | null, landedWrites: number) => void = () => {}) {}

  get(key: Uint8Array, options?: { snapshot?: StoreView }): Promise<Uint8Array | undefined> {
    return this.landed.get(key, options);
  }
  snapshot(): StoreView {
    return this.landed.snapshot();
  }
  batch(ops: BatchOp[], options?: { sync?: boolean }): Promise<void>;
  batch(): RecordBatch;
  batch(ops?: BatchOp[], options?: { sync?: boolean }): Promise<void> | RecordBatch {
    void options; // nothing is synced in this model: what landed is on disk
    if (ops === undefined) return collectingBatch((collected) => this.arrayBatch(collected));
    return this.arrayBatch(ops);
  }
  iterator(options: { gte?: Uint8Array; lt?: Uint8Array; snapshot?: StoreView }) {
    return this.landed.iterator(options);
  }
  clear(options: { gte?: Uint8Array; lt?: Uint8Array }): Promise<void> {
    return this.hold(async () => {
      await this.landed.clear(options);
      this.onLanded(null, this.landed.log.length);
    });
  }
  close(): Promise<void> {
    return this.landed.close();
  }

  private arrayBatch(ops: BatchOp[]): Promise<void> {
    const copy = ops.map((op) => ({ ...op }));
    return this.hold(async () => {
      await this.landed.batch(copy);
      this.onLanded(copy, this.landed.log.length);
    });
  }

  private hold(land: () => Promise<void>): Promise<void> {
    return new Promise((done, fail) => {
      this.held.push({ land, done, fail });
      if (this.turnQueued) return;
      this.turnQueued = true;
      setImmediate(() => void this.landHeld());
    });
  }

  /** Lands every write held now, the newest first; those asked for meanwhile wait for the next turn. */
  private async landHeld(): Promise<void> {
    this.turnQueued = false;
    const held = this.held;
    this.held = [];
    for (const w of held.reverse()) {
      try {
        await w.land();
        w.done();
      } catch (err) {
        w.fail(err);
      }
    }
  }
}
