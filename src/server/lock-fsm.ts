// Adapts the pure lock machine to the Raft driver's StateMachine interface. Restores replace the machine
// wholesale, so callers reach it through `fsm.machine`, never a saved reference.
import { LockMachine } from '../lock/machine.js';
import type { LockEventSink } from '../lock/events.js';
import type { LockMachineOptions, LockResult } from '../lock/types.js';
import type { Entry } from '../raft/core/types.js';
import type { SnapshotJob, StateMachine } from '../raft/fsm.js';

export class LockFsm implements StateMachine<LockResult | null> {
  machine: LockMachine;

  /** `events`: where the machine's changes go (Watch), and who must hear that the state was replaced
   *  wholesale without events (a restore: a watcher would otherwise miss what it changed). */
  constructor(
    private readonly options: Partial<LockMachineOptions> = {},
    private readonly events: { sink: LockEventSink; replaced(appliedIndex: number): void } | null = null,
  ) {
    this.machine = new LockMachine(options);
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
    return this.machine.beginSnapshot(sizeHint);
  }

  restore(data: Uint8Array): void {
    this.machine = data.length === 0 ? new LockMachine(this.options) : LockMachine.restore(data, this.options);
    this.machine.eventSink = this.events?.sink ?? null;
    this.events?.replaced(this.machine.appliedIndex);
  }
}
