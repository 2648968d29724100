// Raft paper §5.3 "Log replication", one test per rule.
import { describe, expect, it } from 'vitest';
import type { AppendEntries, RaftConfig } from '../../../src/raft/core/types.js';
import { Network, TestNode, appendEntries, enc, entriesOfTerms, ofType } from './harness.js';

const noStickiness = (c: RaftConfig) => {
  c.checkQuorum = false;
};

/** A follower `b` with a crafted log and hard state, fresh from restart (no leader known). */
function follower(terms: number[], hs: { term: number; commitIndex?: number }): TestNode {
  const b = new TestNode('b', ['a', 'b', 'c']);
  b.load({ entries: entriesOfTerms(terms), hardState: { term: hs.term, votedFor: null, commitIndex: hs.commitIndex ?? 0 } });
  return b;
}

describe('Raft §5.3 log replication', () => {
  it('§5.3 the leader appends a proposal, replicates it, commits on a majority, and followers apply it', () => {
    const net = new Network(['a', 'b', 'c']);
    const [a, b, c] = ['a', 'b', 'c'].map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
    // c is unreachable from the start (the leader only ever probes it). The case where the link to an
    // already-replicating follower drops an AppendEntries is the "retries indefinitely" test below.
    net.cutLink('a', 'c');
    net.elect('a');
    net.tick(['a']);
    const r = a.raft.propose(enc('x'));
    expect(r).toEqual({ ok: true, index: 2, term: a.raft.term });
    // Appended to the leader's own log at once (and persisted by the next Ready), not yet committed.
    expect(a.raft.status().lastIndex).toBe(2);
    expect(a.raft.status().commitIndex).toBe(1);
    net.settle();
    // Stored on a and b = 2 of 3: committed and applied on the leader.
    expect(a.raft.status().commitIndex).toBe(2);
    expect(a.appliedData()).toEqual(['x']);
    expect(b.durable.entries.map((e) => e.index)).toEqual([1, 2]);
    expect(c.durable.entries).toEqual([]);
    // b learns the commit index from the next AppendEntries (heartbeat) and applies.
    net.tick(['a']);
    expect(b.raft.status().commitIndex).toBe(2);
    expect(b.appliedData()).toEqual(['x']);
    expect(c.appliedData()).toEqual([]);
    net.heal();
    net.tick(['a'], 2);
    expect(c.appliedData()).toEqual(['x']);
  });

  it('§5.3 an entry stored only on the leader (a minority) is not committed', () => {
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    const a = net.node('a');
    net.isolate('a');
    net.propose('a', 'x');
    net.tick(['a'], 5);
    expect(a.raft.status().lastIndex).toBe(2);
    expect(a.raft.status().commitIndex).toBe(1);
    expect(a.appliedData()).toEqual([]);
  });

  it('§5.3 AppendEntries consistency check: the follower rejects when it lacks prevLogIndex/prevLogTerm', () => {
    const b = follower([1, 1, 2], { term: 2 });
    // prevLogIndex beyond its log.
    b.raft.step(appendEntries({ from: 'a', to: 'b', term: 3, prevLogIndex: 5, prevLogTerm: 3, entries: [] }));
    // prevLogIndex present but with another term.
    b.raft.step(appendEntries({ from: 'a', to: 'b', term: 3, prevLogIndex: 3, prevLogTerm: 3, entries: entriesOfTerms([3], 4) }));
    const res = ofType(b.drain(), 'AppendEntriesResponse');
    expect(res.map((m) => [m.success, m.matchIndex, m.conflictIndex, m.conflictTerm])).toEqual([
      [false, 5, 4, 0], // too short: hint lastIndex+1
      [false, 3, 3, 2], // term 2 at 3: hint the first index of term 2
    ]);
    expect(b.logTerms()).toEqual([1, 1, 2]); // nothing appended
    // The matching one is accepted.
    b.raft.step(appendEntries({ from: 'a', to: 'b', term: 3, prevLogIndex: 3, prevLogTerm: 2, entries: entriesOfTerms([3], 4) }));
    expect(ofType(b.drain(), 'AppendEntriesResponse').map((m) => [m.success, m.matchIndex])).toEqual([[true, 4]]);
    expect(b.logTerms()).toEqual([1, 1, 2, 3]);
  });

  it('§5.3 the follower truncates at the first conflicting entry only, keeping the matching prefix', () => {
    const b = follower([1, 1, 2, 2, 2], { term: 2 });
    b.readys = [];
    // New leader in term 3: entries 2 (t1, matches) and 3 (t3, conflicts with t2).
    b.raft.step(appendEntries({ from: 'a', to: 'b', term: 3, prevLogIndex: 1, prevLogTerm: 1, entries: entriesOfTerms([1, 3], 2) }));
    b.drain();
    expect(b.logTerms()).toEqual([1, 1, 3]);
    // Only the conflicting suffix was rewritten: the Ready started at index 3, entry 2 was not touched.
    const written = b.readys.flatMap((r) => r.entries);
    expect(written.map((e) => [e.index, e.term])).toEqual([[3, 3]]);
    expect(b.durable.entries[1]!.data).toEqual(enc('e2t1'));
  });

  it('§5.3 a stale, duplicated AppendEntries whose entries already match never truncates the log', () => {
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    const b = net.node('b');
    for (const v of ['x2', 'x3', 'x4', 'x5']) net.propose('a', v);
    expect(b.durable.entries.map((e) => e.index)).toEqual([1, 2, 3, 4, 5]);
    const old = net.sent('AppendEntries', (m) => m.to === 'b' && m.prevLogIndex === 2 && m.entries.length === 1);
    expect(old).toHaveLength(1);
    expect(old[0]!.entries[0]!.index).toBe(3);
    b.readys = [];
    net.inject(old[0]!); // redelivered late
    const res = ofType(b.drain(), 'AppendEntriesResponse');
    expect(res).toHaveLength(1);
    expect(res[0]!.success).toBe(true);
    expect(b.raft.status().lastIndex).toBe(5);
    expect(b.durable.entries.map((e) => e.index)).toEqual([1, 2, 3, 4, 5]);
    expect(b.readys.flatMap((r) => r.entries)).toEqual([]); // nothing rewritten
    // And the leader is not confused by the duplicate answer.
    net.deliver(res);
    net.settle();
    expect(net.node('a').raft.progressSnapshot().get('b')!.match).toBe(5);
  });

  it('§5.3 fast backtracking: a long divergent tail of another term costs one rejection, not one per entry', () => {
    const net = new Network(['a', 'b', 'c'], noStickiness);
    const [a, b, c] = ['a', 'b', 'c'].map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
    // a and c: index 1 (t1), 2..40 (t3). b: index 1 (t1), 2..60 (t2) — an old leader's uncommitted tail.
    const good = [1, ...Array<number>(39).fill(3)];
    a.load({ entries: entriesOfTerms(good), hardState: { term: 3, votedFor: null, commitIndex: 1 } });
    c.load({ entries: entriesOfTerms(good), hardState: { term: 3, votedFor: null, commitIndex: 1 } });
    b.load({ entries: entriesOfTerms([1, ...Array<number>(59).fill(2)]), hardState: { term: 3, votedFor: null, commitIndex: 1 } });
    net.elect('a'); // no ticks after the election: convergence is by probes alone, not by heartbeats
    expect(a.raft.role).toBe('leader');
    const rejections = net.sent('AppendEntriesResponse', (m) => m.from === 'b' && !m.success);
    expect(rejections).toHaveLength(1);
    expect(rejections[0]).toMatchObject({ matchIndex: 40, conflictTerm: 2, conflictIndex: 2 });
    expect(b.logTerms()).toEqual(a.logTerms());
    expect(b.raft.status().lastIndex).toBe(41);
    // Every entry went over once (index 2..41), plus a few heartbeats at most: no per-entry probing.
    const appendsToB = net.sent('AppendEntries', (m) => m.to === 'b');
    expect(appendsToB.length).toBeLessThanOrEqual(4);
  });

  it('§5.3 fast backtracking: the leader skips to the end of the conflict term it also holds', () => {
    const net = new Network(['a', 'b', 'c'], noStickiness);
    const [a, b, c] = ['a', 'b', 'c'].map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
    // a, c: 1 (t1), 2..10 (t2), 11..40 (t3). b: 1 (t1), 2..60 (t2).
    const good = [1, ...Array<number>(9).fill(2), ...Array<number>(30).fill(3)];
    a.load({ entries: entriesOfTerms(good), hardState: { term: 3, votedFor: null, commitIndex: 1 } });
    c.load({ entries: entriesOfTerms(good), hardState: { term: 3, votedFor: null, commitIndex: 1 } });
    b.load({ entries: entriesOfTerms([1, ...Array<number>(59).fill(2)]), hardState: { term: 3, votedFor: null, commitIndex: 1 } });
    b.readys = [];
    net.elect('a');
    const rejections = net.sent('AppendEntriesResponse', (m) => m.from === 'b' && !m.success);
    expect(rejections).toHaveLength(1);
    // The next probe is anchored at index 10, the last t2 entry the leader holds; 2..10 stay untouched.
    const afterReject = net.sent('AppendEntries', (m) => m.to === 'b').map((m) => m.prevLogIndex);
    expect(afterReject.slice(0, 2)).toEqual([40, 10]);
    expect(b.readys.flatMap((r) => r.entries)[0]!.index).toBe(11);
    expect(b.logTerms()).toEqual(a.logTerms());
  });

  it('§5.3 fast backtracking: a follower with a short log gets the missing suffix after one rejection', () => {
    const net = new Network(['a', 'b', 'c'], noStickiness);
    const [a, b, c] = ['a', 'b', 'c'].map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
    const good = Array<number>(40).fill(1);
    a.load({ entries: entriesOfTerms(good), hardState: { term: 1, votedFor: null, commitIndex: 1 } });
    c.load({ entries: entriesOfTerms(good), hardState: { term: 1, votedFor: null, commitIndex: 1 } });
    b.load({ entries: entriesOfTerms([1, 1, 1, 1, 1]), hardState: { term: 1, votedFor: null, commitIndex: 1 } });
    net.elect('a');
    const rejections = net.sent('AppendEntriesResponse', (m) => m.from === 'b' && !m.success);
    expect(rejections).toHaveLength(1);
    expect(rejections[0]).toMatchObject({ conflictTerm: 0, conflictIndex: 6 });
    expect(b.logTerms()).toEqual(a.logTerms());
  });

  it('§5.3 proposals made between two Readys travel as one AppendEntries with many entries', () => {
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    net.tickAll(1); // b and c are in replicate state
    const a = net.node('a');
    for (let i = 0; i < 50; i++) expect(a.raft.propose(enc(`v${i}`)).ok).toBe(true);
    const out = net.collect();
    const toB = ofType(out, 'AppendEntries').filter((m) => m.to === 'b');
    expect(toB).toHaveLength(1);
    expect(toB[0]!.entries).toHaveLength(50);
    expect(toB[0]!.entries.map((e) => e.index)).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
    // One durable write for the leader too.
    expect(a.readys.at(-1)!.entries).toHaveLength(50);
    net.deliver(out);
    net.settle();
    expect(a.raft.status().commitIndex).toBe(51);
  });

  it('§5.3 batches are split at maxEntriesPerMessage', () => {
    const net = new Network(['a', 'b', 'c'], (c) => {
      c.maxEntriesPerMessage = 16;
    });
    net.elect('a');
    net.tickAll(1);
    for (let i = 0; i < 50; i++) net.node('a').raft.propose(enc(`v${i}`));
    const toB = ofType(net.collect(), 'AppendEntries').filter((m) => m.to === 'b');
    expect(toB.map((m) => m.entries.length)).toEqual([16, 16, 16, 2]);
    expect(toB.map((m) => m.prevLogIndex)).toEqual([1, 17, 33, 49]);
  });

  it('§5.3 pipelining: up to maxInflight AppendEntries in flight while no responses arrive, then one per answer', () => {
    const net = new Network(['a', 'b', 'c'], (c) => {
      c.maxInflight = 3;
      c.maxEntriesPerMessage = 1;
    });
    net.elect('a');
    net.tickAll(1);
    const a = net.node('a');
    expect(a.raft.progressSnapshot().get('b')!.state).toBe('replicate');
    for (let i = 0; i < 10; i++) a.raft.propose(enc(`v${i}`));
    const first = ofType(net.collect(), 'AppendEntries').filter((m) => m.to === 'b');
    expect(first.map((m) => m.entries.map((e) => e.index))).toEqual([[2], [3], [4]]);
    // More proposals while nothing is acknowledged: nothing more goes out to b.
    a.raft.propose(enc('more'));
    expect(ofType(net.collect(), 'AppendEntries').filter((m) => m.to === 'b')).toHaveLength(0);
    // b answers the first one: exactly one slot frees, exactly one more message goes out.
    net.inject(first[0]!);
    net.deliver(ofType(net.collect(), 'AppendEntriesResponse'));
    const next = ofType(net.collect(), 'AppendEntries').filter((m) => m.to === 'b');
    expect(next.map((m) => m.entries.map((e) => e.index))).toEqual([[5]]);
  });

  it('§5.3 the leader retries AppendEntries indefinitely: an append lost on the way to replicating followers is resent', () => {
    // Regression (found by this suite, fixed in d79a503): heartbeats anchored at pr.match always succeed,
    // so a lost append to a follower in replicate state used to be never resent.
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    net.tickAll(1);
    const a = net.node('a');
    for (const id of ['b', 'c']) expect(a.raft.progressSnapshot().get(id)!.state).toBe('replicate');
    net.dropIf = (m) => m.type === 'AppendEntries' && m.entries.length > 0; // the one append carrying x, on both links
    expect(a.raft.propose(enc('x'))).toMatchObject({ ok: true, index: 2 });
    net.settle();
    net.dropIf = null;
    expect(a.raft.status().commitIndex).toBe(1);
    net.tickAll(10); // no new proposal: only the leader's own retry can deliver x
    expect(net.node('b').raft.status().lastIndex).toBe(2);
    expect(a.raft.status().commitIndex).toBe(2);
    for (const n of net.nodes.values()) expect(n.appliedData()).toEqual(['x']);
  });

  it('§5.3 pipelining: after maxInflight answers are lost, replication resumes once answers flow again', () => {
    // Regression (fixed in d79a503): a full inflight window used to stall the follower for ever.
    const net = new Network(['a', 'b', 'c'], (c) => {
      c.maxInflight = 2;
    });
    net.elect('a');
    net.tickAll(1);
    const a = net.node('a');
    net.dropTypes.add('AppendEntriesResponse');
    net.propose('a', 'x');
    net.propose('a', 'y');
    net.propose('a', 'z'); // not sent: both followers are paused at maxInflight
    expect(net.sent('AppendEntries', (m) => m.to === 'b' && m.entries.some((e) => e.index === 4))).toHaveLength(0);
    net.dropTypes.clear();
    net.tickAll(10);
    expect(a.raft.status().commitIndex).toBe(4);
    for (const id of ['b', 'c']) expect(net.node(id).appliedData()).toEqual(['x', 'y', 'z']);
  });

  it('§5.3 commitIndex = min(leaderCommit, index of last new entry): a stale tail beyond the message is not committed', () => {
    // b holds 1..2 (t1) and a stale tail 3..5 (t2) from a deposed leader.
    const b = follower([1, 1, 2, 2, 2], { term: 2, commitIndex: 1 });
    // Leader of term 3 whose log is 1..2 (t1), 3..6 (t3) and commit 6 sends a heartbeat anchored at 2.
    b.raft.step(appendEntries({ from: 'a', to: 'b', term: 3, prevLogIndex: 2, prevLogTerm: 1, entries: [], leaderCommit: 6 }));
    b.drain();
    expect(b.raft.status().commitIndex).toBe(2);
    expect(b.durable.hardState.commitIndex).toBe(2);
    expect(b.applied.map((e) => e.index)).toEqual([1, 2]); // never the stale 3..5
    // One new entry: commit moves exactly to its index.
    b.raft.step(
      appendEntries({ from: 'a', to: 'b', term: 3, prevLogIndex: 1, prevLogTerm: 1, entries: entriesOfTerms([1], 2), leaderCommit: 6 }),
    );
    b.drain();
    expect(b.raft.status().commitIndex).toBe(2);
    b.raft.step(
      appendEntries({ from: 'a', to: 'b', term: 3, prevLogIndex: 2, prevLogTerm: 1, entries: entriesOfTerms([3], 3), leaderCommit: 6 }),
    );
    b.drain();
    expect(b.logTerms()).toEqual([1, 1, 3]); // stale tail replaced
    expect(b.raft.status().commitIndex).toBe(3);
    expect(b.applied.map((e) => [e.index, e.term])).toEqual([
      [1, 1],
      [2, 1],
      [3, 3],
    ]);
  });

  it('§5.3 leaderCommit below the follower commit never moves it back', () => {
    const b = follower([1, 1, 1], { term: 1, commitIndex: 3 });
    b.raft.step(appendEntries({ from: 'a', to: 'b', term: 1, prevLogIndex: 3, prevLogTerm: 1, entries: [], leaderCommit: 1 }));
    b.drain();
    expect(b.raft.status().commitIndex).toBe(3);
    expect(b.durable.hardState.commitIndex).toBe(3);
  });

  it('§5.3 a follower acknowledges only entries it has made durable (persist before answering)', () => {
    const b = follower([1], { term: 1 });
    const m: AppendEntries = appendEntries({
      from: 'a',
      to: 'b',
      term: 1,
      prevLogIndex: 1,
      prevLogTerm: 1,
      entries: entriesOfTerms([1, 1], 2),
    });
    b.raft.step(m);
    const rd = b.raft.ready();
    const ack = ofType(rd.messages, 'AppendEntriesResponse')[0]!;
    expect(ack).toMatchObject({ success: true, matchIndex: 3 });
    // The same Ready carries the entries the ack covers (the driver writes them before sending).
    expect(rd.entries.map((e) => e.index)).toEqual([2, 3]);
    b.raft.advance(rd);
  });
});
