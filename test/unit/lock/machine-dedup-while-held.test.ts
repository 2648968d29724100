// An acquire's dedup record outlives the window while its owner holds the key (cluster level 6, versions.ts;
// dedup.ts `prune`, machine.ts `keepAcquireRecord`; issue 38): a copy of the request that arrives however
// late — a forward held up on its hop past the window — replays its first outcome instead of superseding the
// hold its client trusts, whatever `dedupWindowMs` is.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { BUILD_LEVEL } from '../../../src/lock/versions.js';
import { Feed } from './feed.js';

const WINDOW_MS = 400;

/** A machine with a 400 ms dedup window (a lock simulation seed's), at `level`. */
function atLevel(level: number, windowMs = WINDOW_MS): Feed {
  const feed = Feed.withOptions({ dedupWindowMs: windowMs });
  feed.at(1000);
  feed.raiseLevel(level);
  return feed;
}

describe('an acquire is remembered while its owner holds the key (level 6)', () => {
  it('a copy arriving after the window, while the hold it granted lives, replays the grant and supersedes nothing', () => {
    const feed = atLevel(BUILD_LEVEL);
    const first = feed.acquire('k', 'owner-6', 1000, 'c6r1');
    // The client renews its hold; log time moves well past the window.
    for (let t = 1300; t <= 2500; t += 300) feed.at(t).renew('k', 'owner-6', first.token, 1000);
    const late = feed.at(2600).acquire('k', 'owner-6', 1000, 'c6r1');
    expect(late).toMatchObject({ replayed: true, acquired: true, token: first.token });
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'owner-6', token: first.token });
  });

  it('holds for any window the config accepts (1 ms)', () => {
    const feed = atLevel(BUILD_LEVEL, 1);
    const first = feed.acquire('k', 'a', 10_000, 'r1');
    expect(feed.at(5000).acquire('k', 'a', 10_000, 'r1')).toMatchObject({ replayed: true, token: first.token });
    expect(feed.machine.get('k').token).toBe(first.token);
  });

  it("a copy of a request whose hold a re-acquire superseded replays too: the owner's newer hold stays", () => {
    const feed = atLevel(BUILD_LEVEL);
    const first = feed.acquire('k', 'a', 10_000, 'r1');
    const second = feed.at(1200).acquire('k', 'a', 10_000, 'r2');
    expect(second.token).toBeGreaterThan(first.token);
    const late = feed.at(3000).acquire('k', 'a', 10_000, 'r1');
    expect(late).toMatchObject({ replayed: true, token: first.token });
    expect(feed.machine.get('k').token).toBe(second.token);
  });

  it('a hold under a session, and one of many (a semaphore), keep theirs the same way', () => {
    const feed = atLevel(BUILD_LEVEL);
    const session = feed.openSession('s-owner', 100_000);
    const held = feed.expect('acquire', feed.underSession('k', 's-owner', session.sessionId, { requestId: 'r1' }));
    const slot = feed.expect('acquire', feed.many('sem', 'b', { limit: 2, ttlMs: 100_000, requestId: 'r1' }));
    feed.at(5000);
    expect(feed.underSession('k', 's-owner', session.sessionId, { requestId: 'r1' })).toMatchObject({ replayed: true, token: held.token });
    expect(feed.many('sem', 'b', { limit: 2, ttlMs: 100_000, requestId: 'r1' })).toMatchObject({ replayed: true, token: slot.token });
    expect(feed.machine.get('k').token).toBe(held.token);
    expect(feed.machine.get('sem').holders?.map((h) => h.token)).toEqual([slot.token]);
  });

  it('the record goes once the hold has gone and the window passed (memory follows the holds)', () => {
    const feed = atLevel(BUILD_LEVEL);
    const first = feed.acquire('k', 'a', 10_000, 'r1');
    const kept = feed.machine.dedupSize;
    feed.at(3000).checkpoint();
    expect(feed.machine.dedupSize).toBe(kept);
    feed.release('k', 'a', first.token);
    feed.at(3000 + WINDOW_MS).checkpoint(); // kept at 3000, asked again a window later: no hold now
    expect(feed.machine.dedupSize).toBe(0);
    // A copy now is a new request: the key is free, so it is granted afresh (an orphan that lapses by its ttl).
    expect(feed.acquire('k', 'a', 10_000, 'r1')).toMatchObject({ replayed: false, acquired: true });
  });

  it('a refusal is not kept past the window: its owner holds nothing it could supersede', () => {
    const feed = atLevel(BUILD_LEVEL);
    feed.acquire('k', 'a', 10_000);
    expect(feed.acquire('k', 'b', 10_000, 'rb').acquired).toBe(false);
    feed.at(2000).checkpoint();
    expect(feed.machine.dedupSize).toBe(0);
  });

  it('below level 6 the window alone decides: the late copy supersedes (an older log replays as it did)', () => {
    const feed = atLevel(5);
    const first = feed.acquire('k', 'a', 10_000, 'r1');
    const late = feed.at(3000).acquire('k', 'a', 10_000, 'r1');
    expect(late).toMatchObject({ replayed: false, acquired: true });
    expect(late.token).toBeGreaterThan(first.token);
  });

  it('a kept record survives a snapshot, and the restored machine goes on alike', () => {
    const feed = atLevel(BUILD_LEVEL);
    const first = feed.acquire('k', 'a', 10_000, 'r1');
    feed.acquire('j', 'b', 10_000, 'r2');
    feed.at(3000).checkpoint(); // both kept, remembered again at 3000
    const bytes = feed.machine.snapshot();
    const copy = new Feed(LockMachine.restore(bytes, { dedupWindowMs: WINDOW_MS }));
    copy.term = feed.term;
    copy.timeMs = feed.timeMs;
    expect(copy.machine.snapshot()).toEqual(bytes);
    for (const f of [feed, copy]) {
      f.at(5000);
      expect(f.acquire('k', 'a', 10_000, 'r1')).toMatchObject({ replayed: true, token: first.token });
      f.release('k', 'a', first.token);
      f.at(5000 + WINDOW_MS).checkpoint();
    }
    expect(copy.machine.digest()).toBe(feed.machine.digest());
    expect(copy.machine.snapshot()).toEqual(feed.machine.snapshot());
  });
});
