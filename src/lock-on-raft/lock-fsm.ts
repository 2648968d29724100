// Adapts the pure lock machine to the Raft driver's StateMachine interface. Restores replace the machine
// wholesale, so callers reach it through `fsm.machine`, never a saved reference.
//
// The kind of machine is a parameter so the simulator drives THIS adapter — how committed entries reach
// the machine, how snapshots are written and restored — over the real LockMachine or a scratch copy of it
// with a planted bug (test/sim/lock-module.ts); production passes LockMachine.
import type { LockMachine } from '../lock/machine.js';
import type { LockEventSink } from '../lock/events.js';
import type { LockMachineOptions, LockResult } from '../lock/types.js';
import { decodeConfEntry } from '../raft/core/conf.js';
import type { Entry, Snapshot, SnapshotMeta } from '../raft/core/types.js';
import type { SnapshotJob, StateMachine, StoredStateMachine } from '../raft/fsm.js';
import type { LockStateStore } from '../state/lock-store.js';
import { LEVEL_RECORD_STREAM } from '../lock/versions.js';

/** What the adapter needs of a lock machine (LockMachine's surface). */
export interface AppliedLockMachine {
  readonly appliedIndex: number;
  eventSink: LockEventSink | null;
  apply(index: number, term: number, data: Uint8Array): LockResult;
  skip(index: number): void;
  /** The cluster level (versions.ts): whether followers read a record stream (LEVEL_RECORD_STREAM). */
  readonly clusterLevel: number;
  snapshot(): Uint8Array;
  beginSnapshot(sizeHint: number, sliceItems?: number): SnapshotJob;
}

/** How machines of one kind are made: fresh, or from a snapshot (LockMachine's constructor and restore). */
export interface LockMachineKind<M extends AppliedLockMachine, O> {
  new (options: O): M;
  restore(data: Uint8Array, options: O): M;
}

export class LockFsm<
  M extends AppliedLockMachine = LockMachine,
  O = Partial<LockMachineOptions>,
> implements StateMachine<LockResult | null> {
  machine: M;
  /** Present when the state lives in the applied store (src/state): the driver restarts from it. */
  readonly stored?: StoredStateMachine;

  /** `events`: where the machine's changes go (Watch), and who must hear that the state was replaced
   *  wholesale without events (a restore: a watcher would otherwise miss what it changed).
   *  `snapshotSliceItems`: keys or records per snapshot slice; default the machine's own (the simulator
   *  asks for few, so its small states still take several slices with entries applied in between). */
  constructor(
    private readonly kind: LockMachineKind<M, O>,
    private readonly options: O,
    private readonly events: { sink: LockEventSink; replaced(appliedIndex: number): void } | null = null,
    private readonly snapshotSliceItems?: number,
    /** The applied store the state lives in (write-behind); null: in memory and the log's snapshots only. */
    private readonly state: LockStateStore<M> | null = null,
  ) {
    this.machine = new kind(options);
    this.machine.eventSink = events?.sink ?? null;
    if (state !== null) {
      this.stored = {
        open: () => this.open(state),
        install: (snapshot) => this.install(state, snapshot),
        persist: () => state.persist(),
        openStream: async (chunkBytes) => {
          // Below the level every member must read, a follower may run a build that reads only the whole
          // encoding: it gets the sliced writer's snapshot instead.
          if (this.machine.clusterLevel < LEVEL_RECORD_STREAM) return null;
          const stream = await state.openStream(chunkBytes);
          return stream === null ? null : { meta: stream.point, chunkAt: (offset) => stream.chunkAt(offset), close: () => stream.close() };
        },
        receiveChunk: (chunk) => state.receiveChunk(chunk),
        installReceived: (meta) => this.installReceived(state, meta),
        discardReceived: () => state.discardReceived(),
      };
    }
  }

  apply(entry: Entry): LockResult | null {
    let result: LockResult | null = null;
    if (entry.kind === 'normal') result = this.machine.apply(entry.index, entry.term, entry.data);
    // noop / config entries carry no lock command but still advance the applied index.
    else this.machine.skip(entry.index);
    // The store's point follows: its term, and the configuration a configuration entry brings.
    this.state?.applied(entry.index, entry.term, entry.kind === 'config' ? decodeConfEntry(entry.data).conf : null);
    return result;
  }

  snapshot(): Uint8Array {
    return this.machine.snapshot();
  }

  /** The machine's sliced writer: the driver runs it between loop turns (a restore cancels it first). */
  beginSnapshot(sizeHint: number): SnapshotJob {
    return this.machine.beginSnapshot(sizeHint, this.snapshotSliceItems);
  }

  restore(data: Uint8Array): void {
    this.replaceMachine(data.length === 0 ? new this.kind(this.options) : this.kind.restore(data, this.options));
  }

  /** Writes what waits and closes the applied store (the node stops). */
  async closeStore(): Promise<void> {
    await this.state?.close();
  }

  private replaceMachine(machine: M): void {
    this.machine = machine;
    this.machine.eventSink = this.events?.sink ?? null;
    this.events?.replaced(this.machine.appliedIndex);
  }

  private async open(state: LockStateStore<M>): Promise<SnapshotMeta | null> {
    const loaded = await state.load(this.options as Partial<LockMachineOptions>);
    if (loaded === null) return null;
    this.replaceMachine(loaded.machine);
    return loaded.point;
  }

  private async installReceived(state: LockStateStore<M>, meta: SnapshotMeta): Promise<void> {
    const received = await state.installReceived(meta, this.options as Partial<LockMachineOptions>);
    if ('data' in received) {
      // The whole-state encoding (a leader below level 6): restored, written as a new generation, and only
      // then this machine's, as a record stream's is (installReceived resolves with the machine replaced).
      const machine = received.data.length === 0 ? new this.kind(this.options) : this.kind.restore(received.data, this.options);
      await state.replace(machine, meta);
      this.replaceMachine(machine);
      return;
    }
    this.replaceMachine(received.machine);
  }

  private async install(state: LockStateStore<M>, snapshot: Snapshot): Promise<void> {
    this.restore(snapshot.data);
    await state.replace(this.machine, snapshot.meta);
  }
}
