// A node's first election timeout after it starts is fast-forwarded (Raft.fastForwardFirstElectionTimeout,
// etcd's --initial-election-tick-advance): it campaigns after 1..electionTicks ticks, not
// electionTicks..2*electionTicks, still randomized; every later timeout is the full one. Safe because the
// early campaign is a pre-vote, which voters that hear a leader drop (step()'s leader stickiness): a node
// restarted into a cluster that has a leader changes nobody's term.
import { describe, expect, it } from 'vitest';
import type { Message, RaftConfig, RequestVoteResponse } from '../../../src/raft/core/types.js';
import { Network, TestNode, appendEntries, enc, ofType, tickUntil } from './harness.js';

const E = 10; // defaultRaftConfig electionTicks
const ids = ['a', 'b', 'c'];

/** Tick `node` alone, draining each Ready, until one carries a message that `pred` picks; returns the ticks. */
function ticksUntilMessage(node: TestNode, pred: (m: Message) => boolean, max = 100): number {
  for (let t = 1; t <= max; t++) {
    node.raft.tick();
    if (node.drain().some(pred)) return t;
  }
  throw new Error(`no such message within ${max} ticks`);
}

function preVoteRefusal(from: string, to: string, term: number): RequestVoteResponse {
  return { type: 'RequestVoteResponse', from, to, term, preVote: true, granted: false };
}

describe('the first election timeout after a start is fast-forwarded', () => {
  it('a fresh node pre-campaigns within electionTicks ticks (not 2*electionTicks), randomized across seeds, without touching its term', () => {
    const seen = new Set<number>();
    for (let seed = 1; seed <= 300; seed++) {
      const n = new TestNode('a', ids, undefined, seed);
      const ticks = tickUntil(n, () => n.raft.role !== 'follower', 100);
      expect(ticks, `seed ${seed}`).toBeGreaterThanOrEqual(1);
      expect(ticks, `seed ${seed}`).toBeLessThanOrEqual(E);
      expect(n.raft.role).toBe('pre-candidate'); // Pre-Vote first: nothing durable changes
      expect(n.raft.term).toBe(0);
      const sent = ofType(n.drain(), 'RequestVote');
      expect(sent.map((m) => [m.to, m.term, m.preVote])).toEqual([
        ['b', 1, true],
        ['c', 1, true],
      ]);
      expect(n.durable.hardState).toEqual({ term: 0, votedFor: null, commitIndex: 0 });
      seen.add(ticks);
    }
    // Still randomized: the seeds cover (almost) every tick of the window, so nodes that start together
    // rarely campaign on the same tick.
    expect(seen.size).toBeGreaterThanOrEqual(8);
  });

  it('a node restarted from its durable state (a term, a vote, a log) pre-campaigns within electionTicks ticks too', () => {
    const seen = new Set<number>();
    for (let seed = 1; seed <= 100; seed++) {
      const n = new TestNode('b', ids, undefined, seed);
      n.load({
        hardState: { term: 3, votedFor: 'a', commitIndex: 2 },
        entries: [1, 3].map((term, i) => ({ index: i + 1, term, kind: 'normal' as const, data: enc(`e${i + 1}`) })),
      });
      n.restart(seed + 1000);
      const ticks = tickUntil(n, () => n.raft.role !== 'follower', 100);
      expect(ticks, `seed ${seed}`).toBeLessThanOrEqual(E);
      expect(n.raft.role).toBe('pre-candidate');
      expect(n.raft.term).toBe(3);
      seen.add(ticks);
    }
    expect(seen.size).toBeGreaterThanOrEqual(8);
  });

  it('only the first: the next timeouts — a pre-candidate unanswered, one refused, a follower that lost its leader — are the full [electionTicks, 2*electionTicks)', () => {
    const seen = new Set<number>();
    for (let seed = 1; seed <= 50; seed++) {
      const n = new TestNode('a', ids, undefined, seed);
      expect(tickUntil(n, () => n.raft.role === 'pre-candidate', 100)).toBeLessThanOrEqual(E);
      n.drain();

      // A pre-candidate that does not win starts a new pre-vote round after a full timeout: b refused, so
      // only c is asked again each tick until the new round asks b as well.
      n.raft.step(preVoteRefusal('b', 'a', 0));
      const newRound = ticksUntilMessage(n, (m) => m.type === 'RequestVote' && m.to === 'b');
      expect(newRound, `seed ${seed}: a new pre-vote round`).toBeGreaterThanOrEqual(E);
      expect(newRound, `seed ${seed}: a new pre-vote round`).toBeLessThan(2 * E);

      // Refused by both: back to follower (becomeFollower), and again the full timeout.
      n.raft.step(preVoteRefusal('b', 'a', 0));
      n.raft.step(preVoteRefusal('c', 'a', 0));
      expect(n.raft.role).toBe('follower');
      n.drain();
      const afterRefusal = tickUntil(n, () => n.raft.role === 'pre-candidate', 100);
      expect(afterRefusal, `seed ${seed}: after a refused pre-vote`).toBeGreaterThanOrEqual(E);
      expect(afterRefusal, `seed ${seed}: after a refused pre-vote`).toBeLessThan(2 * E);
      n.drain();

      // A leader (c, term 1) appears and falls silent: the ordinary timeout from its last append.
      n.raft.step(appendEntries({ from: 'c', to: 'a', term: 1, prevLogIndex: 0, prevLogTerm: 0, entries: [] }));
      expect(n.raft.role).toBe('follower');
      expect(n.raft.leaderId).toBe('c');
      n.drain();
      const afterLeader = tickUntil(n, () => n.raft.role === 'pre-candidate', 100);
      expect(afterLeader, `seed ${seed}: after the leader fell silent`).toBeGreaterThanOrEqual(E);
      expect(afterLeader, `seed ${seed}: after the leader fell silent`).toBeLessThan(2 * E);
      seen.add(newRound).add(afterRefusal).add(afterLeader);
    }
    expect(seen.size).toBeGreaterThanOrEqual(8);
  });

  it('a leader that steps down (CheckQuorum) waits a full timeout before it campaigns again', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const net = new Network(ids, undefined, seed);
      net.elect('a');
      const a = net.node('a');
      expect(a.raft.role).toBe('leader');
      net.isolate('a');
      tickUntil(a, () => a.raft.role === 'follower', 4 * E);
      a.drain();
      const ticks = tickUntil(a, () => a.raft.role === 'pre-candidate', 100);
      expect(ticks, `seed ${seed}`).toBeGreaterThanOrEqual(E);
      expect(ticks, `seed ${seed}`).toBeLessThan(2 * E);
    }
  });

  it('not with Pre-Vote or CheckQuorum off: the early campaign could then depose a live leader, so the first timeout is the full one', () => {
    const off: [string, (c: RaftConfig) => void][] = [
      [
        'preVote off',
        (c) => {
          c.preVote = false;
        },
      ],
      [
        'checkQuorum off',
        (c) => {
          c.checkQuorum = false;
        },
      ],
    ];
    for (const [name, tweak] of off) {
      for (let seed = 1; seed <= 50; seed++) {
        const n = new TestNode('a', ids, tweak, seed);
        const ticks = tickUntil(n, () => n.raft.role !== 'follower', 100);
        expect(ticks, `${name}, seed ${seed}`).toBeGreaterThanOrEqual(E);
        expect(ticks, `${name}, seed ${seed}`).toBeLessThan(2 * E);
      }
    }
  });
});

describe('a node restarted into a cluster that has a leader does not disrupt it', () => {
  /** A 3-node cluster led by a, with a few entries everywhere; then c crashes and restarts from its disk
   *  while the leader's messages to it are still lost (its link to c not yet back). */
  function restartC(seed: number) {
    const net = new Network(ids, undefined, seed);
    net.elect('a');
    net.tickAll(1);
    const [a, b, c] = ids.map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
    expect(a.raft.role).toBe('leader');
    for (let i = 0; i < 3; i++) net.propose('a', `v${i}`);
    net.tickAll(1);
    expect(c.appliedData()).toEqual(['v0', 'v1', 'v2']);
    const term = a.raft.term;
    c.restart(seed + 100);
    net.cutOneWay('a', 'c');
    net.log = [];
    return { net, a, b, c, term };
  }

  it('it pre-campaigns within electionTicks ticks; a and b drop its pre-votes unanswered (leader stickiness); no term changes; the leader keeps it', () => {
    for (let seed = 1; seed <= 30; seed++) {
      const { net, a, b, c, term } = restartC(seed);
      let ticks = 0;
      while (c.raft.role === 'follower') {
        net.tickAll(1);
        ticks++;
        expect(ticks, `seed ${seed}: c has not campaigned within electionTicks`).toBeLessThanOrEqual(E);
      }
      expect(c.raft.role, `seed ${seed}: c's early campaign is a pre-vote`).toBe('pre-candidate');
      // It stays unanswered however often it asks again (every tick) while the leader's link is down.
      net.tickAll(E);
      const preVotes = net.sent('RequestVote', (m) => m.from === 'c');
      expect(preVotes.length).toBeGreaterThanOrEqual(2);
      expect(preVotes.every((m) => m.preVote && m.term === term + 1)).toBe(true);
      expect(new Set(preVotes.map((m) => m.to))).toEqual(new Set(['a', 'b']));
      expect(net.sent('RequestVoteResponse')).toEqual([]); // dropped by step()'s inLease check, not answered
      for (const n of [a, b, c]) {
        expect(n.raft.term, `seed ${seed}: ${n.id}'s term`).toBe(term);
        expect(n.durable.hardState.term).toBe(term);
      }
      expect(a.raft.role).toBe('leader');
      expect(b.raft.leaderId).toBe('a');

      // The leader's link to c is back: its next heartbeat makes c its follower, in the same term.
      net.heal();
      net.tickAll(1);
      expect(c.raft.role).toBe('follower');
      expect(c.raft.leaderId).toBe('a');
      net.tickAll(3 * E);
      expect(a.raft.role).toBe('leader');
      for (const n of [a, b, c]) expect(n.raft.term).toBe(term);
      expect(net.sent('RequestVote', (m) => !m.preVote)).toEqual([]);
      net.propose('a', 'after');
      net.tickAll(1);
      // Restarted with nothing applied (no snapshot): it applies its committed log again, then the new entry.
      expect(c.appliedData()).toEqual(['v0', 'v1', 'v2', 'after']);
    }
  });

  it('restarted behind the cluster (a new leader was elected while it was down): its pre-vote is refused with the newer term, which it takes; the leader keeps its term', () => {
    const net = new Network(ids);
    net.elect('a');
    net.tickAll(1);
    const [a, b, c] = ids.map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
    const oldTerm = a.raft.term;
    // c is down; a hands over to b: the cluster is in a newer term.
    net.isolate('c');
    expect(a.raft.transferLeadership('b')).toBe(true);
    net.settle();
    expect(b.raft.role).toBe('leader');
    const term = b.raft.term;
    expect(term).toBe(oldTerm + 1);
    net.tick(['a', 'b'], 2);

    c.restart(7);
    expect(c.raft.term).toBe(oldTerm);
    net.heal();
    net.cutOneWay('b', 'c'); // the new leader's link to c not back yet
    net.log = [];
    let ticks = 0;
    while (c.raft.role === 'follower' && c.raft.term === oldTerm) {
      net.tickAll(1);
      ticks++;
      expect(ticks).toBeLessThanOrEqual(E);
    }
    // c asked for term oldTerm+1, the cluster's term, in which a and b have voted (for b) and follow b: a
    // refuses, and its refusal carries that term (b's answer is lost on the cut link).
    const answers = net.sent('RequestVoteResponse', (m) => m.to === 'c');
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((m) => m.preVote && !m.granted && m.term === term)).toBe(true);
    expect(c.raft.term).toBe(term); // it learned the newer term from the refusal
    expect(c.raft.role).toBe('follower');
    net.heal();
    net.tickAll(3 * E);
    expect(b.raft.role).toBe('leader');
    for (const n of [a, b, c]) expect(n.raft.term).toBe(term);
    expect(c.raft.leaderId).toBe('b');
  });
});
