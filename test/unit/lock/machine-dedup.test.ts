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

  it('replays refusals and renew/release outcomes too (a lost release response is safe to retry)', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 1000);
    const refused = feed.acquire('k', 'b', 1000, 'b-1');
    feed.release('k', 'a', a.token, 'a-rel');
    expect(feed.acquire('k', 'b', 1000, 'b-1')).toEqual({ ...refused, index: 4, replayed: true });
    const renewed = feed.renew('k', 'a', a.token, 1000, 'a-ren'); // NOT_HELD now
    expect(renewed.reason).toBe('NOT_HELD');
    expect(feed.renew('k', 'a', a.token, 1000, 'a-ren')).toMatchObject({ reason: 'NOT_HELD', replayed: true });
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
    expect(feed.apply({ type: 'renew', timeMs: 0, key: 'k', owner: 'a', token: a.token + 1n, ttlMs: 1000, requestId: 'r2' })).toMatchObject(
      {
        type: 'error',
        code: 'REQUEST_ID_REUSED',
      },
    );
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
    for (let i = 0; i < 5000; i++) tokens.push(feed.at(i).acquire(`k${i % 7}`, `o${i % 3}`, 100, `r${i}`).token);
    expect(feed.machine.dedupSize).toBe(1000); // made at 4000..4999
    expect(feed.acquire('k0', 'o0', 100, 'r3999')).toMatchObject({ replayed: false }); // forgotten
    expect(feed.acquire(`k${4000 % 7}`, `o${4000 % 3}`, 100, 'r4000')).toMatchObject({ replayed: true, token: tokens[4000] });
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

describe('request_id dedup and the FIFO wait queue', () => {
  it('a late duplicate of a refused acquire stays refused after the key frees (no orphan grant)', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 1000);
    const refused = feed.acquire('k', 'b', 1000, 'b-1');
    expect(refused.acquired).toBe(false);
    feed.release('k', 'a', a.token, 'a-rel');
    // The same request arrives again (a retry, or a copy delayed in the network): the refusal is replayed.
    expect(feed.acquire('k', 'b', 1000, 'b-1')).toMatchObject({ acquired: false, replayed: true, holderOwner: 'a' });
    expect(feed.machine.get('k').held).toBe(false);
  });

  it('only a queued acquire (the leader serving the head waiter) turns the remembered refusal into a grant, which retries then replay', () => {
    const feed = new Feed();
    const a = feed.at(0).acquire('k', 'a', 1000);
    expect(feed.acquire('k', 'w', 1000, 'w-1').acquired).toBe(false);
    // Still held: a queued offer is refused too (and nothing changes).
    expect(feed.apply({ type: 'acquire', timeMs: 0, key: 'k', owner: 'w', ttlMs: 1000, requestId: 'w-1', queued: true })).toMatchObject({
      acquired: false,
    });
    feed.release('k', 'a', a.token, 'a-rel');
    const granted = feed.apply({ type: 'acquire', timeMs: 0, key: 'k', owner: 'w', ttlMs: 1000, requestId: 'w-1', queued: true });
    expect(granted).toMatchObject({ type: 'acquire', acquired: true, replayed: false });
    const token = (granted as { token: bigint }).token;
    // The waiter's retry (its answer was lost) now gets the grant back.
    expect(feed.acquire('k', 'w', 1000, 'w-1')).toMatchObject({ acquired: true, token, replayed: true });
    expect(feed.machine.rememberedAcquire('w', 'w-1', 'k')).toMatchObject({ acquired: true, token });
    expect(feed.machine.rememberedAcquire('w', 'w-1', 'other-key')).toBeNull();
    // A queued offer for an already granted request replays the grant: no second lease.
    expect(feed.apply({ type: 'acquire', timeMs: 0, key: 'k', owner: 'w', ttlMs: 1000, requestId: 'w-1', queued: true })).toMatchObject({
      acquired: true,
      token,
      replayed: true,
    });
  });

  it('a replaced refusal does not make its successor vanish when the old slot ages out, and snapshots keep only the current record', () => {
    const feed = Feed.withOptions({ dedupWindowMs: 1000 });
    const a = feed.at(0).acquire('k', 'a', 100_000);
    feed.at(10).acquire('k', 'w', 100_000, 'w-1'); // refusal, recorded at 10
    feed.at(500).release('k', 'a', a.token, 'a-rel');
    const granted = feed
      .at(600)
      .apply({ type: 'acquire', timeMs: 600, key: 'k', owner: 'w', ttlMs: 100_000, requestId: 'w-1', queued: true });
    expect(granted).toMatchObject({ acquired: true });
    feed.at(1200).checkpoint(); // the refusal's slot (recorded at 10) ages out; the grant (at 600) must stay
    expect(feed.machine.rememberedAcquire('w', 'w-1', 'k')).toMatchObject({ acquired: true });
    const restored = LockMachine.restore(feed.machine.snapshot(), { dedupWindowMs: 1000 });
    expect(restored.rememberedAcquire('w', 'w-1', 'k')).toMatchObject({ acquired: true });
    expect(restored.snapshot()).toEqual(feed.machine.snapshot());
  });
});
