// A revoke deduplicated by its request id (cluster level 5, versions.ts; machine.ts `revoke`; issue 38):
// the entry (tag 23) carries who revokes and its request id, and the machine remembers its first outcome
// like every other mutation's, so a retry with the same request id answers that outcome and ends nothing
// new — not a hold granted in between.
import { describe, expect, it } from 'vitest';
import { LockMachine, SnapshotDecodeError } from '../../../src/lock/index.js';
import type { LockResult } from '../../../src/lock/index.js';
import { BUILD_LEVEL } from '../../../src/lock/versions.js';
import { Feed } from './feed.js';

function atLevel(level: number): Feed {
  const feed = new Feed();
  feed.at(1000);
  if (level > 1) feed.raiseLevel(level);
  return feed;
}

/** A revoke with a request id (tag 23), as the leader proposes it from level 5. */
function revokeOnce(feed: Feed, key: string, token: bigint, requestId: string, owner = ''): LockResult {
  return feed.apply({ type: 'revoke', timeMs: feed.timeMs, key, token, owner, requestId });
}

describe('revoke deduplicated by its request id (level 5)', () => {
  it('a retry after a hold was granted in between answers the first outcome and ends nothing new (at the level this build reads)', () => {
    const feed = atLevel(BUILD_LEVEL);
    const a = feed.acquire('k', 'a', 10_000);
    const first = feed.expect('revoke', revokeOnce(feed, 'k', 0n, 'rv-1'));
    expect(first.revoked).toEqual([a.token]);
    const b = feed.acquire('k', 'b', 10_000);
    expect(b.acquired).toBe(true);
    // The answer was lost; the operator's client retries with the same request id.
    const retry = feed.expect('revoke', revokeOnce(feed, 'k', 0n, 'rv-1'));
    expect(retry).toMatchObject({ replayed: true, key: 'k', revoked: [a.token] });
    expect(retry.decided).toBeUndefined();
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'b', token: b.token });
    // A new request id is a new revoke.
    expect(feed.expect('revoke', revokeOnce(feed, 'k', 0n, 'rv-2')).revoked).toEqual([b.token]);
  });

  it('a first outcome that ended nothing replays as nothing, though a hold came since', () => {
    const feed = atLevel(5);
    expect(feed.expect('revoke', revokeOnce(feed, 'k', 0n, 'rv')).revoked).toEqual([]);
    const a = feed.acquire('k', 'a', 10_000);
    expect(feed.expect('revoke', revokeOnce(feed, 'k', 0n, 'rv'))).toMatchObject({ replayed: true, revoked: [] });
    expect(feed.machine.get('k')).toMatchObject({ held: true, token: a.token });
  });

  it('holds of many: a retry of "every hold" ends none of the holds granted since', () => {
    const feed = atLevel(5);
    const a = feed.expect('acquire', feed.many('sem', 'a', { limit: 3, ttlMs: 10_000 }));
    const b = feed.expect('acquire', feed.many('sem', 'b', { limit: 3, ttlMs: 10_000 }));
    expect(feed.expect('revoke', revokeOnce(feed, 'sem', 0n, 'rv')).revoked).toEqual([a.token, b.token]);
    const c = feed.expect('acquire', feed.many('sem', 'c', { limit: 3, ttlMs: 10_000 }));
    expect(feed.expect('revoke', revokeOnce(feed, 'sem', 0n, 'rv'))).toMatchObject({ replayed: true, revoked: [a.token, b.token] });
    expect(feed.machine.get('sem').holders?.map((h) => h.token)).toEqual([c.token]);
  });

  it('the request id names one revoke: another key or token under it is REQUEST_ID_REUSED; another revoker has its own', () => {
    const feed = atLevel(5);
    const a = feed.acquire('k', 'a', 10_000);
    feed.acquire('j', 'a', 10_000);
    revokeOnce(feed, 'k', 0n, 'rv', 'ops-1');
    expect(revokeOnce(feed, 'j', 0n, 'rv', 'ops-1')).toMatchObject({ type: 'error', code: 'REQUEST_ID_REUSED' });
    expect(revokeOnce(feed, 'k', a.token, 'rv', 'ops-1')).toMatchObject({ type: 'error', code: 'REQUEST_ID_REUSED' });
    expect(feed.machine.get('j').held).toBe(true);
    // The same id of another revoker (its certificate CN) is another request.
    expect(feed.expect('revoke', revokeOnce(feed, 'j', 0n, 'rv', 'ops-2'))).toMatchObject({ replayed: false });
    expect(feed.machine.get('j').held).toBe(false);
  });

  it('no request id (empty): nothing is remembered, each entry is a new revoke', () => {
    const feed = atLevel(5);
    feed.acquire('k', 'a', 10_000);
    revokeOnce(feed, 'k', 0n, '');
    const b = feed.acquire('k', 'b', 10_000);
    expect(feed.expect('revoke', revokeOnce(feed, 'k', 0n, ''))).toMatchObject({ replayed: false, revoked: [b.token] });
  });

  it('the record lives for the dedup window (log time), like any mutation', () => {
    const feed = Feed.withOptions({ dedupWindowMs: 5000 });
    feed.at(1000).raiseLevel(5);
    feed.acquire('k', 'a', 100_000);
    revokeOnce(feed, 'k', 0n, 'rv');
    const b = feed.acquire('k', 'b', 100_000);
    feed.at(5999);
    expect(feed.expect('revoke', revokeOnce(feed, 'k', 0n, 'rv')).replayed).toBe(true);
    feed.at(6000);
    expect(feed.expect('revoke', revokeOnce(feed, 'k', 0n, 'rv'))).toMatchObject({ replayed: false, revoked: [b.token] });
  });

  it('below level 5 a revoke with a request id is refused as a whole (CLUSTER_LEVEL); the older entry revokes as before', () => {
    const feed = atLevel(4);
    const a = feed.acquire('k', 'a', 10_000);
    expect(revokeOnce(feed, 'k', 0n, 'rv')).toMatchObject({ type: 'error', code: 'CLUSTER_LEVEL' });
    expect(feed.machine.get('k').held).toBe(true);
    expect(feed.revoke('k', 0n).revoked).toEqual([a.token]);
  });

  it('survives a snapshot (version 9): a restored machine replays the revoke; a level-4 build refuses the snapshot', () => {
    const feed = atLevel(5);
    const a = feed.acquire('k', 'a', 10_000);
    revokeOnce(feed, 'k', 0n, 'rv', 'ops');
    feed.acquire('k', 'b', 10_000);
    const bytes = feed.machine.snapshot();
    expect(bytes[3]).toBe(9);
    const copy = new Feed(LockMachine.restore(bytes));
    copy.term = feed.term;
    copy.timeMs = feed.timeMs;
    expect(copy.machine.snapshot()).toEqual(bytes);
    for (const f of [feed, copy])
      expect(f.expect('revoke', revokeOnce(f, 'k', 0n, 'rv', 'ops'))).toMatchObject({ replayed: true, revoked: [a.token] });
    expect(copy.machine.digest()).toBe(feed.machine.digest());
    expect(() => LockMachine.restore(bytes, { readLevel: 4 })).toThrow(SnapshotDecodeError);
    expect(() => LockMachine.restore(bytes, { readLevel: 4 })).toThrow(/unsupported snapshot version 9: this build reads versions 1-8/);
  });
});
