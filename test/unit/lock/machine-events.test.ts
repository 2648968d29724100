// The machine's change feed (events.ts): what Watch delivers. Every change to a hold or a line is one
// event, in apply order, stamped with the entry that caused it.
import { describe, expect, it } from 'vitest';
import type { LockEvent } from '../../../src/lock/events.js';
import { Feed } from './feed.js';

function recording(): { feed: Feed; events: LockEvent[]; brief: () => string[] } {
  const feed = new Feed();
  const events: LockEvent[] = [];
  feed.machine.eventSink = (e) => events.push(e);
  const brief = () =>
    events
      .splice(0)
      .map(
        (e) =>
          `${e.index} ${e.kind} ${e.key} ${e.owner} ${e.token}${e.sessionId > 0 ? ` s${e.sessionId}` : ''}${e.value ? ` v=${new TextDecoder().decode(e.value)}` : ''}`,
      );
  return { feed, events, brief };
}

describe('lock events', () => {
  it('acquire, renew, release with a hand-off to the line, and a refused waiter', () => {
    const { feed, brief } = recording();
    const a = feed.at(1000).delayed('k', 'a', 5000, 0, { value: 'addr-a' });
    expect(brief()).toEqual(['1 ACQUIRED k a 1 v=addr-a']);
    feed.wait('k', 'b', 5000, 10_000);
    feed.wait('k', 'c', 5000, 100);
    expect(brief()).toEqual(['2 QUEUED k b 0', '3 QUEUED k c 0']);
    feed.renew('k', 'a', a.token, 5000);
    expect(brief()).toEqual(['4 RENEWED k a 1 v=addr-a']);
    feed.at(2000).release('k', 'a', a.token);
    expect(brief()).toEqual(['5 RELEASED k a 1 v=addr-a', '5 ACQUIRED k b 5']);
    // c's wait ran out (log time 1000 + 100) before b's hold ends: refused on the way, nobody left.
    feed.at(2100).release('k', 'b', 5n);
    expect(brief()).toEqual(['6 RELEASED k b 5', '6 DEQUEUED k c 0']);
    expect(feed.machine.get('k').held).toBe(false);
  });

  it('expiry, an in-place re-grant of a run-out hold, a cancelled waiter, and a failed renew say nothing extra', () => {
    const { feed, brief } = recording();
    const a = feed.at(1000).acquire('k', 'a', 500);
    feed.at(1600).acquire('k', 'b', 500); // a ran out; no entry ended it yet: this one does
    expect(brief()).toEqual(['1 ACQUIRED k a 1', '2 EXPIRED k a 1', '2 ACQUIRED k b 2']);
    expect(feed.renew('k', 'a', a.token, 500).renewed).toBe(false);
    expect(brief()).toEqual([]);
    const w = feed.wait('x', 'c', 500, 10_000); // free key: granted at once
    const q = feed.wait('x', 'd', 500, 10_000);
    expect(w.acquired).toBe(true);
    feed.dequeue('x', q.waitTicket!, 'cancel');
    expect(brief()).toEqual(['4 ACQUIRED x c 4', '5 QUEUED x d 0', '6 DEQUEUED x d 0']);
    feed.at(1700).apply({ type: 'expire', timeMs: 1700, key: 'k', token: 2n });
    expect(brief()).toEqual([]); // not due yet (2 ends at 2100)
    feed.at(2200).apply({ type: 'expire', timeMs: 2200, key: 'k', token: 2n });
    expect(brief()).toEqual(['8 EXPIRED k b 2']);
  });

  it("a session's end: its waiters leave, then its holds end in key order, each handed on", () => {
    const { feed, brief } = recording();
    const s = feed.at(1000).openSession('a', 1000);
    feed.underSession('k2', 'a', s.sessionId);
    feed.underSession('k1', 'a', s.sessionId);
    feed.acquire('busy', 'z', 60_000);
    feed.underSession('busy', 'a', s.sessionId, { waitMs: 60_000 });
    feed.wait('k1', 'b', 5000, 60_000);
    expect(brief()).toEqual([
      '2 ACQUIRED k2 a 2 s1',
      '3 ACQUIRED k1 a 3 s1',
      '4 ACQUIRED busy z 4',
      '5 QUEUED busy a 0 s1',
      '6 QUEUED k1 b 0',
    ]);
    feed.closeSession(s.sessionId);
    expect(brief()).toEqual(['7 DEQUEUED busy a 0 s1', '7 RELEASED k1 a 3 s1', '7 ACQUIRED k1 b 7', '7 RELEASED k2 a 2 s1']);
    const s2 = feed.openSession('c', 1000);
    feed.underSession('k3', 'c', s2.sessionId);
    feed.at(3000).expireSession(s2.sessionId);
    expect(brief()).toEqual(['9 ACQUIRED k3 c 9 s8', '10 EXPIRED k3 c 9 s8']);
  });

  it('without a sink nothing is built, and the state is the same as with one', () => {
    const run = (withSink: boolean) => {
      const feed = new Feed();
      if (withSink) feed.machine.eventSink = () => {};
      const a = feed.at(1000).acquire('k', 'a', 500);
      feed.wait('k', 'b', 500, 1000);
      feed.at(1200).release('k', 'a', a.token);
      return feed.machine.digest();
    };
    expect(run(true)).toBe(run(false));
  });
});

describe('revoke', () => {
  it('ends the hold with that token (or any, with 0) with no lock-delay, hands the key on, and says REVOKED', () => {
    const { feed, brief } = recording();
    const a = feed.at(1000).delayed('k', 'a', 60_000, 5000);
    feed.wait('k', 'b', 60_000, 60_000);
    expect(feed.apply({ type: 'revoke', timeMs: 1000, key: 'k', token: a.token + 1n })).toMatchObject({ type: 'revoke', revoked: [] });
    const r = feed.apply({ type: 'revoke', timeMs: 1000, key: 'k', token: a.token });
    expect(r).toMatchObject({ type: 'revoke', revoked: [a.token], decided: [{ owner: 'b', outcome: { acquired: true, token: 4n } }] });
    expect(brief()).toEqual(['1 ACQUIRED k a 1', '2 QUEUED k b 0', '4 REVOKED k a 1', '4 ACQUIRED k b 4']);
    // token 0: whatever hold the key has; the lock-delay a carried did not apply (b got it at once).
    expect(feed.apply({ type: 'revoke', timeMs: 1000, key: 'k', token: 0n })).toMatchObject({ revoked: [4n] });
    expect(feed.machine.get('k').held).toBe(false);
    expect(feed.machine.delayLeftMs('k')).toBe(0);
    expect(feed.apply({ type: 'revoke', timeMs: 1000, key: 'nobody', token: 0n })).toMatchObject({ revoked: [] });
  });
});
