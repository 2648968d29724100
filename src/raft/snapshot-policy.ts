// When the driver takes a snapshot. Every `snapshotEvery` applied entries — and, once the state is big,
// only when the log since the last snapshot is also a fair share of the state's size. Writing a 20-40 MB
// state every 10,000 entries of ~60 bytes re-wrote the whole state for every ~600 KB of log: at a
// million held locks that was most of the leader's CPU. Tied to the state's size, a snapshot
// of S bytes comes after at least S/4 bytes of log: at most 4 bytes written per byte logged (amortised
// O(1)), while the log kept in memory and replayed at restart stays near a quarter of the state.

/** Below this size a snapshot is cheap: the entry count alone decides (what tests and small clusters see). */
export const LARGE_SNAPSHOT_BYTES = 1 << 20;
/** A large state is snapshotted once the log since the last one holds this share of its size. */
const LOG_SHARE_OF_STATE = 1 / 4;
/** Per-entry bookkeeping (index, term, kind, framing) counted on top of its data. */
const ENTRY_OVERHEAD_BYTES = 16;

export class SnapshotPolicy {
  private logBytesSince = 0;
  private lastSnapshotBytes = 0;

  constructor(private readonly snapshotEvery: number) {}

  /** Size of the last snapshot taken or installed (the next job's size hint). */
  get lastBytes(): number {
    return this.lastSnapshotBytes;
  }

  noteApplied(dataBytes: number): void {
    this.logBytesSince += dataBytes + ENTRY_OVERHEAD_BYTES;
  }

  due(entriesSinceSnapshot: number): boolean {
    if (entriesSinceSnapshot < this.snapshotEvery) return false;
    return this.lastSnapshotBytes < LARGE_SNAPSHOT_BYTES || this.logBytesSince >= this.lastSnapshotBytes * LOG_SHARE_OF_STATE;
  }

  /** A snapshot of the state as of now was started (entries applied from here on count for the next). */
  started(): void {
    this.logBytesSince = 0;
  }

  /** A snapshot of `bytes` was taken or installed. */
  taken(bytes: number): void {
    this.lastSnapshotBytes = bytes;
  }
}
