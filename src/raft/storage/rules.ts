// The log rules every store enforces — WalStorage (the node's), LevelStorage (which reads older data dirs)
// and MemoryStorage (tests, the simulator) — so a test store fails exactly where the node's would.
// A stored log is always: snapshot at snapshotIndex, then entries snapshotIndex+1 .. lastIndex, no gaps.
import type { Entry, Snapshot } from '../core/types.js';
import { InvalidBatchError, SnapshotOutOfDateError } from './errors.js';
import type { PersistBatch } from './types.js';

export interface LogBounds {
  /** RestoredState needs a snapshot (the bootstrap one carries the voter set), so nothing is stored before it. */
  hasSnapshot: boolean;
  /** Index of the stored snapshot (0 when none). */
  snapshotIndex: number;
  /** Index of the last stored entry, or snapshotIndex when there are none. */
  lastIndex: number;
}

const KINDS = new Set(['normal', 'noop', 'config']);

/** Term and vote as a store last wrote them. */
export interface WrittenVote {
  term: number;
  votedFor: string | null;
}

/** Does `batch` only move the commit index past what was written (same term and vote, no entries, no
 *  snapshot)? The commit index is volatile (Raft Figure 2): such a batch needs no synced write. */
export function movesOnlyCommit(batch: PersistBatch, written: WrittenVote | null): boolean {
  const hs = batch.hardState;
  return (
    hs !== null &&
    !batch.snapshot &&
    batch.entries.length === 0 &&
    written !== null &&
    written.term === hs.term &&
    written.votedFor === hs.votedFor
  );
}

/** Validates `batch` against the stored log and returns the bounds after it is applied. */
export function boundsAfterSave(current: LogBounds, batch: PersistBatch): LogBounds {
  checkBatchShape(batch);
  let bounds = current;
  if (!current.hasSnapshot && !batch.snapshot && (batch.hardState || batch.entries.length > 0)) {
    throw new InvalidBatchError('the store is empty: the first save() must include the bootstrap snapshot (it carries the voter set)');
  }
  if (batch.snapshot) {
    const index = batch.snapshot.meta.index;
    if (index < current.snapshotIndex) {
      throw new InvalidBatchError(`snapshot at ${index} is older than the stored snapshot at ${current.snapshotIndex}`);
    }
    bounds = { hasSnapshot: true, snapshotIndex: index, lastIndex: index };
  }
  if (batch.entries.length > 0) {
    const first = batch.entries[0]!.index;
    // A gap would be invisible until restart, when load() stops at it and drops acknowledged entries.
    if (first <= bounds.snapshotIndex || first > bounds.lastIndex + 1) {
      throw new InvalidBatchError(
        `entries start at ${first}; they must start in ${bounds.snapshotIndex + 1}..${bounds.lastIndex + 1} ` +
          `(after the snapshot at ${bounds.snapshotIndex}, at most one past the last entry)`,
      );
    }
    bounds = { ...bounds, lastIndex: batch.entries[batch.entries.length - 1]!.index };
  }
  return bounds;
}

/** Validates a compaction and returns the bounds after it. */
export function boundsAfterCompact(current: LogBounds, snapshot: Snapshot): LogBounds {
  const index = snapshot.meta.index;
  checkIndex(index, 'snapshot index');
  checkIndex(snapshot.meta.term, 'snapshot term');
  if (index < current.snapshotIndex) {
    throw new SnapshotOutOfDateError(`compact at ${index} is older than the stored snapshot at ${current.snapshotIndex}`);
  }
  // The application can only snapshot what it applied, and it applies only stored entries.
  if (index > current.lastIndex) {
    throw new InvalidBatchError(
      `compact at ${index} is past the last stored entry ${current.lastIndex}; ` +
        'a snapshot from the leader goes through save({ snapshot }) instead',
    );
  }
  return { hasSnapshot: true, snapshotIndex: index, lastIndex: current.lastIndex };
}

/** The checks that need no stored state: run before encoding, so a bad number is an InvalidBatchError. */
export function checkBatchShape(batch: PersistBatch): void {
  if (batch.snapshot) {
    checkIndex(batch.snapshot.meta.index, 'snapshot index');
    checkIndex(batch.snapshot.meta.term, 'snapshot term');
  }
  if (batch.hardState) {
    checkIndex(batch.hardState.term, 'hard state term');
    checkIndex(batch.hardState.commitIndex, 'hard state commitIndex');
  }
  if (batch.entries.length > 0) checkContiguous(batch.entries);
}

function checkContiguous(entries: readonly Entry[]): void {
  let expected = entries[0]!.index;
  for (const e of entries) {
    checkIndex(e.index, 'entry index');
    checkIndex(e.term, 'entry term');
    if (e.index !== expected) throw new InvalidBatchError(`entries are not contiguous: expected ${expected}, got ${e.index}`);
    if (!KINDS.has(e.kind)) throw new InvalidBatchError(`entry ${e.index} has unknown kind ${String(e.kind)}`);
    expected++;
  }
}

function checkIndex(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new InvalidBatchError(`${what} ${n} is not a non-negative safe integer`);
}
