// Raft thesis §9.6 (Pre-Vote), §6.2/§4.2.3 (CheckQuorum, leader stickiness) and §3.10 (leadership transfer).
import { describe, expect, it } from 'vitest';
import type { RaftConfig, RequestVote } from '../../../src/raft/core/types.js';
import { Network, TestNode, enc, ofType } from './harness.js';

const E = 10;
const ids = ['a', 'b', 'c'];

function steady(tweak?: (c: RaftConfig) => void) {
  const net = new Network(ids, tweak);
  net.elect('a');
  net.tickAll(1);
  const [a, b, c] = ids.map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
  expect(a.raft.role).toBe('leader');
  return { net, a, b, c };
}

describe('thesis §9.6 Pre-Vote', () => {
  it('§9.6 an isolated node that keeps timing out does not raise its term, and on return does not disrupt the leader', () => {
    const { net, a, c } = steady();
    const t = a.raft.term;
    net.isolate('c');
    let campaigns = 0;
    for (let i = 0; i < 20 * E; i++) {
      net.tickAll(1);
      if (c.raft.role === 'pre-candidate') campaigns++;
      expect(c.raft.term).toBe(t);
    }
    expect(campaigns).toBeGreaterThan(0); // it did keep trying
    expect(net.sent('RequestVote', (m) => m.from === 'c').every((m) => m.preVote)).toBe(true);
    expect(c.durable.hardState.term).toBe(t);

    net.heal();
    net.tickAll(5 * E);
    expect(a.raft.role).toBe('leader');
    for (const n of net.nodes.values()) {
      expect(n.raft.term).toBe(t);
      expect(n.raft.leaderId).toBe('a');
    }
    net.propose('a', 'after');
    net.tickAll(1);
    expect(c.appliedData()).toEqual(['after']);
  });

  it('§9.6 control: without Pre-Vote the same isolated node inflates its term and deposes the leader on return', () => {
    const { net, a, c } = steady((cfg) => {
      cfg.preVote = false;
    });
    const t = a.raft.term;
    net.isolate('c');
    net.tickAll(10 * E);
    expect(c.raft.term).toBeGreaterThan(t + 2);
    net.heal();
    net.tickAll(1);
    expect(a.raft.term).toBeGreaterThan(t); // disrupted: the old leader saw c's higher term
  });

  it('§9.6 a pre-vote is granted only for a candidate that could win: up-to-date log and no live leader', () => {
    const { net, b } = steady();
    net.propose('a', 'x');
    net.tickAll(1);
    const pv = (lastLogIndex: number, lastLogTerm: number): RequestVote => ({
      type: 'RequestVote',
      from: 'c',
      to: 'b',
      term: b.raft.term + 1,
      preVote: true,
      lastLogIndex,
      lastLogTerm,
      transfer: false,
    });
    // b hears from a: it ignores the pre-vote altogether (no answer, no state change).
    b.raft.step(pv(2, 1));
    expect(ofType(b.drain(), 'RequestVoteResponse')).toEqual([]);
    // After an election timeout without the leader (a cut off), it answers — on the log's merits.
    net.isolate('a');
    for (let i = 0; i < E; i++) b.raft.tick();
    b.raft.step(pv(1, 1)); // behind b's log (2@1)
    b.raft.step(pv(2, 1));
    const res = ofType(b.drain(), 'RequestVoteResponse');
    expect(res.map((m) => [m.granted, m.preVote])).toEqual([
      [false, true],
      [true, true],
    ]);
    expect(b.durable.hardState).toMatchObject({ term: 1, votedFor: 'a' }); // nothing changed
  });
});

describe('CheckQuorum and leader stickiness', () => {
  it('CheckQuorum: a leader cut off from the majority steps down within about an election timeout', () => {
    const { net, a } = steady();
    const t = a.raft.term;
    net.isolate('a');
    let ticks = 0;
    while (a.raft.role === 'leader') {
      net.tick(['a']);
      ticks++;
      expect(ticks, 'still leading after two election timeouts').toBeLessThanOrEqual(2 * E);
    }
    expect(ticks).toBeGreaterThanOrEqual(1);
    expect(a.raft.role).toBe('follower');
    expect(a.raft.term).toBe(t); // stepping down alone does not change the term
    expect(a.raft.propose(enc('x'))).toMatchObject({ ok: false, reason: 'not-leader' });
  });

  it('CheckQuorum: a leader in contact with a majority (even with one peer down) keeps leading', () => {
    const { net, a } = steady();
    net.isolate('c');
    net.tick(['a', 'b'], 20 * E);
    expect(a.raft.role).toBe('leader');
  });

  it('CheckQuorum control: without it an isolated leader keeps believing it leads', () => {
    const { net, a } = steady((c) => {
      c.checkQuorum = false;
    });
    net.isolate('a');
    net.tick(['a'], 20 * E);
    expect(a.raft.role).toBe('leader');
  });

  it('stickiness: a follower that heard from the leader recently ignores a RequestVote of a higher term', () => {
    const { net, a, b } = steady((c) => {
      c.preVote = false;
      c.rng = { int: (n) => n - 1 }; // election timeout 2E-1: b cannot campaign itself within E ticks
    });
    const t = a.raft.term;
    const rv: RequestVote = {
      type: 'RequestVote',
      from: 'c',
      to: 'b',
      term: t + 1,
      preVote: false,
      lastLogIndex: 1,
      lastLogTerm: t,
      transfer: false,
    };
    b.raft.step(rv);
    expect(ofType(b.drain(), 'RequestVoteResponse')).toEqual([]);
    expect(b.raft.term).toBe(t);
    expect(b.durable.hardState).toEqual({ term: t, votedFor: 'a', commitIndex: 1 });
    expect(b.raft.leaderId).toBe('a');
    // Once a full election timeout passes without the leader, the same request wins b's vote.
    net.isolate('b');
    for (let i = 0; i < E - 1; i++) b.raft.tick();
    expect(b.raft.role).toBe('follower');
    b.raft.step(rv);
    b.drain();
    expect(b.raft.term).toBe(t); // E-1 ticks: still within the lease
    b.raft.tick();
    expect(b.raft.role).toBe('follower');
    b.raft.step(rv);
    const res = ofType(b.drain(), 'RequestVoteResponse');
    expect(res.map((m) => [m.to, m.granted, m.term])).toEqual([['c', true, t + 1]]);
    expect(b.durable.hardState).toEqual({ term: t + 1, votedFor: 'c', commitIndex: 1 });
  });
});

describe('thesis §3.10 leadership transfer', () => {
  it('§3.10 transfer to an up-to-date follower: TimeoutNow at once, the target leads the next term without waiting for a timeout', () => {
    const { net, a, b } = steady();
    net.propose('a', 'x');
    net.tickAll(1);
    const t = a.raft.term;
    net.log = [];
    expect(a.raft.transferLeadership('b')).toBe(true);
    net.settle(); // no ticks at all
    expect(net.sent('TimeoutNow').map((m) => [m.from, m.to, m.term])).toEqual([['a', 'b', t]]);
    const rvs = net.sent('RequestVote', (m) => m.from === 'b');
    expect(rvs.every((m) => m.transfer && !m.preVote && m.term === t + 1)).toBe(true);
    expect(b.raft.role).toBe('leader');
    expect(b.raft.term).toBe(t + 1);
    expect(a.raft.role).toBe('follower');
    expect(a.raft.leaderId).toBe('b');
    net.propose('b', 'y');
    net.tickAll(1);
    expect(a.appliedData()).toEqual(['x', 'y']);
  });

  it('§3.10 transfer to a lagging follower first catches it up, then sends TimeoutNow', () => {
    const net = new Network(ids);
    const [a, c] = [net.node('a'), net.node('c')];
    net.isolate('c');
    net.elect('a');
    for (let i = 0; i < 5; i++) net.propose('a', `v${i}`);
    net.tick(['a', 'b']);
    expect(c.raft.status().lastIndex).toBe(0);
    net.heal();
    net.log = [];
    expect(a.raft.transferLeadership('c')).toBe(true);
    for (let i = 0; i < E && c.raft.role !== 'leader'; i++) net.tick(['a']);
    expect(c.raft.role).toBe('leader');
    expect(c.raft.term).toBe(2);
    // TimeoutNow went out only after c acknowledged the leader's whole log.
    const tn = net.sent('TimeoutNow');
    expect(tn).toHaveLength(1);
    const before = net.log.slice(0, net.log.indexOf(tn[0]!));
    const acks = before.filter((m) => m.type === 'AppendEntriesResponse' && m.from === 'c' && m.success);
    expect(Math.max(...acks.map((m) => (m.type === 'AppendEntriesResponse' ? m.matchIndex : 0)))).toBe(6);
    expect(c.appliedData()).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
  });

  it('§3.10 transfer to a follower whose last append was lost: the leader re-sends it, then TimeoutNow, before the transfer times out', () => {
    // Regression (fixed in d79a503): proposals are refused during a transfer, so nothing else could make
    // the leader notice the lost append, and the transfer silently timed out.
    const net = new Network(ids);
    net.elect('a');
    net.tickAll(1);
    const [a, c] = [net.node('a'), net.node('c')];
    net.dropIf = (m) => m.type === 'AppendEntries' && m.to === 'c' && m.entries.length > 0;
    net.propose('a', 'x'); // committed by a and b; lost on the way to c (which is replicating)
    net.dropIf = null;
    net.tickAll(1);
    expect(a.raft.status().commitIndex).toBe(2);
    expect(c.raft.status().lastIndex).toBe(1);
    net.log = [];
    expect(a.raft.transferLeadership('c')).toBe(true);
    for (let i = 0; i < E - 1 && c.raft.role !== 'leader'; i++) net.tickAll(1);
    expect(net.sent('TimeoutNow')).toHaveLength(1);
    expect(c.raft.role).toBe('leader');
    expect(c.durable.entries[1]!.data).toEqual(enc('x'));
  });

  it('§3.10 proposals are refused while a transfer is in progress', () => {
    const net = new Network(ids);
    const a = net.node('a');
    net.isolate('c');
    net.elect('a');
    net.propose('a', 'v');
    expect(a.raft.transferLeadership('c')).toBe(true); // c lags: no TimeoutNow yet
    const r = a.raft.propose(enc('during'));
    expect(r).toEqual({ ok: false, reason: 'transferring', leaderId: 'a' });
    expect(a.raft.status().lastIndex).toBe(2); // nothing appended
  });

  it('§3.10 a transfer to a dead target times out after an election timeout; the leader keeps leading and accepts proposals again', () => {
    const { net, a } = steady();
    const t = a.raft.term;
    net.isolate('c');
    expect(a.raft.transferLeadership('c')).toBe(true);
    let ticks = 0;
    while (!a.raft.propose(enc('probe')).ok) {
      net.tick(['a', 'b']);
      ticks++;
      expect(ticks).toBeLessThanOrEqual(E);
      expect(a.raft.role).toBe('leader');
    }
    expect(ticks).toBeGreaterThanOrEqual(E - 1);
    expect(a.raft.term).toBe(t);
    net.settle();
    expect(a.raft.status().commitIndex).toBe(2);
  });

  it('§3.10 transfer is refused for self, non-voters and by non-leaders', () => {
    const { a, b } = steady();
    expect(a.raft.transferLeadership('a')).toBe(false);
    expect(a.raft.transferLeadership('zz')).toBe(false);
    expect(b.raft.transferLeadership('c')).toBe(false);
    expect(a.raft.propose(enc('ok')).ok).toBe(true);
  });
});
