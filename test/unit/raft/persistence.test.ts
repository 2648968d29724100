// Raft Figure 2 "Persistent state on all servers" (currentTerm, votedFor, log[]) and crash recovery:
// a server restarts from exactly what it made durable, and never answers in a way that depends on state
// it had not made durable (DESIGN.md "persist before you speak").
import { describe, expect, it } from 'vitest';
import { RaftInvariantError } from '../../../src/raft/core/errors.js';
import { RaftLog } from '../../../src/raft/core/log.js';
import type { Message, RaftConfig, RequestVote } from '../../../src/raft/core/types.js';
import { bootstrapSnapshot } from '../../../src/raft/core/types.js';
import { Network, TestNode, entriesOfTerms, ofType, persistBeforeSendViolations, tickUntil } from './harness.js';

const ids = ['a', 'b', 'c'];
const classic = (c: RaftConfig) => {
  c.preVote = false;
  c.checkQuorum = false;
};
const rv = (from: string, to: string, term: number): RequestVote => ({
  type: 'RequestVote',
  from,
  to,
  term,
  preVote: false,
  lastLogIndex: 0,
  lastLogTerm: 0,
  transfer: false,
});

describe('persistence and crash recovery', () => {
  it('votedFor is durable: a voter that restarts does not vote for a different candidate in the same term', () => {
    const b = new TestNode('b', ids, classic);
    b.raft.step(rv('a', 'b', 1));
    expect(ofType(b.drain(), 'RequestVoteResponse')[0]!.granted).toBe(true);
    expect(b.durable.hardState).toEqual({ term: 1, votedFor: 'a', commitIndex: 0 });

    b.restart();
    expect(b.raft.term).toBe(1);
    b.raft.step(rv('c', 'b', 1));
    b.raft.step(rv('a', 'b', 1)); // the same candidate again (a retransmission) is still granted
    expect(ofType(b.drain(), 'RequestVoteResponse').map((m) => [m.to, m.granted])).toEqual([
      ['c', false],
      ['a', true],
    ]);
    expect(b.durable.hardState.votedFor).toBe('a');
  });

  it('control: a node that forgot its vote (votedFor not durable) would vote twice in one term', () => {
    // Shows what the test above guards against: same scenario with the vote wiped from storage.
    const b = new TestNode('b', ids, classic);
    b.raft.step(rv('a', 'b', 1));
    b.drain();
    b.load({ hardState: { term: 1, votedFor: null, commitIndex: 0 } });
    b.raft.step(rv('c', 'b', 1));
    expect(ofType(b.drain(), 'RequestVoteResponse')[0]!.granted).toBe(true);
  });

  it('a candidate that restarts mid-election keeps its term and its vote for itself', () => {
    const net = new Network(ids, classic);
    const a = net.node('a');
    tickUntil(a, () => a.raft.role === 'candidate');
    net.collect(); // its RequestVotes are lost
    a.restart();
    expect(a.raft.role).toBe('follower');
    expect(a.raft.term).toBe(1);
    a.raft.step(rv('c', 'a', 1));
    expect(ofType(a.drain(), 'RequestVoteResponse')[0]!.granted).toBe(false);
    // Its next campaign uses a new term, never term 1 again.
    tickUntil(a, () => a.raft.role === 'candidate');
    expect(a.raft.term).toBe(2);
  });

  it('currentTerm is durable: after a restart, messages of older terms are rejected', () => {
    const b = new TestNode('b', ids, classic);
    b.raft.step(rv('c', 'b', 5));
    b.drain();
    b.restart();
    expect(b.raft.term).toBe(5);
    b.raft.step({
      type: 'AppendEntries',
      from: 'a',
      to: 'b',
      term: 4,
      prevLogIndex: 0,
      prevLogTerm: 0,
      entries: entriesOfTerms([4]),
      leaderCommit: 1,
      round: 0,
    });
    const res = ofType(b.drain(), 'AppendEntriesResponse');
    expect(res).toEqual([expect.objectContaining({ success: false, term: 5 })]);
    expect(b.durable.entries).toEqual([]);
  });

  it('a follower restart keeps the log and the commit index, re-applies committed entries, and rejoins', () => {
    const net = new Network(ids);
    net.elect('a');
    for (const v of ['x', 'y', 'z']) net.propose('a', v);
    net.tickAll(1);
    const b = net.node('b');
    const before = b.raft.status();
    expect(before).toMatchObject({ lastIndex: 4, commitIndex: 4, appliedIndex: 4 });
    const durableBefore = structuredClone(b.durable);

    b.restart();
    expect(b.durable).toEqual(durableBefore); // restarting writes nothing by itself
    expect(b.raft.status()).toMatchObject({ role: 'follower', term: before.term, lastIndex: 4, commitIndex: 4, appliedIndex: 0 });
    expect(b.applied).toEqual([]);
    b.drain(); // no contact with the leader needed: the commit index was durable
    expect(b.applied.map((e) => e.index)).toEqual([1, 2, 3, 4]);
    expect(b.appliedData()).toEqual(['x', 'y', 'z']);

    net.propose('a', 'w');
    net.tickAll(1);
    expect(b.appliedData()).toEqual(['x', 'y', 'z', 'w']); // each entry applied once since the restart
  });

  it('a leader restart: it comes back as a follower with its log; no committed entry is lost', () => {
    const net = new Network(ids);
    net.elect('a');
    for (const v of ['x', 'y']) net.propose('a', v);
    net.tickAll(1);
    const a = net.node('a');
    const t = a.raft.term;
    a.restart();
    expect(a.raft.status()).toMatchObject({ role: 'follower', term: t, lastIndex: 3, commitIndex: 3 });
    for (let i = 0; i < 10 * 10 && !net.leader(); i++) net.tickAll(1);
    const leader = net.leader()!;
    expect(leader).toBeDefined();
    expect(leader.raft.term).toBeGreaterThan(t);
    net.propose(leader.id, 'after');
    net.tickAll(1);
    for (const n of net.nodes.values()) {
      expect(n.appliedData().slice(-3)).toEqual(['x', 'y', 'after']);
    }
  });

  it('the whole cluster crashes and restarts: every committed entry survives and the log continues', () => {
    const net = new Network(ids);
    net.elect('a');
    for (const v of ['x', 'y']) net.propose('a', v);
    net.tickAll(1);
    for (const n of net.nodes.values()) n.restart();
    for (const n of net.nodes.values()) expect(n.raft.status()).toMatchObject({ lastIndex: 3, commitIndex: 3 });
    for (let i = 0; i < 100 && !net.leader(); i++) net.tickAll(1);
    const leader = net.leader()!;
    net.propose(leader.id, 'z');
    net.tickAll(1);
    for (const n of net.nodes.values()) {
      expect(n.appliedData()).toEqual(['x', 'y', 'z']);
      expect(n.applied.map((e) => e.index)).toEqual([1, 2, 3, 4, 5]);
    }
  });

  it("an acknowledged but uncommitted entry survives the follower's restart (it was durable before the ack)", () => {
    const net = new Network(ids);
    net.elect('a');
    net.tickAll(1);
    const b = net.node('b');
    net.cutOneWay('b', 'a'); // b's acks do not reach a; c is down: nothing commits
    net.isolate('c');
    net.propose('a', 'x');
    const acks = net.sent('AppendEntriesResponse', (m) => m.from === 'b' && m.success && m.matchIndex === 2);
    expect(acks).toHaveLength(1);
    b.restart();
    expect(b.raft.status()).toMatchObject({ lastIndex: 2, commitIndex: 1 });
    expect(b.logTerms()).toEqual([1, 1]);
  });

  it('the persist-before-send check used by the harness itself rejects messages ahead of durable state', () => {
    // The harness runs this on every Ready; make sure it can fail.
    const d = { hardState: { term: 1, votedFor: null, commitIndex: 0 }, snapshot: bootstrapSnapshot(ids), entries: entriesOfTerms([1]) };
    const bad: Message[] = [
      { type: 'RequestVoteResponse', from: 'b', to: 'a', term: 1, preVote: false, granted: true }, // vote not durable
      { type: 'RequestVote', from: 'b', to: 'a', term: 2, preVote: false, lastLogIndex: 1, lastLogTerm: 1, transfer: false }, // term not durable
      {
        type: 'AppendEntriesResponse',
        from: 'b',
        to: 'a',
        term: 1,
        success: true,
        matchIndex: 3,
        conflictIndex: 0,
        conflictTerm: 0,
        round: 0,
      }, // entries not durable
    ];
    expect(persistBeforeSendViolations('b', d, bad)).toHaveLength(3);
    const good: Message[] = [
      { type: 'RequestVote', from: 'b', to: 'a', term: 2, preVote: true, lastLogIndex: 1, lastLogTerm: 1, transfer: false },
      {
        type: 'AppendEntriesResponse',
        from: 'b',
        to: 'a',
        term: 1,
        success: true,
        matchIndex: 1,
        conflictIndex: 0,
        conflictTerm: 0,
        round: 0,
      },
      // Of a term the node has durably left: it can never act in term 0 again.
      { type: 'RequestVoteResponse', from: 'b', to: 'c', term: 0, preVote: false, granted: true },
    ];
    expect(persistBeforeSendViolations('b', d, good)).toEqual([]);
  });

  it('a restored log with a gap or an overlap is refused, not cut short: the entries after it may be ones this node acknowledged', () => {
    const snapshot = bootstrapSnapshot(ids);
    const whole = entriesOfTerms([1, 1, 2, 2]);
    expect(new RaftLog(snapshot, whole, 4).lastIndex()).toBe(4);
    // Entry 3 missing: before, the log ended at 2 and the commit index (4, durable) went back to 2.
    expect(() => new RaftLog(snapshot, [whole[0]!, whole[1]!, whole[3]!], 4)).toThrow(RaftInvariantError);
    // Starting at the snapshot's own index (a replay from the store's point inclusive).
    const atTwo = { meta: { ...snapshot.meta, index: 2, term: 1 }, data: snapshot.data };
    expect(() => new RaftLog(atTwo, whole.slice(1), 4)).toThrow(/entry 2 where 3 was due/);
    expect(new RaftLog(atTwo, whole.slice(2), 4).lastIndex()).toBe(4);
  });
});
