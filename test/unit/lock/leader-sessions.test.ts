// The lock leader's part in sessions (session.ts): it proposes the session calls, refuses an owner that is
// not the session's (INVALID_ARGUMENT) and what the limits forbid (maxSessions, maxHoldsPerSession), and
// proposes expireSession once a session's deadline has passed by its clock.
import { describe, expect, it } from 'vitest';
import { NO_ADMISSION_LIMITS } from '../../../src/lock/leader/index.js';
import type { OpenSessionResult } from '../../../src/lock/types.js';
import { LeaderRig } from './leader-rig.js';

function open(rig: LeaderRig, owner = 'a', ttlMs = 1000): number {
  const id = rig.session({ op: 'openSession', owner, ttlMs });
  rig.commitAll();
  return Number((rig.answers.get(id) as OpenSessionResult).sessionId);
}

describe('lock leader: sessions', () => {
  it('opens, acquires under, and expires a session by its clock: one expireSession for all its holds', () => {
    const rig = new LeaderRig().ready();
    const sid = open(rig, 'a', 1000);
    for (const key of ['k1', 'k2', 'k3']) {
      const id = rig.acquire(key, 'a', { sessionId: sid });
      rig.commitAll();
      expect(rig.acquired(id)).toMatchObject({ acquired: true, ttlMs: 1000 });
    }
    rig.advance(999);
    expect(rig.pendingOf('expireSession')).toEqual([]);
    expect(rig.pendingOf('expire')).toEqual([]);
    rig.advance(1);
    expect(rig.pendingOf('expireSession').map((p) => p.command)).toMatchObject([{ type: 'expireSession', sessionId: sid }]);
    rig.advance(100); // still in flight: not proposed twice
    expect(rig.pendingOf('expireSession')).toHaveLength(1);
    rig.commitAll();
    expect(rig.machine.leaseCount).toBe(0);
    expect(rig.machine.sessionCount).toBe(0);
  });

  it('a renewed session is not expired; renew and close are proposed as asked', () => {
    const rig = new LeaderRig().ready();
    const sid = open(rig, 'a', 1000);
    rig.advance(900);
    const r = rig.session({ op: 'renewSession', sessionId: sid });
    rig.commitAll();
    expect(rig.answers.get(r)).toMatchObject({ type: 'renewSession', renewed: true });
    rig.advance(900);
    expect(rig.pendingOf('expireSession')).toEqual([]);
    const c = rig.session({ op: 'closeSession', sessionId: sid, owner: 'a' });
    rig.commitAll();
    expect(rig.answers.get(c)).toMatchObject({ type: 'closeSession', ended: true });
  });

  it("an owner that is not the session's is INVALID_ARGUMENT before anything is proposed", () => {
    const rig = new LeaderRig().ready();
    const sid = open(rig, 'a');
    const before = rig.proposed.length;
    const id = rig.acquire('k', 'b', { sessionId: sid });
    expect(rig.failures.get(id)).toMatchObject({ kind: 'invalid', message: expect.stringMatching(/"b" is not the owner of session/) });
    expect(rig.proposed.length).toBe(before);
  });

  it('limits: maxSessions counts open sessions and opens in flight; maxHoldsPerSession counts holds and acquires in flight', () => {
    const rig = new LeaderRig({ limits: { ...NO_ADMISSION_LIMITS, maxSessions: 2, maxHoldsPerSession: 2 } }).ready();
    const sid = open(rig, 'a');
    rig.session({ op: 'openSession', owner: 'b', ttlMs: 1000 }); // in flight
    const third = rig.session({ op: 'openSession', owner: 'c', ttlMs: 1000 });
    expect(rig.failures.get(third)).toMatchObject({ kind: 'exhausted', message: expect.stringMatching(/limits\.maxSessions \(2\)/) });
    rig.commitAll();
    rig.acquire('k1', 'a', { sessionId: sid });
    rig.commitAll();
    rig.acquire('k2', 'a', { sessionId: sid }); // in flight
    const over = rig.acquire('k3', 'a', { sessionId: sid });
    expect(rig.failures.get(over)).toMatchObject({ kind: 'exhausted', message: expect.stringMatching(/limits\.maxHoldsPerSession \(2\)/) });
    rig.commitAll();
    expect(rig.machine.sessionInfo(sid)?.holds).toBe(2);
  });
});
