// Raft paper §8 "Client interaction" (and thesis §6.4 ReadIndex): linearizable reads without writing to
// the log. The leader (1) must have committed an entry of its own term, (2) records its commit index as
// the read index, (3) confirms it is still leader with a heartbeat round acknowledged by a majority.
import { describe, expect, it } from 'vitest';
import type { RaftConfig } from '../../../src/raft/core/types.js';
import { Network, TestNode, entriesOfTerms, ofType } from './harness.js';

const ids = ['a', 'b', 'c'];

function steadyCluster(tweak?: (c: RaftConfig) => void) {
  const net = new Network(ids, tweak);
  net.elect('a');
  net.tickAll(1);
  const [a, b, c] = ids.map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
  expect(a.raft.role).toBe('leader');
  expect(a.raft.status().commitIndex).toBe(1);
  return { net, a, b, c };
}

describe('Raft §8 client interaction: ReadIndex', () => {
  it('§8 the leader answers a read at its commit index only after a majority acknowledged a heartbeat round sent after the read', () => {
    const { net, a } = steadyCluster();
    net.propose('a', 'x');
    expect(a.raft.status().commitIndex).toBe(2);
    // A heartbeat sent BEFORE the read, held back.
    a.raft.tick();
    const early = ofType(net.collect(), 'AppendEntries').find((m) => m.to === 'b')!;
    expect(early).toBeDefined();

    a.raft.readIndex('r1');
    const probes = ofType(net.collect(), 'AppendEntries');
    expect(probes.map((m) => m.to).sort()).toEqual(['b', 'c']);
    expect(probes.every((m) => m.round > early.round)).toBe(true);
    expect(a.reads).toEqual([]);

    // b answers the old heartbeat: that proves nothing about leadership after the read was registered.
    net.inject(early);
    net.deliver(net.collect());
    a.drain();
    expect(a.reads).toEqual([]);

    // b answers the read's own round: a + b = majority of 3 -> the read is served at commit index 2.
    net.inject(probes.find((m) => m.to === 'b')!);
    const ack = ofType(net.collect(), 'AppendEntriesResponse');
    expect(a.reads).toEqual([]); // not before the answer arrives
    net.deliver(ack);
    a.drain();
    expect(a.reads).toEqual([{ ctx: 'r1', index: 2 }]);
  });

  it('§8 in a 5-node cluster one acknowledgement is not enough, two are', () => {
    const net = new Network(['a', 'b', 'c', 'd', 'e']);
    net.elect('a');
    net.tickAll(1);
    const a = net.node('a');
    a.raft.readIndex('r');
    const probes = ofType(net.collect(), 'AppendEntries');
    net.inject(probes.find((m) => m.to === 'b')!);
    net.deliver(net.collect());
    a.drain();
    expect(a.reads).toEqual([]);
    net.inject(probes.find((m) => m.to === 'c')!);
    net.deliver(net.collect());
    a.drain();
    expect(a.reads).toEqual([{ ctx: 'r', index: 1 }]);
  });

  it('§8 a new leader defers reads until it has committed an entry of its own term', () => {
    // The previous leader committed 1..3 (b and c know it); the new leader a only knows commit 1.
    const net = new Network(ids, (c) => {
      c.checkQuorum = false;
    });
    const [a, b, c] = ids.map((id) => net.node(id)) as [TestNode, TestNode, TestNode];
    a.load({ entries: entriesOfTerms([1, 1, 1]), hardState: { term: 1, votedFor: null, commitIndex: 1 } });
    b.load({ entries: entriesOfTerms([1, 1, 1]), hardState: { term: 1, votedFor: null, commitIndex: 3 } });
    c.load({ entries: entriesOfTerms([1, 1, 1]), hardState: { term: 1, votedFor: null, commitIndex: 3 } });
    net.dropIf = (m) => m.type === 'AppendEntries'; // the new leader's noop cannot replicate yet
    net.elect('a');
    expect(a.raft.role).toBe('leader');
    expect(a.raft.status().commitIndex).toBe(1);
    a.raft.readIndex('early');
    net.tick(['a'], 5);
    // Serving now would return index 1 and miss writes 2..3 that clients already saw committed.
    expect(a.reads).toEqual([]);
    expect(a.readFailures).toEqual([]);
    net.dropIf = null;
    net.tick(['a']);
    expect(a.raft.status().commitIndex).toBe(4); // its noop (term 2) committed
    expect(a.reads).toEqual([{ ctx: 'early', index: 4 }]);
  });

  it('§8 a partitioned old leader (no CheckQuorum) never serves a read; it fails the read when it learns the new term', () => {
    const { net, a, b } = steadyCluster((c) => {
      c.checkQuorum = false;
    });
    net.isolate('a');
    net.elect('b');
    expect(b.raft.role).toBe('leader');
    net.propose('b', 'new-write');
    net.tick(['b']);
    expect(b.raft.status().commitIndex).toBe(3);

    a.raft.readIndex('stale');
    for (let i = 0; i < 50; i++) {
      net.tick(['a']);
      expect(a.raft.role).toBe('leader'); // it still believes it leads...
    }
    expect(a.reads).toEqual([]); // ...but cannot confirm it, so it serves nothing (its index would be 1 < 3)
    net.heal();
    net.tick(['a']); // its heartbeats now reach b and c, who answer with term 2
    expect(a.raft.role).toBe('follower');
    expect(a.reads).toEqual([]);
    expect(a.readFailures).toEqual([{ ctx: 'stale', reason: 'no-leader' }]);
  });

  it('§8 with CheckQuorum a partitioned leader steps down and fails its pending read without serving it', () => {
    const { net, a } = steadyCluster();
    net.isolate('a');
    a.raft.readIndex('stale');
    let ticks = 0;
    while (a.raft.role === 'leader') {
      net.tick(['a']);
      ticks++;
      expect(ticks).toBeLessThanOrEqual(20);
    }
    expect(a.reads).toEqual([]);
    expect(a.readFailures).toEqual([{ ctx: 'stale', reason: 'no-leader' }]);
  });

  it("§8 a follower's read is forwarded to the leader and answered with the leader's commit index", () => {
    const { net, a, b } = steadyCluster();
    // The leader commits x (index 2) but b has not heard the new commit index yet.
    a.raft.propose(new TextEncoder().encode('x'));
    net.deliver(net.collect()); // x reaches b and c
    net.deliver(net.collect()); // their acks reach a: committed
    net.collect(); // a's commit announcement is lost
    expect(a.raft.status().commitIndex).toBe(2);
    expect(b.raft.status().commitIndex).toBe(1);
    net.log = [];
    b.raft.readIndex('rb');
    net.settle();
    const req = net.sent('ReadIndexRequest');
    expect(req.map((m) => [m.from, m.to, m.ctx])).toEqual([['b', 'a', 'rb']]);
    const resp = net.sent('ReadIndexResponse');
    expect(resp.map((m) => [m.from, m.to, m.ctx, m.index])).toEqual([['a', 'b', 'rb', 2]]);
    // The answer is the leader's commit index, beyond what b had committed when it asked.
    expect(b.reads).toEqual([{ ctx: 'rb', index: 2 }]);
    expect(a.reads).toEqual([]);
    // It came only after the leader confirmed its leadership with a heartbeat round.
    const iReq = net.log.indexOf(req[0]!);
    const iResp = net.log.indexOf(resp[0]!);
    const roundAcks = net.log.slice(iReq, iResp).filter((m) => m.type === 'AppendEntriesResponse' && m.to === 'a');
    expect(roundAcks.length).toBeGreaterThanOrEqual(1);
  });

  it('§8 a follower without a known leader fails the read at once', () => {
    const n = new TestNode('b', ids);
    n.raft.readIndex('r');
    n.drain();
    expect(n.readFailures).toEqual([{ ctx: 'r', reason: 'no-leader' }]);
    expect(n.reads).toEqual([]);
  });

  it('§8 a leader that steps down fails its pending reads, local and forwarded', () => {
    const { net, a, b } = steadyCluster();
    net.dropTypes.add('AppendEntriesResponse'); // no confirmation can arrive
    a.raft.readIndex('local');
    b.raft.readIndex('forwarded');
    net.settle();
    expect(a.reads).toEqual([]);
    expect(b.reads).toEqual([]);
    const t = a.raft.term;
    // A leader of a higher term appears (c, elected elsewhere) and a hears from it.
    net.inject({
      type: 'AppendEntries',
      from: 'c',
      to: 'a',
      term: t + 1,
      prevLogIndex: 0,
      prevLogTerm: 0,
      entries: [],
      leaderCommit: 0,
      round: 0,
    });
    net.settle();
    expect(a.raft.role).toBe('follower');
    expect(a.readFailures).toEqual([{ ctx: 'local', reason: 'no-leader' }]);
    expect(b.readFailures).toEqual([{ ctx: 'forwarded', reason: 'not-ready' }]);
    expect(a.reads).toEqual([]);
    expect(b.reads).toEqual([]);
  });

  it('§8 proposals on a follower are refused with the leader id (clients redirect)', () => {
    const { b } = steadyCluster();
    expect(b.raft.propose(new Uint8Array([1]))).toEqual({ ok: false, reason: 'not-leader', leaderId: 'a' });
    expect(b.raft.status().lastIndex).toBe(1); // nothing appended
    const lonely = new TestNode('z', ['x', 'y', 'z']);
    expect(lonely.raft.propose(new Uint8Array([1]))).toEqual({ ok: false, reason: 'not-leader', leaderId: null });
  });

  it('§8 a single-node leader serves reads at once (it is its own majority)', () => {
    const net = new Network(['a']);
    net.elect('a');
    net.propose('a', 'x');
    const a = net.node('a');
    a.raft.readIndex('solo');
    a.drain();
    expect(a.reads).toEqual([{ ctx: 'solo', index: 2 }]);
  });
});
