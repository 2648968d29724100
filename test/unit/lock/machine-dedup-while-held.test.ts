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

// A request id names one request (level 6, dedup.ts `acquireTerms`): a copy asking other terms — another
// session, limit or mode — is refused as a whole, never answered with the first request's outcome. Kept
// records made that reachable: lock simulation seed 400544 replayed an exclusive grant under session 98 to a
// shared request under session 143, whose client then trusted a hold that ended with session 98.
describe('a replay answers only the same request: key, session, limit and mode (level 6)', () => {
  it('under another session: REQUEST_ID_REUSED naming both, and nothing changes', () => {
    const feed = atLevel(BUILD_LEVEL);
    const s1 = feed.openSession('a', 100_000);
    const s2 = feed.openSession('a', 100_000);
    const held = feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId, { requestId: 'r1' }));
    const copy = feed.at(3000).underSession('k', 'a', s2.sessionId, { requestId: 'r1' });
    expect(copy).toMatchObject({ type: 'error', code: 'REQUEST_ID_REUSED' });
    expect((copy as { message: string }).message).toContain(
      `session ${s1.sessionId}, limit 1, exclusive), this one asks session ${s2.sessionId}`,
    );
    expect(feed.machine.get('k')).toMatchObject({ owner: 'a', token: held.token, sessionId: s1.sessionId });
    // The same request (same session) still replays.
    expect(feed.underSession('k', 'a', s1.sessionId, { requestId: 'r1' })).toMatchObject({ replayed: true, token: held.token });
    expect(feed.machine.get('k').token).toBe(held.token);
  });

  it('in another mode (shared vs exclusive) or naming another limit: refused, the hold untouched', () => {
    const feed = atLevel(BUILD_LEVEL);
    const held = feed.expect('acquire', feed.many('r', 'a', { shared: true, ttlMs: 100_000, requestId: 'r1' }));
    expect(feed.many('r', 'a', { ttlMs: 100_000, requestId: 'r1' })).toMatchObject({ type: 'error', code: 'REQUEST_ID_REUSED' });
    const slot = feed.expect('acquire', feed.many('sem', 'b', { limit: 2, ttlMs: 100_000, requestId: 'r2' }));
    expect(feed.many('sem', 'b', { limit: 3, ttlMs: 100_000, requestId: 'r2' })).toMatchObject({
      type: 'error',
      code: 'REQUEST_ID_REUSED',
    });
    expect(feed.machine.get('r').holders?.map((h) => [h.token, h.shared])).toEqual([[held.token, true]]);
    expect(feed.machine.get('sem').holders?.map((h) => h.token)).toEqual([slot.token]);
  });

  it('a refusal replays only to the same terms too (the id of a refused request is not reusable under a new session)', () => {
    const feed = atLevel(BUILD_LEVEL);
    feed.acquire('k', 'x', 100_000);
    const s1 = feed.openSession('a', 100_000);
    const s2 = feed.openSession('a', 100_000);
    expect(feed.underSession('k', 'a', s1.sessionId, { requestId: 'r1' })).toMatchObject({ acquired: false });
    expect(feed.underSession('k', 'a', s2.sessionId, { requestId: 'r1' })).toMatchObject({ type: 'error', code: 'REQUEST_ID_REUSED' });
  });

  it('a place in line belongs to its terms: a retry under another session is refused, the waiter keeps its place', () => {
    const feed = atLevel(BUILD_LEVEL);
    feed.acquire('k', 'x', 100_000);
    const s1 = feed.openSession('a', 100_000);
    const s2 = feed.openSession('a', 100_000);
    const waiting = feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId, { requestId: 'r1', waitMs: 50_000 }));
    expect(waiting.waitTicket).toBeDefined();
    expect(feed.machine.waitsWithOtherTerms({ owner: 'a', requestId: 'r1', sessionId: Number(s2.sessionId) })).toBe(true);
    expect(feed.machine.waitsWithOtherTerms({ owner: 'a', requestId: 'r1', sessionId: Number(s1.sessionId) })).toBe(false);
    expect(feed.underSession('k', 'a', s2.sessionId, { requestId: 'r1', waitMs: 50_000 })).toMatchObject({
      type: 'error',
      code: 'REQUEST_ID_REUSED',
    });
    expect(feed.machine.waiterFor('a', 'r1')).toEqual({ key: 'k', ticket: waiting.waitTicket });
    expect(feed.underSession('k', 'a', s1.sessionId, { requestId: 'r1', waitMs: 50_000 })).toMatchObject({
      replayed: true,
      waitTicket: waiting.waitTicket,
    });
  });

  it('below level 6 terms are not part of the identity (an older log replays as it did)', () => {
    const feed = atLevel(5);
    const s1 = feed.openSession('a', 100_000);
    const s2 = feed.openSession('a', 100_000);
    const held = feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId, { requestId: 'r1' }));
    expect(feed.underSession('k', 'a', s2.sessionId, { requestId: 'r1' })).toMatchObject({ replayed: true, token: held.token });
    expect(feed.machine.waitsWithOtherTerms({ owner: 'a', requestId: 'r1', sessionId: Number(s2.sessionId) })).toBe(false);
  });

  it('a record made below level 6 (no terms) still replays to its copy once the cluster is at 6', () => {
    const feed = atLevel(5);
    const s1 = feed.openSession('a', 100_000);
    const held = feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId, { requestId: 'r1' }));
    feed.raiseLevel(BUILD_LEVEL);
    expect(feed.underSession('k', 'a', s1.sessionId, { requestId: 'r1' })).toMatchObject({ replayed: true, token: held.token });
  });
});
