// Where a node with a stored state machine restarts (src/raft/stored-start.ts): the applied store counts as the
// state at its point — the core starts applied there and replays only the log above it — while the log is kept
// from its own base, so the entries it holds below the point stay as a catch-up tail for followers; a store
// ahead of the log (or disagreeing with it at the point) makes the log start there, with the hard state raised
// to agree.
import { describe, expect, it } from 'vitest';
import { startFromStore, StoredStartError } from '../../../src/raft/stored-start.js';
import { encodeConfEntry } from '../../../src/raft/core/conf.js';
import { Raft, defaultRaftConfig } from '../../../src/raft/core/raft.js';
import type { ConfChange, ConfState, Entry, RestoredState, SnapshotMeta } from '../../../src/raft/core/types.js';
import { SimRng } from '../../sim/rng.js';

const CONF = { clusterId: 'c', voters: ['n1', 'n2', 'n3'], learners: [], addresses: {}, removed: [] };
const entry = (index: number, term: number): Entry => ({ index, term, kind: 'normal', data: new Uint8Array([index]) }) as Entry;
const confEntry = (index: number, term: number, conf: ConfState, change: ConfChange): Entry => ({
  index,
  term,
  kind: 'config',
  data: encodeConfEntry({ conf, change }),
});
/** A log whose snapshot is at `base` (term 1) with entries base+1..last, terms given by `termOf`. */
function log(base: number, last: number, termOf = (_i: number) => 2, hard = { term: 3, votedFor: 'n2', commitIndex: 4 }): RestoredState {
  const entries: Entry[] = [];
  for (let i = base + 1; i <= last; i++) entries.push(entry(i, termOf(i)));
  return { hardState: hard, snapshot: { meta: { index: base, term: 1, conf: CONF }, data: new Uint8Array(0) }, entries };
}
const point = (index: number, term: number): SnapshotMeta => ({ index, term, conf: CONF });

describe('a restart from the applied store', () => {
  it('keeps the log from its base as a catch-up tail, applied at the store’s point: only the log above it is replayed', () => {
    const start = startFromStore(log(10, 30), point(20, 2));
    expect(start.rewriteLog).toBe(false);
    // The log's own base (no data: the store is the state), every entry after it, applied up to the point.
    expect(start.restored.snapshot.meta).toEqual({ index: 10, term: 1, conf: CONF });
    expect(start.restored.snapshot.data).toHaveLength(0);
    expect(start.restored.entries.map((e) => e.index)).toEqual(Array.from({ length: 20 }, (_, i) => 11 + i));
    expect(start.restored.appliedIndex).toBe(20);
    expect(start.restored.hardState).toEqual({ term: 3, votedFor: 'n2', commitIndex: 20 }); // commit raised to what was applied
    expect(start.confDisagrees).toBeUndefined();
  });

  it('the core started from it hands out only the entries above the point, and still holds the tail below it', () => {
    const { restored } = startFromStore(
      log(10, 30, () => 2, { term: 3, votedFor: 'n2', commitIndex: 25 }),
      point(20, 2),
    );
    const raft = new Raft({ ...defaultRaftConfig('n1', new SimRng(1)), id: 'n1' }, restored);
    expect(raft.status()).toMatchObject({ firstIndex: 11, appliedIndex: 20, commitIndex: 25, lastIndex: 30 });
    expect(raft.ready().committedEntries.map((e) => e.index)).toEqual([21, 22, 23, 24, 25]);
    expect(raft.inspect().entryAt(11)?.index).toBe(11);
  });

  it('a store at the log’s own snapshot replays every entry of the log', () => {
    const start = startFromStore(
      log(10, 15, () => 2),
      point(10, 1),
    );
    expect(start.restored.entries.map((e) => e.index)).toEqual([11, 12, 13, 14, 15]);
    expect(start.restored.appliedIndex).toBe(10);
    expect(start.rewriteLog).toBe(false);
  });

  it('a configuration entry in the tail is the log’s configuration once, as of its index, and the store’s at the point', () => {
    const added: ConfState = { ...CONF, voters: ['n1', 'n2', 'n3', 'n4'], addresses: { n4: 'h4:1' } };
    const withConf = log(10, 30);
    withConf.entries[15 - 11] = confEntry(15, 2, added, { type: 'add', id: 'n4', address: 'h4:1', learner: false });
    const start = startFromStore(withConf, { index: 20, term: 2, conf: added });
    expect(start.restored.entries).toHaveLength(20);
    const raft = new Raft({ ...defaultRaftConfig('n1', new SimRng(1)), id: 'n1' }, start.restored);
    expect(
      raft
        .inspect()
        .configurations()
        .map((c) => [c.index, c.conf.voters.length]),
    ).toEqual([
      [10, 3],
      [15, 4],
    ]);
    expect(raft.status()).toMatchObject({ confIndex: 15, voters: ['n1', 'n2', 'n3', 'n4'] });
  });

  it('a log whose configuration at the point is not the store’s keeps nothing below the point, as before the tail', () => {
    const other: ConfState = { ...CONF, voters: ['n1', 'n2'] };
    const start = startFromStore(log(10, 30), { index: 20, term: 2, conf: other });
    expect(start.confDisagrees).toBe(true);
    expect(start.rewriteLog).toBe(false);
    expect(start.restored.snapshot.meta).toEqual({ index: 20, term: 2, conf: other });
    expect(start.restored.entries.map((e) => e.index)).toEqual(Array.from({ length: 10 }, (_, i) => 21 + i));
    expect(start.restored.appliedIndex).toBeUndefined();
  });

  it('a store ahead of the durable log: the store is the snapshot, no entries, the hard state raised', () => {
    const start = startFromStore(
      log(10, 18, () => 2, { term: 2, votedFor: 'n1', commitIndex: 15 }),
      point(20, 4),
    );
    expect(start.rewriteLog).toBe(true);
    expect(start.restored.snapshot.meta).toEqual(point(20, 4));
    expect(start.restored.entries).toEqual([]);
    expect(start.restored.appliedIndex).toBeUndefined(); // the log cannot vouch for entries below the point either
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
