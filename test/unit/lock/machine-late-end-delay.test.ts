// A late close, release or revoke applies lock-delay exactly as the expiry would (cluster level 5,
// versions.ts; machine-leases.ts `endsExpired`; issue 38): a hold that ran out by log time ends as EXPIRED
// whichever entry ends it, so its lock-delay runs from its end. A live hold released, closed or revoked
// starts none. Below level 5 the old rule stays (every replica judges an entry alike until every member
// reads 5).
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { BUILD_LEVEL } from '../../../src/lock/versions.js';
import { Feed } from './feed.js';

/** A machine at cluster `level` (1: a fresh one, from before the gate), its clock at 1000. */
function atLevel(level: number): Feed {
  const feed = new Feed();
  feed.at(1000);
  if (level > 1) feed.raiseLevel(level);
  return feed;
}

/** The case: a session opened at log time 1000 with ttl 500 and lock-delay 1000 holds `k`. */
function sessionHolding(level: number) {
  const feed = atLevel(level);
  const s = feed.openSession('a', 500, { lockDelayMs: 1000 });
  const held = feed.expect('acquire', feed.underSession('k', 'a', s.sessionId));
  expect(held.acquired).toBe(true);
  return { feed, sessionId: s.sessionId };
}

describe('a hold that ran out ends as expired, whichever entry ends it (level 5)', () => {
  it('closeSession of a run-out session leaves the same 900 ms of lock-delay as its expireSession (at the level this build reads)', () => {
    // At the build's own level, as a cluster of this build runs: before level 5 the close left 0 ms and the
    // acquire below was granted at 1600 (issue 38).
    const expired = sessionHolding(BUILD_LEVEL);
    expect(expired.feed.at(1600).expireSession(expired.sessionId)).toMatchObject({ ended: true, released: ['k'] });
    expect(expired.feed.machine.delayLeftMs('k')).toBe(900);

    const closed = sessionHolding(BUILD_LEVEL);
    expect(closed.feed.at(1600).closeSession(closed.sessionId, 'a')).toMatchObject({ ended: true, released: ['k'] });
    expect(closed.feed.machine.delayLeftMs('k')).toBe(900);
    expect(closed.feed.acquire('k', 'b', 500)).toMatchObject({ acquired: false, holderOwner: '', delayMsLeft: 900 });
    expect(closed.feed.at(2500).acquire('k', 'b', 500).acquired).toBe(true);
  });

  it('closeSession of a live session starts no delay', () => {
    const { feed, sessionId } = sessionHolding(5);
    feed.at(1499).closeSession(sessionId, 'a');
    expect(feed.machine.delayLeftMs('k')).toBe(0);
    expect(feed.acquire('k', 'b', 500).acquired).toBe(true);
  });

  it('release of a plain lease that ran out before its expire entry applied starts its delay from the lease end', () => {
    const feed = atLevel(5);
    const a = feed.delayed('k', 'a', 500, 2000); // lease ends 1500; delay until 3500
    expect(feed.at(1600).release('k', 'a', a.token)).toMatchObject({ released: true, reason: 'UNSPECIFIED' });
    expect(feed.machine.delayLeftMs('k')).toBe(1900);
    expect(feed.acquire('k', 'b', 500)).toMatchObject({ acquired: false, delayMsLeft: 1900 });
    expect(feed.at(3500).acquire('k', 'b', 500).acquired).toBe(true);
  });

  it('release of a live lease (and of a session hold while its session lives) starts no delay', () => {
    const feed = atLevel(5);
    const a = feed.delayed('k', 'a', 500, 2000);
    feed.at(1499).release('k', 'a', a.token);
    expect(feed.machine.delayLeftMs('k')).toBe(0);
    const { feed: f2, sessionId } = sessionHolding(5);
    const token = f2.machine.get('k').token;
    f2.at(1499).release('k', 'a', token);
    expect(f2.machine.delayLeftMs('k')).toBe(0);
    expect(f2.machine.sessionInfo(Number(sessionId))?.holds).toBe(0);
  });

  it("release of a session hold after its session ran out starts the session's delay from the session's end", () => {
    const { feed } = sessionHolding(5);
    const token = feed.machine.get('k').lastToken;
    expect(feed.at(1700).release('k', 'a', token).released).toBe(true);
    expect(feed.machine.delayLeftMs('k')).toBe(800); // 1500 + 1000 - 1700
  });

  it('a waiter behind a late release waits out the delay; undelay hands it the key', () => {
    const feed = atLevel(5);
    const a = feed.delayed('k', 'a', 500, 1000);
    feed.wait('k', 'w', 300, 60_000, 'rw');
    const r = feed.at(1600).release('k', 'a', a.token);
    expect(r.decided).toBeUndefined(); // no hand-off inside the delay
    expect(
      feed
        .at(2500)
        .undelay('k')
        .decided?.map((d) => `${d.owner}:${d.outcome.acquired}`),
    ).toEqual(['w:true']);
  });

  it('revoke of a hold that ran out ends it into its delay; of a live one, with none', () => {
    const feed = atLevel(5);
    const a = feed.delayed('k', 'a', 500, 2000);
    expect(feed.at(1600).revoke('k', 0n).revoked).toEqual([a.token]);
    expect(feed.machine.delayLeftMs('k')).toBe(1900);
    const live = atLevel(5);
    const b = live.delayed('j', 'b', 500, 2000);
    expect(live.at(1499).revoke('j', b.token).revoked).toEqual([b.token]);
    expect(live.machine.delayLeftMs('j')).toBe(0);
  });

  it('holds of many: a late release and a late revoke of a run-out hold apply its delay; a live one none', () => {
    const feed = atLevel(5);
    const a = feed.expect('acquire', feed.many('sem', 'a', { limit: 2, ttlMs: 500, lockDelayMs: 1000 }));
    const b = feed.expect('acquire', feed.many('sem', 'b', { limit: 2, ttlMs: 5000 }));
    expect(feed.at(1600).release('sem', 'a', a.token).released).toBe(true);
    expect(feed.machine.delayLeftMs('sem')).toBe(900);
    expect(feed.machine.get('sem').holders?.map((h) => h.token)).toEqual([b.token]);

    const r = atLevel(5);
    const c = r.expect('acquire', r.many('sem', 'c', { limit: 2, ttlMs: 500, lockDelayMs: 1000 }));
    expect(r.at(1700).revoke('sem', c.token).revoked).toEqual([c.token]);
    expect(r.machine.delayLeftMs('sem')).toBe(800);

    const live = atLevel(5);
    const d = live.expect('acquire', live.many('sem', 'd', { limit: 2, ttlMs: 500, lockDelayMs: 1000 }));
    live.at(1499).release('sem', 'd', d.token);
    expect(live.machine.delayLeftMs('sem')).toBe(0);
  });

  it('holds of many under a session: a late close applies the delay, as its expireSession would', () => {
    const feed = atLevel(5);
    const s = feed.openSession('a', 500, { lockDelayMs: 1000 });
    expect(feed.expect('acquire', feed.many('sem', 'a', { limit: 2, sessionId: s.sessionId })).acquired).toBe(true);
    expect(feed.at(1600).closeSession(s.sessionId, 'a')).toMatchObject({ ended: true, released: ['sem'] });
    expect(feed.machine.delayLeftMs('sem')).toBe(900);
  });

  it('below level 5 a late close, release or revoke starts no delay (the old rule, kept until every member reads 5)', () => {
    for (const level of [1, 4]) {
      const { feed, sessionId } = sessionHolding(level);
      feed.at(1600).closeSession(sessionId, 'a');
      expect(feed.machine.delayLeftMs('k'), `close, level ${level}`).toBe(0);
      expect(feed.acquire('k', 'b', 500).acquired, `level ${level}`).toBe(true);
      const f = atLevel(level);
      const a = f.delayed('k', 'a', 500, 2000);
      f.at(1600).release('k', 'a', a.token);
      expect(f.machine.delayLeftMs('k'), `release, level ${level}`).toBe(0);
    }
  });

  it('the rule survives a snapshot: a restored level-5 machine ends a late close as the original does', () => {
    const { feed, sessionId } = sessionHolding(5);
    const copy = new Feed(LockMachine.restore(feed.machine.snapshot()));
    copy.term = feed.term;
    copy.timeMs = feed.timeMs;
    for (const f of [feed, copy]) {
      f.at(1600).closeSession(sessionId, 'a');
      expect(f.machine.delayLeftMs('k')).toBe(900);
    }
    expect(copy.machine.digest()).toBe(feed.machine.digest());
  });
});
