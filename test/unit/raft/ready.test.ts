// The Ready API's bookkeeping alone (src/raft/core/ready.ts), over a real RaftLog: what a Ready carries and
// hands out once, what advance() records, and what may leave or be applied while a write is in flight.
import { describe, expect, it } from 'vitest';
import { ConfHistory } from '../../../src/raft/core/conf.js';
import { RaftLog } from '../../../src/raft/core/log.js';
import { PendingReady } from '../../../src/raft/core/ready.js';
import {
  bootstrapSnapshot,
  type AppendEntries,
  type AppendEntriesResponse,
  type HardState,
  type RequestVoteResponse,
  type SoftState,
} from '../../../src/raft/core/types.js';
import { entriesOfTerms } from './harness.js';

/** A PendingReady over a log of `terms` (all durable, committed up to `committed`) and a core whose hard
 *  and soft state the test sets. */
function setup(terms: number[], committed: number) {
  const snapshot = bootstrapSnapshot(['a', 'b', 'c']);
  const log = new RaftLog(snapshot, entriesOfTerms(terms), committed);
  const core: { hs: HardState; ss: SoftState } = {
    hs: { term: 2, votedFor: 'a', commitIndex: committed },
    ss: { role: 'follower', leaderId: 'b', term: 2 },
  };
  const pending = new PendingReady(log, new ConfHistory(0, snapshot.meta.conf), {
    hardState: () => ({ ...core.hs }),
    softState: () => ({ ...core.ss }),
  });
  return { log, core, pending };
}

/** Take a Ready and tell the bookkeeping it was persisted and applied. */
function drain(pending: PendingReady) {
  const rd = pending.ready();
  pending.advance(rd);
  return rd;
}

const append = (to: string): AppendEntries => ({
  type: 'AppendEntries',
  from: 'a',
  to,
  term: 2,
  prevLogIndex: 0,
  prevLogTerm: 0,
  entries: [],
  leaderCommit: 0,
  round: 0,
});
const ack = (matchIndex: number): AppendEntriesResponse => ({
  type: 'AppendEntriesResponse',
  from: 'a',
  to: 'b',
  term: 2,
  success: true,
  matchIndex,
  conflictIndex: 0,
  conflictTerm: 0,
  round: 0,
});
const vote: RequestVoteResponse = { type: 'RequestVoteResponse', from: 'a', to: 'c', term: 2, preVote: false, granted: true };

describe('ready() and advance()', () => {
  it('the first Ready reports the configuration; nothing else is news at start', () => {
    const { pending } = setup([1, 2], 2);
    const rd = drain(pending);
    expect(rd.conf?.voters).toEqual(['a', 'b', 'c']);
    expect([rd.hardState, rd.softState, rd.entries.length, rd.messages.length]).toEqual([null, null, 0, 0]);
    expect(rd.committedEntries.map((e) => e.index)).toEqual([1, 2]);
    expect(pending.hasReady()).toBe(false);
  });

  it('a changed hard state is carried until advance() says it was persisted', () => {
    const { core, pending } = setup([], 0);
    drain(pending);
    core.hs = { term: 3, votedFor: null, commitIndex: 0 };
    expect(pending.hasReady()).toBe(true);
    const rd = pending.ready();
    expect(rd.hardState).toEqual(core.hs);
    expect(pending.ready().hardState).toEqual(core.hs);
    pending.advance(rd);
    expect(pending.hasReady()).toBe(false);
    expect(pending.ready().hardState).toBeNull();
  });

  it('a changed soft state is shown once, in the next Ready, advanced or not', () => {
    const { core, pending } = setup([], 0);
    drain(pending);
    core.ss = { role: 'candidate', leaderId: null, term: 2 };
    expect(pending.ready().softState).toEqual(core.ss);
    expect(pending.ready().softState).toBeNull();
    expect(pending.hasReady()).toBe(false);
  });

  it('messages, read results and committed entries are handed out once', () => {
    const { log, pending } = setup([1, 1, 1], 1);
    drain(pending);
    pending.msgs.push(append('b'));
    pending.readStates.push({ ctx: 'r1', index: 1 });
    pending.readFailures.push({ ctx: 'r2', reason: 'no-leader' });
    log.committed = 3;
    const rd = pending.ready();
    expect([rd.messages.length, rd.readStates.length, rd.readFailures.length]).toEqual([1, 1, 1]);
    expect(rd.committedEntries.map((e) => e.index)).toEqual([2, 3]);
    const again = pending.ready();
    expect([again.messages.length, again.readStates.length, again.readFailures.length, again.committedEntries.length]).toEqual([
      0, 0, 0, 0,
    ]);
    expect(log.applied).toBe(1);
    pending.advance(rd);
    expect(log.applied).toBe(3);
  });

  it('new entries are written until advance(); advance() returns the last one persisted', () => {
    const { log, pending } = setup([1], 1);
    drain(pending);
    log.appendOwn({ index: 2, term: 2, kind: 'normal', data: new Uint8Array(0) });
    const rd = pending.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([2]);
    expect(pending.ready().entries.map((e) => e.index)).toEqual([2]);
    expect(pending.advance(rd)?.index).toBe(2);
    expect(log.stableIndex).toBe(2);
    expect(pending.hasReady()).toBe(false);
  });

  it('a received snapshot is carried until the Ready that carried it is advanced', () => {
    const { log, pending } = setup([1], 1);
    drain(pending);
    log.restore({ meta: { index: 5, term: 2, conf: bootstrapSnapshot(['a', 'b', 'c']).meta.conf }, data: new Uint8Array([1]) });
    const rd = pending.ready();
    expect(rd.snapshot?.meta.index).toBe(5);
    pending.advance(rd);
    expect(log.pendingSnapshot).toBeNull();
    expect(pending.ready().snapshot).toBeNull();
  });
});

describe('while a write is in flight', () => {
  it('takeDurableCommitted: a follower applies what its own log has on disk, a leader everything committed', () => {
    const follower = setup([1, 1], 2);
    drain(follower.pending);
    follower.log.appendOwn({ index: 3, term: 2, kind: 'normal', data: new Uint8Array(0) });
    follower.log.committed = 3;
    expect(follower.pending.takeDurableCommitted(false)).toEqual([]);

    const leader = setup([1, 1], 2);
    drain(leader.pending);
    leader.log.appendOwn({ index: 3, term: 2, kind: 'normal', data: new Uint8Array(0) });
    leader.log.committed = 3;
    expect(leader.pending.takeDurableCommitted(true).map((e) => e.index)).toEqual([3]);
    expect(leader.log.applied).toBe(3);
    // Handed out once: the next Ready does not carry it again.
    expect(leader.pending.ready().committedEntries).toEqual([]);
  });

  it('takeDurableCommitted: nothing while a received snapshot waits to be persisted', () => {
    const { log, pending } = setup([1], 0);
    drain(pending);
    log.restore({ meta: { index: 5, term: 2, conf: bootstrapSnapshot(['a', 'b', 'c']).meta.conf }, data: new Uint8Array(0) });
    expect(pending.takeDurableCommitted(true)).toEqual([]);
  });

  it("takeMessagesNotWaitingForDisk: a leader's appends and answers acknowledging only what is on disk; no vote", () => {
    const { log, pending } = setup([1, 1], 2);
    drain(pending);
    log.appendOwn({ index: 3, term: 2, kind: 'normal', data: new Uint8Array(0) });
    pending.msgs.push(append('b'), vote, ack(2), ack(3), append('c'));
    const early = pending.takeMessagesNotWaitingForDisk(2, 'a', true);
    expect(early.map((m) => m.type + (m.type === 'AppendEntriesResponse' ? m.matchIndex : ''))).toEqual([
      'AppendEntries',
      'AppendEntriesResponse2',
      'AppendEntries',
    ]);
    expect(pending.ready().messages).toEqual([vote, ack(3)]);
  });

  it("takeMessagesNotWaitingForDisk: a follower's appends never (it sends none that are free); answers as above", () => {
    const { pending } = setup([1, 1], 2);
    drain(pending);
    pending.msgs.push(append('b'), ack(2));
    expect(pending.takeMessagesNotWaitingForDisk(2, 'a', false)).toEqual([ack(2)]);
  });

  it('takeMessagesNotWaitingForDisk: nothing while the term or vote they carry is not on disk, or a snapshot waits', () => {
    const { log, pending } = setup([1, 1], 2);
    drain(pending);
    pending.msgs.push(ack(2));
    expect(pending.takeMessagesNotWaitingForDisk(3, null, false)).toEqual([]);
    expect(pending.takeMessagesNotWaitingForDisk(2, 'c', false)).toEqual([]);
    log.restore({ meta: { index: 5, term: 2, conf: bootstrapSnapshot(['a', 'b', 'c']).meta.conf }, data: new Uint8Array(0) });
    expect(pending.takeMessagesNotWaitingForDisk(2, 'a', false)).toEqual([]);
    expect(pending.msgs).toEqual([ack(2)]);
  });
});
