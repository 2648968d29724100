// One node's disk, modelled in memory: exactly what survived the last COMPLETED persist. A Ready being
// written when the node crashes never reaches this object — that is how the simulator loses unsynced
// writes. A restarted node is rebuilt from `restoredState()` and nothing else.
import type { Entry, HardState, RestoredState, Snapshot } from '../../src/raft/core/types.js';
import { bootstrapSnapshot, emptyHardState, type NodeId } from '../../src/raft/core/types.js';

export class DurableStore {
  hardState: HardState = emptyHardState();
  snapshot: Snapshot;
  /** Entries after snapshot.meta.index, contiguous. */
  entries: Entry[] = [];

  /** A joining node's data dir before its first completed write: the driver finds no state (load()
   *  answers null) and writes its own empty bootstrap. The initial nodes start bootstrapped. */
  blank: boolean;

  constructor(voters: NodeId[], blank = false) {
    this.snapshot = bootstrapSnapshot(voters);
    this.blank = blank;
  }

  get snapIndex(): number {
    return this.snapshot.meta.index;
  }

  lastIndex(): number {
    return this.snapshot.meta.index + this.entries.length;
  }

  /** Term at `index`, or undefined when compacted away or beyond the end. */
  term(index: number): number | undefined {
    const s = this.snapshot.meta.index;
    if (index === s) return this.snapshot.meta.term;
    if (index < s || index > s + this.entries.length) return undefined;
    return this.entries[index - s - 1]!.term;
  }

  entry(index: number): Entry | undefined {
    const s = this.snapshot.meta.index;
    if (index <= s) return undefined;
    return this.entries[index - s - 1];
  }

  /** A snapshot from the leader: it replaces everything (PersistBatch semantics). */
  installSnapshot(snapshot: Snapshot): void {
    this.snapshot = snapshot;
    this.entries = [];
  }

  /** Drop every entry with index >= `index` (index > snapIndex). */
  truncateFrom(index: number): void {
    this.entries.length = Math.max(0, index - this.snapshot.meta.index - 1);
  }

  append(entry: Entry): void {
    this.entries.push(entry);
  }

  /** The application snapshotted at meta.index: keep it and drop the entries it covers. */
  compact(snapshot: Snapshot): void {
    const drop = snapshot.meta.index - this.snapshot.meta.index;
    if (drop <= 0) return;
    this.entries = drop >= this.entries.length ? [] : this.entries.slice(drop);
    this.snapshot = snapshot;
  }

  /** What a restarted node loads: copies, so the new core cannot alias our arrays. */
  restoredState(): RestoredState {
    return {
      hardState: { ...this.hardState },
      snapshot: this.snapshot,
      entries: this.entries.slice(),
    };
  }
}
