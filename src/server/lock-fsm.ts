// Adapts the pure lock machine to the Raft driver's StateMachine interface. Restores replace the machine
// wholesale, so callers reach it through `fsm.machine`, never a saved reference.
//
// The kind of machine is a parameter so the simulator drives THIS adapter — how committed entries reach
// the machine, how snapshots are written and restored — over the real LockMachine or a scratch copy of it
// with a planted bug (test/sim/lock-module.ts); production passes LockMachine.
import type { LockMachine } from '../lock/machine.js';
import type { LockEventSink } from '../lock/events.js';
import type { LockMachineOptions, LockResult } from '../lock/types.js';
import type { Entry } from '../raft/core/types.js';
import type { SnapshotJob, StateMachine } from '../raft/fsm.js';

/** What the adapter needs of a lock machine (LockMachine's surface). */
export interface AppliedLockMachine {
  readonly appliedIndex: number;
  eventSink: LockEventSink | null;
  apply(index: number, term: number, data: Uint8Array): LockResult;
  skip(index: number): void;
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

  /** `events`: where the machine's changes go (Watch), and who must hear that the state was replaced
   *  wholesale without events (a restore: a watcher would otherwise miss what it changed).
   *  `snapshotSliceItems`: keys or records per snapshot slice; default the machine's own (the simulator
   *  asks for few, so its small states still take several slices with entries applied in between). */
  constructor(
    private readonly kind: LockMachineKind<M, O>,
    private readonly options: O,
    private readonly events: { sink: LockEventSink; replaced(appliedIndex: number): void } | null = null,
    private readonly snapshotSliceItems?: number,
  ) {
    this.machine = new kind(options);
    this.machine.eventSink = events?.sink ?? null;
  }

  apply(entry: Entry): LockResult | null {
    if (entry.kind === 'normal') return this.machine.apply(entry.index, entry.term, entry.data);
    // noop / config entries carry no lock command but still advance the applied index.
    this.machine.skip(entry.index);
    return null;
  }

  snapshot(): Uint8Array {
    return this.machine.snapshot();
  }

  /** The machine's sliced writer: the driver runs it between loop turns (a restore cancels it first). */
  beginSnapshot(sizeHint: number): SnapshotJob {
    return this.machine.beginSnapshot(sizeHint, this.snapshotSliceItems);
  }

  restore(data: Uint8Array): void {
    this.machine = data.length === 0 ? new this.kind(this.options) : this.kind.restore(data, this.options);
    this.machine.eventSink = this.events?.sink ?? null;
    this.events?.replaced(this.machine.appliedIndex);
  }
}
