// Keys with many holds (holds.ts, machine.ts `many`; SPEC "Many holders"): semaphores and shared/exclusive
// holds, decided by the machine at log time — admission, FIFO hand-off one grant per entry (each hold its
// own token), the limit every request must name, supersede, expiry with lock-delay, sessions, revoke, Get,
// the snapshot (version 8) and the level gate.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import type { AcquireResult, LockResult } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

function level3(): Feed {
  const feed = new Feed();
  feed.at(1_000).termStart();
  feed.raiseLevel(3);
  return feed;
}

function acquired(r: LockResult): AcquireResult {
  if (r.type !== 'acquire') throw new Error(`expected an acquire result, got ${r.type}: ${'message' in r ? r.message : ''}`);
  return r;
}

function errorCode(r: LockResult): string {
  return r.type === 'error' ? r.code : `no error (${r.type})`;
}

/** The same machine restored from its snapshot has the same state (byte-identical snapshot). */
function roundTrips(feed: Feed): void {
  const bytes = feed.machine.snapshot();
  expect(bytes[3]).toBe(8);
  const copy = LockMachine.restore(bytes);
  expect(copy.snapshot()).toEqual(bytes);
  expect(copy.grantableKeys(100)).toEqual(feed.machine.grantableKeys(100));
}

describe('semaphores (limit >= 2)', () => {
  it('grants up to limit holds, each with its own increasing token; the next waits in line', () => {
    const feed = level3();
    const a = acquired(feed.many('pool', 'a', { limit: 3 }));
    const b = acquired(feed.many('pool', 'b', { limit: 3 }));
    const c = acquired(feed.many('pool', 'c', { limit: 3 }));
    expect([a.acquired, b.acquired, c.acquired]).toEqual([true, true, true]);
    expect(a.token < b.token && b.token < c.token).toBe(true);
    const d = acquired(feed.many('pool', 'd', { limit: 3 }));
    expect(d.acquired).toBe(false);
    expect(d.holderOwner).toBe('a');
    const e = acquired(feed.many('pool', 'e', { limit: 3, waitMs: 5000 }));
    expect(e.waitTicket).toBe(e.index);
    const view = feed.machine.get('pool');
    expect(view.holders?.map((h) => h.owner)).toEqual(['a', 'b', 'c']);
    expect(view.limit).toBe(3);
    expect(feed.machine.leaseCount).toBe(3);
    roundTrips(feed);
    // b leaves: e (the head) is handed the slot in that same entry, with that entry's index as its token.
    const released = feed.release('pool', 'b', b.token);
    expect(released.released).toBe(true);
    expect(released.decided?.map((x) => [x.owner, x.outcome.acquired, x.outcome.token])).toEqual([['e', true, BigInt(released.index)]]);
    expect(feed.machine.get('pool').holders?.map((h) => h.owner)).toEqual(['a', 'c', 'e']);
  });

  it("every request names the key's limit while it has holds or waiters; a free key takes a new one", () => {
    const feed = level3();
    acquired(feed.many('pool', 'a', { limit: 3 }));
    expect(errorCode(feed.many('pool', 'b', { limit: 4 }))).toBe('LIMIT_MISMATCH');
    expect(errorCode(feed.apply({ type: 'acquire', timeMs: feed.timeMs, key: 'pool', owner: 'b', ttlMs: 1000, requestId: '' }))).toBe(
      'LIMIT_MISMATCH',
    );
    expect(errorCode(feed.many('pool', 'b', { shared: true }))).toBe('LIMIT_MISMATCH');
    // A mutex in use refuses a semaphore request, naming limit 1.
    feed.acquire('mutex', 'x', 1000);
    const r = feed.many('mutex', 'y', { limit: 2 });
    expect(errorCode(r)).toBe('LIMIT_MISMATCH');
    expect(r.type === 'error' && r.message).toContain('has limit 1');
    // Once empty the key is free: it keeps its last token and takes any limit.
    const a = feed.machine.get('pool').token;
    feed.release('pool', 'a', a);
    expect(feed.machine.get('pool').lastToken).toBe(a);
    expect(acquired(feed.many('pool', 'b', { limit: 5 })).acquired).toBe(true);
  });

  it('a run of heads is granted one per entry; the rest are offered by handOff entries, in line order', () => {
    const feed = level3();
    const holds = ['a', 'b', 'c'].map((o) => acquired(feed.many('pool', o, { limit: 3, ttlMs: 10_000 })));
    for (const o of ['w1', 'w2', 'w3', 'w4']) acquired(feed.many('pool', o, { limit: 3, waitMs: 60_000 }));
    // An operator revokes every hold: three slots free in one entry, but that entry grants only w1.
    const revoked = feed.revoke('pool', 0n);
    expect(revoked.revoked).toEqual(holds.map((h) => h.token));
    expect(revoked.decided?.map((d) => d.owner)).toEqual(['w1']);
    expect(feed.machine.grantableKeys(10)).toEqual(['pool']);
    roundTrips(feed);
    const h2 = feed.handOff('pool');
    const h3 = feed.handOff('pool');
    expect([h2.granted, h3.granted]).toEqual([true, true]);
    expect(h2.decided?.[0]?.owner).toBe('w2');
    expect(h3.decided?.[0]?.outcome.token).toBe(BigInt(h3.index));
    // Full again: w4 waits, nothing to hand off.
    expect(feed.machine.grantableKeys(10)).toEqual([]);
    expect(feed.handOff('pool').granted).toBe(false);
    expect(feed.machine.get('pool').holders?.map((h) => h.owner)).toEqual(['w1', 'w2', 'w3']);
  });

  it('a newcomer never overtakes the line, even when a slot is free', () => {
    const feed = level3();
    const a = acquired(feed.many('pool', 'a', { limit: 2 }));
    const b = acquired(feed.many('pool', 'b', { limit: 2 }));
    acquired(feed.many('pool', 'w1', { limit: 2, waitMs: 60_000 }));
    acquired(feed.many('pool', 'w2', { limit: 2, waitMs: 60_000 }));
    feed.revoke('pool', a.token); // w1 granted
    feed.release('pool', 'b', b.token); // w2 granted
    expect(feed.machine.get('pool').holders?.map((h) => h.owner)).toEqual(['w1', 'w2']);
    const late = acquired(feed.many('pool', 'late', { limit: 2, waitMs: 60_000 }));
    expect(late.waitTicket).toBeDefined();
  });

  it('an owner has one hold per key: its re-acquire supersedes its token', () => {
    const feed = level3();
    const a1 = acquired(feed.many('pool', 'a', { limit: 2 }));
    const a2 = acquired(feed.many('pool', 'a', { limit: 2 }));
    expect(a2.acquired).toBe(true);
    expect(a2.token > a1.token).toBe(true);
    expect(feed.machine.get('pool').holders?.map((h) => h.token)).toEqual([a2.token]);
    expect(feed.renew('pool', 'a', a1.token, 1000).reason).toBe('WRONG_TOKEN');
    expect(feed.renew('pool', 'a', a2.token, 1000).renewed).toBe(true);
    expect(feed.renew('pool', 'z', a2.token, 1000).reason).toBe('WRONG_OWNER');
  });

  it('a hold that ran out counts for nothing and ends in the entry that meets it, its lock-delay from its end', () => {
    const feed = level3();
    const a = acquired(feed.many('pool', 'a', { limit: 1 + 1, ttlMs: 1000, lockDelayMs: 2000 }));
    acquired(feed.many('pool', 'b', { limit: 2, ttlMs: 10_000 }));
    feed.at(feed.timeMs + 1500);
    // a's lease ended 500 ms ago: the key is in lock-delay until 1500 ms from now.
    const c = acquired(feed.many('pool', 'c', { limit: 2 }));
    expect(c.acquired).toBe(false);
    expect(c.delayMsLeft).toBe(1500);
    expect(feed.machine.get('pool').holders?.map((h) => h.owner)).toEqual(['b']);
    expect(feed.expire('pool', a.token).expired).toBe(false); // already ended
    feed.at(feed.timeMs + 1500);
    expect(acquired(feed.many('pool', 'c', { limit: 2 })).acquired).toBe(true);
  });
});

describe('shared and exclusive holds (limit 1)', () => {
  it('shared holds run together; an exclusive request waits for all of them, and a later reader waits behind it', () => {
    const feed = level3();
    const r1 = acquired(feed.many('doc', 'r1', { shared: true }));
    const r2 = acquired(feed.many('doc', 'r2', { shared: true }));
    expect([r1.acquired, r2.acquired]).toEqual([true, true]);
    const w = acquired(
      feed.apply({ type: 'acquire', timeMs: feed.timeMs, key: 'doc', owner: 'w', ttlMs: 1000, requestId: '', waitMs: 60_000 }),
    );
    expect(w.waitTicket).toBeDefined();
    // No writer starvation: a reader behind the waiting writer waits too.
    const r3 = acquired(feed.many('doc', 'r3', { shared: true, waitMs: 60_000 }));
    expect(r3.waitTicket).toBeDefined();
    expect(acquired(feed.many('doc', 'r4', { shared: true })).acquired).toBe(false);
    expect(feed.release('doc', 'r1', r1.token).decided).toBeUndefined(); // r2 still reads
    const last = feed.release('doc', 'r2', r2.token);
    expect(last.decided?.map((d) => [d.owner, d.outcome.acquired])).toEqual([['w', true]]);
    const view = feed.machine.get('doc');
    expect(view.holders?.map((h) => [h.owner, h.shared])).toEqual([['w', false]]);
    roundTrips(feed);
    const wDone = feed.release('doc', 'w', BigInt(last.index));
    expect(wDone.decided?.map((d) => d.owner)).toEqual(['r3']);
  });

  it('a shared request on a mutex in use waits in its line, and turns the key into shared holds at its turn', () => {
    const feed = level3();
    const x = feed.acquire('k', 'x', 1000);
    acquired(feed.many('k', 'r1', { shared: true, waitMs: 60_000 }));
    acquired(feed.many('k', 'r2', { shared: true, waitMs: 60_000 }));
    const released = feed.release('k', 'x', x.token);
    expect(released.decided?.map((d) => d.owner)).toEqual(['r1']);
    expect(feed.machine.grantableKeys(5)).toEqual(['k']);
    expect(feed.handOff('k').decided?.map((d) => d.owner)).toEqual(['r2']);
    expect(feed.machine.get('k').holders?.map((h) => h.owner)).toEqual(['r1', 'r2']);
  });

  it('a plain acquire that ends a run-out mutex hold hands the key to a shared head first, then is judged as one of many', () => {
    const feed = level3();
    feed.acquire('k', 'x', 1000);
    acquired(feed.many('k', 'r1', { shared: true, waitMs: 60_000 }));
    feed.at(feed.timeMs + 1500); // x's lease ran out; no expire entry yet
    const y = acquired(feed.apply({ type: 'acquire', timeMs: feed.timeMs, key: 'k', owner: 'y', ttlMs: 1000, requestId: '' }));
    expect(y.decided?.map((d) => [d.owner, d.outcome.acquired])).toEqual([['r1', true]]);
    expect(y.acquired).toBe(false); // exclusive: a reader holds
    expect(y.holderOwner).toBe('r1');
    expect(feed.machine.get('k').holders?.map((h) => h.owner)).toEqual(['r1']);
    expect(feed.machine.leaseCount).toBe(1);
    roundTrips(feed);
  });

  it('an owner cannot change the mode of its hold in place (release first)', () => {
    const feed = level3();
    acquired(feed.many('doc', 'a', { shared: true }));
    expect(errorCode(feed.apply({ type: 'acquire', timeMs: feed.timeMs, key: 'doc', owner: 'a', ttlMs: 1000, requestId: '' }))).toBe(
      'HOLD_MODE_MISMATCH',
    );
    feed.acquire('m', 'b', 1000);
    expect(errorCode(feed.many('m', 'b', { shared: true }))).toBe('HOLD_MODE_MISMATCH');
  });

  it('an exclusive head whose wait runs out lets the readers behind it in', () => {
    const feed = level3();
    acquired(feed.many('doc', 'r1', { shared: true, ttlMs: 60_000 }));
    const w = acquired(
      feed.apply({ type: 'acquire', timeMs: feed.timeMs, key: 'doc', owner: 'w', ttlMs: 1000, requestId: '', waitMs: 500 }),
    );
    acquired(feed.many('doc', 'r2', { shared: true, waitMs: 60_000 }));
    feed.at(feed.timeMs + 600);
    const out = feed.dequeue('doc', w.index, 'deadline');
    expect(out.decided?.map((d) => [d.owner, d.outcome.acquired])).toEqual([
      ['w', false],
      ['r2', true],
    ]);
  });
});

describe('a plain acquire meeting a mutex key that its own entry turns into shared holds', () => {
  it('is judged by the rules of many holds: refused (or in line) behind the shared head just granted (lock simulation, group clients only, seed 16)', () => {
    // The entry ended the run-out lease and handed the key to its line, whose head asked shared: the key
    // became a group with that hold — and the plain acquire, judged on as a mutex, found no lease and was
    // granted a lease too, with the same token: an exclusive and a shared hold together.
    const feed = level3();
    expect(acquired(feed.acquire('rw', 'a', 100)).acquired).toBe(true);
    const reader = acquired(feed.many('rw', 'b', { shared: true, waitMs: 5000 }));
    expect(reader.waitTicket).toBe(reader.index);
    feed.at(1_200); // a's lease ran out; nothing ended it yet
    const late = acquired(feed.acquire('rw', 'c', 100));
    expect(late.decided?.map((d) => [d.owner, d.outcome.acquired])).toEqual([['b', true]]);
    expect(late.acquired).toBe(false);
    expect(late.holderOwner).toBe('b');
    expect(feed.machine.get('rw').holders?.map((h) => [h.owner, h.shared])).toEqual([['b', true]]);
    expect(feed.machine.leaseCount).toBe(1);
    roundTrips(feed);
  });
});

describe('a shared request waiting on a mutex key', () => {
  it('gets a shared hold when it reaches the head behind a head the hand-off refused (its wait ran out)', () => {
    // The mutex hand-off looked for a shared head only before its loop: past a refused exclusive head it
    // granted the shared request a plain (exclusive) lease — readers behind it then waited, and its owner
    // asking shared again was told it holds exclusive.
    const feed = level3();
    const a = acquired(feed.acquire('rw', 'a', 1000));
    feed.wait('rw', 'x', 100, 50); // exclusive, its wait runs out first
    const b = acquired(feed.many('rw', 'b', { shared: true, waitMs: 5000 }));
    feed.at(1_100);
    const released = feed.release('rw', 'a', a.token);
    expect(released.decided?.map((d) => [d.owner, d.outcome.acquired])).toEqual([
      ['x', false],
      ['b', true],
    ]);
    expect(feed.machine.get('rw').holders?.map((h) => [h.owner, h.shared])).toEqual([['b', true]]);
    expect(acquired(feed.many('rw', 'c', { shared: true })).acquired).toBe(true); // readers together
    expect(b.waitTicket).toBe(b.index);
    roundTrips(feed);
  });
});

describe('many holds and sessions', () => {
  it("an acquire that finds the key's only hold under a run-out session ends the session and takes a free key (lock simulation seed 17)", () => {
    // The session's end emptied the group, which became a free key in that entry; the grant then went into
    // the dropped group: answered "acquired", counted as a lease, but Get showed the key free and the next
    // requests were granted beside it.
    const feed = level3();
    const s = feed.openSession('a', 50).sessionId;
    expect(acquired(feed.many('pool', 'a', { limit: 2, sessionId: s })).acquired).toBe(true);
    feed.at(1_100); // the session ran out; nothing ended it yet
    const b = acquired(feed.many('pool', 'b', { limit: 2 }));
    expect(b.acquired).toBe(true);
    expect(feed.machine.get('pool').holders?.map((h) => [h.owner, h.token])).toEqual([['b', b.token]]);
    expect(feed.machine.leaseCount).toBe(1);
    expect(acquired(feed.many('pool', 'c', { limit: 2 })).acquired).toBe(true);
    expect(acquired(feed.many('pool', 'd', { limit: 2 })).acquired).toBe(false); // b and c hold both slots
    roundTrips(feed);
  });

  it("a session's end drops its holds of keys with many holds and hands each slot on", () => {
    const feed = level3();
    const s = feed.openSession('a', 5000).sessionId;
    const held = acquired(feed.many('pool', 'a', { limit: 2, sessionId: s }));
    acquired(feed.many('pool', 'b', { limit: 2 }));
    acquired(feed.many('pool', 'w', { limit: 2, waitMs: 60_000 }));
    expect(feed.machine.sessionInfo(Number(s))?.holds).toBe(1);
    expect(
      errorCode(feed.apply({ type: 'renew', timeMs: feed.timeMs, key: 'pool', owner: 'a', token: held.token, ttlMs: 1000, requestId: '' })),
    ).toBe('RENEW_THE_SESSION');
    roundTrips(feed);
    const ended = feed.closeSession(s);
    expect(ended.released).toEqual(['pool']);
    expect(ended.decided?.map((d) => [d.owner, d.outcome.acquired])).toEqual([['w', true]]);
  });
});

describe('the level gate', () => {
  it('below cluster level 3 a semaphore or shared acquire is refused and changes nothing', () => {
    const feed = new Feed();
    feed.at(1_000).termStart();
    feed.raiseLevel(2);
    const before = feed.machine.snapshot();
    const r = feed.many('pool', 'a', { limit: 3 });
    expect(errorCode(r)).toBe('CLUSTER_LEVEL');
    expect(feed.machine.snapshot().subarray(8)).toEqual(before.subarray(8)); // only the applied index moved
    expect(feed.machine.snapshot()[3]).toBe(7);
  });

  it('a build that reads level 2 stops at the tag-21 entry and refuses a version 8 snapshot', () => {
    const feed = level3();
    acquired(feed.many('pool', 'a', { limit: 3 }));
    expect(() => LockMachine.restore(feed.machine.snapshot(), { readLevel: 2 })).toThrow(/unsupported snapshot version 8/);
  });
});
