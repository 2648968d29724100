// Raft paper §5.2 "Leader election", one test per rule (etcd raft_paper_test.go style).
import { describe, expect, it } from 'vitest';
import type { RaftConfig, RequestVote } from '../../../src/raft/core/types.js';
import { Network, TestNode, appendEntries, ofType, tickUntil } from './harness.js';

const E = 10; // defaultRaftConfig electionTicks
const classic = (c: RaftConfig) => {
  // Plain §5.2 elections: no pre-vote round, no leader stickiness.
  c.preVote = false;
  c.checkQuorum = false;
};

describe('Raft §5.2 leader election', () => {
  it('§5.2 a follower starts an election after a randomized timeout in [electionTicks, 2*electionTicks)', () => {
    const seen = new Set<number>();
    for (let seed = 1; seed <= 300; seed++) {
      const n = new TestNode('a', ['a', 'b', 'c'], undefined, seed);
      // A follower that has heard from its leader (b, term 1), which then falls silent. (A node's first
      // timeout after it starts is shorter, fast-forwarded: first-election-timeout.test.ts.)
      n.raft.step(appendEntries({ from: 'b', to: 'a', term: 1, prevLogIndex: 0, prevLogTerm: 0, entries: [] }));
      n.drain();
      const ticks = tickUntil(n, () => n.raft.role !== 'follower', 100);
      expect(ticks).toBeGreaterThanOrEqual(E);
      expect(ticks).toBeLessThan(2 * E);
      // With pre-vote (the default) it first becomes a pre-candidate, without touching its term.
      expect(n.raft.role).toBe('pre-candidate');
      expect(n.raft.term).toBe(1);
      seen.add(ticks);
    }
    // Randomized: the seeds spread over (almost) the whole window, not one fixed value.
    expect(seen.size).toBeGreaterThanOrEqual(8);
  });

  it('§5.2 without pre-vote the follower becomes candidate: term+1, votes for itself', () => {
    const n = new TestNode('a', ['a', 'b', 'c'], classic, 7);
    const ticks = tickUntil(n, () => n.raft.role !== 'follower', 100);
    expect(ticks).toBeGreaterThanOrEqual(E);
    expect(ticks).toBeLessThan(2 * E);
    expect(n.raft.role).toBe('candidate');
    expect(n.raft.term).toBe(1);
  });

  it('§5.2 a candidate that neither wins nor loses times out again after [E, 2E) and starts a new term', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const n = new TestNode('a', ['a', 'b', 'c'], classic, seed);
      tickUntil(n, () => n.raft.role === 'candidate');
      n.drain();
      expect(n.raft.term).toBe(1);
      const ticks = tickUntil(n, () => n.raft.term === 2, 100);
      expect(ticks).toBeGreaterThanOrEqual(E);
      expect(ticks).toBeLessThan(2 * E);
      expect(n.raft.role).toBe('candidate');
      expect(n.durable.hardState.term).toBe(1); // not drained yet: term 2 is not durable until the Ready
      n.drain();
      expect(n.durable.hardState).toMatchObject({ term: 2, votedFor: 'a' });
    }
  });

  it('§5.2 the candidate persists term and votedFor in the same Ready that carries its RequestVotes', () => {
    const n = new TestNode('a', ['a', 'b', 'c'], classic);
    tickUntil(n, () => n.raft.role === 'candidate');
    const rd = n.raft.ready();
    // The driver persists hardState before sending messages, so they must travel in one Ready.
    expect(rd.hardState).toEqual({ term: 1, votedFor: 'a', commitIndex: 0 });
    const rvs = ofType(rd.messages, 'RequestVote');
    expect(rvs.map((m) => m.to).sort()).toEqual(['b', 'c']);
    for (const m of rvs) expect(m).toMatchObject({ from: 'a', term: 1, preVote: false, lastLogIndex: 0, lastLogTerm: 0 });
    n.raft.advance(rd);
  });

  it('§5.2 (pre-vote) the pre-vote round persists nothing; the real round persists term+vote with its RequestVotes', () => {
    const net = new Network(['a', 'b', 'c']);
    const a = net.node('a');
    tickUntil(a, () => a.raft.role === 'pre-candidate');
    const pre = net.collect();
    const preRd = a.readys.at(-1)!;
    expect(preRd.hardState).toBeNull(); // pre-vote changes no durable state
    expect(ofType(pre, 'RequestVote').every((m) => m.preVote && m.term === 1)).toBe(true);
    expect(a.durable.hardState).toEqual({ term: 0, votedFor: null, commitIndex: 0 });
    net.deliver(pre); // b and c grant pre-votes
    const grants = net.collect();
    expect(ofType(grants, 'RequestVoteResponse').filter((m) => m.granted && m.preVote)).toHaveLength(2);
    // Voters changed nothing durable by granting a pre-vote.
    expect(net.node('b').durable.hardState).toEqual({ term: 0, votedFor: null, commitIndex: 0 });
    net.deliver(grants);
    expect(a.raft.role).toBe('candidate');
    const real = net.collect();
    const rd = a.readys.at(-1)!;
    expect(rd.hardState).toEqual({ term: 1, votedFor: 'a', commitIndex: 0 });
    expect(ofType(rd.messages, 'RequestVote').map((m) => [m.to, m.term, m.preVote])).toEqual([
      ['b', 1, false],
      ['c', 1, false],
    ]);
    net.deliver(real);
    net.settle();
    expect(a.raft.role).toBe('leader');
  });

  it('§5.2 a voter persists votedFor in the same Ready that carries its granted vote', () => {
    const net = new Network(['a', 'b', 'c'], classic);
    const a = net.node('a');
    const b = net.node('b');
    tickUntil(a, () => a.raft.role === 'candidate');
    const rvToB = ofType(net.collect(), 'RequestVote').find((m) => m.to === 'b')!;
    b.raft.step(rvToB);
    const rd = b.raft.ready();
    expect(rd.hardState).toEqual({ term: 1, votedFor: 'a', commitIndex: 0 });
    expect(ofType(rd.messages, 'RequestVoteResponse')).toEqual([
      expect.objectContaining({ from: 'b', to: 'a', term: 1, granted: true, preVote: false }),
    ]);
    b.raft.advance(rd);
  });

  it('§5.2 a candidate wins once it holds votes from a majority (3 of 5), not before', () => {
    const net = new Network(['a', 'b', 'c', 'd', 'e'], classic);
    const a = net.node('a');
    tickUntil(a, () => a.raft.role === 'candidate');
    const rvs = ofType(net.collect(), 'RequestVote');
    const to = (id: string) => rvs.find((m) => m.to === id)!;
    net.deliver([to('b')]);
    net.deliver(net.collect()); // b's grant
    expect(a.raft.role).toBe('candidate'); // 2 of 5
    net.deliver([to('c')]);
    net.deliver(net.collect()); // c's grant
    expect(a.raft.role).toBe('leader'); // 3 of 5
    expect(a.raft.term).toBe(1);
    expect(a.raft.leaderId).toBe('a');
    // d and e never saw the election.
    expect(net.node('d').raft.term).toBe(0);
    expect(net.node('e').raft.term).toBe(0);
  });

  it('§5.2 a candidate whose votes are refused by a majority goes back to follower in the same term', () => {
    const net = new Network(['a', 'b', 'c'], classic);
    const a = net.node('a');
    tickUntil(a, () => a.raft.role === 'candidate');
    net.collect(); // drop a's RequestVotes
    // b and c vote for another candidate c in term 1 first.
    const c = net.node('c');
    tickUntil(c, () => c.raft.role === 'candidate');
    const cVotes = ofType(net.collect(), 'RequestVote').filter((m) => m.to === 'b');
    net.deliver(cVotes);
    net.collect(); // b's grant to c is lost, it does not matter here
    // Now a asks again in term 1 (retransmission by hand): b and c refuse.
    const again: RequestVote[] = ['b', 'c'].map((to) => ({
      type: 'RequestVote',
      from: 'a',
      to,
      term: 1,
      preVote: false,
      lastLogIndex: 0,
      lastLogTerm: 0,
      transfer: false,
    }));
    net.deliver(again);
    const answers = ofType(net.collect(), 'RequestVoteResponse');
    expect(answers.map((m) => [m.from, m.granted])).toEqual([
      ['b', false],
      ['c', false],
    ]);
    net.deliver(answers);
    expect(a.raft.role).toBe('follower');
    expect(a.raft.term).toBe(1);
    expect(a.durable.hardState.votedFor).toBe('a'); // its own vote in term 1 stands
  });

  it('§5.2 one vote per term: a second candidate in the same term is refused', () => {
    const net = new Network(['a', 'b', 'c'], classic);
    const [a, b, c] = ['a', 'b', 'c'].map((id) => net.node(id));
    tickUntil(a!, () => a!.raft.role === 'candidate');
    tickUntil(c!, () => c!.raft.role === 'candidate');
    const rvs = ofType(net.collect(), 'RequestVote').filter((m) => m.to === 'b');
    expect(rvs.map((m) => [m.from, m.term])).toEqual([
      ['a', 1],
      ['c', 1],
    ]);
    net.deliver(rvs); // a's request first, then c's
    const answers = ofType(net.collect(), 'RequestVoteResponse');
    expect(answers.map((m) => [m.to, m.granted])).toEqual([
      ['a', true],
      ['c', false],
    ]);
    expect(b!.durable.hardState).toEqual({ term: 1, votedFor: 'a', commitIndex: 0 });
    // A duplicate of a's request is granted again (same candidate), c's again refused.
    net.deliver([rvs[1]!, rvs[0]!]);
    expect(ofType(net.collect(), 'RequestVoteResponse').map((m) => [m.to, m.granted])).toEqual([
      ['c', false],
      ['a', true],
    ]);
  });

  it('§5.2 a candidate steps down when it receives AppendEntries from a leader of its own term', () => {
    const net = new Network(['a', 'b', 'c'], classic);
    const [a, b] = [net.node('a'), net.node('b')];
    tickUntil(a, () => a.raft.role === 'candidate');
    net.collect(); // a's votes are lost
    tickUntil(b, () => b.raft.role === 'candidate');
    const bVotes = net.collect().filter((m) => m.to === 'c');
    net.deliver(bVotes);
    net.deliver(net.collect());
    expect(b.raft.role).toBe('leader');
    expect(b.raft.term).toBe(1);
    expect(a.raft.role).toBe('candidate');
    expect(a.raft.term).toBe(1);
    net.settle(); // b's AppendEntries (noop) reaches a
    expect(a.raft.role).toBe('follower');
    expect(a.raft.leaderId).toBe('b');
    expect(a.raft.term).toBe(1);
  });

  it('§5.2 a candidate steps down when it sees a higher term', () => {
    const n = new TestNode('a', ['a', 'b', 'c'], classic);
    tickUntil(n, () => n.raft.role === 'candidate');
    n.drain();
    n.raft.step({ type: 'RequestVoteResponse', from: 'b', to: 'a', term: 5, preVote: false, granted: false });
    expect(n.raft.role).toBe('follower');
    expect(n.raft.term).toBe(5);
    n.drain();
    expect(n.durable.hardState).toEqual({ term: 5, votedFor: null, commitIndex: 0 });
  });

  it('§5.2 split votes are resolved by randomized timeouts (many seeds, at most one leader per term)', () => {
    const ids = ['a', 'b', 'c', 'd'];
    const termsToResolve: number[] = [];
    for (let seed = 1; seed <= 60; seed++) {
      const net = new Network(ids, classic, seed);
      const [a, b, c, d] = ids.map((id) => net.node(id));
      // Force a 2-2 split in term 1: a and b campaign at once, c votes a, d votes b.
      tickUntil(a!, () => a!.raft.role === 'candidate');
      tickUntil(b!, () => b!.raft.role === 'candidate');
      const rvs = ofType(net.collect(), 'RequestVote');
      const rv = (from: string, to: string) => rvs.find((m) => m.from === from && m.to === to)!;
      net.deliver([rv('a', 'c'), rv('b', 'd'), rv('a', 'd'), rv('b', 'c'), rv('a', 'b'), rv('b', 'a')]);
      net.settle();
      expect(c!.durable.hardState.votedFor).toBe('a');
      expect(d!.durable.hardState.votedFor).toBe('b');
      expect(net.leader()).toBeUndefined();
      expect(a!.raft.role).toBe('candidate');
      expect(b!.raft.role).toBe('candidate');

      const leaderOfTerm = new Map<number, string>();
      let ticks = 0;
      while (ticks < 20 * E) {
        net.tickAll(1);
        ticks++;
        for (const n of net.nodes.values()) {
          if (n.raft.role !== 'leader') continue;
          const prev = leaderOfTerm.get(n.raft.term);
          expect(prev === undefined || prev === n.id, `two leaders in term ${n.raft.term}`).toBe(true);
          leaderOfTerm.set(n.raft.term, n.id);
        }
        if (net.leader()) break;
      }
      const leader = net.leader();
      expect(leader, `seed ${seed}: no leader after ${ticks} ticks`).toBeDefined();
      expect(leader!.raft.term).toBeGreaterThanOrEqual(2);
      termsToResolve.push(leader!.raft.term);
      net.tickAll(3);
      for (const n of net.nodes.values()) expect(n.raft.leaderId).toBe(leader!.id);
    }
    // Most splits resolve in the very next term: the randomization does its job.
    expect(termsToResolve.filter((t) => t === 2).length).toBeGreaterThan(termsToResolve.length / 2);
  });

  it('§5.2 identical timeouts keep splitting: the randomization is what resolves split votes', () => {
    // Control experiment for the test above: with the same rng sequence on every node (no effective
    // randomization) a symmetric 4-node cluster splits for ever.
    const ids = ['a', 'b', 'c', 'd'];
    const constant = (c: RaftConfig) => {
      classic(c);
      c.rng = { int: () => 0 };
    };
    const net = new Network(ids, constant);
    net.tickAll(10 * E);
    expect(net.leader()).toBeUndefined();
    expect(net.node('a').raft.term).toBeGreaterThanOrEqual(5);
  });

  it('§5.2 heartbeats keep followers from starting elections; without them followers time out', () => {
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    const a = net.node('a');
    expect(a.raft.role).toBe('leader');
    const term = a.raft.term;
    for (let i = 0; i < 10 * E; i++) {
      net.tickAll(1);
      for (const id of ['b', 'c']) expect(net.node(id).raft.role).toBe('follower');
    }
    // Nobody but a (its own election) ever asked for a vote.
    expect(ofType(net.log, 'RequestVote').filter((m) => m.from !== 'a')).toHaveLength(0);
    for (const n of net.nodes.values()) expect(n.raft.term).toBe(term);

    // The control: without heartbeats the same followers time out within 2*electionTicks.
    net.dropTypes.add('AppendEntries');
    let ticks = 0;
    while (net.node('b').raft.role === 'follower' && net.node('c').raft.role === 'follower') {
      net.tickAll(1);
      ticks++;
      expect(ticks).toBeLessThan(2 * E);
    }
  });

  it('§5.2 a leader steps down when it sees a higher term', () => {
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    const a = net.node('a');
    const t = a.raft.term;
    a.raft.step({
      type: 'AppendEntriesResponse',
      from: 'b',
      to: 'a',
      term: t + 3,
      success: false,
      matchIndex: 0,
      conflictIndex: 0,
      conflictTerm: 0,
      round: 0,
    });
    expect(a.raft.role).toBe('follower');
    expect(a.raft.term).toBe(t + 3);
    a.drain();
    expect(a.durable.hardState).toMatchObject({ term: t + 3, votedFor: null });
    const r = a.raft.propose(new Uint8Array([1]));
    expect(r).toEqual({ ok: false, reason: 'not-leader', leaderId: null });
  });

  it('§5.2 a deposed leader learns the new term from the new leader and follows it', () => {
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    const a = net.node('a');
    const t = a.raft.term;
    net.isolate('a');
    // b and c stop hearing from a; once their leases on a expire one of them wins the next term.
    const others = () => [net.node('b'), net.node('c')].find((n) => n.raft.role === 'leader');
    for (let i = 0; i < 10 * E && !others(); i++) net.tick(['b', 'c']);
    const nl = others()!;
    expect(nl).toBeDefined();
    expect(nl.raft.term).toBe(t + 1);
    expect(a.raft.role).toBe('leader'); // still believes it leads: it has not ticked
    net.heal();
    net.tick([nl.id]); // the new leader's heartbeat reaches a
    expect(a.raft.role).toBe('follower');
    expect(a.raft.term).toBe(t + 1);
    expect(a.raft.leaderId).toBe(nl.id);
  });
});
