// Where a node restarts when its state machine keeps its state in a store of its own (fsm.ts
// StoredStateMachine): the store holds the effects of every entry up to its applied point, written behind
// the log; the log holds the entries and the hard state. The store counts as a snapshot at its point, and
// the node replays only the log above it — never an entry at or below it (that would apply it twice).
//
// The store may be ahead of the durable log: a node applies entries the quorum made durable, and the batch
// holding their effects may reach the store before the node's own log write does (or the log's tail may
// hold an entry of another term at that index, from a leader that lost). Then the log cannot say what comes
// after the store's point, and the node restarts as if it had just installed a snapshot there: no entries,
// the hard state raised to the point's term and commit. So it never votes or is caught up as if it had not
// applied what it has.
import { emptyHardState, type HardState, type RestoredState, type Snapshot, type SnapshotMeta } from './core/types.js';

export class StoredStartError extends Error {
  override readonly name = 'StoredStartError';
}

const NO_DATA = new Uint8Array(0);

/** The log's snapshot has its data (an older layout's data dir): the store can be built from it. */
export function holdsData(snapshot: Snapshot): boolean {
  return snapshot.data.length > 0;
}

export interface StoredStart {
  /** What the core starts from: the store's point as its snapshot (no data), the log above it. */
  restored: RestoredState;
  /** The log must be rewritten to agree (the store is ahead of it, or it disagrees at the point). */
  rewriteLog: boolean;
}

/** The restart of a node whose store holds `point` and whose log (from storage.load) is `log`. */
export function startFromStore(log: RestoredState | null, point: SnapshotMeta): StoredStart {
  const snapshot: Snapshot = { meta: point, data: NO_DATA };
  if (log === null) {
    // A data dir made from a backup (leasehold snapshot restore): the store alone, no log yet.
    const hardState: HardState = { ...emptyHardState(), term: point.term, commitIndex: point.index };
    return { restored: { hardState, snapshot, entries: [] }, rewriteLog: true };
  }
  const base = log.snapshot.meta;
  if (point.index < base.index) {
    throw new StoredStartError(
      `the log starts after index ${base.index} but the applied store holds the state only up to index ${point.index}: ` +
        `the entries between them are lost (the log was compacted past the store)`,
    );
  }
  const termAtPoint = point.index === base.index ? base.term : log.entries[point.index - base.index - 1]?.term;
  if (termAtPoint === point.term) {
    const hardState = { ...log.hardState, commitIndex: Math.max(log.hardState.commitIndex, point.index) };
    return { restored: { hardState, snapshot, entries: log.entries.filter((e) => e.index > point.index) }, rewriteLog: false };
  }
  // The log ends below the point, or holds another term there: the store is the snapshot, nothing after it.
  const term = Math.max(log.hardState.term, point.term);
  const hardState: HardState = { term, votedFor: term === log.hardState.term ? log.hardState.votedFor : null, commitIndex: point.index };
  return { restored: { hardState, snapshot, entries: [] }, rewriteLog: true };
}
