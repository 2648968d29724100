// A core restarted with a catch-up tail (RestoredState.appliedIndex; src/raft/stored-start.ts): its log starts
// at its snapshot, below what its state machine — a store of its own — already holds. The entries between are
// never handed out again, but a leader sends them to a follower a little behind instead of a snapshot; a
// follower behind the log's start still gets a snapshot, made of the state at the applied index.
import { describe, expect, it } from 'vitest';
import { RaftInvariantError } from '../../../src/raft/core/errors.js';
import { RaftLog } from '../../../src/raft/core/log.js';
import type { RaftConfig } from '../../../src/raft/core/types.js';
import { bootstrapSnapshot } from '../../../src/raft/core/types.js';
import { Network, type TestNode, entriesOfTerms } from './harness.js';

const ids = ['a', 'b', 'c'];
const classic = (c: RaftConfig) => {
  c.preVote = false;
  c.checkQuorum = false;
};
const NO_DATA = new Uint8Array(0);

/** The indexes a node's state machine was handed, in order. */
const appliedIndexes = (n: TestNode) => n.applied.map((e) => e.index);
/** 1..n */
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** a leads; every node applies `together` proposals; then c is cut off while a and b commit `more`. Each
 *  node's log is then compacted (no data: the store is the state) to `base`, or to its own applied index
 *  when that is lower. Returns the network and each node's applied index (its store's point). */
function clusterWithOneBehind(together: number, more: number, base: number) {
  const net = new Network(ids, classic);
  net.elect('a');
  for (let i = 0; i < together; i++) net.propose('a', `v${i}`);
  net.isolate('c');
  for (let i = 0; i < more; i++) net.propose('a', `w${i}`);
  net.tickAll(3); // the commit index reaches b
  const points = new Map(ids.map((id) => [id, net.node(id).raft.status().appliedIndex]));
  for (const id of ids) net.node(id).compact(Math.min(base, points.get(id)!), NO_DATA);
  return { net, points };
}

describe('a core restarted with a catch-up tail below its applied index', () => {
  it('hands out only entries after the applied index, never one of the tail again', () => {
    const snapshot = bootstrapSnapshot(ids);
    const log = new RaftLog(snapshot, entriesOfTerms([1, 1, 1, 2, 2, 2]), 5, 3);
    expect([log.firstIndex(), log.applied, log.handedOut, log.committed]).toEqual([1, 3, 3, 5]);
    expect(log.takeCommitted(100).map((e) => e.index)).toEqual([4, 5]);
    expect(log.slice(1, 3).map((e) => e.index)).toEqual([1, 2, 3]); // still there to be sent
  });

  it('refuses an applied index the log cannot hold: below its snapshot, past its end, or past its commit', () => {
    const at2 = { meta: { ...bootstrapSnapshot(ids).meta, index: 2, term: 1 }, data: NO_DATA };
    const entries = entriesOfTerms([1, 1, 2], 3); // 3..5
    expect(new RaftLog(at2, entries, 5, 2).applied).toBe(2);
    expect(() => new RaftLog(at2, entries, 5, 1)).toThrow(RaftInvariantError);
    expect(() => new RaftLog(at2, entries, 5, 6)).toThrow(RaftInvariantError);
    expect(() => new RaftLog(at2, entries, 4, 5)).toThrow(/applied index 5 is outside the log's committed entries/);
  });

  it('a leader restarted with a tail sends a follower behind its applied index entries, not a snapshot', () => {
    const { net, points } = clusterWithOneBehind(6, 3, 2);
    expect(points.get('c')).toBeLessThan(points.get('a')!);
    for (const id of ids) net.node(id).restartFromStore(points.get(id)!);
    expect(net.node('a').raft.status()).toMatchObject({ firstIndex: 3, appliedIndex: points.get('a') });
    net.heal();
    net.log = [];
    net.elect('a');
    net.tickAll(5);
    const c = net.node('c');
    const last = net.node('a').raft.status().lastIndex;
    expect(net.sent('InstallSnapshot')).toEqual([]);
    expect(c.raft.status()).toMatchObject({ lastIndex: last, appliedIndex: last });
    // Every node's state machine got each entry once: the tail below its point is never handed out again.
    for (const id of ids) expect(appliedIndexes(net.node(id)), id).toEqual(upTo(last));
  });

  it('a follower behind the log’s start is asked a snapshot of the applied state, and installs it', () => {
    // a and b keep entries from 6 on (applied at 10); c applied only up to 4.
    const { net, points } = clusterWithOneBehind(3, 6, 5);
    expect(points.get('c')).toBe(4);
    for (const id of ids) net.node(id).restartFromStore(points.get(id)!);
    const a = net.node('a');
    net.heal();
    net.elect('a');
    net.tickAll(2);
    expect(a.raft.takeSnapshotWanted()).toBe(true);
    const applied = a.raft.status().appliedIndex;
    expect(a.raft.status().firstIndex).toBeLessThan(applied);
    // Not below the log's start, not beyond what is applied: the state at the applied index is.
    expect(a.raft.offerSnapshot(4, NO_DATA)).toBe(false);
    expect(a.raft.offerSnapshot(applied + 1, NO_DATA)).toBe(false);
    expect(a.raft.offerSnapshot(applied, new TextEncoder().encode('state'))).toBe(true);
    net.log = [];
    net.tickAll(5);
    expect(net.sent('InstallSnapshot').map((m) => m.meta.index)).toContain(applied);
    const c = net.node('c');
    expect(c.restoredFrom?.meta.index).toBe(applied);
    expect(c.raft.status().appliedIndex).toBe(a.raft.status().lastIndex);
  });

  it('compacts within the tail (below the applied index), never past it', () => {
    const { net, points } = clusterWithOneBehind(6, 3, 2);
    const a = net.node('a');
    a.restartFromStore(points.get('a')!);
    expect(a.raft.compact(4, NO_DATA)?.meta.index).toBe(4);
    expect(a.raft.status().firstIndex).toBe(5);
    expect(() => a.raft.compact(points.get('a')! + 1, NO_DATA)).toThrow(/beyond applied index/);
  });
});
