// Raft paper §7 "Log compaction" (and Figure 13, InstallSnapshot), one test per rule.
import { describe, expect, it } from 'vitest';
import type { InstallSnapshot, RaftConfig } from '../../../src/raft/core/types.js';
import { Network, TestNode, appendEntries, dec, enc, entriesOfTerms, ofType } from './harness.js';

const ids = ['a', 'b', 'c'];
const snapData = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + 3) & 0xff);

/** Leader a (term 1) with entries 1..11 applied everywhere reachable; c unreachable from the start. */
function clusterWithLaggard(tweak?: (c: RaftConfig) => void) {
  const net = new Network(ids, tweak);
  net.isolate('c');
  net.elect('a');
  for (let i = 2; i <= 11; i++) net.propose('a', `v${i}`);
  net.tick(['a']);
  return net;
}

describe('Raft §7 log compaction', () => {
  it('§7 compact(index, data) drops entries <= index and keeps index and term of the last included entry', () => {
    const net = new Network(ids);
    net.elect('a');
    for (let i = 2; i <= 6; i++) net.propose('a', `v${i}`);
    net.tick(['a']);
    const [a, b] = [net.node('a'), net.node('b')];
    expect(a.raft.status().appliedIndex).toBe(6);
    expect(() => a.raft.compact(7, enc('too far'))).toThrow('compact(7) beyond applied index 6'); // beyond applied
    const snap = a.compact(6, enc('state@6'));
    expect(snap.meta).toEqual({
      index: 6,
      term: 1,
      conf: { clusterId: '', voters: ['a', 'b', 'c'], learners: [], addresses: {}, removed: [] },
    });
    expect(a.raft.status()).toMatchObject({ firstIndex: 7, lastIndex: 6, commitIndex: 6 });
    expect(a.durable.entries).toEqual([]);
    // The leader still knows term(6): the next append to b is anchored there, not replaced by a snapshot.
    net.log = [];
    net.propose('a', 'v7');
    const toB = net.sent('AppendEntries', (m) => m.to === 'b' && m.entries.length > 0);
    expect(toB.map((m) => [m.prevLogIndex, m.prevLogTerm])).toEqual([[6, 1]]);
    expect(net.sent('InstallSnapshot')).toHaveLength(0);
    // Same on a follower: compacted exactly at its commit index (where the consistency check still
    // applies), it matches prevLogIndex = 7 only through the snapshot's term.
    expect(b.raft.status()).toMatchObject({ commitIndex: 7, appliedIndex: 7 });
    b.compact(7, enc('state@7'));
    expect(b.raft.status()).toMatchObject({ firstIndex: 8, lastIndex: 7 });
    b.raft.step(appendEntries({ from: 'a', to: 'b', term: 1, prevLogIndex: 7, prevLogTerm: 2, entries: [] })); // wrong term
    b.raft.step(appendEntries({ from: 'a', to: 'b', term: 1, prevLogIndex: 7, prevLogTerm: 1, entries: [] }));
    const res = ofType(b.drain(), 'AppendEntriesResponse');
    expect(res.map((m) => m.success)).toEqual([false, true]);
  });

  it('§7 a follower behind the first index gets the snapshot, in chunks, a lost chunk is retransmitted, then normal appends', () => {
    const net = clusterWithLaggard((c) => {
      c.snapshotChunkBytes = 16;
    });
    const [a, c] = [net.node('a'), net.node('c')];
    const data = snapData(100);
    a.compact(11, data);
    expect(a.raft.status().firstIndex).toBe(12);

    net.heal();
    net.log = []; // count only what is sent from now on
    let dropped = 0;
    net.dropIf = (m) => m.type === 'InstallSnapshot' && m.offset === 32 && dropped++ === 0;
    net.tick(['a']); // chunks 0 and 16 arrive, 32 is lost
    const chunks = () => net.sent('InstallSnapshot', (m) => m.to === 'c');
    expect(chunks().map((m) => m.offset)).toEqual([0, 16, 32]);
    expect(c.durable.snapshot.meta.index).toBe(0); // not installed yet
    expect(net.sent('AppendEntries', (m) => m.to === 'c' && m.entries.length > 0)).toHaveLength(0);

    net.tick(['a']); // the heartbeat retransmits the lost chunk, then the rest follow
    const offsets = chunks().map((m) => m.offset);
    expect(offsets).toEqual([0, 16, 32, 32, 48, 64, 80, 96]);
    expect(chunks().map((m) => m.chunk.length)).toEqual([16, 16, 16, 16, 16, 16, 16, 4]);
    expect(chunks().map((m) => m.done)).toEqual([false, false, false, false, false, false, false, true]);
    expect(chunks().every((m) => m.meta.index === 11 && m.meta.term === 1)).toBe(true);

    // c installed exactly the leader's snapshot data, durably, and restored its state machine from it.
    expect(c.durable.snapshot.meta).toMatchObject({ index: 11, term: 1 });
    expect(c.durable.snapshot.data).toEqual(data);
    expect(c.restoredFrom?.data).toEqual(data);
    expect(c.raft.status()).toMatchObject({ firstIndex: 12, lastIndex: 11, commitIndex: 11, appliedIndex: 11 });
    expect(a.raft.progressSnapshot().get('c')!.match).toBe(11);

    // Then ordinary replication resumes after the snapshot.
    net.propose('a', 'v12');
    net.tick(['a']);
    const appends = net.sent('AppendEntries', (m) => m.to === 'c' && m.entries.length > 0);
    expect(appends.map((m) => [m.prevLogIndex, m.entries.map((e) => e.index)])).toEqual([[11, [12]]]);
    expect(c.appliedData()).toEqual(['v12']);
    expect(c.durable.entries.map((e) => e.index)).toEqual([12]);
  });

  it("§7 a chunk that arrives at the wrong offset is refused and the leader resumes from the follower's offset", () => {
    const net = clusterWithLaggard((c) => {
      c.snapshotChunkBytes = 10;
    });
    const [a, c] = [net.node('a'), net.node('c')];
    const data = snapData(30);
    const snap = a.compact(11, data);
    const chunk = (offset: number): InstallSnapshot => ({
      type: 'InstallSnapshot',
      from: 'a',
      to: 'c',
      term: 1,
      meta: snap.meta,
      offset,
      chunk: data.subarray(offset, offset + 10),
      done: offset + 10 >= 30,
      round: 0,
    });
    c.raft.step(chunk(0));
    c.raft.step(chunk(20)); // 10 is missing
    const res = ofType(c.drain(), 'InstallSnapshotResponse');
    expect(res.map((m) => [m.success, m.nextOffset, m.done])).toEqual([
      [true, 10, false],
      [false, 10, false],
    ]);
    expect(c.durable.snapshot.meta.index).toBe(0);
    c.raft.step(chunk(10));
    c.raft.step(chunk(20));
    expect(ofType(c.drain(), 'InstallSnapshotResponse').map((m) => [m.success, m.nextOffset, m.done])).toEqual([
      [true, 20, false],
      [true, 0, true],
    ]);
    expect(c.durable.snapshot.data).toEqual(data);
  });

  it("§7 (Figure 13 rule 7) a snapshot that does not match the follower's log replaces the whole log", () => {
    const c = new TestNode('c', ids);
    c.load({ entries: entriesOfTerms([1, 2, 2, 2, 2, 2, 2]), hardState: { term: 2, votedFor: null, commitIndex: 1 } });
    const meta = { index: 5, term: 3, conf: { clusterId: '', voters: ids, learners: [], addresses: {}, removed: [] } };
    c.raft.step({ type: 'InstallSnapshot', from: 'a', to: 'c', term: 3, meta, offset: 0, chunk: enc('S5'), done: true, round: 0 });
    c.drain();
    expect(c.durable.snapshot.meta).toEqual(meta);
    expect(dec(c.durable.snapshot.data)).toBe('S5');
    expect(c.durable.entries).toEqual([]); // the stale 6..7 of term 2 are gone too
    expect(c.raft.status()).toMatchObject({ firstIndex: 6, lastIndex: 5, commitIndex: 5 });
    expect(c.durable.hardState).toEqual({ term: 3, votedFor: null, commitIndex: 5 });
  });

  it('§7 (Figure 13 rule 6) a snapshot whose last entry the follower holds keeps the entries after it', () => {
    const c = new TestNode('c', ids);
    c.load({ entries: entriesOfTerms([1, 1, 1, 1, 1, 1, 1]), hardState: { term: 1, votedFor: null, commitIndex: 2 } });
    const meta = { index: 5, term: 1, conf: { clusterId: '', voters: ids, learners: [], addresses: {}, removed: [] } };
    c.raft.step({ type: 'InstallSnapshot', from: 'a', to: 'c', term: 1, meta, offset: 0, chunk: enc('S5'), done: true, round: 0 });
    c.drain();
    expect(c.raft.status()).toMatchObject({ lastIndex: 7, commitIndex: 5 });
    expect(c.logTerms()).toHaveLength(7);
    expect(c.applied.map((e) => e.index)).toEqual([1, 2, 3, 4, 5]);
  });

  it('§7 a follower restarts from its snapshot plus the entries after it, re-applying only those', () => {
    const net = clusterWithLaggard();
    const [a, c] = [net.node('a'), net.node('c')];
    a.compact(11, enc('state@11'));
    net.heal();
    net.tick(['a'], 2);
    expect(c.durable.snapshot.meta.index).toBe(11);
    net.propose('a', 'v12');
    net.propose('a', 'v13');
    net.tick(['a']);
    expect(c.appliedData()).toEqual(['v12', 'v13']);

    c.restart();
    expect(c.raft.status()).toMatchObject({ firstIndex: 12, lastIndex: 13, commitIndex: 13, appliedIndex: 11, term: 1 });
    expect(c.applied).toEqual([]); // state machine restored from the snapshot (index 11)
    c.drain();
    expect(c.applied.map((e) => e.index)).toEqual([12, 13]);
    expect(c.appliedData()).toEqual(['v12', 'v13']);
    // And it keeps following the leader.
    net.propose('a', 'v14');
    net.tick(['a']);
    expect(c.appliedData()).toEqual(['v12', 'v13', 'v14']);
  });

  it('§7 a compacted leader restarts from snapshot + entries and still serves laggards by snapshot', () => {
    const net = clusterWithLaggard();
    const a = net.node('a');
    a.compact(8, enc('state@8'));
    a.restart();
    expect(a.raft.status()).toMatchObject({ role: 'follower', firstIndex: 9, lastIndex: 11, commitIndex: 11, appliedIndex: 8 });
    const before = a.applied.length; // the state machine as restored from the snapshot (1..8)
    expect(a.applied.map((e) => e.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    a.drain();
    expect(a.applied.slice(before).map((e) => e.index)).toEqual([9, 10, 11]);
    net.heal();
    net.elect('a');
    expect(a.raft.role).toBe('leader');
    net.tick(['a'], 2);
    const c = net.node('c');
    expect(c.durable.snapshot.meta.index).toBe(8);
    expect(dec(c.durable.snapshot.data)).toBe('state@8');
    expect(c.raft.status().commitIndex).toBe(a.raft.status().commitIndex);
    expect(c.applied.map((e) => e.index)).toEqual([9, 10, 11, 12]);
  });
});
