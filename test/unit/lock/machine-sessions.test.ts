// Sessions (session.ts, SPEC "Sessions"): one lease for many holds, judged by log time, carried across
// leader changes by the lease rule, ended (with every hold and waiter) in one entry.
import { describe, expect, it } from 'vitest';
import { LockMachine, decodeCommand, encodeCommand } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

describe('sessions', () => {
  it('open gives the entry index as id; holds under it live exactly as long as the session', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500);
    expect(s).toMatchObject({ sessionId: 1n, ttlMs: 500, expiresAtMs: 1500, replayed: false });
    const h1 = feed.expect('acquire', feed.underSession('k1', 'a', s.sessionId));
    const h2 = feed.expect('acquire', feed.underSession('k2', 'a', s.sessionId));
    expect(h1).toMatchObject({ acquired: true, token: 2n, ttlMs: 500, expiresAtMs: 1500 });
    expect(h2.token).toBe(3n);
    expect(feed.machine.get('k1')).toMatchObject({ held: true, owner: 'a', sessionId: 1n, expiresAtMs: 1500 });
    // Renewing the session carries every hold (one entry, not one per hold).
    expect(feed.at(1400).renewSession(s.sessionId)).toMatchObject({ renewed: true, expiresAtMs: 1900 });
    expect(feed.machine.get('k2')).toMatchObject({ held: true, expiresAtMs: 1900, ttlMs: 500 });
    // Nothing due on the lease heap: holds have no deadline of their own.
    expect(feed.machine.expiredLeases(10_000, 10)).toEqual([]);
    expect(feed.machine.dueSessions(1899, 10)).toEqual([]);
    expect(feed.machine.dueSessions(1900, 10)).toEqual([{ sessionId: 1n, expiresAtMs: 1900 }]);
    expect(feed.at(1899).expireSession(s.sessionId).ended).toBe(false);
    const end = feed.at(1900).expireSession(s.sessionId);
    expect(end).toMatchObject({ ended: true, released: ['k1', 'k2'] });
    expect(feed.machine.get('k1').held).toBe(false);
    expect(feed.machine.get('k1').lastToken).toBe(2n);
    expect(feed.machine.sessionCount).toBe(0);
    expect(feed.machine.leaseCount).toBe(0);
  });

  it('a run-out session cannot be renewed or used, even before its expiry entry', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500);
    expect(feed.at(1500).renewSession(s.sessionId)).toMatchObject({ renewed: false, reason: 'EXPIRED' });
    expect(feed.underSession('k', 'a', s.sessionId)).toMatchObject({ type: 'error', code: 'SESSION_NOT_OPEN' });
    expect(feed.renewSession(99n)).toMatchObject({ renewed: false, reason: 'NOT_HELD' });
  });

  it("an acquire under another owner's session is refused; renew of a session hold says renew the session", () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500);
    expect(feed.underSession('k', 'b', s.sessionId)).toMatchObject({ type: 'error', code: 'SESSION_OWNER_MISMATCH' });
    const h = feed.expect('acquire', feed.underSession('k', 'a', s.sessionId));
    expect(feed.apply({ type: 'renew', timeMs: 1000, key: 'k', owner: 'a', token: h.token, ttlMs: 500, requestId: '' })).toMatchObject({
      type: 'error',
      code: 'RENEW_THE_SESSION',
    });
    expect(feed.renewSession(s.sessionId, 'b')).toMatchObject({ renewed: false, reason: 'WRONG_OWNER' });
    expect(feed.closeSession(s.sessionId, 'b')).toMatchObject({ ended: false, reason: 'WRONG_OWNER' });
    expect(feed.machine.get('k').held).toBe(true);
  });

  it('release of a session hold works by owner and token, and leaves the session and its other holds', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500);
    const h = feed.expect('acquire', feed.underSession('k', 'a', s.sessionId));
    feed.expect('acquire', feed.underSession('j', 'a', s.sessionId));
    expect(feed.release('k', 'a', h.token).released).toBe(true);
    expect(feed.machine.sessionInfo(1)).toMatchObject({ holds: 1, live: true });
    expect(feed.closeSession(s.sessionId, 'a')).toMatchObject({ ended: true, released: ['j'] });
  });

  it('its end hands every key to its line in that one entry, and drops its own waiters', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500);
    feed.expect('acquire', feed.underSession('k1', 'a', s.sessionId));
    feed.expect('acquire', feed.underSession('k2', 'a', s.sessionId));
    feed.acquire('x', 'z', 60_000);
    const own = feed.expect('acquire', feed.underSession('x', 'a', s.sessionId, { waitMs: 60_000, requestId: 'ax' }));
    expect(own.waitTicket).toBe(5);
    feed.wait('k1', 'w1', 300, 60_000, 'r1');
    feed.wait('k2', 'w2', 300, 60_000, 'r2');
    const end = feed.at(1200).closeSession(s.sessionId, 'a');
    expect(end.released).toEqual(['k1', 'k2']);
    expect(end.decided?.map((d) => `${d.key}:${d.owner}:${d.outcome.acquired}`)).toEqual(['x:a:false', 'k1:w1:true', 'k2:w2:true']);
    expect(feed.machine.get('k1')).toMatchObject({ held: true, owner: 'w1', token: BigInt(end.index) });
    expect(feed.machine.waiterCountOf('x')).toBe(0);
    // The dropped waiter's refusal is remembered: a retry of it is answered, not queued again.
    expect(feed.underSession('x', 'a', s.sessionId, { waitMs: 60_000, requestId: 'ax' })).toMatchObject({
      type: 'acquire',
      replayed: true,
      acquired: false,
    });
  });

  it('a waiter under a session is granted a session hold, which ends with the session', () => {
    const feed = new Feed();
    const z = feed.at(1000).acquire('k', 'z', 60_000);
    const s = feed.openSession('a', 500);
    feed.expect('acquire', feed.underSession('k', 'a', s.sessionId, { waitMs: 60_000, requestId: 'r' }));
    const rel = feed.release('k', 'z', z.token);
    expect(rel.decided?.[0]?.outcome).toMatchObject({ acquired: true, ttlMs: 500, expiresAtMs: 1500 });
    expect(feed.machine.get('k')).toMatchObject({ owner: 'a', sessionId: 2n });
    expect(feed.at(1500).expireSession(s.sessionId).released).toEqual(['k']);
  });

  it('an acquire that finds a key held under a run-out session ends that whole session first', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500);
    feed.expect('acquire', feed.underSession('k1', 'a', s.sessionId));
    feed.expect('acquire', feed.underSession('k2', 'a', s.sessionId));
    feed.wait('k2', 'w', 300, 60_000, 'rw');
    const b = feed.at(1600).acquire('k1', 'b', 500);
    expect(b).toMatchObject({ acquired: true });
    expect(b.decided?.map((d) => `${d.key}:${d.owner}`)).toEqual(['k2:w']);
    expect(feed.machine.sessionCount).toBe(0);
  });

  it("expiry starts each hold's lock-delay (the session's own, or the hold's) from the session's end; close does not", () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500, { lockDelayMs: 1000 });
    feed.expect('acquire', feed.underSession('k1', 'a', s.sessionId));
    feed.expect('acquire', feed.underSession('k2', 'a', s.sessionId, { lockDelayMs: 3000 }));
    feed.at(2000).expireSession(s.sessionId);
    expect(feed.machine.delayLeftMs('k1')).toBe(500); // 1500 + 1000 - 2000
    expect(feed.machine.delayLeftMs('k2')).toBe(2500);
    const t = feed.at(3000).openSession('a', 500, { lockDelayMs: 1000 });
    feed.expect('acquire', feed.underSession('k3', 'a', t.sessionId));
    feed.closeSession(t.sessionId, 'a');
    expect(feed.machine.delayLeftMs('k3')).toBe(0);
  });

  it('below cluster level 4, a re-acquire by its owner moves a hold into or out of a session', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500);
    feed.acquire('k', 'a', 10_000);
    feed.expect('acquire', feed.underSession('k', 'a', s.sessionId));
    expect(feed.machine.get('k').sessionId).toBe(1n);
    expect(feed.machine.expiredLeases(1_000_000, 10)).toEqual([]);
    feed.acquire('k', 'a', 10_000);
    expect(feed.machine.get('k').sessionId).toBeUndefined();
    expect(feed.closeSession(s.sessionId).released).toEqual([]);
    expect(feed.machine.get('k').held).toBe(true);
    expect(feed.machine.expiredLeases(1_000_000, 10).map((d) => d.key)).toEqual(['k']);
  });

  it('a retry of an open with the same request_id answers the same session while it lives', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500, { requestId: 'o1' });
    expect(feed.openSession('a', 500, { requestId: 'o1' })).toMatchObject({ sessionId: s.sessionId, replayed: true });
    expect(feed.openSession('b', 500, { requestId: 'o1' }).sessionId).not.toBe(s.sessionId);
    feed.closeSession(s.sessionId);
    expect(feed.openSession('a', 500, { requestId: 'o1' }).replayed).toBe(false);
  });

  it('a leader change never cuts a session short, and elections cannot keep a dead one alive (LEASES.md)', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 1000);
    feed.expect('acquire', feed.underSession('k', 'a', s.sessionId));
    // A new leader takes office at 1200 (the last term ended at 1000): the session gets a full TTL from then.
    feed.termStart(1200);
    expect(feed.machine.dueSessions(2199, 10)).toEqual([]);
    expect(feed.machine.get('k')).toMatchObject({ held: true, expiresAtMs: 2200 });
    // Terms each observing part of the TTL: after 1000 ms observed in all, the next term start ends it.
    feed.at(1800).checkpoint(1800); // this term observed 600
    feed.termStart(1800); // observed 600 < 1000: extended to 2800
    expect(feed.machine.get('k')).toMatchObject({ held: true, expiresAtMs: 2800 }); // (settled: stored deadline 2800)
    feed.at(2300).checkpoint(2300); // +500 = 1100 >= 1000
    const t = feed.termStart(2300);
    expect(t.leasesEnded).toBe(0); // leases only; the session is what ends
    // Asked before anything reads the session: the term start itself must have ended it (not a lazy read).
    expect(feed.machine.dueSessions(0, 10).map((d) => d.sessionId)).toEqual([s.sessionId]);
    expect(feed.machine.get('k').held).toBe(false);
    expect(feed.expireSession(s.sessionId)).toMatchObject({ ended: true, released: ['k'] });
  });

  it('survives a snapshot (version 6) byte for byte, and restores to the same behaviour', () => {
    const feed = new Feed();
    const s = feed.at(1000).openSession('a', 500, { requestId: 'o', lockDelayMs: 200 });
    feed.expect('acquire', feed.underSession('k1', 'a', s.sessionId));
    feed.acquire('x', 'z', 60_000);
    feed.expect('acquire', feed.underSession('x', 'a', s.sessionId, { waitMs: 60_000, requestId: 'ax' }));
    feed.acquire('plain', 'p', 700);
    feed.termStart(1100);
    const bytes = feed.machine.snapshot();
    expect(bytes[3]).toBe(6);
    const restored = LockMachine.restore(bytes);
    expect(restored.snapshot()).toEqual(bytes);
    expect(restored.get('k1')).toEqual(feed.machine.get('k1'));
    expect(restored.sessionInfo(1)).toEqual(feed.machine.sessionInfo(1));
    const other = new Feed(restored);
    other.term = feed.term;
    for (const f of [feed, other]) {
      const end = f.at(2000).expireSession(s.sessionId);
      expect(end).toMatchObject({ ended: true, released: ['k1'] });
      expect(end.decided?.map((d) => `${d.key}:${d.owner}:${d.outcome.acquired}`)).toEqual(['x:a:false']);
    }
    expect(other.machine.snapshot()).toEqual(feed.machine.snapshot());
    // With no session left, the snapshot is written in an older version again.
    expect(feed.machine.snapshot()[3]).toBeLessThan(6);
  });

  it('commands round-trip through the codec, and bad ones are refused by name', () => {
    const cmds = [
      { type: 'openSession', timeMs: 5, owner: 'a', ttlMs: 500, requestId: 'r', lockDelayMs: 7 },
      { type: 'renewSession', timeMs: 5, sessionId: 3, owner: 'a' },
      { type: 'closeSession', timeMs: 5, sessionId: 3, owner: '' },
      { type: 'expireSession', timeMs: 5, sessionId: 3 },
      { type: 'acquire', timeMs: 5, key: 'k', owner: 'a', ttlMs: 0, requestId: 'q', sessionId: 3, waitMs: 9, value: new Uint8Array([1]) },
    ] as const;
    for (const c of cmds) expect(decodeCommand(encodeCommand(c))).toEqual(c);
    expect(() => encodeCommand({ type: 'acquire', timeMs: 5, key: 'k', owner: 'a', ttlMs: 10, requestId: '', sessionId: 3 })).toThrow(
      /ttlMs must be 0/,
    );
    expect(() => encodeCommand({ type: 'expireSession', timeMs: 5, sessionId: 0 })).toThrow(/sessionId/);
    expect(() => encodeCommand({ type: 'openSession', timeMs: 5, owner: 'a', ttlMs: 0, requestId: '', lockDelayMs: 0 })).toThrow(/ttlMs/);
  });
});
