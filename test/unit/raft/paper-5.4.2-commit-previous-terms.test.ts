// Raft paper §5.4.2 "Committing entries from previous terms" (Figure 8): a leader never commits an entry
// of an earlier term by counting replicas; such an entry is committed only indirectly, by committing an
// entry of the leader's own term (here: the noop every new leader appends, §8).
import { describe, expect, it } from 'vitest';
import type { AppendEntriesResponse, Message, RaftConfig } from '../../../src/raft/core/types.js';
import { Network, TestNode, entriesOfTerms } from './harness.js';

const ids = ['a', 'b', 'c', 'd', 'e']; // a = S1 ... e = S5 of Figure 8
const cfg = (c: RaftConfig) => {
  c.checkQuorum = false; // no leader stickiness: the figure's elections follow each other quickly
  c.maxEntriesPerMessage = 1; // one entry per AppendEntries, so index 2 and index 3 can be told apart
};

/**
 * Figure 8 (a)-(c). Returns the network with S1 (a) leading term 3, index 2 (term 1) stored on a
 * majority, and the AppendEntries carrying a's own-term entry (index 3) held back in `held`.
 */
function figure8UpToC() {
  const net = new Network(ids, cfg);
  const n = (id: string) => net.node(id);
  // Index 1 (term 1) is committed everywhere.
  net.elect('a');
  net.tickAll(1);
  for (const id of ids) expect(n(id).raft.status().commitIndex).toBe(1);

  // (a) S1 leads term 1 and replicates index 2 only to S2.
  for (const id of ['c', 'd', 'e']) net.cutLink('a', id);
  net.propose('a', 'x');
  expect(n('a').raft.status().lastIndex).toBe(2);
  expect(n('b').raft.status().lastIndex).toBe(2);
  expect(n('a').raft.status().commitIndex).toBe(1);

  // (b) S1 crashes; S5 is elected in term 2 by S3, S4 and itself; its own entry at index 2 goes nowhere.
  net.isolate('a');
  net.dropIf = (m) => m.from === 'e' && m.type === 'AppendEntries';
  net.elect('e');
  expect(n('e').raft.role).toBe('leader');
  expect(n('e').raft.term).toBe(2);
  expect(n('e').logTerms()).toEqual([1, 2]);

  // (c) S5 crashes; S1 restarts, is elected in term 3 and replicates index 2 (term 1) to S3 (and S4).
  net.heal();
  net.isolate('e');
  n('a').restart();
  const held: Message[] = [];
  net.dropIf = (m) => {
    if (m.type === 'AppendEntries' && m.from === 'a' && m.entries.some((e) => e.index >= 3)) {
      held.push(m);
      return true;
    }
    return false;
  };
  net.elect('a');
  expect(n('a').raft.role).toBe('leader');
  expect(n('a').raft.term).toBe(3);
  net.tick(['a']); // heartbeats find S3/S4's match; index 2 goes out, index 3 is held back
  return { net, n, held };
}

describe('Raft §5.4.2 committing entries from previous terms', () => {
  it('§5.4.2 Figure 8 (c): an old-term entry on a majority is NOT committed by counting replicas', () => {
    const { n, held } = figure8UpToC();
    // Index 2 with term 1 is stored on S1, S2, S3, S4 — four of five servers.
    for (const id of ['a', 'b', 'c', 'd']) expect(n(id).logTerms().slice(0, 2)).toEqual([1, 1]);
    expect(n('a').logTerms()).toEqual([1, 1, 3]); // plus S1's own noop of term 3
    expect(held.length).toBeGreaterThan(0);
    // ...and still not committed, anywhere.
    expect(n('a').raft.status().commitIndex).toBe(1);
    expect(n('a').durable.hardState.commitIndex).toBe(1);
    for (const id of ids) expect(n(id).appliedData()).toEqual([]);
  });

  it('§5.4.2 Figure 8 (d): that entry may indeed be overwritten by S5 — committing it would have lost it', () => {
    const { net, n } = figure8UpToC();
    // S1 crashes before its term-3 entry replicates. S5 restarts and wins (its last term 2 beats term 1).
    net.heal();
    net.isolate('a');
    net.dropIf = null;
    n('e').restart();
    net.elect('e');
    expect(n('e').raft.role).toBe('leader');
    expect(n('e').raft.term).toBe(4);
    net.tick(['e'], 2);
    // Index 2 is now S5's term-2 entry everywhere but on the crashed S1: the term-1 entry is gone.
    for (const id of ['b', 'c', 'd', 'e']) expect(n(id).logTerms()).toEqual([1, 2, 4]);
    for (const id of ['b', 'c', 'd', 'e']) expect(n(id).raft.status().commitIndex).toBe(3);
    // No server ever applied the overwritten entry (which a replica-counting leader would have committed).
    for (const id of ids) expect(n(id).applied.some((e) => e.index === 2 && e.term === 1)).toBe(false);
    expect(n('b').applied.map((e) => [e.index, e.term])).toEqual([
      [1, 1],
      [2, 2],
      [3, 4],
    ]);
  });

  it("§5.4.2 Figure 8 (e): once the leader's own-term entry replicates to a majority, both commit together", () => {
    const { net, n, held } = figure8UpToC();
    net.dropIf = null;
    const commits: number[] = [];
    for (const to of ['b', 'c']) {
      const m = held.find((h) => h.to === to)!;
      expect(m).toBeDefined();
      net.inject(m); // S2, then S3, receives index 3 (term 3)
      net.settle();
      commits.push(n('a').raft.status().commitIndex);
    }
    // After S2 alone: a + S2 hold index 3 — 2 of 5, nothing committed. After S3: majority, 3 commits (and 2 with it).
    expect(commits).toEqual([1, 3]);
    expect(n('a').appliedData()).toEqual(['x']);
    expect(n('a').applied.map((e) => [e.index, e.term])).toEqual([
      [1, 1],
      [2, 1],
      [3, 3],
    ]);
  });

  it('§5.4.2 a leader holding a majority of acks for an old-term index commits only at an index of its own term', () => {
    // Hand-driven (etcd TestLeaderOnlyCommitsLogFromCurrentTerm): leader a of term 3 with log 1 (t1), 2 (t2).
    const a = new TestNode('a', ['a', 'b', 'c'], (c) => {
      c.preVote = false;
    });
    a.load({ entries: entriesOfTerms([1, 2]), hardState: { term: 2, votedFor: null, commitIndex: 0 } });
    while (a.raft.role !== 'candidate') a.raft.tick();
    a.drain();
    a.raft.step({ type: 'RequestVoteResponse', from: 'b', to: 'a', term: 3, preVote: false, granted: true });
    expect(a.raft.role).toBe('leader');
    a.drain(); // noop at index 3 (term 3) is durable on a
    expect(a.logTerms()).toEqual([1, 2, 3]);
    const ack = (from: string, matchIndex: number): AppendEntriesResponse => ({
      type: 'AppendEntriesResponse',
      from,
      to: 'a',
      term: 3,
      success: true,
      matchIndex,
      conflictIndex: 0,
      conflictTerm: 0,
      round: 0,
    });
    a.raft.step(ack('b', 2));
    a.raft.step(ack('c', 2));
    a.drain();
    expect(a.raft.status().commitIndex).toBe(0); // 2 is on all three servers, but of term 2
    a.raft.step(ack('b', 3));
    a.drain();
    expect(a.raft.status().commitIndex).toBe(3);
    expect(a.applied.map((e) => e.index)).toEqual([1, 2, 3]);
  });
});
