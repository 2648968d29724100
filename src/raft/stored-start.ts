// Where a node restarts when its state machine keeps its state in a store of its own (fsm.ts
// StoredStateMachine): the store holds the effects of every entry up to its applied point, written behind
// the log; the log holds the entries and the hard state. The store counts as the state at its point: the
// core starts applied there (RestoredState.appliedIndex) and hands out only the entries above it — never one
// at or below it (that would apply it twice).
//
// The log is kept from its own base (its snapshot, whose data is empty: the store is the state), so the
// entries it still holds below the store's point — the catch-up tail the driver compacts to keep
// (node-snapshots.ts, catchUpEntries) — survive a restart: a follower a little behind after a whole-cluster
// stop is sent entries, not the whole store as a stream. The configuration comes from the log as before
// the restart (the base's, then each configuration entry after it, once: raft.ts); it must agree with the
// store's at the point, else the log is not trusted below it and the core starts at the point as it used to.
//
// The store may be ahead of the durable log: a node applies entries the quorum made durable, and the batch
// holding their effects may reach the store before the node's own log write does (or the log's tail may
// hold an entry of another term at that index, from a leader that lost). Then the log cannot say what comes
// after the store's point, nor vouch for the entries before it, and the node restarts as if it had just
// installed a snapshot there: no entries, the hard state raised to the point's term and commit. So it never
// votes or is caught up as if it had not applied what it has.
import { decodeConfEntry, sameConf } from './core/conf.js';
import { emptyHardState, type ConfState, type HardState, type RestoredState, type Snapshot, type SnapshotMeta } from './core/types.js';

export class StoredStartError extends Error {
  override readonly name = 'StoredStartError';
}

const NO_DATA = new Uint8Array(0);

/** The log's snapshot has its data (an older layout's data dir): the store can be built from it. */
export function holdsData(snapshot: Snapshot): boolean {
  return snapshot.data.length > 0;
}

export interface StoredStart {
  /** What the core starts from: the log's base as its snapshot (no data) and every entry after it, applied
   *  up to the store's point; or, when the log cannot vouch for what is below the point, the point as its
   *  snapshot and the log above it. */
  restored: RestoredState;
  /** The log must be rewritten to agree (the store is ahead of it, or it disagrees at the point). */
  rewriteLog: boolean;
  /** The log's configuration at the point is not the store's: its entries below the point were dropped. */
  confDisagrees?: true;
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
    // The store applied up to the point, so the point is committed (the log's own commit may lag it).
    const hardState = { ...log.hardState, commitIndex: Math.max(log.hardState.commitIndex, point.index) };
    if (sameConf(confAt(log, point.index), point.conf)) {
      const base: Snapshot = { meta: log.snapshot.meta, data: NO_DATA };
      return { restored: { hardState, snapshot: base, entries: log.entries, appliedIndex: point.index }, rewriteLog: false };
    }
    // The store's configuration is not the log's at the point: one of them is damaged. The store's is what
    // the state was built with; the tail below the point is dropped rather than read with another one.
    return {
      restored: { hardState, snapshot, entries: log.entries.filter((e) => e.index > point.index) },
      rewriteLog: false,
      confDisagrees: true,
    };
  }
  // The log ends below the point, or holds another term there: the store is the snapshot, nothing after it.
  const term = Math.max(log.hardState.term, point.term);
  const hardState: HardState = { term, votedFor: term === log.hardState.term ? log.hardState.votedFor : null, commitIndex: point.index };
  return { restored: { hardState, snapshot, entries: [] }, rewriteLog: true };
}

/** The configuration the log holds in force at `index`: the latest configuration entry at or before it, else
 *  its base's. */
function confAt(log: RestoredState, index: number): ConfState {
  let conf = log.snapshot.meta.conf;
  for (const e of log.entries) {
    if (e.index > index) break;
    if (e.kind === 'config') conf = decodeConfEntry(e.data).conf;
  }
  return conf;
}
