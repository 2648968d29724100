// The durable store behind one Raft node (hashicorp/raft names it LogStore + StableStore + SnapshotStore;
// here it is one interface because every Ready must land in ONE atomic, synced write).
import type { Entry, HardState, RestoredState, Snapshot } from '../core/types.js';

/** One Ready's worth of durable state. Written atomically with sync before dependent messages go out. */
export interface PersistBatch {
  hardState: HardState | null;
  /** A snapshot received from the leader: when present, every stored entry is discarded first. */
  snapshot: Snapshot | null;
  /** New or replacing entries: any stored entry with index >= entries[0].index is discarded first. */
  entries: Entry[];
}

export interface RaftStorage {
  /** What the node restarts from, or null when the store is empty (first boot). */
  load(): Promise<RestoredState | null>;
  /** One atomic, synced write. Resolves only once it is durable. */
  save(batch: PersistBatch): Promise<void>;
  /** The application took `snapshot` at meta.index: store it and delete entries up to meta.index. */
  compact(snapshot: Snapshot): Promise<void>;
  close(): Promise<void>;
}
