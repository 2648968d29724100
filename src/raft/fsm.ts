// The replicated application as the driver sees it (hashicorp/raft calls it FSM).
import type { Entry } from './core/types.js';

/** Deterministic: the same entries in the same order give the same state on every replica. */
export interface StateMachine<R = unknown> {
  /** Apply one committed entry; its result goes back to whoever proposed it on this node. */
  apply(entry: Entry): R;
  snapshot(): Uint8Array;
  restore(data: Uint8Array): void;
}
