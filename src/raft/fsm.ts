// The replicated application as the driver sees it (hashicorp/raft calls it FSM).
import type { Entry } from './core/types.js';

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
}
