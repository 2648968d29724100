// request_id dedup: a retried request gets its first outcome back instead of being applied twice.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { Feed } from './feed.js';

describe('request_id dedup', () => {
  it('a lost acquire response: the retry gets the same token, no second lease (article scenario 4)', () => {
    const feed = new Feed();
    const first = feed.at(1000).acquire('k', 'a', 500, 'req-1');
    const retry = feed.at(1100).acquire('k', 'a', 500, 'req-1');
    expect(retry).toEqual({ ...first, index: 2, replayed: true });
    expect(feed.machine.get('k')).toMatchObject({ token: first.token, expiresAtMs: 1500, lastToken: first.token });
  });

  it('returns the first outcome unchanged even after the lease moved on (acquired: true, same token)', () => {
    const feed = new Feed();
    const first = feed.at(0).acquire('k', 'a', 100, 'req-1');
    const b = feed.at(200).acquire('k', 'b', 100);
    const retry = feed.at(250).acquire('k', 'a', 100, 'req-1');
    expect(retry).toMatchObject({ acquired: true, token: first.token, expiresAtMs: 100, replayed: true });
    expect(feed.machine.get('k')).toMatchObject({ owner: 'b', token: b.token }); // nothing applied twice
  });

  it('does not remember refusals (they changed nothing; a retry is judged afresh) but replays effects (a lost release response is safe to retry)', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 1000);
    const refused = feed.acquire('k', 'b', 1000, 'b-1');
    expect(refused.acquired).toBe(false);
    feed.release('k', 'a', a.token, 'a-rel');
    // The same request, retried once the lock is free, is granted (this is how a FIFO waiter is served).
    const granted = feed.acquire('k', 'b', 1000, 'b-1');
    expect(granted).toMatchObject({ acquired: true, replayed: false });
    // ...and from then on that grant is what the request id replays.
    expect(feed.acquire('k', 'b', 1000, 'b-1')).toMatchObject({ acquired: true, token: granted.token, replayed: true });
    feed.release('k', 'b', granted.token, 'b-rel');
    const renewed = feed.renew('k', 'a', a.token, 1000, 'a-ren'); // NOT_HELD now
    expect(renewed.reason).toBe('NOT_HELD');
    expect(feed.renew('k', 'a', a.token, 1000, 'a-ren')).toMatchObject({ reason: 'NOT_HELD', replayed: false });
    // Retried release: reports the original success, and still changes nothing now.
    const c = feed.acquire('k', 'c', 1000);
    expect(feed.release('k', 'a', a.token, 'a-rel')).toMatchObject({ released: true, reason: 'UNSPECIFIED', replayed: true });
    expect(feed.machine.get('k')).toMatchObject({ owner: 'c', token: c.token });
  });

  it('is scoped per owner: another owner may use the same request id', () => {
    const feed = new Feed();
    feed.at(0).acquire('k1', 'a', 100, 'same');
    expect(feed.acquire('k2', 'b', 100, 'same')).toMatchObject({ acquired: true, replayed: false });
    // owner/requestId boundaries cannot collide: ("ab", "c") vs ("a", "bc")
    feed.acquire('k3', 'ab', 100, 'c');
    expect(feed.acquire('k4', 'a', 100, 'bc')).toMatchObject({ replayed: false, token: 4n });
  });

  it('the same request id for a different type, key or token is an error, not the unrelated outcome', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 1000, 'r1');
    const other = [
      feed.apply({ type: 'acquire', timeMs: 0, key: 'other', owner: 'a', ttlMs: 1000, requestId: 'r1' }),
      feed.apply({ type: 'release', timeMs: 0, key: 'k', owner: 'a', token: a.token, requestId: 'r1' }),
    ];
    for (const result of other) {
      expect(result).toMatchObject({ type: 'error', code: 'REQUEST_ID_REUSED' });
      expect(result.type === 'error' && result.message).toMatch(/first used for acquire of key "k"/);
    }
    feed.renew('k', 'a', a.token, 1000, 'r2');
    expect(feed.apply({ type: 'renew', timeMs: 0, key: 'k', owner: 'a', token: a.token + 1n, ttlMs: 1000, requestId: 'r2' })).toMatchObject({
      type: 'error',
      code: 'REQUEST_ID_REUSED',
    });
    // Nothing changed: the lease is still a's original one, and 'other' was never acquired.
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'a', token: a.token });
    expect(feed.machine.get('other').lastToken).toBe(0n);
  });

  it('forgets outcomes once the window of log time has passed', () => {
    const feed = Feed.withOptions({ dedupWindowMs: 1000 });
    const first = feed.at(0).acquire('k', 'a', 100, 'r');
    expect(feed.at(999).acquire('k', 'a', 100, 'r')).toMatchObject({ replayed: true, token: first.token });
    const fresh = feed.at(1000).acquire('k', 'a', 100, 'r'); // window over: a new acquire
    expect(fresh).toMatchObject({ replayed: false, acquired: true });
    expect(fresh.token).toBeGreaterThan(first.token);
  });

  it('prunes by log time in insertion order, and every entry (even a checkpoint) prunes', () => {
    const feed = Feed.withOptions({ dedupWindowMs: 1000 });
    for (let i = 0; i < 10; i++) feed.at(i * 100).acquire(`k${i}`, 'a', 100, `r${i}`);
    expect(feed.machine.dedupSize).toBe(10);
    feed.at(1450).checkpoint(); // forgets records made at 0..400
    expect(feed.machine.dedupSize).toBe(5);
    feed.at(5000).checkpoint();
    expect(feed.machine.dedupSize).toBe(0);
  });

  it('stays exact over thousands of records (the FIFO compacts its forgotten prefix)', () => {
    const feed = Feed.withOptions({ dedupWindowMs: 1000 });
    const tokens: bigint[] = [];
    // Distinct keys, so every acquire takes effect and is remembered (refusals are not).
    for (let i = 0; i < 5000; i++) tokens.push(feed.at(i).acquire(`k${i}`, `o${i % 3}`, 100, `r${i}`).token);
    expect(feed.machine.dedupSize).toBe(1000); // made at 4000..4999
    expect(feed.acquire('k3999', 'o0', 100, 'r3999')).toMatchObject({ replayed: false }); // forgotten
    expect(feed.acquire('k4000', `o${4000 % 3}`, 100, 'r4000')).toMatchObject({ replayed: true, token: tokens[4000] });
    const restored = LockMachine.restore(feed.machine.snapshot(), { dedupWindowMs: 1000 });
    expect(restored.snapshot()).toEqual(feed.machine.snapshot());
    const twin = new Feed(restored);
    for (const f of [feed, twin]) f.at(5500).checkpoint();
    expect(twin.machine.dedupSize).toBe(feed.machine.dedupSize);
    expect(twin.machine.digest()).toBe(feed.machine.digest());
  });

  it('caps the table, forgetting the oldest first', () => {
    const feed = Feed.withOptions({ dedupMaxEntries: 3 });
    for (let i = 0; i < 5; i++) feed.at(i).acquire(`k${i}`, 'a', 100_000, `r${i}`);
    expect(feed.machine.dedupSize).toBe(3);
    expect(feed.acquire('k0', 'a', 100_000, 'r0')).toMatchObject({ replayed: false }); // forgotten
    expect(feed.acquire('k4', 'a', 100_000, 'r4')).toMatchObject({ replayed: true });
  });

  it('requests without a request id are never deduplicated', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 100);
    expect(feed.acquire('k', 'a', 100).token).toBeGreaterThan(a.token);
    expect(feed.machine.dedupSize).toBe(0);
  });

  it('survives snapshot and restore, window included', () => {
    const feed = Feed.withOptions({ dedupWindowMs: 1000 });
    const first = feed.at(0).acquire('k', 'a', 100, 'r');
    feed.at(300).acquire('k2', 'a', 100, 'r2');
    const restored = new Feed(LockMachine.restore(feed.machine.snapshot(), { dedupWindowMs: 1000 }));
    expect(restored.at(500).acquire('k', 'a', 100, 'r')).toMatchObject({ replayed: true, token: first.token });
    expect(restored.at(1000).acquire('k', 'a', 100, 'r')).toMatchObject({ replayed: false }); // expired
    expect(restored.at(1100).acquire('k2', 'a', 100, 'r2')).toMatchObject({ replayed: true });
  });
});
