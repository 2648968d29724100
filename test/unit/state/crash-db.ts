// A LevelDB for tests with a crash model: memory-level underneath, and every batch recorded, so a test can
// "crash" after any number of batches and reopen a store that has exactly the batches before that point —
// a batch is all or nothing (LevelDB's own guarantee), and nothing after a crash survives. A chained batch is
// recorded (and visible) only when written, whole: a crash while it is fed leaves nothing of it.
import { MemoryLevel } from 'memory-level';
import type { RecordBatch, RecordDb, StoreView } from '../../../src/state/applied-store.js';
import { collectingBatch, type BatchOp } from '../../sim/collecting-batch.js';

type Op = BatchOp;
type Logged = { kind: 'batch'; ops: Op[] } | { kind: 'clear'; gte?: Uint8Array; lt?: Uint8Array };

function memory(): MemoryLevel<Uint8Array, Uint8Array> {
  return new MemoryLevel<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' });
}

export class CrashDb implements RecordDb {
  readonly log: Logged[] = [];
  constructor(readonly db = memory()) {}

  get(key: Uint8Array, options?: { snapshot?: StoreView }): Promise<Uint8Array | undefined> {
    return this.db.get(key, options as never) as Promise<Uint8Array | undefined>;
  }
  snapshot(): StoreView {
    return this.db.snapshot();
  }
  batch(ops: Op[], options?: { sync?: boolean }): Promise<void>;
  batch(): RecordBatch;
  batch(ops?: Op[], options?: { sync?: boolean }): Promise<void> | RecordBatch {
    if (ops === undefined) return this.chained();
    void options; // memory-level has no sync: every batch it finished survives this model's crash
    return this.arrayBatch(ops);
  }
  private async arrayBatch(ops: Op[]): Promise<void> {
    this.log.push({ kind: 'batch', ops: ops.map((op) => ({ ...op })) });
    await this.db.batch(ops);
  }
  /** A chained batch written as one array batch (collecting-batch.ts). */
  protected chained(): RecordBatch {
    return collectingBatch((ops) => this.arrayBatch(ops));
  }
  iterator(options: { gte?: Uint8Array; lt?: Uint8Array; snapshot?: StoreView }) {
    return this.db.iterator(options as { gte?: Uint8Array; lt?: Uint8Array }); // its snapshot, if any, goes through
  }
  async clear(options: { gte?: Uint8Array; lt?: Uint8Array }): Promise<void> {
    this.log.push({ kind: 'clear', ...options });
    await this.db.clear(options);
  }
  close(): Promise<void> {
    return this.db.close();
  }

  /** A store as a crash after the first `writes` logged writes leaves it. */
  async crashedAfter(writes: number): Promise<CrashDb> {
    const fresh = new CrashDb();
    for (const w of this.log.slice(0, writes)) {
      if (w.kind === 'batch') await fresh.db.batch(w.ops);
      else await fresh.db.clear(w);
    }
    fresh.log.length = 0;
    return fresh;
  }
}
