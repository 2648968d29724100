// The replicated wait line (wait-line.ts, machine.ts `wait`): place in line by log order, hand-off in the
// entry that ends a hold, wait deadlines in log time, cancels, retries keeping their place, snapshots.
import { describe, expect, it } from 'vitest';
import { LockMachine, decodeCommand, encodeCommand } from '../../../src/lock/index.js';
import type { WaiterDecision } from '../../../src/lock/types.js';
import { Feed } from './feed.js';

const granted = (d: WaiterDecision) =>
  `${d.owner}:${d.outcome.acquired ? `granted ${d.outcome.token}` : d.cancelled ? 'cancelled' : 'refused'}`;

describe('the wait line', () => {
  it('a blocked waiting acquire joins the line (ticket = its index) and remembers nothing yet', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 500);
    const b = feed.wait('k', 'b', 300, 2000, 'rb');
    expect(b).toMatchObject({ acquired: false, waitTicket: 2, holderOwner: 'a', holderTtlMs: 500 });
    expect(feed.machine.waiterCount).toBe(1);
    expect(feed.machine.waiterFor('b', 'rb')).toEqual({ key: 'k', ticket: 2 });
    expect(feed.machine.rememberedAcquire('b', 'rb', 'k')).toBeNull();
  });

  it('a release hands the key to the head in the same entry, in ticket order, with the entry index as token', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    feed.wait('k', 'b', 300, 5000, 'rb');
    feed.wait('k', 'c', 300, 5000, 'rc');
    const released = feed.at(1100).release('k', 'a', a.token);
    expect(released.released).toBe(true);
    expect(released.decided?.map(granted)).toEqual(['b:granted 4']);
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'b', token: 4n, expiresAtMs: 1400 });
    expect(feed.machine.rememberedAcquire('b', 'rb', 'k')).toMatchObject({ acquired: true, token: 4n });
    expect(feed.machine.waiterCountOf('k')).toBe(1);
    // The expiry of b's lease hands it to c.
    const expired = feed.at(1400).expire('k', 4n);
    expect(expired.decided?.map(granted)).toEqual(['c:granted 5']);
    expect(feed.machine.waiterCount).toBe(0);
  });

  it('a hand-off skips and refuses waiters whose wait deadline passed (planted: granting them anyway)', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 5000);
    feed.wait('k', 'b', 300, 100, 'rb'); // until 1100
    feed.wait('k', 'c', 300, 5000, 'rc');
    const released = feed.at(1200).release('k', 'a', a.token);
    expect(released.decided?.map(granted)).toEqual(['b:refused', 'c:granted 4']);
    expect(feed.machine.rememberedAcquire('b', 'rb', 'k')).toMatchObject({ acquired: false });
    expect(feed.machine.get('k').owner).toBe('c');
  });

  it('a newcomer never overtakes the line: an acquire finding the hold run out hands off first', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 500);
    feed.wait('k', 'b', 300, 5000, 'rb');
    const c = feed.at(1600).acquire('k', 'c', 300, 'rc'); // a's lease ran out; no expire entry yet
    expect(c).toMatchObject({ acquired: false, holderOwner: 'b' });
    expect(c.decided?.map(granted)).toEqual(['b:granted 3']);
    expect(feed.machine.get('k')).toMatchObject({ owner: 'b', token: 3n });
  });

  it('a retry of a waiting request keeps its place and its deadline', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 5000);
    feed.wait('k', 'b', 300, 1000, 'rb');
    feed.wait('k', 'c', 300, 9000, 'rc');
    const retry = feed.at(1500).wait('k', 'b', 300, 9000, 'rb');
    expect(retry).toMatchObject({ acquired: false, replayed: true, waitTicket: 2 });
    expect(feed.machine.waiterCountOf('k')).toBe(2);
    expect(feed.machine.dueWaiters(2000, 10)).toEqual([{ key: 'k', ticket: 2, deadlineMs: 2000 }]);
    const released = feed.at(1600).release('k', 'a', a.token);
    expect(released.decided?.map(granted)).toEqual(['b:granted 5']);
  });

  it('the same request id waiting for another key is refused as reused', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 5000);
    feed.wait('k', 'b', 300, 1000, 'rb');
    const r = feed.apply({ type: 'acquire', timeMs: 1000, key: 'other', owner: 'b', ttlMs: 300, requestId: 'rb', waitMs: 10 });
    expect(r).toMatchObject({ type: 'error', code: 'REQUEST_ID_REUSED' });
  });

  it('dequeue by deadline applies only once the deadline passed in log time, and is remembered', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 5000);
    feed.wait('k', 'b', 300, 1000, 'rb');
    expect(feed.at(1999).dequeue('k', 2, 'deadline')).toMatchObject({ dequeued: false });
    const d = feed.at(2000).dequeue('k', 2, 'deadline');
    expect(d.dequeued).toBe(true);
    expect(d.decided?.map(granted)).toEqual(['b:refused']);
    expect(d.decided?.[0]?.outcome).toMatchObject({ holderOwner: 'a', holderTtlMs: 4000 });
    expect(feed.machine.rememberedAcquire('b', 'rb', 'k')).toMatchObject({ acquired: false, holderOwner: 'a' });
    // A late retry gets that refusal, not a new place.
    expect(feed.wait('k', 'b', 300, 1000, 'rb')).toMatchObject({ acquired: false, replayed: true });
    expect(feed.machine.waiterCount).toBe(0);
  });

  it('dequeue by cancel applies at once and remembers nothing: a retry queues afresh at the back', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 5000);
    feed.wait('k', 'b', 300, 9000, 'rb');
    feed.wait('k', 'c', 300, 9000, 'rc');
    expect(feed.dequeue('k', 2, 'cancel').decided?.map(granted)).toEqual(['b:cancelled']);
    expect(feed.machine.rememberedAcquire('b', 'rb', 'k')).toBeNull();
    expect(feed.wait('k', 'b', 300, 9000, 'rb')).toMatchObject({ waitTicket: 5, replayed: false });
    expect(feed.dequeue('k', 2, 'cancel').dequeued).toBe(false);
  });

  it('the holder re-acquiring while others wait supersedes its own hold (it is not a newcomer)', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 500);
    feed.wait('k', 'b', 300, 9000, 'rb');
    expect(feed.acquire('k', 'a', 500)).toMatchObject({ acquired: true, token: 3n });
    expect(feed.machine.waiterCountOf('k')).toBe(1);
  });

  it('a wait deadline is judged by log time, not by the stamps of a slower new leader', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 5000);
    feed.wait('k', 'b', 300, 1000, 'rb');
    feed.termStart(500); // the new leader's clock is behind: log time stays at 1000
    expect(feed.dequeue('k', 2, 'deadline').dequeued).toBe(false);
  });

  it('survives a snapshot: lines, tickets, deadlines; the restored machine hands off the same way', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    feed.wait('k', 'b', 300, 5000, 'rb');
    feed.wait('k', 'c', 300, 5000, '');
    feed.acquire('j', 'x', 500);
    feed.wait('j', 'y', 300, 50, 'ry');
    const bytes = feed.machine.snapshot();
    expect(bytes[3]).toBe(4); // version 4: the lines follow
    const restored = new Feed(LockMachine.restore(bytes));
    expect(restored.machine.snapshot()).toEqual(bytes);
    expect(restored.machine.waiterFor('b', 'rb')).toEqual({ key: 'k', ticket: 2 });
    expect(restored.machine.dueWaiters(1050, 10)).toEqual([{ key: 'j', ticket: 5, deadlineMs: 1050 }]);
    for (const f of [feed, restored]) {
      expect(f.at(1100).release('k', 'a', a.token).decided?.map(granted)).toEqual(['b:granted 6']);
      expect(f.at(1400).expire('k', 6n).decided?.map(granted)).toEqual(['c:granted 7']);
    }
    expect(restored.machine.digest()).toBe(feed.machine.digest());
  });

  it('a state with nobody waiting is written as version 3, as before', () => {
    const feed = new Feed();
    feed.at(1000).acquire('k', 'a', 500);
    expect(feed.machine.snapshot()[3]).toBe(3);
  });

  it('sliced snapshots carry the lines as they were when the snapshot began', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    feed.wait('k', 'b', 300, 5000, 'rb');
    const whole = feed.machine.snapshot();
    const job = feed.machine.beginSnapshot(0, 1);
    feed.release('k', 'a', a.token); // hands k to b while the snapshot is being written
    while (!job.step());
    expect(job.finish()).toEqual(whole);
  });
});

describe('wait-line commands on the wire', () => {
  it('round-trip: a waiting acquire (tag 9) and a dequeue (tag 10)', () => {
    const wait = { type: 'acquire', timeMs: 5, key: 'k', owner: 'o', ttlMs: 100, requestId: 'r', waitMs: 700 } as const;
    expect(decodeCommand(encodeCommand(wait))).toEqual(wait);
    expect(encodeCommand(wait)[0]).toBe(9);
    const plain = { type: 'acquire', timeMs: 5, key: 'k', owner: 'o', ttlMs: 100, requestId: 'r', waitMs: 0 } as const;
    expect(encodeCommand(plain)[0]).toBe(1); // waitMs 0 is the plain acquire, as before
    const dequeue = { type: 'dequeue', timeMs: 5, key: 'k', ticket: 42, cause: 'cancel' } as const;
    expect(decodeCommand(encodeCommand(dequeue))).toEqual(dequeue);
  });

  it('rejects a bad dequeue cause and ticket 0', () => {
    expect(() => encodeCommand({ type: 'dequeue', timeMs: 5, key: 'k', ticket: 0, cause: 'cancel' })).toThrow(/ticket/);
    expect(() => encodeCommand({ type: 'dequeue', timeMs: 5, key: 'k', ticket: 1, cause: 'x' as 'cancel' })).toThrow(/cause/);
  });
});
