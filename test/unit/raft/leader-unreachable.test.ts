// Raft.leaderUnreachable(): the transport's report that the leader's connection broke and a reconnect
// failed (a killed process). The follower campaigns within a few ticks instead of the election timeout —
// Pre-Vote first, so a false report (the leader alive, only one link broken) deposes nobody.
import { describe, expect, it } from 'vitest';
import { Network, TestNode } from './harness.js';

const E = 10; // electionTicks (defaultRaftConfig): without a report nobody campaigns before E ticks
/** The bound on a reported follower's campaign: 1..2 ticks (UNREACHABLE_CAMPAIGN_SPREAD_TICKS in raft.ts). */
const REPORT_BOUND_TICKS = 2;
const ids = ['a', 'b', 'c'];

function steady(seed = 1) {
  const net = new Network(ids, undefined, seed);
  net.elect('a');
  net.tickAll(1);
  const [a, b, c] = ids.map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
  expect(a.raft.role).toBe('leader');
  expect(b.raft.leaderId).toBe('a');
  return { net, a, b, c, term: a.raft.term };
}

/** Pre-vote requests sent by `from` after log position `since` of the network's message log. */
function preVotesFrom(net: Network, from: string, since: number): number {
  return net.log.slice(since).filter((m) => m.type === 'RequestVote' && m.preVote && m.from === from).length;
}

describe('leaderUnreachable: the transport says the leader is gone', () => {
  it('a report about the leader starts a pre-vote within the bound, and the survivors elect a new leader well before the election timeout', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const { net, b, c, term } = steady(seed);
      net.isolate('a'); // killed: nothing to or from it any more
      const since = net.log.length;
      b.raft.leaderUnreachable('a');
      c.raft.leaderUnreachable('a');
      expect(b.raft.leaderId).toBeNull();
      let ticks = 0;
      while (preVotesFrom(net, 'b', since) + preVotesFrom(net, 'c', since) === 0 && ticks < E) {
        net.tick(['b', 'c']);
        ticks++;
      }
      expect(ticks, `seed ${seed}: ticks until the first pre-vote`).toBeLessThanOrEqual(REPORT_BOUND_TICKS);
      // Lock-step ticks are the worst case for a split (both pre-campaign in the same round, and their
      // pre-votes cross): one of them yields, so a leader follows at once, in the very next term.
      for (let t = 0; t < REPORT_BOUND_TICKS && !(b.raft.role === 'leader' || c.raft.role === 'leader'); t++) net.tick(['b', 'c']);
      const leader = [b, c].find((n) => n.raft.role === 'leader');
      expect(leader, `seed ${seed}: a survivor leads within ${2 * REPORT_BOUND_TICKS} ticks of the report`).toBeDefined();
      expect(leader!.raft.term, `seed ${seed}: one election, no split`).toBe(term + 1);
    }
  });

  it('two pre-candidates with equal logs asking each other at once: the lower id goes ahead, no split vote', () => {
    const { net, b, c, term } = steady();
    net.isolate('a');
    b.raft.leaderUnreachable('a');
    c.raft.leaderUnreachable('a');
    // Both pre-campaign before either hears the other: tick both without delivering, then deliver.
    while (b.raft.role !== 'pre-candidate') b.raft.tick();
    while (c.raft.role !== 'pre-candidate') c.raft.tick();
    net.settle();
    expect(b.raft.role).toBe('leader');
    expect(c.raft.leaderId).toBe('b');
    expect(b.raft.term).toBe(term + 1);
    expect(net.sent('RequestVoteResponse', (m) => m.preVote && m.from === 'b' && m.to === 'c')[0]?.granted).toBe(false);
  });

  it('a pre-vote that reached a voter before its own report (ignored: it still counted on the leader) is asked again on the next tick', () => {
    const { net, b, c, term } = steady();
    net.isolate('a');
    b.raft.leaderUnreachable('a');
    const since = net.log.length;
    while (b.raft.role !== 'pre-candidate') net.tick(['b']);
    expect(preVotesFrom(net, 'b', since)).toBeGreaterThan(0);
    expect(c.raft.leaderId).toBe('a'); // c ignored b's pre-vote: in lease of a
    expect(net.log.slice(since).filter((m) => m.type === 'RequestVoteResponse' && m.from === 'c')).toEqual([]);
    c.raft.leaderUnreachable('a');
    net.tick(['b']); // only b ticks: c's own campaign plays no part
    expect(b.raft.role).toBe('leader');
    expect(b.raft.term).toBe(term + 1);
  });

  it('control: without a report the survivors wait out the election timeout', () => {
    const { net } = steady();
    net.isolate('a');
    const since = net.log.length;
    net.tick(['b', 'c'], E - 1);
    expect(preVotesFrom(net, 'b', since) + preVotesFrom(net, 'c', since)).toBe(0);
    net.tick(['b', 'c'], E + 1);
    expect(preVotesFrom(net, 'b', since) + preVotesFrom(net, 'c', since)).toBeGreaterThan(0);
  });

  it('a report about a node that is not our leader changes nothing', () => {
    const { net, b, term } = steady();
    net.isolate('a'); // no heartbeats, so only a report could make b campaign early
    const since = net.log.length;
    b.raft.leaderUnreachable('c');
    b.raft.leaderUnreachable('b'); // ourselves
    b.raft.leaderUnreachable('zz'); // a stranger
    expect(b.raft.leaderId).toBe('a');
    net.tick(['b', 'c'], E - 1);
    expect(preVotesFrom(net, 'b', since)).toBe(0);
    expect(b.raft.term).toBe(term);
  });

  it('a report while leading, or while already campaigning, changes nothing', () => {
    const { net, a, term } = steady();
    a.raft.leaderUnreachable('a');
    a.raft.leaderUnreachable('b');
    net.tickAll(3 * E);
    expect(a.raft.role).toBe('leader');
    expect(a.raft.term).toBe(term);

    // A pre-candidate (cut off, timed out) told about its former leader keeps its own schedule: two
    // identical networks, one told, send exactly the same messages.
    const run = (report: boolean) => {
      const { net: twin } = steady(7);
      twin.isolate('c');
      const c = twin.node('c');
      while (c.raft.role !== 'pre-candidate') twin.tick(['c']);
      const since = twin.log.length;
      if (report) c.raft.leaderUnreachable('a');
      twin.tick(['c'], 2 * E);
      return { sent: JSON.stringify(twin.log.slice(since)), term: c.raft.term };
    };
    const told = run(true);
    expect(told.sent.length).toBeGreaterThan(2);
    expect(told).toEqual(run(false));
  });

  it('a false report (the leader is alive, only our link to it broke) does not depose the leader: the other voters refuse the pre-vote', () => {
    const { net, a, b, c, term } = steady();
    net.cutLink('a', 'b');
    const since = net.log.length;
    b.raft.leaderUnreachable('a');
    net.tickAll(REPORT_BOUND_TICKS);
    expect(preVotesFrom(net, 'b', since)).toBeGreaterThan(0); // it did campaign...
    net.tickAll(4 * E); // ...and keeps trying while cut off
    expect(a.raft.role).toBe('leader');
    expect(c.raft.leaderId).toBe('a');
    for (const n of [a, b, c]) expect(n.raft.term).toBe(term);
    expect(net.sent('RequestVote', (m) => m.from === 'b').every((m) => m.preVote)).toBe(true);
    expect(net.sent('RequestVoteResponse', (m) => m.to === 'b' && m.granted)).toEqual([]);

    net.heal();
    net.tickAll(2);
    expect(b.raft.leaderId).toBe('a');
    expect(b.raft.role).toBe('follower');
    expect(a.raft.term).toBe(term);
  });

  it('a false report while every link works: the next heartbeat makes us a follower again, nobody changes term', () => {
    const { net, a, b, c, term } = steady();
    b.raft.leaderUnreachable('a');
    expect(b.raft.leaderId).toBeNull();
    net.tickAll(3 * E);
    expect(a.raft.role).toBe('leader');
    for (const n of [a, b, c]) {
      expect(n.raft.term).toBe(term);
      expect(n.raft.leaderId).toBe('a');
    }
  });
});
