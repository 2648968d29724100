// The progress tracker alone (src/raft/core/tracker.ts): the votes of an election, the leader's Progress
// per member as the configuration changes, and the majorities it takes over them — the current voters
// only, never a learner or a leader outside its own configuration.
import { describe, expect, it } from 'vitest';
import { ProgressTracker } from '../../../src/raft/core/tracker.js';

function tracker(voters: string[], learners: string[] = []): ProgressTracker {
  const t = new ProgressTracker();
  t.useConf(voters, learners);
  return t;
}

describe('votes', () => {
  it('an election is won by a majority of grants and lost by a majority of refusals', () => {
    const t = tracker(['a', 'b', 'c']);
    t.recordVote('a', true);
    expect(t.tallyVotes()).toBe('pending');
    t.recordVote('b', true);
    expect(t.tallyVotes()).toBe('won');

    const u = tracker(['a', 'b', 'c']);
    u.recordVote('a', true);
    u.recordVote('b', false);
    expect(u.tallyVotes()).toBe('pending');
    u.recordVote('c', false);
    expect(u.tallyVotes()).toBe('lost');
  });

  it("only a voter's first answer counts (a duplicate or a changed mind is ignored)", () => {
    const t = tracker(['a', 'b', 'c']);
    t.recordVote('a', true);
    t.recordVote('b', false);
    t.recordVote('b', true);
    expect(t.tallyVotes()).toBe('pending');
    expect(t.hasAnswered('b')).toBe(true);
    expect(t.hasAnswered('c')).toBe(false);
  });

  it("a learner's or a stranger's grant wins nothing", () => {
    const t = tracker(['a', 'b', 'c'], ['l']);
    t.recordVote('a', true);
    t.recordVote('l', true);
    t.recordVote('x', true);
    expect(t.tallyVotes()).toBe('pending');
  });

  it('resetVotes forgets every answer', () => {
    const t = tracker(['a', 'b', 'c']);
    t.recordVote('a', true);
    t.recordVote('b', true);
    t.resetVotes();
    expect(t.hasAnswered('a')).toBe(false);
    expect(t.tallyVotes()).toBe('pending');
  });
});

describe('leading: one Progress per member', () => {
  it('a new leader tracks every voter and learner from the end of its log, itself at its durable index', () => {
    const t = tracker(['a', 'b', 'c'], ['l']);
    t.startLeading('a', 10, 8);
    expect([...t.view()]).toEqual([
      ['a', { match: 8, next: 11, state: 'probe' }],
      ['b', { match: 0, next: 11, state: 'probe' }],
      ['c', { match: 0, next: 11, state: 'probe' }],
      ['l', { match: 0, next: 11, state: 'probe' }],
    ]);
    // Everyone counts as heard from, so the first CheckQuorum round keeps the new leader.
    expect(t.quorumActive('a')).toBe(true);
  });

  it('a leader outside its own configuration (removing itself) still tracks its own durable index', () => {
    const t = tracker(['b', 'c', 'd']);
    t.startLeading('a', 10, 9);
    expect(t.view().get('a')).toEqual({ match: 9, next: 11, state: 'probe' });
    expect(t.view().size).toBe(4);
  });

  it('a member added while leading is probed with the last entry; a removed one is forgotten; the leader stays', () => {
    const t = tracker(['a', 'b', 'c']);
    t.startLeading('a', 10, 10);
    t.progress.get('b')!.maybeUpdate(10);
    t.useConf(['b', 'c'], ['n']);
    t.trackMembers('a', 12);
    expect([...t.view().keys()]).toEqual(['a', 'b', 'c', 'n']);
    expect(t.view().get('n')).toEqual({ match: 0, next: 12, state: 'probe' });
    // Members already tracked keep what the leader knows of them.
    expect(t.view().get('b')).toEqual({ match: 10, next: 11, state: 'probe' });
  });

  it('clearProgress: no role but leader tracks anyone', () => {
    const t = tracker(['a', 'b']);
    t.startLeading('a', 1, 1);
    t.clearProgress();
    expect(t.view().size).toBe(0);
    expect(t.mostCaughtUpVoter()).toBeNull();
  });

  it('view() is a copy: changing it changes nothing tracked', () => {
    const t = tracker(['a', 'b']);
    t.startLeading('a', 5, 5);
    const v = t.view();
    v.get('b')!.match = 99;
    v.delete('a');
    expect(t.view().get('b')!.match).toBe(0);
    expect(t.view().has('a')).toBe(true);
  });
});

describe('majorities over the progress', () => {
  it('committed(): the highest index a majority of the voters hold; a learner counts for nothing', () => {
    const t = tracker(['a', 'b', 'c'], ['l']);
    t.startLeading('a', 0, 7);
    t.progress.get('b')!.maybeUpdate(5);
    t.progress.get('l')!.maybeUpdate(9);
    expect(t.committed()).toBe(5);
    t.progress.get('c')!.maybeUpdate(9);
    expect(t.committed()).toBe(7);
  });

  it('committed(): a leader outside its configuration does not count its own copy', () => {
    const t = tracker(['b', 'c', 'd']);
    t.startLeading('a', 0, 9);
    t.progress.get('b')!.maybeUpdate(9);
    expect(t.committed()).toBe(0);
    t.progress.get('c')!.maybeUpdate(4);
    expect(t.committed()).toBe(4);
  });

  it('quorumActive(): a majority of voters heard from since the last round; each round starts afresh', () => {
    const t = tracker(['a', 'b', 'c', 'd', 'e'], ['l']);
    t.startLeading('a', 0, 0);
    expect(t.quorumActive('a')).toBe(true);
    // Nobody heard from since: the leader alone is no majority.
    expect(t.quorumActive('a')).toBe(false);
    t.progress.get('b')!.recentActive = true;
    t.progress.get('l')!.recentActive = true;
    expect(t.quorumActive('a')).toBe(false);
    t.progress.get('b')!.recentActive = true;
    t.progress.get('c')!.recentActive = true;
    expect(t.quorumActive('a')).toBe(true);
    expect(t.progress.get('b')!.recentActive).toBe(false);
  });

  it('isQuorum(): the voters among the acknowledgements must be a majority', () => {
    const t = tracker(['a', 'b', 'c'], ['l']);
    expect(t.isQuorum(new Set(['a', 'l']))).toBe(false);
    expect(t.isQuorum(new Set(['a', 'c']))).toBe(true);
  });

  it('mostCaughtUpVoter(): the voter that matches furthest, the first of equals; never a learner', () => {
    const t = tracker(['a', 'b', 'c'], ['l']);
    t.startLeading('a', 0, 3);
    t.progress.get('b')!.maybeUpdate(6);
    t.progress.get('c')!.maybeUpdate(6);
    t.progress.get('l')!.maybeUpdate(9);
    expect(t.mostCaughtUpVoter()!.id).toBe('b');
  });
});
