// Admission limits at the lock leader (SPEC "Limits"): each limit refuses with RESOURCE_EXHAUSTED naming
// itself and its value, counting what is held plus what is in flight, and the leader keeps serving.
import { describe, expect, it } from 'vitest';
import { NO_ADMISSION_LIMITS, type AdmissionLimits } from '../../../src/lock/leader/index.js';
import { LEVEL_MANY_HOLDERS } from '../../../src/lock/versions.js';
import { LeaderRig } from './leader-rig.js';

const rigWith = (limits: Partial<AdmissionLimits>, extra = {}) =>
  new LeaderRig({ limits: { ...NO_ADMISSION_LIMITS, ...limits }, ...extra }).ready();

function exhausted(rig: LeaderRig, callId: number): string {
  const f = rig.failures.get(callId);
  expect(f?.kind, `call ${callId}: ${JSON.stringify(f ?? rig.answers.get(callId), (_k, v) => (typeof v === 'bigint' ? `${v}` : v))}`).toBe(
    'exhausted',
  );
  return f!.message;
}

describe('lock leader: limits', () => {
  it('maxHeld counts leases in flight: the third concurrent acquire is refused before anything commits', () => {
    const rig = rigWith({ maxHeld: 2 });
    rig.acquire('a', 'o1');
    rig.acquire('b', 'o2');
    const third = rig.acquire('c', 'o3');
    expect(exhausted(rig, third)).toBe(
      'limit limits.maxHeld (2) reached: that many locks are held or being acquired; retry after some are released or expire',
    );
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
    expect(rig.pendingOf('forget').map((p) => p.command)).toEqual([
      { type: 'forget', timeMs: rig.nowMs, upToMs: rig.machine.logNowMs - 60_000 },
    ]);
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
    expect(exhausted(rig, rig.acquire('k', 'w3', { waitMs: 60_000 }))).toBe(
      'limit limits.maxWaitersPerKey (2) reached: that many callers already wait for this key',
    );
    rig.acquire('j', 'w4', { waitMs: 60_000 });
    rig.commitAll();
    expect(exhausted(rig, rig.acquire('j', 'w5', { waitMs: 60_000 }))).toBe(
      'limit limits.maxWaiters (3) reached: that many callers already wait for locks',
    );
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

  // Issue 22 finding 7, "limits across a leader change": the counts must be those of the whole log, not
  // only of what applied plus the calls this leader still waits on.
  describe('counted from the log', () => {
    it('an acquire whose proposal timed out still counts until its entry applies (the entry stays in the log and may commit)', () => {
      const rig = rigWith({ maxHeld: 1 });
      rig.acquire('a', 'o1');
      const [first] = rig.pendingOf('acquire');
      // The driver gives up waiting (outcome unknown, the client retries); the entry is still in the leader's
      // log and commits later, with whatever the leader admitted meanwhile.
      rig.reportTimeout(first!.proposalId);
      const second = rig.acquire('b', 'o2');
      rig.commitAll();
      expect(rig.machine.leaseCount, 'leases held once the log applied (limits.maxHeld is 1)').toBe(1);
      expect(exhausted(rig, second)).toBe(
        'limit limits.maxHeld (1) reached: that many locks are held or being acquired; retry after some are released or expire',
      );
      // Once its entry applied, the lease is counted from the state (once): releasing it makes room.
      rig.release('a', 'o1', rig.machine.get('a').token);
      rig.commitAll();
      expect(rig.hold('b', 'o2').acquired).toBe(true);
    });

    it('the same for the other limits: per owner, key records, waiters, sessions', () => {
      const cases: {
        limits: Partial<AdmissionLimits>;
        first: (rig: LeaderRig) => void;
        next: (rig: LeaderRig) => number;
        limit: RegExp;
      }[] = [
        {
          limits: { maxHeldPerOwner: 1 },
          first: (rig) => rig.acquire('a', 'alice'),
          next: (rig) => rig.acquire('b', 'alice'),
          limit: /^limit limits\.maxHeldPerOwner \(1\)/,
        },
        {
          limits: { maxKeys: 1 },
          first: (rig) => rig.acquire('a', 'o1'),
          next: (rig) => rig.acquire('b', 'o2'),
          limit: /^limit limits\.maxKeys \(1\)/,
        },
        {
          limits: { maxWaiters: 1 },
          first: (rig) => rig.acquire('k', 'w1', { waitMs: 60_000 }),
          next: (rig) => rig.acquire('k', 'w2', { waitMs: 60_000 }),
          limit: /^limit limits\.maxWaiters \(1\)/,
        },
        {
          limits: { maxSessions: 1 },
          first: (rig) => rig.session({ op: 'openSession', owner: 'o1', ttlMs: 10_000 }),
          next: (rig) => rig.session({ op: 'openSession', owner: 'o2', ttlMs: 10_000 }),
          limit: /^limit limits\.maxSessions \(1\)/,
        },
      ];
      for (const c of cases) {
        const rig = rigWith(c.limits);
        if (c.limits.maxWaiters !== undefined) rig.hold('k', 'holder');
        c.first(rig);
        rig.reportTimeout(rig.pending[rig.pending.length - 1]!.proposalId);
        const next = c.next(rig);
        rig.commitAll();
        expect(exhausted(rig, next)).toMatch(c.limit);
      }
    });

    it('a timed-out claim ends with the leadership: re-elected, the node counts that entry from the state once its term start applied', () => {
      const rig = rigWith({ maxHeld: 1 });
      rig.acquire('a', 'o1');
      rig.reportTimeout(rig.pendingOf('acquire')[0]!.proposalId);
      rig.stepDown();
      rig.elect(); // its termStart goes after the old entry, which is still in the log
      const b = rig.acquire('b', 'o2'); // held until the term starts
      expect(rig.pendingOf('acquire')).toHaveLength(1);
      rig.commitAll();
      expect(rig.machine.leaseCount).toBe(1);
      expect(exhausted(rig, b)).toMatch(/^limit limits\.maxHeld \(1\)/);
      // The old claim is gone (not counted twice): once 'a' is released, 'b' fits.
      rig.release('a', 'o1', rig.machine.get('a').token);
      rig.commitAll();
      expect(rig.hold('b', 'o2').acquired).toBe(true);
    });

    it('an acquire judged while its key was held counts the lease once that hold ends before it applies (lock simulation seeds 271, 470)', () => {
      // o2 waits for 'a' (held by o1: it claims no lease); o1's release commits first, so o2's entry will
      // take 'a'. An acquire admitted in between must count that: the release made no room.
      const rig = rigWith({ maxHeld: 1 });
      const a = rig.hold('a', 'o1');
      rig.release('a', 'o1', a.token);
      rig.acquire('a', 'o2', { waitMs: 60_000 });
      rig.commit(); // the release: 'a' is free, o2's acquire still in flight
      const third = rig.acquire('b', 'o3');
      rig.commitAll();
      expect(rig.machine.leaseCount, 'leases held once the log applied (limits.maxHeld is 1)').toBe(1);
      expect(exhausted(rig, third)).toMatch(/^limit limits\.maxHeld \(1\)/);
    });

    it('the same per owner and for key records: a supersede whose hold ends first, a record forgotten first', () => {
      const owner = rigWith({ maxHeldPerOwner: 1 });
      const held = owner.hold('a', 'alice');
      owner.release('a', 'alice', held.token);
      owner.acquire('a', 'alice'); // a re-acquire of her own hold: no lease of hers claimed
      owner.commit(); // the release
      const other = owner.acquire('b', 'alice');
      owner.commitAll();
      expect(owner.machine.leaseCountOf('alice')).toBe(1);
      expect(exhausted(owner, other)).toMatch(/^limit limits\.maxHeldPerOwner \(1\)/);

      const keys = rigWith({ maxKeys: 1 }, { freeKeyRetentionMs: 60_000 });
      const k = keys.hold('a', 'o');
      keys.release('a', 'o', k.token);
      keys.commitAll();
      keys.advance(61_000);
      keys.release('x', 'o', 1n); // an entry that moves log time past the retention, and keeps no record
      keys.commitAll();
      keys.advance(10); // the leader proposes forgetting 'a'
      expect(keys.pendingOf('forget')).toHaveLength(1);
      keys.acquire('a', 'o2'); // 'a' still has its free record: no record claimed
      keys.commit(); // the forget
      const b = keys.acquire('b', 'o3');
      keys.commitAll();
      expect(keys.machine.keyCount).toBe(1);
      expect(exhausted(keys, b)).toMatch(/^limit limits\.maxKeys \(1\)/);
    });

    it('a shared acquire counts a lease even where its key has one now: two admitted beside one exclusive hold would both be granted once it ends (lock simulation seed 861)', () => {
      const rig = rigWith({ maxHeld: 2 });
      rig.step({ type: 'members', readLevel: LEVEL_MANY_HOLDERS, ran: [] });
      rig.advance(10);
      rig.commitAll();
      expect(rig.machine.clusterLevel).toBe(LEVEL_MANY_HOLDERS);
      rig.hold('k', 'o4');
      const r = rig.hold('r', 'o1'); // exclusive: two leases now, the limit
      rig.release('r', 'o1', r.token);
      const first = rig.acquire('r', 'o2', { shared: true, waitMs: 60_000 });
      const second = rig.acquire('r', 'o3', { shared: true, waitMs: 60_000 });
      rig.commitAll();
      expect(rig.machine.leaseCount, 'leases held once the log applied (limits.maxHeld is 2)').toBeLessThanOrEqual(2);
      expect(exhausted(rig, first)).toMatch(/^limit limits\.maxHeld \(2\)/);
      expect(exhausted(rig, second)).toMatch(/^limit limits\.maxHeld \(2\)/);
    });

    it("a new leader inherits the deposed one's acquires in its log: it admits nothing before its term start applied, so they are counted (the term gate)", () => {
      // Leader B never proposed the two acquires: deposed leader A did (they were in flight there, up to
      // the limit), and they sit in B's log, uncommitted, when B is elected. B's termStart goes after them.
      const b = new LeaderRig({ limits: { ...NO_ADMISSION_LIMITS, maxHeld: 2 } });
      for (const [key, owner] of [
        ['a', 'o1'],
        ['b', 'o2'],
      ] as const) {
        b.pending.push({
          proposalId: -1,
          command: { type: 'acquire', timeMs: b.nowMs, key, owner, ttlMs: 10_000, requestId: `${owner}-1` },
          timeoutMs: 5000,
        });
      }
      b.elect(2);
      const third = b.acquire('c', 'o3');
      b.commitAll();
      expect(b.machine.leaseCount, 'leases held once the log applied (limits.maxHeld is 2)').toBe(2);
      expect(exhausted(b, third)).toMatch(/^limit limits\.maxHeld \(2\)/);
    });
  });
});
