// The replicated application as the driver sees it (hashicorp/raft calls it FSM).
import type { Entry, Snapshot, SnapshotMeta } from './core/types.js';

/** A snapshot being written in slices (StateMachine.beginSnapshot). */
export interface SnapshotJob {
  /** One bounded slice of work; true when the snapshot is complete. */
  step(): boolean;
  /** The bytes — exactly snapshot() as it was when the job began — once step() returned true. */
  finish(): Uint8Array;
  /** Abandon it (a newer snapshot was installed, the node stops). */
  cancel(): void;
}

/** Deterministic: the same entries in the same order give the same state on every replica. */
export interface StateMachine<R = unknown> {
  /** Apply one committed entry; its result goes back to whoever proposed it on this node. */
  apply(entry: Entry): R;
  snapshot(): Uint8Array;
  /**
   * Optional: start writing snapshot() of the state as it is now, in slices the driver runs between its
   * loop turns while entries keep applying (so a big state never stalls the loop). `sizeHint` is the
   * previous snapshot's size. Without it the driver calls snapshot() in one piece.
   */
  beginSnapshot?(sizeHint: number): SnapshotJob;
  restore(data: Uint8Array): void;
  /** Present when the state machine keeps its state in a store of its own beside the log (etcd's backend):
   *  the driver then restarts from the store and the log above it (stored-start.ts), compacts the log only
   *  below what the store holds durably, and makes a snapshot only when a follower needs one. */
  stored?: StoredStateMachine;
}

/** A state machine's own store of its applied state (src/state/lock-store.ts for the lock machine). */
export interface StoredStateMachine {
  /** Restores the machine from its store: the point (index, term, configuration) the store holds, or null
   *  when it holds nothing yet. */
  open(): Promise<SnapshotMeta | null>;
  /** Restores `snapshot` — the machine is replaced when this is called — and makes it the store's state,
   *  durably, before this resolves: a snapshot from the leader (before the log records it) or the state of an
   *  older layout's data dir. */
  install(snapshot: Snapshot): Promise<void>;
  /** Writes what waits and syncs: the store holds durably every applied entry's effects up to the index
   *  this resolves with (at least the applied index when it was called). */
  persist(): Promise<number>;
}
