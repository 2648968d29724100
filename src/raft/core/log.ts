// The in-memory view of one node's Raft log: the latest snapshot plus the entries after it.
// `stableIndex` splits it into what is already durable and what the next Ready must persist.
// PURE: no I/O. The driver loads the durable copy at start and persists each Ready's tail.
import { RaftInvariantError } from './errors.js';
import { LogEntries } from './log-entries.js';
import type { Entry, Snapshot } from './types.js';

export class RaftLog {
  snapshot: Snapshot;
  /** Entries with index > snapshot.meta.index, contiguous (kept compact: log-entries.ts says why). */
  private entries: LogEntries;
  /** Highest index known to be durable (entries <= stableIndex were persisted, with these terms). */
  stableIndex: number;
  committed: number;
  /** Highest index handed to the application (after advance). */
  applied: number;
  /** Highest index handed out to be applied, in a Ready or by takeDurableCommitted (>= applied): a
   *  Ready still in flight holds entries up to here that advance() has not yet marked applied. */
  handedOut: number;
  /** A snapshot received from the leader that the next Ready must persist and restore. */
  pendingSnapshot: Snapshot | null = null;
  /**
   * A snapshot the application made for followers the log no longer serves (Raft.offerSnapshot), at an index
   * at or after `snapshot`'s. An application that keeps its state in a store of its own compacts the log
   * with no data (the store is the snapshot) and makes one only when a follower needs it.
   */
  offered: Snapshot | null = null;
  /** A follower needed a snapshot and none with data was at hand (Raft.snapshotWanted). */
  snapshotWanted = false;

  /** `applied`: what the state machine already holds (RestoredState.appliedIndex), at or after the snapshot. */
  constructor(snapshot: Snapshot, entries: Entry[], committed: number, applied = snapshot.meta.index) {
    this.snapshot = snapshot;
    this.entries = new LogEntries();
    let expected = snapshot.meta.index + 1;
    for (const e of entries) {
      // Storage hands the log from just after its snapshot, without a gap. Anything else is a storage bug or
      // damage, and dropping the rest quietly (as this once did) loses entries this node may have acknowledged:
      // its commit index went backwards and a quorum's entry could be lost with it. Refuse to start instead.
      if (e.index !== expected) {
        throw new RaftInvariantError(
          `the restored log is not contiguous: entry ${e.index} where ${expected} was due (snapshot at ${snapshot.meta.index}, ${entries.length} entries)`,
        );
      }
      this.entries.push(e);
      expected++;
    }
    this.stableIndex = this.lastIndex();
    // Commit is persisted in the hard state; it can never exceed what we hold.
    this.committed = Math.max(snapshot.meta.index, Math.min(committed, this.lastIndex()));
    // A state machine ahead of the snapshot (a store of its own) holds entries the log still has: they are
    // handed out never again. Its point must be in the log, and committed: an applied entry the log does not
    // hold, or does not know committed, means the store and the log are not of one history.
    if (applied < snapshot.meta.index || applied > this.lastIndex() || applied > this.committed) {
      throw new RaftInvariantError(
        `the restored applied index ${applied} is outside the log's committed entries: snapshot at ${snapshot.meta.index}, ` +
          `committed ${this.committed}, last ${this.lastIndex()}`,
      );
    }
    this.applied = applied;
    this.handedOut = applied;
  }

  firstIndex(): number {
    return this.snapshot.meta.index + 1;
  }

  lastIndex(): number {
    return this.snapshot.meta.index + this.entries.length;
  }

  lastTerm(): number {
    return this.term(this.lastIndex()) ?? 0;
  }

  /** Term of entry `index`, or undefined when it is compacted away or beyond the end. */
  term(index: number): number | undefined {
    const snapIndex = this.snapshot.meta.index;
    if (index === snapIndex) return this.snapshot.meta.term;
    if (index < snapIndex || index > this.lastIndex()) return undefined;
    return this.entries.term(index - snapIndex - 1);
  }

  /** Entries in [lo, hi] (inclusive), at most maxCount of them and roughly maxBytes of data
   *  (always at least one when the range is non-empty). lo must be >= firstIndex. */
  slice(lo: number, hi: number, maxCount = Number.MAX_SAFE_INTEGER, maxBytes = Number.MAX_SAFE_INTEGER): Entry[] {
    const snapIndex = this.snapshot.meta.index;
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = lo; i <= hi && out.length < maxCount; i++) {
      const k = i - snapIndex - 1;
      if (k < 0 || k >= this.entries.length) break;
      bytes += this.entries.dataLength(k);
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(this.entries.at(k, i));
    }
    return out;
  }

  /** Raft §5.3 log up-to-date comparison (§5.4.1): last term first, then last index. */
  isUpToDate(lastLogIndex: number, lastLogTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastLogTerm > myTerm || (lastLogTerm === myTerm && lastLogIndex >= this.lastIndex());
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Leader append: entries continue the log exactly. */
  appendOwn(entry: Entry): void {
    this.entries.push(entry);
  }

  /**
   * Follower append (Raft §5.3): skip entries we already hold with the same term, truncate at the
   * FIRST conflicting one only, then append the rest. Entries that already match are never removed —
   * a stale or duplicated AppendEntries must not cut off entries we acknowledged.
   * Returns the index the log was truncated from, or 0 when nothing was cut.
   */
  appendFromLeader(entries: Entry[]): number {
    for (let k = 0; k < entries.length; k++) {
      const e = entries[k]!;
      if (e.index <= this.snapshot.meta.index) continue; // covered by our snapshot: committed, matches
      const have = this.term(e.index);
      if (have === e.term) continue;
      if (have !== undefined) {
        // Conflict: everything from here on is replaced. Committed entries can never conflict.
        if (e.index <= this.committed) {
          throw new RaftInvariantError(`raft invariant: conflicting entry at committed index ${e.index}`);
        }
        this.truncateFrom(e.index);
      }
      for (let j = k; j < entries.length; j++) this.entries.push(entries[j]!);
      return have !== undefined ? e.index : 0;
    }
    return 0;
  }

  private truncateFrom(index: number): void {
    this.entries.truncate(index - this.snapshot.meta.index - 1);
    if (this.stableIndex >= index) this.stableIndex = index - 1;
  }

  /** Conflict hint for a rejected AppendEntries at prevLogIndex (fast backtracking, thesis §5.3). */
  conflictHint(prevLogIndex: number): { conflictIndex: number; conflictTerm: number } {
    const last = this.lastIndex();
    if (prevLogIndex > last) return { conflictIndex: last + 1, conflictTerm: 0 };
    const conflictTerm = this.term(prevLogIndex) ?? 0;
    let first = prevLogIndex;
    while (first - 1 >= this.firstIndex() && this.term(first - 1) === conflictTerm) first--;
    return { conflictIndex: first, conflictTerm };
  }

  /** Last index in our log holding `term`, or 0. */
  lastIndexOfTerm(term: number): number {
    for (let i = this.lastIndex(); i >= this.snapshot.meta.index; i--) {
      const t = this.term(i);
      if (t === undefined) break;
      if (t === term) return i;
      if (t < term) break;
    }
    return 0;
  }

  unstableEntries(): Entry[] {
    return this.slice(this.stableIndex + 1, this.lastIndex());
  }

  /** The persisted batch ended at (index, term): mark it stable unless the log changed under it. */
  stableTo(index: number, term: number): void {
    if (this.term(index) === term && index > this.stableIndex) this.stableIndex = index;
  }

  /** What to send a follower behind the log's start: the offered snapshot, or the log's own when it holds
   *  its data (the bootstrap snapshot at index 0 holds none and needs none); null when neither will do. */
  sendableSnapshot(): Snapshot | null {
    if (this.offered !== null && this.offered.meta.index >= this.snapshot.meta.index) return this.offered;
    this.offered = null;
    if (this.snapshot.meta.index === 0 || this.snapshot.data.length > 0) return this.snapshot;
    return null;
  }

  /** Replace the whole log with a snapshot from the leader. */
  restore(snapshot: Snapshot): void {
    this.snapshot = snapshot;
    this.entries = new LogEntries();
    this.stableIndex = snapshot.meta.index;
    this.committed = snapshot.meta.index;
    this.applied = snapshot.meta.index;
    this.handedOut = snapshot.meta.index;
    this.pendingSnapshot = snapshot;
  }

  /** Application snapshot at `index` (<= applied): drop the log up to it. */
  compact(snapshot: Snapshot): void {
    const drop = snapshot.meta.index - this.snapshot.meta.index;
    if (drop <= 0) return;
    this.entries.dropFirst(Math.min(drop, this.entries.length));
    this.snapshot = snapshot;
  }

  /** Committed entries not yet handed out, up to `upTo` (default: all committed); marks them handed out. */
  takeCommitted(maxCount: number, upTo = this.committed): Entry[] {
    const hi = Math.min(this.committed, upTo);
    if (hi <= this.handedOut) return [];
    const out = this.slice(this.handedOut + 1, hi, maxCount);
    const last = out[out.length - 1];
    if (last) this.handedOut = last.index;
    return out;
  }

  /** Committed entries are waiting to be handed out. */
  hasUnhandedCommitted(): boolean {
    return this.committed > this.handedOut;
  }
}
