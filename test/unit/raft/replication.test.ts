// Leader flow control alone (src/raft/core/replication.ts), over a real log and progress tracker: what the
// leader sends a member in each state of its Progress, and how the member's answers move it on.
import { describe, expect, it } from 'vitest';
import { RaftLog } from '../../../src/raft/core/log.js';
import type { Progress } from '../../../src/raft/core/progress.js';
import { Replicator } from '../../../src/raft/core/replication.js';
import { ProgressTracker } from '../../../src/raft/core/tracker.js';
import {
  bootstrapSnapshot,
  type AppendEntries,
  type AppendEntriesResponse,
  type InstallSnapshot,
  type RaftConfig,
  type UnstampedMessage,
} from '../../../src/raft/core/types.js';
import { entriesOfTerms } from './harness.js';

const cfg: RaftConfig = {
  id: 'a',
  electionTicks: 10,
  heartbeatTicks: 1,
  rng: { int: () => 0 },
  preVote: true,
  checkQuorum: true,
  maxInflight: 2,
  maxEntriesPerMessage: 2,
  maxBytesPerMessage: 1 << 20,
  snapshotChunkBytes: 4,
};

/** Leader 'a' of a, b, c with a log of `terms`, all durable and committed up to `committed`. */
function setup(terms: number[], committed = terms.length) {
  const log = new RaftLog(bootstrapSnapshot(['a', 'b', 'c']), entriesOfTerms(terms), committed);
  const tracker = new ProgressTracker();
  tracker.useConf(['a', 'b', 'c'], []);
  tracker.startLeading('a', log.lastIndex(), log.stableIndex);
  const sent: UnstampedMessage[] = [];
  const matched: string[] = [];
  const replicator = new Replicator(cfg, log, tracker, {
    send: (m) => sent.push(m),
    matched: (pr) => matched.push(`${pr.id}@${pr.match}`),
  });
  const pr = (id: string): Progress => tracker.progress.get(id)!;
  /** The messages sent since the last call. */
  const take = () => sent.splice(0);
  return { log, tracker, replicator, pr, take, matched };
}

const appends = (ms: UnstampedMessage[]) => ms.filter((m): m is Omit<AppendEntries, 'from' | 'term'> => m.type === 'AppendEntries');
const ok = (matchIndex: number, round = 0): AppendEntriesResponse => ({
  type: 'AppendEntriesResponse',
  from: 'b',
  to: 'a',
  term: 1,
  success: true,
  matchIndex,
  conflictIndex: 0,
  conflictTerm: 0,
  round,
});
const refused = (matchIndex: number, conflictIndex: number, conflictTerm: number): AppendEntriesResponse => ({
  ...ok(matchIndex),
  success: false,
  conflictIndex,
  conflictTerm,
});

describe('probing and pipelining', () => {
  it('a probed member gets one entry at a time, and nothing more until it answers', () => {
    const { replicator, pr, take } = setup([1, 1, 1, 1]);
    pr('b').next = 2;
    replicator.sendAppend('b', true);
    replicator.sendAppend('b', true);
    const sent = appends(take());
    expect(sent.map((m) => [m.prevLogIndex, m.entries.map((e) => e.index)])).toEqual([[1, [2]]]);
  });

  it('a success moves match, switches the member to pipelining and tells the hook; then up to maxInflight appends', () => {
    const { log, replicator, pr, take, matched } = setup([1, 1]);
    pr('b').next = 2;
    replicator.sendAppend('b', true);
    take();
    for (let i = 3; i <= 8; i++) log.appendOwn({ index: i, term: 1, kind: 'normal', data: new Uint8Array(0) });
    replicator.onAppendResponse(ok(2), pr('b'));
    expect(matched).toEqual(['b@2']);
    expect(pr('b').state).toBe('replicate');
    // maxInflight 2, maxEntriesPerMessage 2: entries 3-4 and 5-6 leave, 7-8 wait for an answer.
    expect(appends(take()).map((m) => m.entries.map((e) => e.index))).toEqual([
      [3, 4],
      [5, 6],
    ]);
    replicator.onAppendResponse(ok(4), pr('b'));
    expect(appends(take()).map((m) => m.entries.map((e) => e.index))).toEqual([[7, 8]]);
    expect(matched).toEqual(['b@2', 'b@4']);
  });

  it('a success that moves nothing calls no hook', () => {
    const { replicator, pr, matched } = setup([1, 1]);
    replicator.onAppendResponse(ok(0), pr('b'));
    expect(matched).toEqual([]);
  });
});

describe('rejections: back to probing, fast backtracking', () => {
  it('with the conflicting term known to the leader, the next probe starts after its last entry of that term', () => {
    const { replicator, pr, take } = setup([1, 1, 2, 2, 3]);
    pr('b').next = 6;
    replicator.onAppendResponse(refused(5, 4, 2), pr('b'));
    expect(pr('b').next).toBe(5);
    expect(appends(take()).map((m) => m.prevLogIndex)).toEqual([4]);
  });

  it("with a term the leader never had, it starts at the member's first entry of that term", () => {
    const { replicator, pr } = setup([1, 1, 3, 3, 3]);
    pr('b').next = 6;
    replicator.onAppendResponse(refused(5, 3, 2), pr('b'));
    expect(pr('b').next).toBe(3);
  });

  it('a stale rejection (of something already matched) is ignored', () => {
    const { replicator, pr, take } = setup([1, 1, 1]);
    pr('b').maybeUpdate(2);
    replicator.onAppendResponse(refused(1, 1, 1), pr('b'));
    expect([pr('b').match, pr('b').next]).toEqual([2, 4]);
    expect(take()).toEqual([]);
  });
});

describe('snapshots', () => {
  it('a member that needs compacted entries is streamed the snapshot in chunks, then probed after it', () => {
    const { log, replicator, pr, take } = setup([1, 1, 1]);
    log.compact({ meta: { index: 2, term: 1, conf: log.snapshot.meta.conf }, data: new Uint8Array([1, 2, 3, 4, 5, 6]) });
    pr('b').next = 1;
    replicator.sendAppend('b', true);
    const first = take() as Omit<InstallSnapshot, 'from' | 'term'>[];
    expect(first.map((m) => [m.type, m.offset, m.chunk.length, m.done])).toEqual([['InstallSnapshot', 0, 4, false]]);
    const answer = { type: 'InstallSnapshotResponse' as const, from: 'b', to: 'a', term: 1, snapshotIndex: 2, round: 0 };
    replicator.onSnapshotResponse({ ...answer, nextOffset: 4, done: false, success: true }, pr('b'));
    const second = take() as Omit<InstallSnapshot, 'from' | 'term'>[];
    expect(second.map((m) => [m.offset, m.chunk.length, m.done])).toEqual([[4, 2, true]]);
    replicator.onSnapshotResponse({ ...answer, nextOffset: 0, done: true, success: true }, pr('b'));
    expect([pr('b').state, pr('b').match, pr('b').next]).toEqual(['probe', 2, 3]);
    expect(appends(take()).map((m) => [m.prevLogIndex, m.entries.map((e) => e.index)])).toEqual([[2, [3]]]);
  });

  it('a member that refused the snapshot it received whole (it did not verify) is sent it again from offset 0 at the next heartbeat, not at once', () => {
    const { log, replicator, pr, take } = setup([1, 1, 1]);
    log.compact({ meta: { index: 2, term: 1, conf: log.snapshot.meta.conf }, data: new Uint8Array([1, 2, 3, 4, 5, 6]) });
    pr('b').next = 1;
    replicator.sendAppend('b', true);
    const answer = { type: 'InstallSnapshotResponse' as const, from: 'b', to: 'a', term: 1, snapshotIndex: 2, round: 0 };
    replicator.onSnapshotResponse({ ...answer, nextOffset: 4, done: false, success: true }, pr('b'));
    take();
    // A refusal of a chunk out of order is answered at once, from the offset the member names.
    replicator.onSnapshotResponse({ ...answer, nextOffset: 4, done: false, success: false }, pr('b'));
    expect((take() as InstallSnapshot[]).map((m) => m.offset)).toEqual([4]);
    // Done, not taken: nothing now; the heartbeat starts the stream again from 0; the member stays in snapshot.
    replicator.onSnapshotResponse({ ...answer, nextOffset: 0, done: true, success: false }, pr('b'));
    expect(take()).toEqual([]);
    expect([pr('b').state, pr('b').match, pr('b').snapshotOffset]).toEqual(['snapshot', 0, 0]);
    replicator.broadcastHeartbeat();
    const again = (take() as InstallSnapshot[]).filter((m) => m.to === 'b');
    expect(again.map((m) => [m.type, m.offset, m.chunk.length, m.done])).toEqual([['InstallSnapshot', 0, 4, false]]);
  });
});

describe('heartbeats', () => {
  it("anchored at the member's match index, never carrying a commit index past it; each broadcast a new round", () => {
    const { replicator, pr, take } = setup([1, 1, 1, 1], 4);
    pr('b').maybeUpdate(2);
    pr('b').becomeReplicate();
    pr('c').maybeUpdate(4);
    pr('c').becomeReplicate();
    replicator.broadcastHeartbeat();
    const sent = appends(take());
    const beat = (to: string) => sent.find((m) => m.to === to && m.entries.length === 0)!;
    expect([beat('b').prevLogIndex, beat('b').leaderCommit, beat('b').round]).toEqual([2, 2, 1]);
    expect([beat('c').prevLogIndex, beat('c').leaderCommit, beat('c').round]).toEqual([4, 4, 1]);
    // b is behind: its missing entries follow the heartbeat.
    expect(sent.filter((m) => m.to === 'b' && m.entries.length > 0).map((m) => m.entries.map((e) => e.index))).toEqual([[3, 4]]);
    replicator.broadcastHeartbeat();
    expect(appends(take()).every((m) => m.round === 2)).toBe(true);
  });

  it('nothing new for a pipelining member: only a commit notice, anchored at its match', () => {
    const { replicator, pr, take } = setup([1, 1], 2);
    pr('b').maybeUpdate(2);
    pr('b').becomeReplicate();
    replicator.sendAppend('b', true);
    expect(take()).toEqual([
      { type: 'AppendEntries', to: 'b', prevLogIndex: 2, prevLogTerm: 1, entries: [], leaderCommit: 2, round: 0, commitOnly: true },
    ]);
  });

  it('a pipelining member that is behind and has made no progress for more than 3 ticks is probed again', () => {
    const { replicator, pr } = setup([1, 1, 1]);
    pr('b').maybeUpdate(1);
    pr('b').becomeReplicate();
    pr('b').sentEntries(3);
    for (let i = 0; i < 4; i++) replicator.countStalls();
    expect(pr('b').ticksWithoutProgress).toBe(4);
    replicator.broadcastHeartbeat();
    expect(pr('b').state).toBe('probe');
    expect(pr('b').ticksWithoutProgress).toBe(0);
  });

  it('a caught-up member is never counted as stalled', () => {
    const { replicator, pr } = setup([1, 1]);
    pr('b').maybeUpdate(2);
    replicator.countStalls();
    expect(pr('b').ticksWithoutProgress).toBe(0);
  });
});
