// Where a node with a stored state machine restarts (src/raft/stored-start.ts): the applied store counts as a
// snapshot at its point and only the log above it is replayed; a store ahead of the log (or disagreeing with
// it at the point) makes the log start there, with the hard state raised to agree.
import { describe, expect, it } from 'vitest';
import { startFromStore, StoredStartError } from '../../../src/raft/stored-start.js';
import type { Entry, RestoredState, SnapshotMeta } from '../../../src/raft/core/types.js';

const CONF = { clusterId: 'c', voters: ['n1', 'n2', 'n3'], learners: [], addresses: {}, removed: [] };
const entry = (index: number, term: number): Entry => ({ index, term, kind: 'normal', data: new Uint8Array([index]) }) as Entry;
/** A log whose snapshot is at `base` (term 1) with entries base+1..last, terms given by `termOf`. */
function log(base: number, last: number, termOf = (_i: number) => 2, hard = { term: 3, votedFor: 'n2', commitIndex: 4 }): RestoredState {
  const entries: Entry[] = [];
  for (let i = base + 1; i <= last; i++) entries.push(entry(i, termOf(i)));
  return { hardState: hard, snapshot: { meta: { index: base, term: 1, conf: CONF }, data: new Uint8Array(0) }, entries };
}
const point = (index: number, term: number): SnapshotMeta => ({ index, term, conf: CONF });

describe('a restart from the applied store', () => {
  it('replays only the log above the store’s point, never an entry at or below it', () => {
    const start = startFromStore(log(10, 30), point(20, 2));
    expect(start.rewriteLog).toBe(false);
    expect(start.restored.snapshot.meta).toEqual(point(20, 2));
    expect(start.restored.entries.map((e) => e.index)).toEqual(Array.from({ length: 10 }, (_, i) => 21 + i));
    expect(start.restored.hardState).toEqual({ term: 3, votedFor: 'n2', commitIndex: 20 }); // commit raised to what was applied
  });

  it('a store at the log’s own snapshot replays every entry of the log', () => {
    const start = startFromStore(
      log(10, 15, () => 2),
      point(10, 1),
    );
    expect(start.restored.entries.map((e) => e.index)).toEqual([11, 12, 13, 14, 15]);
    expect(start.rewriteLog).toBe(false);
  });

  it('a store ahead of the durable log: the store is the snapshot, no entries, the hard state raised', () => {
    const start = startFromStore(
      log(10, 18, () => 2, { term: 2, votedFor: 'n1', commitIndex: 15 }),
      point(20, 4),
    );
    expect(start.rewriteLog).toBe(true);
    expect(start.restored.snapshot.meta).toEqual(point(20, 4));
    expect(start.restored.entries).toEqual([]);
    // A term it never voted in (a vote is durable before it is sent): no vote; commit at the point.
    expect(start.restored.hardState).toEqual({ term: 4, votedFor: null, commitIndex: 20 });
  });

  it('a log that holds another term at the point is cut there too; a vote of the same term is kept', () => {
    const start = startFromStore(
      log(10, 25, (i) => (i <= 18 ? 2 : 3)),
      point(20, 2),
    );
    expect(start.rewriteLog).toBe(true);
    expect(start.restored.entries).toEqual([]);
    expect(start.restored.hardState).toEqual({ term: 3, votedFor: 'n2', commitIndex: 20 });
  });

  it('a log compacted past the store is refused: the entries between are lost', () => {
    expect(() => startFromStore(log(30, 40), point(20, 2))).toThrow(StoredStartError);
    expect(() => startFromStore(log(30, 40), point(20, 2))).toThrow(/compacted past the store/);
  });

  it('a data dir made from a backup (no log): the log starts at the store’s point', () => {
    const start = startFromStore(null, point(500, 7));
    expect(start.rewriteLog).toBe(true);
    expect(start.restored.hardState).toEqual({ term: 7, votedFor: null, commitIndex: 500 });
    expect(start.restored.snapshot.meta.index).toBe(500);
  });
});
