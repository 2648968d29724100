// Lock-delay (machine.ts `delay`, SPEC "Lock-delay"): a hold that EXPIRES keeps its key from every grant
// until the lease's end + its lockDelayMs (log time); a release does not; waiters stay in line and are
// served by the `undelay` entry.
import { describe, expect, it } from 'vitest';
import { LockMachine, decodeCommand, encodeCommand } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

describe('lock-delay', () => {
  it('an expired hold keeps the key from everyone for lockDelayMs after the lease end, measured from that end', () => {
    const feed = new Feed();
    feed.at(1000).delayed('k', 'a', 500, 2000); // lease ends 1500; delay until 3500
    // The expire entry comes late (at 2000): the delay still runs from the lease's end (planted: from the
    // expire entry, which would be 4000).
    expect(feed.at(2000).expire('k', 1n).expired).toBe(true);
    expect(feed.machine.delayLeftMs('k')).toBe(1500);
    const b = feed.at(3499).acquire('k', 'b', 500);
    expect(b).toMatchObject({ acquired: false, holderOwner: '', delayMsLeft: 1 });
    expect(feed.at(3499).acquire('k', 'a', 500).acquired).toBe(false); // its own owner too
    expect(feed.at(3500).acquire('k', 'b', 500)).toMatchObject({ acquired: true, token: 5n });
  });

  it('a release ends the hold without a delay', () => {
    const feed = new Feed();
    const a = feed.at(1000).delayed('k', 'a', 500, 2000);
    feed.release('k', 'a', a.token);
    expect(feed.machine.delayLeftMs('k')).toBe(0);
    expect(feed.acquire('k', 'b', 500).acquired).toBe(true);
  });

  it('an acquire that finds the hold run out starts the delay itself (no expire entry needed)', () => {
    const feed = new Feed();
    feed.at(1000).delayed('k', 'a', 500, 2000);
    const b = feed.at(1600).acquire('k', 'b', 500);
    expect(b).toMatchObject({ acquired: false, delayMsLeft: 1900 });
    expect(feed.machine.get('k').held).toBe(false);
  });

  it('waiters stay in line through the delay; undelay applies only once it passed, then hands the key over', () => {
    const feed = new Feed();
    feed.at(1000).delayed('k', 'a', 500, 2000);
    feed.wait('k', 'w', 300, 60_000, 'rw');
    const expired = feed.at(1500).expire('k', 1n);
    expect(expired.decided).toBeUndefined(); // no hand-off during the delay
    expect(feed.machine.dueDelays(3499, 10)).toEqual([]);
    expect(feed.machine.dueDelays(3500, 10)).toEqual([{ key: 'k', untilMs: 3500 }]);
    expect(feed.at(3499).undelay('k').undelayed).toBe(false);
    const u = feed.at(3500).undelay('k');
    expect(u.undelayed).toBe(true);
    expect(u.decided?.map((d) => `${d.owner}:${d.outcome.acquired}`)).toEqual(['w:true']);
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'w' });
    expect(feed.machine.dueDelays(10_000, 10)).toEqual([]);
  });

  it('a waiter granted with a lock-delay carries it into its own hold', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    feed.delayed('k', 'w', 300, 1000, { waitMs: 60_000, requestId: 'rw' });
    feed.release('k', 'a', a.token); // w holds until 1300
    feed.at(1300).expire('k', 3n);
    expect(feed.machine.delayLeftMs('k')).toBe(1000);
  });

  it('survives a snapshot (version 5): hold delays, key delays, waiters with a delay', () => {
    const feed = new Feed();
    feed.at(1000).delayed('k', 'a', 500, 2000);
    feed.acquire('j', 'x', 5000);
    feed.delayed('j', 'y', 300, 700, { waitMs: 60_000, requestId: 'ry' });
    feed.at(1600).expire('k', 1n);
    const bytes = feed.machine.snapshot();
    expect(bytes[3]).toBe(5);
    const restored = new Feed(LockMachine.restore(bytes));
    expect(restored.machine.snapshot()).toEqual(bytes);
    expect(restored.machine.delayLeftMs('k')).toBe(1900);
    expect(restored.machine.dueDelays(3500, 10)).toEqual([{ key: 'k', untilMs: 3500 }]);
    for (const f of [feed, restored]) {
      expect(f.at(3500).undelay('k').undelayed).toBe(true);
      const handed = f.at(6000).expire('j', 2n); // x ran out (no delay of its own): y gets j
      expect(handed.decided?.[0]?.outcome).toMatchObject({ acquired: true, token: 6n });
      expect(f.at(6300).expire('j', 6n).expired).toBe(true); // y's hold carries 700 ms
    }
    expect(restored.machine.delayLeftMs('j')).toBe(700);
    expect(restored.machine.digest()).toBe(feed.machine.digest());
  });

  it('round-trips on the wire: tag 11 (with and without a wait) and undelay (tag 12)', () => {
    const a = { type: 'acquire', timeMs: 5, key: 'k', owner: 'o', ttlMs: 100, requestId: 'r', waitMs: 50, lockDelayMs: 700 } as const;
    expect(encodeCommand(a)[0]).toBe(11);
    expect(decodeCommand(encodeCommand(a))).toEqual(a);
    const b = { type: 'acquire', timeMs: 5, key: 'k', owner: 'o', ttlMs: 100, requestId: 'r', lockDelayMs: 700 } as const;
    expect(decodeCommand(encodeCommand(b))).toEqual(b);
    const u = { type: 'undelay', timeMs: 5, key: 'k' } as const;
    expect(decodeCommand(encodeCommand(u))).toEqual(u);
  });
});
