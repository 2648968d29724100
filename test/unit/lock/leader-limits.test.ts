// Admission limits at the lock leader (SPEC "Limits"): each limit refuses with RESOURCE_EXHAUSTED naming
// itself and its value, counting what is held plus what is in flight, and the leader keeps serving.
import { describe, expect, it } from 'vitest';
import { NO_LOCK_LIMITS, type LockLimitSettings } from '../../../src/lock/leader/index.js';
import { LeaderRig } from './leader-rig.js';

const rigWith = (limits: Partial<LockLimitSettings>, extra = {}) => new LeaderRig({ limits: { ...NO_LOCK_LIMITS, ...limits }, ...extra }).ready();

function exhausted(rig: LeaderRig, callId: number): string {
  const f = rig.failures.get(callId);
  expect(f?.kind, `call ${callId}: ${JSON.stringify(f ?? rig.answers.get(callId), (_k, v) => (typeof v === 'bigint' ? `${v}` : v))}`).toBe('exhausted');
  return f!.message;
}

describe('lock leader: limits', () => {
  it('maxHeld counts leases in flight: the third concurrent acquire is refused before anything commits', () => {
    const rig = rigWith({ maxHeld: 2 });
    rig.acquire('a', 'o1');
    rig.acquire('b', 'o2');
    const third = rig.acquire('c', 'o3');
    expect(exhausted(rig, third)).toBe('limit limits.maxHeld (2) reached: that many locks are held or being acquired; retry after some are released or expire');
    expect(rig.pendingOf('acquire')).toHaveLength(2);
    rig.commitAll();
    // Re-acquiring a key that has a lease adds none: allowed at the limit.
    const again = rig.acquire('a', 'o1');
    rig.commitAll();
    expect(rig.acquired(again).acquired).toBe(true);
  });

  it('maxHeld frees up when a lock is released, and the node keeps serving', () => {
    const rig = rigWith({ maxHeld: 1 });
    const a = rig.hold('a', 'o1');
    const refused = rig.acquire('b', 'o2');
    exhausted(rig, refused);
    rig.release('a', 'o1', a.token);
    rig.commitAll();
    expect(rig.hold('b', 'o2').acquired).toBe(true);
  });

  it('maxHeldPerOwner: one owner is capped, another is not', () => {
    const rig = rigWith({ maxHeldPerOwner: 2 });
    rig.hold('a', 'alice');
    rig.hold('b', 'alice');
    expect(exhausted(rig, rig.acquire('c', 'alice'))).toMatch(/^limit limits\.maxHeldPerOwner \(2\) reached: owner "alice"/);
    expect(rig.hold('c', 'bob').acquired).toBe(true);
    // alice re-acquiring a key she holds adds no lease: allowed.
    const again = rig.acquire('a', 'alice');
    rig.commitAll();
    expect(rig.acquired(again).acquired).toBe(true);
  });

  it('maxKeys counts free keys too, and forgetting them makes room again', () => {
    const rig = rigWith({ maxKeys: 2 }, { freeKeyRetentionMs: 60_000 });
    const a = rig.hold('a', 'o');
    rig.release('a', 'o', a.token);
    rig.commitAll();
    rig.hold('b', 'o');
    expect(rig.machine.keyCount).toBe(2);
    expect(exhausted(rig, rig.acquire('c', 'o'))).toMatch(/^limit limits\.maxKeys \(2\) reached/);
    // A key with a record (free 'a') is no new record: allowed.
    expect(rig.hold('a', 'p').acquired).toBe(true);
    rig.release('a', 'p', rig.machine.get('a').token);
    rig.commitAll();
    // After the retention (log time) the leader proposes a forget for the free key; then 'c' fits.
    rig.advance(61_000);
    expect(rig.pendingOf('forget')).toHaveLength(0); // retention is judged in log time, which has not moved
    rig.hold('b', 'o'); // a re-acquire stamped now moves log time past the retention
    rig.advance(10);
    expect(rig.pendingOf('forget').map((p) => p.command)).toEqual([{ type: 'forget', timeMs: rig.nowMs, upToMs: rig.machine.nowMs - 60_000 }]);
    rig.commitAll();
    expect(rig.machine.keyCount).toBe(1);
    expect(rig.machine.get('a').lastToken).toBe(rig.machine.lastTokenWatermark);
    expect(rig.hold('c', 'o').acquired).toBe(true);
  });

  it('maxWaitersPerKey and maxWaiters refuse a new waiter, not the holder or a wait_ms 0 call', () => {
    const rig = rigWith({ maxWaitersPerKey: 2, maxWaiters: 3 });
    rig.hold('k', 'h');
    rig.hold('j', 'h');
    rig.acquire('k', 'w1', { waitMs: 60_000 });
    rig.commitAll();
    rig.acquire('k', 'w2', { waitMs: 60_000 });
    expect(exhausted(rig, rig.acquire('k', 'w3', { waitMs: 60_000 }))).toBe('limit limits.maxWaitersPerKey (2) reached: that many callers already wait for this key');
    rig.acquire('j', 'w4', { waitMs: 60_000 });
    rig.commitAll();
    expect(exhausted(rig, rig.acquire('j', 'w5', { waitMs: 60_000 }))).toBe('limit limits.maxWaiters (3) reached: that many callers already wait for locks');
    // A wait_ms 0 call is refused as usual ("held"), not with a limit.
    const plain = rig.acquire('k', 'w6');
    expect(rig.failures.has(plain)).toBe(false);
    rig.commitAll();
    expect(rig.machine.waiterCount).toBe(3); // counted from the replicated lines
  });

  it('a waiter whose owner is at maxHeldPerOwner is refused the limit when it asks (a hand-off is never refused); the next one is granted', () => {
    const rig = rigWith({ maxHeldPerOwner: 1 });
    const h = rig.hold('k', 'h');
    rig.hold('other', 'greedy');
    const greedy = rig.acquire('k', 'greedy', { waitMs: 60_000 }); // joins: its first acquire is judged now
    expect(exhausted(rig, greedy)).toMatch(/maxHeldPerOwner/);
    rig.acquire('k', 'w1', { waitMs: 60_000 });
    rig.commitAll();
    const w2 = rig.acquire('k', 'w2', { waitMs: 60_000 });
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.failures.has(w2)).toBe(false);
  });
});
