// One simulated server's applied-store LevelDB (src/state runs on it as it runs on classic-level in
// production): memory-level underneath — it survives the node's crashes, like a disk — with a crash model on
// top. A batch takes a seeded disk latency on the node's own timers and then lands whole (LevelDB's batch is
// atomic); a crash before it lands loses it whole (the timers of a dead incarnation never fire). A chained
// batch (fed op by op, the store yielding between slices) is nothing until its write(), which lands the same
// way: a crash while it is fed loses it whole. Reads see what has landed. Every landed batch that moves the meta record reports the point it reaches, so the
// simulator can check that the store only ever holds committed entries' effects, and that the log is never
// compacted past what the store holds.
import { MemoryLevel } from 'memory-level';
import { collectingBatch, type BatchOp } from './collecting-batch.js';
import {
  META_KEY,
  decodeMeta,
  generationPrefix,
  type AppliedPoint,
  type RecordBatch,
  type RecordDb,
  type StoreView,
} from '../../src/state/applied-store.js';
import type { Scheduler } from '../../src/raft/env.js';
import type { SimRng } from './rng.js';

type Op = BatchOp;

function isMeta(key: Uint8Array): boolean {
  return key.length === META_KEY.length && key[0] === META_KEY[0] && key[1] === META_KEY[1];
}

export class SimStateDb {
  private readonly db = new MemoryLevel<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' });
  /** The point of the last landed meta record: what a restart opens at. */
  landed: AppliedPoint | null = null;
  /** Told of every landed meta record. */
  onLanded: (point: AppliedPoint) => void = () => {};
  /** Told when a landed meta record moves the store to another generation (a swap: a whole new state). */
  onSwap: (point: AppliedPoint) => void = () => {};
  /** Told of every op fed to a chained batch, with the ops fed since the last meta record was (the store
   *  feeds a batch in slices over several events, the meta record last: a crash may come between them). */
  onFeed: (opsBefore: number) => void = () => {};
  private fedSinceMeta = 0;
  private landedGeneration: number | null = null;

  constructor(
    private readonly rng: SimRng,
    private readonly maxLatencyMs = 3,
  ) {}

  /** The store as one incarnation of the node sees it: its writes land on that incarnation's timers, so a
   *  crash (which kills them) loses the batches in flight. */
  forIncarnation(timers: () => Scheduler | null): RecordDb {
    this.fedSinceMeta = 0; // a batch the last incarnation was feeding died with it
    return {
      get: (key, options) => this.get(key, options),
      snapshot: () => this.db.snapshot(),
      batch: ((ops?: Op[]) => (ops === undefined ? this.chained(timers) : this.batch(ops, timers))) as RecordDb['batch'],
      iterator: (options) => this.iterator(options),
      clear: (options) => this.clear(options, timers),
      close: () => this.close(),
    };
  }

  private get(key: Uint8Array, options?: { snapshot?: StoreView }): Promise<Uint8Array | undefined> {
    return this.db.get(key, options as never) as Promise<Uint8Array | undefined>;
  }

  private batch(ops: Op[], timers: () => Scheduler | null): Promise<void> {
    const copy = ops.map((op) => ({ ...op }));
    return this.land(timers, async () => {
      await this.db.batch(copy);
      for (const op of copy) if (op.type === 'put' && isMeta(op.key)) this.noteMeta(op.value);
    });
  }

  /** A chained batch landing as one batch at write(); each op taken counts toward the crash-while-fed arm. */
  private chained(timers: () => Scheduler | null): RecordBatch {
    return collectingBatch((ops) => this.batch(ops, timers), {
      onOp: (op) => {
        this.onFeed(this.fedSinceMeta);
        this.fedSinceMeta = op.type === 'put' && isMeta(op.key) ? 0 : this.fedSinceMeta + 1;
      },
      onClose: () => (this.fedSinceMeta = 0),
    });
  }

  private iterator(options: { gte?: Uint8Array; lt?: Uint8Array; snapshot?: StoreView }) {
    return this.db.iterator(options as { gte?: Uint8Array; lt?: Uint8Array }); // its snapshot, if any, goes through
  }

  private clear(options: { gte?: Uint8Array; lt?: Uint8Array }, timers: () => Scheduler | null): Promise<void> {
    return this.land(timers, () => this.db.clear(options));
  }

  /** Generations with records in the store (landed) other than the one the meta record says is in force:
   *  what a swap or a refused stream left behind. */
  async strayGenerations(): Promise<number[]> {
    const stray: number[] = [];
    const meta = await this.db.get(META_KEY);
    const inForce = meta === undefined ? null : decodeMeta(meta).generation;
    // Hop from generation to generation: one key read per generation present.
    let from = generationPrefix(0);
    for (;;) {
      const [row] = await this.db.iterator({ gte: from, lt: META_KEY, limit: 1 }).all();
      if (row === undefined) return stray;
      const generation = ((row[0][0]! << 24) | (row[0][1]! << 16) | (row[0][2]! << 8) | row[0][3]!) >>> 0;
      if (generation !== inForce) stray.push(generation);
      from = generationPrefix(generation + 1);
    }
  }

  /** The process closes its handle; the "disk" stays. */
  private close(): Promise<void> {
    return Promise.resolve();
  }

  private land(timers: () => Scheduler | null, write: () => Promise<void>): Promise<void> {
    const latencyMs = this.rng.float() * this.maxLatencyMs;
    return new Promise((resolve, reject) => {
      // No timers: the incarnation died before it wrote anything; its write never lands.
      timers()?.after(latencyMs, () => {
        write().then(resolve, reject);
      });
    });
  }

  private noteMeta(bytes: Uint8Array): void {
    const { generation, point } = decodeMeta(bytes);
    const swapped = this.landedGeneration !== null && generation !== this.landedGeneration;
    this.landedGeneration = generation;
    this.landed = point;
    this.onLanded(point);
    if (swapped) this.onSwap(point);
  }
}
