// A refusal the leader decides from its own memory (a wait deadline, no barging, a remembered refusal) is
// answered only after a read barrier: a leader deposed without knowing it fails the barrier instead of
// telling a client "not acquired" for a request a newer leader granted (lock simulation seeds 424, 3746,
// 5348), and past the barrier a grant of the very request that the log applied meanwhile is the answer.
import { describe, expect, it } from 'vitest';
import { encodeCommand } from '../../../src/lock/index.js';
import { LeaderRig } from './leader-rig.js';

/** Apply an entry another leader committed (the log moved on without this node's proposals). */
function applyForeign(rig: LeaderRig, command: Parameters<typeof encodeCommand>[0]): void {
  const index = rig.machine.appliedIndex + 1;
  const result = rig.machine.apply(index, rig.term, encodeCommand(command));
  rig.step({ type: 'applied', index, term: rig.term, result });
}

/** A ready leader that confirms refusals by hand, h holding k, and a's wait (300 ms) already over: the
 *  refusal decided, its read barrier not yet done. */
function refusedAtDeadline(requestId?: string): { rig: LeaderRig; a: number; h: ReturnType<LeaderRig['hold']> } {
  const rig = new LeaderRig().ready();
  rig.confirmRefusals = false;
  const h = rig.hold('k', 'h');
  const a = rig.acquire('k', 'a', { waitMs: 300, ...(requestId ? { requestId } : {}) });
  rig.commitAll();
  rig.advance(300);
  return { rig, a, h };
}

describe('lock leader: refusals decided here wait for a read barrier', () => {
  it('a waiter refused at its deadline is answered only once the barrier confirms', () => {
    const { rig, a } = refusedAtDeadline();
    expect(rig.answers.has(a)).toBe(false);
    expect(rig.refusalBarriers).toEqual([a]);
    rig.step({ type: 'readDone', callId: a });
    expect(rig.acquired(a)).toMatchObject({ acquired: false, holderOwner: 'h' });
  });

  it('a barrier that fails (no longer leader) fails the call UNAVAILABLE: no "not acquired"', () => {
    const { rig, a } = refusedAtDeadline();
    rig.step({ type: 'readFailed', callId: a, error: { kind: 'not-leader', message: 'not the leader', leaderId: 'n3' } });
    expect(rig.answers.has(a)).toBe(false);
    expect(rig.failures.get(a)?.kind).toBe('unavailable');
  });

  it('the log granted the very request before the barrier completed: the grant is the answer', () => {
    const { rig, a, h } = refusedAtDeadline('a-req'); // refused here at the deadline; barrier pending
    // Meanwhile the log (a newer leader's entries, seen once the barrier's commit index applies) released
    // the key and granted a's very request from that leader's queue (a `queued` acquire: the log had
    // refused a's first attempt, when the key was held).
    applyForeign(rig, { type: 'release', timeMs: rig.nowMs, key: 'k', owner: 'h', token: h.token, requestId: 'h-rel' });
    applyForeign(rig, { type: 'acquire', timeMs: rig.nowMs, key: 'k', owner: 'a', ttlMs: 10_000, requestId: 'a-req', queued: true });
    rig.step({ type: 'readDone', callId: a });
    expect(rig.acquired(a)).toMatchObject({ acquired: true, holderOwner: '' });
    expect(rig.acquired(a).token).toBe(rig.machine.get('k').token);
  });

  it('a wait_ms 0 newcomer refused behind waiters (no barging) also waits for the barrier', () => {
    const rig = new LeaderRig().ready();
    rig.confirmRefusals = false;
    rig.hold('k', 'h');
    rig.acquire('k', 'a', { waitMs: 1000 });
    rig.commitAll();
    const x = rig.acquire('k', 'x');
    expect(rig.answers.has(x)).toBe(false);
    rig.step({ type: 'readDone', callId: x });
    expect(rig.acquired(x)).toMatchObject({ acquired: false, holderOwner: 'h' });
  });

  it('a retry of a request refused here is answered from memory only after a new barrier', () => {
    const { rig, a } = refusedAtDeadline('a-req');
    rig.step({ type: 'readDone', callId: a });
    expect(rig.acquired(a).acquired).toBe(false);
    const retry = rig.acquire('k', 'a', { waitMs: 300, requestId: 'a-req' });
    expect(rig.answers.has(retry)).toBe(false);
    expect(rig.refusalBarriers).toEqual([a, retry]);
    rig.step({ type: 'readFailed', callId: retry, error: { kind: 'read-timeout', message: 'read timed out' } });
    expect(rig.failures.get(retry)?.kind).toBe('unavailable');
  });
});
