// Log time: expiry is judged by the leader's stamp on each entry, made monotone; never by a local clock.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

describe('log time', () => {
  it('is the max of the previous log time and the entry stamp', () => {
    const feed = new Feed();
    expect(feed.machine.logNowMs).toBe(0);
    feed.at(1000).checkpoint();
    expect(feed.machine.logNowMs).toBe(1000);
    feed.at(900).checkpoint(); // a stamp in the past does not move time back
    expect(feed.machine.logNowMs).toBe(1000);
    feed.at(1200).acquire('k', 'a', 100);
    expect(feed.machine.logNowMs).toBe(1200);
  });

  it('judges expiry at entry time: a lease is live until exactly its deadline', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    expect(feed.at(1499).renew('k', 'a', a.token, 500).renewed).toBe(true); // deadline 1999
    expect(feed.at(1998).acquire('k', 'b', 100).acquired).toBe(false);
    expect(feed.at(1999).acquire('k', 'b', 100).acquired).toBe(true);
  });

  it('a stamp in the past cannot revive an expired lease or shorten time already passed', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    feed.at(1600).checkpoint(); // log time passes the deadline
    // A late entry stamped before the deadline (e.g. a lagging leader clock) is judged at 1600, not 1400.
    expect(feed.at(1400).renew('k', 'a', a.token, 500).reason).toBe('EXPIRED');
    expect(feed.at(1400).acquire('k', 'b', 100)).toMatchObject({ acquired: true, expiresAtMs: 1700 });
  });

  it('get reports the remaining ttl at log time, and nothing once the deadline passed', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 500);
    feed.at(1300).checkpoint();
    expect(feed.machine.get('k')).toMatchObject({ held: true, ttlMs: 200, expiresAtMs: 1500 });
    feed.at(1500).checkpoint();
    expect(feed.machine.get('k')).toEqual({ held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: 1n });
  });
});

describe('expiredLeases (for the leader to propose expire)', () => {
  it('lists leases with deadline <= the given time, earliest first, up to the limit', () => {
    const feed = new Feed();
    feed.at(0);
    feed.acquire('c', 'o', 300); // token 1, deadline 300
    feed.acquire('a', 'o', 100); // token 2, deadline 100
    feed.acquire('b', 'o', 200); // token 3, deadline 200
    feed.acquire('d', 'o', 100); // token 4, deadline 100 (tie broken by token)
    const m = feed.machine;
    expect(m.expiredLeases(99, 10)).toEqual([]);
    expect(m.expiredLeases(100, 10)).toEqual([
      { key: 'a', token: 2n, expiresAtMs: 100 },
      { key: 'd', token: 4n, expiresAtMs: 100 },
    ]);
    expect(m.expiredLeases(1000, 3).map((d) => d.key)).toEqual(['a', 'd', 'b']);
    expect(m.expiredLeases(1000, 0)).toEqual([]);
    // Judged at the later of the caller's time and log time.
    feed.at(250).checkpoint();
    expect(m.expiredLeases(0, 10).map((d) => d.key)).toEqual(['a', 'd', 'b']);
  });

  it('follows renew, release and expire', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('a', 'o', 100);
    const b = feed.acquire('b', 'o', 100);
    feed.at(50).renew('a', 'o', a.token, 1000);
    expect(feed.machine.expiredLeases(100, 10).map((d) => d.key)).toEqual(['b']);
    feed.release('b', 'o', b.token);
    expect(feed.machine.expiredLeases(100, 10)).toEqual([]);
    feed.at(1050);
    const due = feed.machine.expiredLeases(1050, 10);
    expect(due).toEqual([{ key: 'a', token: a.token, expiresAtMs: 1050 }]);
    expect(feed.expire(due[0]!.key, due[0]!.token).expired).toBe(true);
    expect(feed.machine.expiredLeases(1e12, 10)).toEqual([]);
    expect(feed.machine.hasLiveLeases()).toBe(false);
  });

  it('returns exactly the earliest k of many, in order', () => {
    const machine = new LockMachine();
    const deadlines: number[] = [];
    for (let i = 1; i <= 2000; i++) {
      const ttlMs = 1 + ((i * 7919) % 5000);
      deadlines.push(ttlMs);
      machine.applyCommand(i, 1, { type: 'acquire', timeMs: 0, key: `k${i}`, owner: 'o', ttlMs, requestId: '' });
    }
    const due = machine.expiredLeases(2500, 50);
    const expected = deadlines
      .filter((d) => d <= 2500)
      .sort((x, y) => x - y)
      .slice(0, 50);
    expect(due.map((d) => d.expiresAtMs)).toEqual(expected);
  });
});
