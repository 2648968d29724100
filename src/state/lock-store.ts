// The lock machine kept in the applied store: which machine the store's records restore to, the applied point
// they reach (index, term, configuration — the machine knows only the index), and the write-behind batches
// of its changes. The node's state machine adapter (src/lock-on-raft/lock-fsm.ts) owns one when the node keeps its
// state in LevelDB (always, outside tests of the older layouts).
import type { ConfState } from '../raft/core/types.js';
import type { Scheduler } from '../raft/env.js';
import * as realRecords from '../lock/store-records.js';
import type { RecordOp } from '../lock/store-records.js';
import type { LockMachineOptions } from '../lock/types.js';
import type { SnapshotChunk, SnapshotMeta } from '../raft/core/types.js';
import type { AppliedPoint, AppliedStore } from './applied-store.js';
import { SnapshotSink, type ChunkVerdict } from './snapshot-sink.js';
import { StoreStream } from './snapshot-stream.js';
import { DEFAULT_WRITE_BEHIND, WriteBehind, type WriteBehindOptions } from './write-behind.js';

/** What this file needs of a StoreRecords (store-records.ts); the simulator passes a scratch copy's. */
export interface RecordsTracker<M> {
  readonly machine: M;
  readonly pending: number;
  take(): RecordOp[];
  all(): RecordOp[];
  detach(): void;
}

/** store-records.ts as a module: the real one, or a copy with a planted bug (test/sim/lock-module.ts). */
export interface RecordsModule<M> {
  StoreRecords: new (machine: M) => RecordsTracker<M>;
  RecordsRestorer: new (
    rest: Uint8Array,
    options: Partial<LockMachineOptions>,
  ) => {
    session(key: Uint8Array, value: Uint8Array): void;
    key(key: Uint8Array, value: Uint8Array): void;
    /** A key record by its key's name (the store read it as text). */
    keyNamed(name: string, value: Uint8Array): void;
    dedup(key: Uint8Array, value: Uint8Array): void;
    line(key: Uint8Array, value: Uint8Array): void;
    keyDelay(key: Uint8Array, value: Uint8Array): void;
    finish(): RecordsTracker<M>;
    /** The records are of an older format: rewrite the store whole. */
    readonly outdated?: boolean;
  };
}

export const REAL_RECORDS: RecordsModule<unknown> = realRecords as unknown as RecordsModule<unknown>;

export class LockStateStore<M> {
  private opened: AppliedStore | null = null;
  private tracker: RecordsTracker<M> | null = null;
  private writeBehind: WriteBehind | null = null;
  private point: AppliedPoint = { index: 0, term: 0, conf: { clusterId: '', voters: [], learners: [], addresses: {}, removed: [] } };
  private readonly sink = new SnapshotSink(() => this.store());

  constructor(
    /** Opens the store (on first use: the driver opens the state machine's store when it starts). */
    private readonly openStore: () => Promise<AppliedStore>,
    private readonly scheduler: Scheduler,
    private readonly records: RecordsModule<M> = REAL_RECORDS as unknown as RecordsModule<M>,
    private readonly options: WriteBehindOptions = DEFAULT_WRITE_BEHIND,
    private readonly onFailure: (err: unknown) => void = () => {},
  ) {}

  /** The machine the store's records restore to, with the point they reach; null when the store is empty. */
  async load(machineOptions: Partial<LockMachineOptions>): Promise<{ machine: M; point: AppliedPoint } | null> {
    const store = await this.store();
    let restorer: InstanceType<RecordsModule<M>['RecordsRestorer']> | null = null;
    const point = await store.readInto({
      rest: (value) => (restorer = new this.records.RecordsRestorer(value, machineOptions)),
      session: (key, value) => restorer!.session(key, value),
      key: (key, value) => restorer!.key(key, value),
      keyNamed: (name, value) => restorer!.keyNamed(name, value),
      dedup: (key, value) => restorer!.dedup(key, value),
      line: (key, value) => restorer!.line(key, value),
      keyDelay: (key, value) => restorer!.keyDelay(key, value),
    });
    if (point === null || restorer === null) return null;
    const read = restorer as InstanceType<RecordsModule<M>['RecordsRestorer']>;
    const tracker = read.finish();
    if (read.outdated === true || store.valuesAsBytes) {
      // Records of an older format: the batches this build writes would not agree with the records they do
      // not touch, so the state is written again whole (a new generation, swapped in) before anything else.
      // A store whose values are kept as they are (a build before text form) is rewritten alike, once, so
      // that every later restart reads its values as text (applied-store.ts).
      tracker.detach();
      await this.replace(tracker.machine, point);
      return { machine: tracker.machine, point };
    }
    this.follow(store, tracker, point);
    return { machine: tracker.machine, point };
  }

  /** `machine` replaced the state wholesale (a snapshot from the leader, a data dir of an older layout):
   *  it becomes the store's state at `point`, durably, before this resolves. */
  async replace(machine: M, point: AppliedPoint): Promise<void> {
    await this.writeBehind?.stop();
    this.tracker?.detach();
    const tracker = new this.records.StoreRecords(machine);
    const ops = tracker.all();
    const store = await this.store();
    await store.replace(pieces(ops), point);
    this.follow(store, tracker, point);
  }

  /** A stream of the store's state for followers behind the log's start (snapshot-stream.ts): what waits is
   *  written first, so the stream's point — the meta record of its LevelDB view, exactly what the store
   *  holds — is recent; null when the store holds no state. */
  async openStream(chunkBytes: number): Promise<StoreStream | null> {
    if (this.writeBehind !== null) await this.writeBehind.flush(false);
    return StoreStream.open((await this.store()).db, chunkBytes);
  }

  /** A chunk of a snapshot from the leader, written as it comes (snapshot-sink.ts); refused — the snapshot
   *  discarded, the state in force untouched — when it does not decode or its stream does not verify. */
  receiveChunk(chunk: SnapshotChunk): Promise<ChunkVerdict> {
    return this.sink.chunk(chunk);
  }

  /** The snapshot being received, or received and not installed, is thrown away with what was written of it. */
  discardReceived(): Promise<void> {
    return this.sink.discard();
  }

  /** The snapshot whose chunks were received is installed: a record stream's generation is swapped in (one
   *  synced batch) and the machine restored from the store; a whole-state one is returned to be restored
   *  (and then written by replace). Nothing is swapped in unless every chunk is in and verified. */
  async installReceived(
    meta: SnapshotMeta,
    machineOptions: Partial<LockMachineOptions>,
  ): Promise<{ machine: M; point: AppliedPoint } | { data: Uint8Array }> {
    const received = this.sink.take(meta);
    if (received.kind === 'whole') return { data: received.data };
    // Batches of the old generation must not follow the swap (they would move the meta record back to it).
    await this.writeBehind?.stop();
    this.writeBehind = null;
    this.tracker?.detach();
    this.tracker = null;
    const store = await this.store();
    await store.swapIn(received.incoming, meta);
    const loaded = await this.load(machineOptions);
    if (loaded === null) throw new Error(`the applied store holds no state after the swap to ${meta.index}`);
    return loaded;
  }

  /** An entry was applied: the point moves (a configuration entry brings its configuration). */
  applied(index: number, term: number, conf: ConfState | null): void {
    this.point.index = index;
    this.point.term = term;
    if (conf !== null) this.point.conf = conf;
    this.writeBehind?.noteApplied();
  }

  /** The point the machine is at (what the next batch will reach). */
  get appliedPoint(): AppliedPoint {
    return { ...this.point };
  }

  /** Writes what waits, synced: resolves with the index the store now holds durably. */
  persist(): Promise<number> {
    if (this.writeBehind === null) return Promise.resolve(this.opened?.point?.index ?? 0);
    return this.writeBehind.persist();
  }

  /** Writes what waits, then stops batching and closes the store. */
  async close(): Promise<void> {
    if (this.writeBehind !== null) {
      await this.writeBehind.flush(false).catch(() => {});
      await this.writeBehind.stop();
    }
    this.tracker?.detach();
    await this.opened?.close();
  }

  private async store(): Promise<AppliedStore> {
    this.opened ??= await this.openStore();
    return this.opened;
  }

  private follow(store: AppliedStore, tracker: RecordsTracker<M>, point: AppliedPoint): void {
    this.tracker = tracker;
    this.point = { ...point };
    const pointNow = (): AppliedPoint => this.point;
    const source = {
      take: () => ({ ops: tracker.take(), point: this.appliedPoint }),
      get pending() {
        return tracker.pending;
      },
      get appliedIndex() {
        return pointNow().index;
      },
    };
    this.writeBehind = new WriteBehind(store, source, this.scheduler, this.options, this.onFailure);
    this.writeBehind.start();
  }
}

/** A whole state's records in batches of a bounded size (the store writes each as one batch). */
function* pieces(ops: RecordOp[]): Iterable<RecordOp[]> {
  const size = 10_000;
  for (let i = 0; i < ops.length; i += size) yield ops.slice(i, i + size);
}
