// The replicated application as the driver sees it (hashicorp/raft calls it FSM).
import type { Entry, Snapshot, SnapshotChunk, SnapshotMeta } from './core/types.js';

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
   *  the driver then restarts applied at the store's point, replaying the log above it and keeping the
   *  log's entries below it to send followers (stored-start.ts), compacts the log only
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
  /** Optional: the store's state as a stream of chunks for a follower behind the log's start, read lazily
   *  from one consistent view of the store (its point is the view's). Resolves null when the followers
   *  cannot read a stream (the cluster level is below it): the driver then makes a whole snapshot. */
  openStream?(chunkBytes: number): Promise<SnapshotStream | null>;
  /** Optional, with installReceived and discardReceived: a follower writes each snapshot chunk as it is
   *  accepted (the core hands them out: RaftConfig.snapshotChunksToDriver), before the chunk is acknowledged.
   *  The last chunk resolves only once the whole snapshot as written is verified. A chunk that does not
   *  decode, or a snapshot that does not verify, resolves refused: the store threw it away with what was
   *  written of it and kept its state; the driver tells the core (Raft.snapshotRefused) and the leader sends
   *  it again. Rejects only when the store cannot write (the node cannot go on). */
  receiveChunk?(chunk: SnapshotChunk): Promise<ChunkVerdict>;
  /** The snapshot whose chunks were received and verified (`meta`: the Ready's snapshot, which has no data)
   *  becomes the machine's and the store's state, durably, before this resolves; it refuses one not received
   *  whole. */
  installReceived?(meta: SnapshotMeta): Promise<void>;
  /** The snapshot being received, or received and verified but not to be installed (the core no longer
   *  wants it: Raft.snapshotVerified said so), is thrown away with what was written of it. */
  discardReceived?(): Promise<void>;
}

/** What became of a snapshot chunk (StoredStateMachine.receiveChunk): written (the last: the snapshot
 *  verified), or refused with why (the snapshot was thrown away). */
export type ChunkVerdict = { ok: true } | { ok: false; reason: string };

/** A snapshot read chunk by chunk from a state machine's store (StoredStateMachine.openStream). */
export interface SnapshotStream {
  /** The point it holds: the store's applied index, term and configuration as of it. */
  readonly meta: SnapshotMeta;
  /** The chunk starting at byte `offset`; null when no chunk starts there. */
  chunkAt(offset: number): Promise<{ data: Uint8Array; last: boolean } | null>;
  /** Releases the store's view (no follower needs it any more). */
  close(): Promise<void>;
}
