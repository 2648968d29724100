// Leases across leader changes (LEASES.md): a new leader extends live leases to a full TTL from its own
// now, but a lease that provably outlived its TTL across terms is not extended (etcd issue 9395).
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

describe('termStart: extension on leader change', () => {
  it('a new leader whose clock is far ahead does not cut a lease short', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 10_000); // deadline 11_000 on the old leader's clock
    feed.at(2000).checkpoint();
    // The new leader's clock is 1 hour ahead: without the extension the lease would be expired at once.
    const start = feed.termStart(3_602_000);
    expect(start).toMatchObject({ type: 'termStart', leasesExtended: 1, leasesEnded: 0 });
    expect(feed.machine.get('k')).toMatchObject({ held: true, ttlMs: 10_000, expiresAtMs: 3_612_000 });
    expect(feed.at(3_611_999).acquire('k', 'b', 100).acquired).toBe(false);
    expect(feed.machine.expiredLeases(3_611_999, 10)).toEqual([]);
    expect(feed.at(3_612_000).acquire('k', 'b', 100).acquired).toBe(true);
  });

  it('extends to max(deadline, T + ttl): never shortens, and a clock behind is clamped', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 10_000); // deadline 11_000
    feed.at(1001).checkpoint();
    // New leader's clock is behind: T = max(1001, 500) = 1001; T + ttl = 11_001 > 11_000.
    feed.termStart(500);
    expect(feed.machine.logNowMs).toBe(1001);
    expect(feed.machine.get('k').expiresAtMs).toBe(11_001);
  });

  it('does not revive a lease that had already expired in log time', () => {
    const feed = new Feed();
    feed.at(0).acquire('k', 'a', 100);
    feed.at(150).checkpoint();
    expect(feed.termStart(160)).toMatchObject({ leasesExtended: 0, leasesEnded: 0 });
    expect(feed.machine.get('k').held).toBe(false);
    expect(feed.machine.expiredLeases(160, 10).map((d) => d.key)).toEqual(['k']);
  });

  it('a lease that provably outlived its ttl across terms is ended, not extended', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 1000);
    feed.at(600).checkpoint(); // term 1 observed 600 ms
    expect(feed.termStart(50_000)).toMatchObject({ leasesExtended: 1 }); // deadline 51_000, observed 600
    feed.at(50_450).checkpoint(); // term 2 observed 450 ms more: 1050 >= 1000
    expect(feed.machine.get('k').held).toBe(true);
    // The next leader's clock is close: without the observed-time rule the lease (deadline 51_000) would
    // still be live at 50_500 and get extended to 51_500.
    const start = feed.termStart(50_500);
    expect(start).toMatchObject({ leasesExtended: 0, leasesEnded: 1 });
    expect(feed.machine.get('k').held).toBe(false);
    expect(feed.renew('k', 'a', a.token, 1000).reason).toBe('EXPIRED');
    expect(feed.machine.expiredLeases(50_500, 10)).toEqual([{ key: 'k', token: a.token, expiresAtMs: 50_500 }]);
    expect(feed.acquire('k', 'b', 1000)).toMatchObject({ acquired: true });
  });

  it('repeated elections with checkpoints in between eventually stop extending a dead lease', () => {
    const feed = new Feed();
    feed.at(0).acquire('k', 'dead-holder', 1000);
    let clock = 0;
    let terms = 0;
    // Each leader's clock is wildly offset, stays 300 ms in office, checkpoints after 250 ms, then dies.
    while (feed.machine.get('k').held) {
      terms++;
      expect(terms).toBeLessThan(20);
      clock += 1_000_000 * (terms % 2 === 0 ? 1 : 3);
      feed.termStart(clock);
      feed.at(clock + 250).checkpoint();
    }
    // Observed per term: 250 ms (+ 0 in the grant term): ended at the 5th term start (4 * 250 >= 1000).
    expect(terms).toBe(5);
  });

  it('without checkpoints, leaders that commit only termStart keep extending (why checkpoints exist)', () => {
    const feed = new Feed();
    feed.at(0).acquire('k', 'dead-holder', 1000);
    for (let i = 1; i <= 50; i++) feed.termStart(i * 10_000);
    expect(feed.machine.get('k').held).toBe(true);
  });

  it('renew resets the observed time', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 1000);
    feed.at(900).checkpoint();
    feed.termStart(1000); // observed 900
    feed.at(1050).renew('k', 'a', a.token, 1000); // reset: observed 0 from 1050
    feed.at(1500).checkpoint();
    expect(feed.termStart(1600)).toMatchObject({ leasesExtended: 1, leasesEnded: 0 }); // observed 450
    expect(feed.machine.get('k').expiresAtMs).toBe(2600);
  });

  it('the first entry of a higher term starts the epoch even if it is not termStart', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 1000); // deadline 2000
    feed.term = 2; // new leader forgot termStart: its first entry is a client acquire at its clock
    expect(feed.at(5000).acquire('k', 'b', 1000)).toMatchObject({ acquired: false, holderOwner: 'a', holderTtlMs: 1000 });
    expect(feed.machine.epochTerm).toBe(2);
    expect(feed.machine.epochStartMs).toBe(5000);
    // A termStart in the same term is only a time stamp.
    expect(feed.apply({ type: 'termStart', timeMs: 5500 })).toMatchObject({ leasesExtended: 0, leasesEnded: 0 });
    expect(feed.machine.get('k').expiresAtMs).toBe(6000);
  });

  it('a new lease granted after the term start is observed from its grant time', () => {
    const feed = new Feed();
    feed.termStart(1000);
    feed.at(1500).acquire('k', 'a', 1000);
    feed.at(2200).checkpoint(); // 700 observed
    feed.termStart(2300);
    feed.at(2600).checkpoint(); // 300 more: 1000 >= 1000
    expect(feed.termStart(2700)).toMatchObject({ leasesEnded: 1 });
  });

  it('skipped entries (raft noop) and garbage never start an epoch', () => {
    const machine = new LockMachine();
    machine.skip(1);
    machine.apply(2, 7, Uint8Array.of(1)); // an acquire's tag and nothing else: malformed
    expect(machine.epochTerm).toBe(0);
  });
});
