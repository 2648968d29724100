// The lock rules: acquire / renew / release / expire / get, fencing tokens, refusal reasons.
import { describe, expect, it } from 'vitest';
import { LockApplyOrderError, LockMachine } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

describe('acquire', () => {
  it('grants a free key with token = raft index and deadline = log time + ttl', () => {
    const feed = new Feed();
    feed.skip(); // index 1 is a raft noop
    const result = feed.at(1000).acquire('k', 'a', 500);
    expect(result).toEqual({
      type: 'acquire',
      index: 2,
      replayed: false,
      acquired: true,
      token: 2n,
      ttlMs: 500,
      expiresAtMs: 1500,
      holderOwner: '',
      holderTtlMs: 0,
    });
    expect(feed.machine.get('k')).toEqual({ held: true, owner: 'a', token: 2n, ttlMs: 500, expiresAtMs: 1500, lastToken: 2n });
  });

  it('of two acquires on a free key exactly the first in log order wins; the loser learns the holder', () => {
    const feed = new Feed();
    const first = feed.at(1000).acquire('k', 'a', 500);
    const second = feed.at(1001).acquire('k', 'b', 500);
    expect(first.acquired).toBe(true);
    expect(second).toEqual({
      type: 'acquire',
      index: 2,
      replayed: false,
      acquired: false,
      token: 0n,
      ttlMs: 0,
      expiresAtMs: 0,
      holderOwner: 'a',
      holderTtlMs: 499,
    });
    expect(feed.machine.get('k').owner).toBe('a');
    expect(feed.machine.get('k').lastToken).toBe(1n); // a refused acquire issues no token
  });

  it('succeeds once the live lease has expired (deadline <= log time), with a higher token', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    expect(feed.at(1499).acquire('k', 'b', 500).acquired).toBe(false);
    const b = feed.at(1500).acquire('k', 'b', 500); // deadline == now: expired
    expect(b).toMatchObject({ acquired: true, token: 3n, expiresAtMs: 2000 });
    expect(b.token).toBeGreaterThan(a.token);
    // The old holder is fenced: its token can neither renew nor release.
    expect(feed.renew('k', 'a', a.token, 500)).toMatchObject({ renewed: false, reason: 'WRONG_OWNER' });
    expect(feed.release('k', 'a', a.token)).toMatchObject({ released: false, reason: 'WRONG_OWNER' });
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'b', token: 3n });
  });

  it('a same-owner re-acquire of a live lease issues a NEW token that supersedes the old one', () => {
    const feed = new Feed();
    const first = feed.at(1000).acquire('k', 'a', 500);
    const again = feed.at(1200).acquire('k', 'a', 800);
    expect(again).toMatchObject({ acquired: true, token: 2n, ttlMs: 800, expiresAtMs: 2000 });
    expect(feed.renew('k', 'a', first.token, 500)).toMatchObject({ renewed: false, reason: 'WRONG_TOKEN' });
    expect(feed.release('k', 'a', first.token)).toMatchObject({ released: false, reason: 'WRONG_TOKEN' });
    expect(feed.renew('k', 'a', again.token, 500)).toMatchObject({ renewed: true });
  });

  it('tokens strictly increase per key across release, expiry and other keys; last_token survives', () => {
    const feed = new Feed();
    const tokens: bigint[] = [];
    let t = 0;
    for (let round = 0; round < 5; round++) {
      const got = feed.at((t += 10)).acquire('k', `owner-${round}`, 100);
      tokens.push(got.token);
      feed.at((t += 1)).acquire('other', 'x', 100); // other keys consume indexes too
      if (round % 2 === 0) feed.release('k', `owner-${round}`, got.token);
      else {
        feed.at((t += 200)); // let it lapse, then expire it
        expect(feed.expire('k', got.token).expired).toBe(true);
      }
      expect(feed.machine.get('k')).toMatchObject({ held: false, token: 0n, lastToken: got.token });
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]!);
  });

  it('get of a never-used key reports lastToken 0', () => {
    expect(new LockMachine().get('nope')).toEqual({ held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: 0n });
  });
});

describe('renew', () => {
  it('moves the deadline to log time + the new ttl', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    expect(feed.at(1400).renew('k', 'a', a.token, 2000)).toEqual({
      type: 'renew',
      index: 2,
      replayed: false,
      renewed: true,
      ttlMs: 2000,
      expiresAtMs: 3400,
      reason: 'UNSPECIFIED',
    });
    expect(feed.machine.get('k')).toMatchObject({ token: a.token, ttlMs: 2000, expiresAtMs: 3400 });
    expect(feed.at(3000).acquire('k', 'b', 100).acquired).toBe(false);
  });

  it('refuses with NOT_HELD, WRONG_OWNER, WRONG_TOKEN, EXPIRED — in that precedence — changing nothing', () => {
    const feed = new Feed();
    expect(feed.at(1000).renew('k', 'a', 1n, 500)).toEqual({
      type: 'renew',
      index: 1,
      replayed: false,
      renewed: false,
      ttlMs: 0,
      expiresAtMs: 0,
      reason: 'NOT_HELD',
    });
    const a = feed.acquire('k', 'a', 500); // token 2, deadline 1500
    const before = feed.machine.get('k');
    expect(feed.renew('k', 'b', a.token, 500).reason).toBe('WRONG_OWNER');
    expect(feed.renew('k', 'b', 999n, 500).reason).toBe('WRONG_OWNER'); // owner checked before token
    expect(feed.renew('k', 'a', a.token + 1n, 500).reason).toBe('WRONG_TOKEN');
    expect(feed.machine.get('k')).toEqual(before);
    feed.at(1500);
    expect(feed.renew('k', 'a', 999n, 500).reason).toBe('WRONG_TOKEN'); // token checked before expiry
    expect(feed.renew('k', 'b', a.token, 500).reason).toBe('WRONG_OWNER');
    expect(feed.renew('k', 'a', a.token, 500)).toMatchObject({ renewed: false, reason: 'EXPIRED' });
    // Expired and then removed: the key is free again.
    expect(feed.expire('k', a.token).expired).toBe(true);
    expect(feed.renew('k', 'a', a.token, 500).reason).toBe('NOT_HELD');
    expect(feed.machine.get('k').lastToken).toBe(a.token);
  });

  it('renew after expiry fails even before anyone else acquires; the holder must re-acquire for a new token', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 100);
    expect(feed.at(150).renew('k', 'a', a.token, 100).reason).toBe('EXPIRED');
    const again = feed.acquire('k', 'a', 100);
    expect(again.token).toBeGreaterThan(a.token);
  });
});

describe('release', () => {
  it('removes the lease only with the matching owner and token; the key is then free', () => {
    const feed = new Feed();
    const a = feed.at(1000).acquire('k', 'a', 500);
    expect(feed.release('k', 'a', a.token)).toEqual({
      type: 'release',
      index: 2,
      replayed: false,
      key: 'k',
      released: true,
      reason: 'UNSPECIFIED',
    });
    expect(feed.machine.get('k')).toMatchObject({ held: false, lastToken: 1n });
    expect(feed.machine.leaseCount).toBe(0);
    expect(feed.at(1001).acquire('k', 'b', 500).acquired).toBe(true);
  });

  it('refuses with NOT_HELD, WRONG_OWNER, WRONG_TOKEN and changes nothing', () => {
    // "Changes nothing" = same state as a twin that skipped those entries (stamps equal, so time is equal).
    const feed = new Feed();
    const twin = new Feed();
    expect(feed.at(1000).release('k', 'a', 1n)).toMatchObject({ released: false, reason: 'NOT_HELD' });
    twin.at(1000).checkpoint();
    const a = feed.acquire('k', 'a', 500);
    twin.acquire('k', 'a', 500);
    expect(feed.release('k', 'b', a.token)).toMatchObject({ released: false, reason: 'WRONG_OWNER' });
    expect(feed.release('k', 'a', a.token + 100n)).toMatchObject({ released: false, reason: 'WRONG_TOKEN' });
    twin.skip();
    twin.skip();
    expect(feed.machine.digest()).toBe(twin.machine.digest());
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'a', token: a.token });
  });

  it("the old holder cannot release the new holder's lock (article scenario 7)", () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 100);
    const b = feed.at(100).acquire('k', 'b', 100);
    expect(feed.release('k', 'a', a.token)).toMatchObject({ released: false, reason: 'WRONG_OWNER' });
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'b', token: b.token });
  });

  it('an expired-but-not-yet-removed lease can be released by its owner+token (clean removal)', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 100);
    expect(feed.at(5000).release('k', 'a', a.token)).toMatchObject({ released: true, reason: 'UNSPECIFIED' });
    expect(feed.machine.leaseCount).toBe(0);
    expect(feed.expire('k', a.token).expired).toBe(false); // nothing left to expire
  });

  it('releasing twice: the second is NOT_HELD, and after the lock moved on it changes nothing', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 100);
    expect(feed.release('k', 'a', a.token).released).toBe(true);
    expect(feed.release('k', 'a', a.token).reason).toBe('NOT_HELD');
    const b = feed.acquire('k', 'b', 100);
    expect(feed.release('k', 'a', a.token).reason).toBe('WRONG_OWNER');
    expect(feed.machine.get('k')).toMatchObject({ owner: 'b', token: b.token });
  });
});

describe('expire', () => {
  it('removes the lease only when it still has that token and its deadline has passed in log time', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 100);
    expect(feed.at(99).expire('k', a.token)).toEqual({ type: 'expire', index: 2, expired: false, key: 'k', token: a.token });
    expect(feed.at(100).expire('k', a.token + 1n).expired).toBe(false);
    expect(feed.machine.get('k').held).toBe(false); // past its deadline, though still present
    expect(feed.machine.leaseCount).toBe(1);
    expect(feed.expire('k', a.token).expired).toBe(true);
    expect(feed.machine.leaseCount).toBe(0);
    expect(feed.expire('missing', 1n).expired).toBe(false);
  });

  it('a stale expire loses to a renew that landed first, and to a newer acquire', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 100);
    feed.at(90).renew('k', 'a', a.token, 100); // deadline 190
    expect(feed.at(120).expire('k', a.token).expired).toBe(false);
    const b = feed.at(500).acquire('k', 'b', 100);
    expect(feed.at(10_000).expire('k', a.token).expired).toBe(false);
    expect(feed.expire('k', b.token).expired).toBe(true);
  });
});

describe('apply order', () => {
  it('rejects gaps and repeats (a driver bug), and counts skipped entries', () => {
    const machine = new LockMachine();
    machine.skip(1);
    expect(() => machine.skip(1)).toThrow(LockApplyOrderError);
    expect(() => machine.apply(3, 1, new Uint8Array(0))).toThrow(LockApplyOrderError);
    expect(machine.appliedIndex).toBe(1);
  });
});
