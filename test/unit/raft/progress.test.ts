// One follower's Progress alone (src/raft/core/progress.ts): probing sends one append at a time,
// replicating pipelines up to maxInflight, snapshotting sends no appends, and an answer moves match only
// forward.
import { describe, expect, it } from 'vitest';
import { Progress } from '../../../src/raft/core/progress.js';

describe('Progress', () => {
  it("starts probing just after the leader's last index", () => {
    const pr = new Progress('b', 10);
    expect([pr.state, pr.match, pr.next]).toEqual(['probe', 0, 11]);
    expect(pr.isPaused(4)).toBe(false);
  });

  it('probe: one append in flight, then paused until an answer', () => {
    const pr = new Progress('b', 10);
    pr.sentEntries(11);
    expect(pr.isPaused(4)).toBe(true);
    expect(pr.next).toBe(11);
    expect(pr.maybeUpdate(11)).toBe(true);
    expect(pr.isPaused(4)).toBe(false);
    expect([pr.match, pr.next]).toEqual([11, 12]);
  });

  it('replicate: pipelines up to maxInflight appends; an answer frees every append it covers', () => {
    const pr = new Progress('b', 0);
    pr.maybeUpdate(0);
    pr.becomeReplicate();
    pr.sentEntries(2);
    pr.sentEntries(4);
    expect(pr.next).toBe(5);
    expect(pr.isPaused(2)).toBe(true);
    pr.maybeUpdate(3);
    expect(pr.inflight).toEqual([4]);
    expect(pr.isPaused(2)).toBe(false);
  });

  it('an answer never moves match back, and a stale one reports no progress', () => {
    const pr = new Progress('b', 0);
    expect(pr.maybeUpdate(7)).toBe(true);
    expect(pr.maybeUpdate(5)).toBe(false);
    expect(pr.match).toBe(7);
  });

  it("becomeProbe after a snapshot resumes after the snapshot's index", () => {
    const pr = new Progress('b', 20);
    pr.becomeSnapshot(15);
    expect(pr.isPaused(64)).toBe(true);
    pr.becomeProbe();
    expect([pr.state, pr.next]).toEqual(['probe', 16]);
  });

  it('becomeProbe from replicate falls back to just after match and forgets the appends in flight', () => {
    const pr = new Progress('b', 0);
    pr.maybeUpdate(3);
    pr.becomeReplicate();
    pr.sentEntries(8);
    pr.becomeProbe();
    expect([pr.next, pr.inflight.length, pr.probeSent]).toEqual([4, 0, false]);
  });
});
