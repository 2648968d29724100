// Raft thesis chapter 4 (cluster membership changes): single-server changes with learners, as
// src/raft/core/conf.ts argues them. Each test names the rule it checks.
import { describe, expect, it } from 'vitest';
import { decodeConfEntry } from '../../../src/raft/core/conf.js';
import type { ConfChange } from '../../../src/raft/core/types.js';
import { Network, TestNode, enc } from './harness.js';

const E = 10;

function cluster(ids = ['a', 'b', 'c']) {
  const net = new Network(ids);
  net.elect('a');
  net.tickAll(1);
  expect(net.node('a').raft.role).toBe('leader');
  return net;
}

/** A node started with --join: no configuration, waits to be contacted. */
function joiner(net: Network, id: string): TestNode {
  const n = new TestNode(id, []);
  net.nodes.set(id, n);
  return n;
}

function change(net: Network, leader: string, c: ConfChange) {
  const r = net.node(leader).raft.proposeConfChange(c);
  net.settle();
  return r;
}

const addLearner = (id: string): ConfChange => ({ type: 'add', id, address: `${id}:7000`, learner: true });

describe('thesis §4.2.1 learners: catch up without voting or counting', () => {
  it('a joining node learns the whole configuration from the log and catches up as a learner', () => {
    const net = cluster();
    for (let i = 0; i < 5; i++) net.propose('a', `v${i}`);
    const d = joiner(net, 'd');
    expect(change(net, 'a', addLearner('d'))).toMatchObject({ ok: true });
    net.tickAll(2);
    const st = d.raft.status();
    expect(st.learners).toEqual(['d']);
    expect(st.voters).toEqual(['a', 'b', 'c']);
    expect(st.conf.addresses['d']).toBe('d:7000');
    expect(d.appliedData()).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
  });

  it('§4.2.1 a learner never counts toward a commit: with both other voters cut off, its ack commits nothing', () => {
    const net = cluster();
    joiner(net, 'd');
    change(net, 'a', addLearner('d'));
    net.tickAll(2);
    net.cutLink('a', 'b');
    net.cutLink('a', 'c');
    const before = net.node('a').raft.status().commitIndex;
    net.propose('a', 'x');
    net.tick(['a'], 3);
    expect(net.node('d').raft.status().lastIndex).toBeGreaterThan(before); // d has it...
    expect(net.node('a').raft.status().commitIndex).toBe(before); // ...and it does not commit
  });

  it('a learner never campaigns, however long it hears nothing', () => {
    const net = cluster();
    const d = joiner(net, 'd');
    change(net, 'a', addLearner('d'));
    net.tickAll(2);
    const term = d.raft.term;
    net.isolate('d');
    net.tick(['d'], 30 * E);
    expect(d.raft.role).toBe('follower');
    expect(d.raft.term).toBe(term);
    expect(net.sent('RequestVote', (m) => m.from === 'd')).toEqual([]);
  });

  it('CheckQuorum counts voters only: a leader that hears only from its learner steps down', () => {
    const net = cluster();
    joiner(net, 'd');
    change(net, 'a', addLearner('d'));
    net.tickAll(2);
    net.cutLink('a', 'b');
    net.cutLink('a', 'c');
    net.tick(['a', 'd'], 3 * E);
    expect(net.node('a').raft.role).not.toBe('leader');
  });

  it('a promoted learner votes and counts toward commits', () => {
    const net = cluster();
    joiner(net, 'd');
    change(net, 'a', addLearner('d'));
    net.tickAll(2);
    expect(change(net, 'a', { type: 'promote', id: 'd' })).toMatchObject({ ok: true });
    net.tickAll(2);
    expect(net.node('a').raft.status().voters).toEqual(['a', 'b', 'c', 'd']);
    // 4 voters: quorum 3. With c cut off, a + b + d still commit.
    net.isolate('c');
    const before = net.node('a').raft.status().commitIndex;
    net.propose('a', 'y');
    net.tick(['a', 'b', 'd'], 2);
    expect(net.node('a').raft.status().commitIndex).toBeGreaterThan(before);
  });
});

describe('a new member is probed until it answers (found by the simulator, seed 23 with membership)', () => {
  it('a learner that was not running when it was added catches up once it starts, in an idle cluster', () => {
    // The leader's first probe to the new member is lost (the joining node is not up yet). Its progress
    // used to start at next = lastIndex + 1: every later probe was an EMPTY append, which the heartbeat
    // path never resends, while heartbeats (anchored at match 0) succeeded — with no new entries the
    // learner stayed at index 0 forever.
    const net = cluster();
    for (let i = 0; i < 3; i++) net.propose('a', `v${i}`);
    expect(change(net, 'a', addLearner('d'))).toMatchObject({ ok: true });
    net.tickAll(2); // the add commits; everything sent to d so far went nowhere
    const d = joiner(net, 'd');
    net.tickAll(5);
    expect(d.raft.status().lastIndex).toBe(net.node('a').raft.status().lastIndex);
    expect(d.appliedData()).toEqual(['v0', 'v1', 'v2']);
    expect(d.raft.status().learners).toEqual(['d']);
  });
});

describe('thesis §4.1: a server accepts a leader (and a candidate) outside its latest configuration (found by the simulator, seed 107 with membership)', () => {
  it('a voter that was down while a new member was added and promoted follows that member once it leads', () => {
    // c misses the add and the promotion of d; d then becomes leader. c's configuration is still
    // {a, b, c}: refusing every message from a non-member, it refused d's appends and stayed behind
    // forever (pre-campaigning with a stale log). Only ids the configuration lists as REMOVED are
    // refused (ids are never reused, so that list is exact).
    const net = cluster();
    joiner(net, 'd');
    net.isolate('c');
    expect(change(net, 'a', addLearner('d'))).toMatchObject({ ok: true });
    net.tick(['a', 'b', 'd'], 2);
    expect(change(net, 'a', { type: 'promote', id: 'd' })).toMatchObject({ ok: true });
    net.tick(['a', 'b', 'd'], 2);
    expect(net.node('a').raft.transferLeadership('d')).toBe(true);
    net.tick(['a', 'b', 'd'], 3);
    expect(net.node('d').raft.role).toBe('leader');
    net.propose('d', 'after');
    net.tick(['a', 'b', 'd'], 1);
    net.heal();
    expect(net.node('c').raft.status().voters).toEqual(['a', 'b', 'c']);
    net.tickAll(3);
    const c = net.node('c');
    expect(c.raft.status().voters).toEqual(['a', 'b', 'c', 'd']);
    expect(c.raft.status().leaderId).toBe('d');
    expect(c.appliedData()).toContain('after');
  });

  it('an UNCOMMITTED removal of the new leader in a stale tail does not make a node refuse that leader (seed 171)', () => {
    // Without leader stickiness, so that b can be elected at will while a is cut off.
    const net = new Network(['a', 'b', 'c'], (c) => {
      c.checkQuorum = false;
      c.preVote = false;
    });
    net.elect('a');
    net.tickAll(1);
    net.isolate('a');
    expect(change(net, 'a', { type: 'remove', id: 'b' })).toMatchObject({ ok: true }); // only a has it
    net.elect('b');
    expect(net.node('b').raft.role).toBe('leader');
    net.propose('b', 'after');
    net.heal();
    const a = net.node('a');
    expect(a.raft.status().conf.removed).toEqual(['b']);
    net.tickAll(3 * E);
    expect(a.raft.status().conf.removed).toEqual([]); // the stale entry was truncated by b's appends
    expect(a.raft.status().leaderId).toBe('b');
    expect(a.appliedData()).toContain('after');
  });
});

describe('thesis §4.1 single-server changes: one at a time, after the leader committed in its term', () => {
  it('§4.1 a second change is refused while the first is uncommitted', () => {
    const net = cluster();
    net.isolate('a'); // the first change cannot commit
    const first = net.node('a').raft.proposeConfChange(addLearner('d'));
    expect(first.ok).toBe(true);
    const second = net.node('a').raft.proposeConfChange(addLearner('e'));
    expect(second).toMatchObject({ ok: false, reason: 'conf-pending' });
  });

  it('2015 bug: a new leader starts no change before an entry of its own term commits', () => {
    const net = cluster();
    net.cutLink('b', 'a');
    net.cutLink('b', 'c');
    net.elect('b'); // b campaigns; cut off, it cannot win
    net.heal();
    net.isolate('c');
    // A fresh leader whose noop has not committed yet.
    const a = net.node('a');
    a.raft.step({
      type: 'RequestVote',
      from: 'b',
      to: 'a',
      term: a.raft.term + 5,
      preVote: false,
      lastLogIndex: 999,
      lastLogTerm: 999,
      transfer: true,
    });
    a.drain();
    const b = net.node('b');
    for (let i = 0; i < 100 && b.raft.role !== 'leader'; i++) {
      b.raft.tick();
      net.deliver(net.collect().filter((m) => m.type !== 'AppendEntriesResponse'));
    }
    if (b.raft.role === 'leader') {
      // b won but no AppendEntriesResponse reached it: its noop is not committed.
      expect(b.raft.proposeConfChange(addLearner('d'))).toMatchObject({ ok: false, reason: 'conf-not-ready' });
    } else {
      throw new Error('setup did not elect b');
    }
  });

  it('impossible changes are refused with a reason and leave the log alone', () => {
    const net = cluster();
    const a = net.node('a');
    const last = a.raft.status().lastIndex;
    expect(change(net, 'a', { type: 'promote', id: 'zz' })).toMatchObject({ ok: false, reason: 'conf-invalid' });
    expect(change(net, 'a', { type: 'remove', id: 'zz' })).toMatchObject({ ok: false, reason: 'conf-invalid' });
    expect(change(net, 'a', { type: 'add', id: 'b', address: 'b:1', learner: true })).toMatchObject({ ok: false, reason: 'conf-invalid' });
    expect(a.raft.status().lastIndex).toBe(last);
  });

  it('node ids are never reused: a removed id cannot be added again', () => {
    const net = cluster();
    expect(change(net, 'a', { type: 'remove', id: 'c' })).toMatchObject({ ok: true });
    net.tickAll(2);
    const r = change(net, 'a', { type: 'add', id: 'c', address: 'c:1', learner: true });
    expect(r).toMatchObject({ ok: false, reason: 'conf-invalid' });
    expect(!r.ok && 'message' in r ? r.message : '').toMatch(/never reused/);
  });

  it('the last voter cannot be removed', () => {
    const net = new Network(['a']);
    net.elect('a');
    net.tickAll(1);
    expect(change(net, 'a', { type: 'remove', id: 'a' })).toMatchObject({ ok: false, reason: 'conf-invalid' });
  });
});

describe('thesis §4.2.2 removing servers, the leader included', () => {
  it('a removed leader keeps leading until its removal commits, then hands over and never campaigns', () => {
    const net = cluster();
    expect(change(net, 'a', { type: 'remove', id: 'a' })).toMatchObject({ ok: true });
    net.tickAll(3 * E);
    const a = net.node('a');
    expect(a.raft.role).toBe('follower');
    const leader = net.leader();
    expect(leader && ['b', 'c'].includes(leader.id)).toBe(true);
    expect(leader!.raft.status().voters).toEqual(['b', 'c']);
    // The rest keep committing without a.
    net.propose(leader!.id, 'after');
    net.tickAll(1);
    expect(net.node('b').appliedData()).toContain('after');
    const seen = net.log.length;
    net.tick(['a'], 30 * E);
    expect(net.log.slice(seen).filter((m) => m.type === 'RequestVote' && m.from === 'a')).toEqual([]);
    expect(a.raft.role).toBe('follower');
  });

  it('thesis §6.4: a read pending when the leader removes itself needs a majority of the voters that remain; its own ack no longer counts', () => {
    const net = cluster(['a', 'b', 'c', 'd']);
    const a = net.node('a');
    // The read's heartbeats reach nobody yet: it waits for acks.
    net.isolate('a');
    a.raft.readIndex('r1');
    const heartbeats = net.collect().filter((m) => m.type === 'AppendEntries' && m.from === 'a'); // dropped
    const round = heartbeats[0]!.type === 'AppendEntries' ? heartbeats[0]!.round : 0;
    expect(round).toBeGreaterThan(0);
    // a removes itself: from this append on, the voters are b, c, d (quorum 2) and a is none of them.
    expect(a.raft.proposeConfChange({ type: 'remove', id: 'a' })).toMatchObject({ ok: true });
    expect(a.raft.status().voters).toEqual(['b', 'c', 'd']);
    net.collect();
    // Only b answers the read's round. Counting a's own ack, {a, b} made 2 of 3 and the read was served —
    // though c and d, a majority of the new voters, may already follow a newer leader.
    net.inject({
      type: 'AppendEntriesResponse',
      from: 'b',
      to: 'a',
      term: a.raft.term,
      success: true,
      matchIndex: 0,
      conflictIndex: 0,
      conflictTerm: 0,
      round,
    });
    a.drain();
    expect(a.reads.map((r) => r.ctx)).toEqual([]);
    // c's answer makes b and c: a majority of b, c, d.
    net.inject({
      type: 'AppendEntriesResponse',
      from: 'c',
      to: 'a',
      term: a.raft.term,
      success: true,
      matchIndex: 0,
      conflictIndex: 0,
      conflictTerm: 0,
      round,
    });
    a.drain();
    expect(a.reads.map((r) => r.ctx)).toEqual(['r1']);
  });

  it('a removed node that restarts from an old log (it still thinks it is a voter) cannot disturb the cluster', () => {
    const net = cluster();
    const c = net.node('c');
    const oldDurable = structuredClone(c.durable);
    change(net, 'a', { type: 'remove', id: 'c' });
    net.tickAll(2);
    const term = net.node('a').raft.term;
    // c comes back with the log it had before its removal reached it.
    c.load(oldDurable);
    expect(c.raft.status().voters).toContain('c');
    net.tickAll(30 * E);
    expect(net.node('a').raft.role).toBe('leader');
    expect(net.node('a').raft.term).toBe(term);
    expect(net.node('b').raft.term).toBe(term);
  });
});

describe('thesis §4.1 the latest configuration in the log is used, committed or not', () => {
  it('an uncommitted configuration entry that is truncated away no longer applies', () => {
    const net = cluster();
    net.isolate('a');
    expect(net.node('a').raft.proposeConfChange(addLearner('d')).ok).toBe(true);
    net.node('a').drain();
    expect(net.node('a').raft.status().learners).toEqual(['d']);
    // b takes over in a new term; a's uncommitted config entry is replaced.
    net.tick(['b', 'c'], 4 * E);
    const next = [net.node('b'), net.node('c')].find((n) => n.raft.role === 'leader');
    expect(next).toBeDefined();
    net.heal();
    net.tick([next!.id], 3);
    expect(net.node('a').raft.leaderId).toBe(next!.id);
    expect(net.node('a').raft.status().learners).toEqual([]);
    expect(net.node('a').raft.status().voters).toEqual(['a', 'b', 'c']);
  });

  it('§7 a snapshot records the configuration as of its index, and a learner catching up by snapshot learns it', () => {
    const net = cluster();
    for (let i = 0; i < 5; i++) net.propose('a', `v${i}`);
    const d = joiner(net, 'd');
    net.isolate('d');
    change(net, 'a', addLearner('d'));
    net.tickAll(1);
    const a = net.node('a');
    const snap = a.compact(a.raft.status().appliedIndex, enc('state'));
    expect(snap.meta.conf.learners).toEqual(['d']);
    net.heal();
    net.tickAll(3);
    expect(d.restoredFrom?.meta.index).toBe(snap.meta.index);
    expect(d.raft.status().learners).toEqual(['d']);
    expect(d.raft.status().conf.addresses['d']).toBe('d:7000');
  });

  it('a configuration entry carries the whole resulting configuration', () => {
    const net = cluster();
    change(net, 'a', addLearner('d'));
    const e = net.node('a').durable.entries.find((x) => x.kind === 'config')!;
    const { conf, change: ch } = decodeConfEntry(e.data);
    expect(conf.voters).toEqual(['a', 'b', 'c']);
    expect(conf.learners).toEqual(['d']);
    expect(ch).toEqual(addLearner('d'));
  });
});

describe('regressions', () => {
  it('an idle leader still catches up a new member whose first probe was lost (it was not up yet)', () => {
    const net = cluster();
    const d = joiner(net, 'd');
    net.isolate('d'); // d is not running yet: the leader's first probe to it is lost
    expect(change(net, 'a', addLearner('d')).ok).toBe(true);
    net.tickAll(1);
    net.heal(); // d comes up; nothing new is proposed
    net.tickAll(5);
    expect(d.raft.status().learners).toEqual(['d']);
    expect(d.raft.status().appliedIndex).toBe(net.node('a').raft.status().commitIndex);
  });
});

describe('thesis §4.2.2 the leader being removed still leads until its removal commits', () => {
  it('followers whose log already removes the leader keep answering it, so the removal commits', () => {
    const net = cluster();
    const a = net.node('a');
    const r = a.raft.proposeConfChange({ type: 'remove', id: 'a' });
    expect(r.ok).toBe(true);
    net.dropTypes.add('AppendEntriesResponse'); // the acks of the append that carried the removal are lost
    net.settle();
    net.dropTypes.clear();
    expect(net.node('b').raft.status().voters).toEqual(['b', 'c']); // applied when appended
    expect(a.raft.status().commitIndex).toBeLessThan(r.ok ? r.index : 0);
    net.tick(['a'], 6); // heartbeats, then a re-probe: b and c must still answer the leader their log has removed
    expect(a.raft.status().commitIndex).toBeGreaterThanOrEqual(r.ok ? r.index : 0);
  });
});
