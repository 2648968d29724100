// The renews of one leader turn in one entry (cluster level 7, tag 24; machine-entries.ts `renews`): each
// applied in order as a lone renew without a request id would be at the entry's log time — owner, current
// token, not run out, a hold under a session refused — each with its own answer, none remembered.
import { describe, expect, it } from 'vitest';
import { LockMachine, UnknownCommandError } from '../../../src/lock/index.js';
import type { LockResult, RenewItem } from '../../../src/lock/index.js';
import { BUILD_LEVEL, LEVEL_RENEWS_ENTRY } from '../../../src/lock/versions.js';
import { Feed } from './feed.js';

function atLevel(level: number): Feed {
  const feed = new Feed();
  feed.at(1000);
  if (level > 1) feed.raiseLevel(level);
  return feed;
}

function renews(feed: Feed, items: RenewItem[]): LockResult {
  return feed.apply({ type: 'renews', timeMs: feed.timeMs, renews: items });
}

/** The answers of a renews entry as `renewed|ttl|until|reason`, or `error:CODE`. */
function outcomes(result: LockResult): string[] {
  if (result.type !== 'renews') throw new Error(`expected a renews result, got ${result.type}`);
  return result.renews.map((r) => (r.type === 'renew' ? `${r.renewed}|${r.ttlMs}|${r.expiresAtMs}|${r.reason}` : `error:${r.code}`));
}

describe('renews of one turn in one entry (level 7)', () => {
  it('several renews, mixed outcomes: each answered as a lone renew at the entry log time, in order', () => {
    const feed = atLevel(BUILD_LEVEL);
    const a = feed.acquire('a', 'alice', 1000);
    const b = feed.acquire('b', 'bob', 1000);
    const c = feed.acquire('c', 'carol', 100);
    const s = feed.openSession('sam', 1000);
    const d = feed.expect('acquire', feed.underSession('d', 'sam', s.sessionId));
    const result = renews(feed.at(1200), [
      { key: 'a', owner: 'alice', token: a.token, ttlMs: 500 }, // renewed
      { key: 'b', owner: 'mallory', token: b.token, ttlMs: 500 }, // WRONG_OWNER
      { key: 'b', owner: 'bob', token: b.token + 1n, ttlMs: 500 }, // WRONG_TOKEN
      { key: 'c', owner: 'carol', token: c.token, ttlMs: 500 }, // ran out at 1100: EXPIRED
      { key: 'nobody', owner: 'x', token: 1n, ttlMs: 500 }, // NOT_HELD
      { key: 'd', owner: 'sam', token: d.token, ttlMs: 500 }, // under a session: renew the session
      { key: 'b', owner: 'bob', token: b.token, ttlMs: 2000 }, // renewed
    ]);
    expect(outcomes(result)).toEqual([
      'true|500|1700|UNSPECIFIED',
      'false|0|0|WRONG_OWNER',
      'false|0|0|WRONG_TOKEN',
      'false|0|0|EXPIRED',
      'false|0|0|NOT_HELD',
      'error:RENEW_THE_SESSION',
      'true|2000|3200|UNSPECIFIED',
    ]);
    expect(result.type === 'renews' && result.renews.every((r) => r.index === result.index)).toBe(true);
    expect(result.type === 'renews' && result.renews.every((r) => r.type !== 'renew' || !r.replayed)).toBe(true);
    expect(feed.machine.get('a')).toMatchObject({ held: true, expiresAtMs: 1700 });
    expect(feed.machine.get('b')).toMatchObject({ held: true, expiresAtMs: 3200 });
    expect(feed.machine.get('c')).toMatchObject({ held: false });
  });

  it('one key twice: the second renew sees the first (the later ttl wins); identical copies answer alike', () => {
    const feed = atLevel(BUILD_LEVEL);
    const a = feed.acquire('a', 'alice', 1000);
    const item = { key: 'a', owner: 'alice', token: a.token, ttlMs: 300 };
    expect(outcomes(renews(feed.at(1100), [item, { ...item, ttlMs: 50 }, item]))).toEqual([
      'true|300|1400|UNSPECIFIED',
      'true|50|1150|UNSPECIFIED',
      'true|300|1400|UNSPECIFIED',
    ]);
    expect(feed.machine.get('a').expiresAtMs).toBe(1400);
  });

  it('a renew of a token superseded by a re-acquire applied before it is WRONG_TOKEN, and the new hold keeps its deadline', () => {
    const feed = atLevel(BUILD_LEVEL);
    const old = feed.acquire('k', 'alice', 1000);
    const again = feed.acquire('k', 'alice', 200); // same owner, no session: supersedes the old token
    expect(again.token).toBeGreaterThan(old.token);
    expect(outcomes(renews(feed.at(1050), [{ key: 'k', owner: 'alice', token: old.token, ttlMs: 5000 }]))).toEqual([
      'false|0|0|WRONG_TOKEN',
    ]);
    expect(feed.machine.get('k')).toMatchObject({ held: true, token: again.token, expiresAtMs: 1200 });
  });

  it('a renew after the release of its hold is NOT_HELD, and nothing is held again', () => {
    const feed = atLevel(BUILD_LEVEL);
    const a = feed.acquire('k', 'alice', 1000);
    feed.release('k', 'alice', a.token);
    expect(outcomes(renews(feed, [{ key: 'k', owner: 'alice', token: a.token, ttlMs: 1000 }]))).toEqual(['false|0|0|NOT_HELD']);
    expect(feed.machine.get('k').held).toBe(false);
  });

  it("renews from the entry's log time, not its stamp: a leader whose clock is behind the log's after a fast one", () => {
    const feed = atLevel(BUILD_LEVEL);
    feed.at(9000).termStart(); // a leader whose clock runs 8 s ahead
    const a = feed.acquire('k', 'alice', 1000);
    feed.at(2000).termStart(); // the next one's clock is true: log time stays 9000 and moves on at its rate
    expect(feed.machine.get('k')).toMatchObject({ held: true, expiresAtMs: 10_000 });
    const entry = renews(feed.at(2100), [{ key: 'k', owner: 'alice', token: a.token, ttlMs: 500 }]);
    expect(feed.machine.logNowMs).toBe(9100);
    expect(outcomes(entry)).toEqual(['true|500|9600|UNSPECIFIED']);
    expect(feed.machine.get('k').expiresAtMs).toBe(9600);
  });

  it('keeps no dedup record: the same renew again renews again from its own log time', () => {
    const feed = atLevel(BUILD_LEVEL);
    const a = feed.acquire('k', 'alice', 1000);
    const item = { key: 'k', owner: 'alice', token: a.token, ttlMs: 1000 };
    expect(outcomes(renews(feed.at(1100), [item]))).toEqual(['true|1000|2100|UNSPECIFIED']);
    expect(outcomes(renews(feed.at(1500), [item]))).toEqual(['true|1000|2500|UNSPECIFIED']);
    // Nothing was remembered: the machine's snapshot is the one of the same holds renewed by lone renews
    // without a request id.
    const lone = atLevel(BUILD_LEVEL);
    const b = lone.acquire('k', 'alice', 1000);
    lone.at(1100).renew('k', 'alice', b.token, 1000);
    lone.at(1500).renew('k', 'alice', b.token, 1000);
    expect(feed.machine.snapshot()).toEqual(lone.machine.snapshot());
  });

  it('holds of many: each renew judged against its own hold', () => {
    const feed = atLevel(BUILD_LEVEL);
    const a = feed.expect('acquire', feed.many('sem', 'a', { limit: 2, ttlMs: 1000 }));
    const b = feed.expect('acquire', feed.many('sem', 'b', { limit: 2, ttlMs: 1000 }));
    expect(
      outcomes(
        renews(feed.at(1100), [
          { key: 'sem', owner: 'a', token: a.token, ttlMs: 400 },
          { key: 'sem', owner: 'b', token: a.token, ttlMs: 400 },
        ]),
      ),
    ).toEqual(['true|400|1500|UNSPECIFIED', 'false|0|0|WRONG_TOKEN']);
    expect(feed.machine.get('sem').holders?.map((h) => [h.owner, h.expiresAtMs])).toEqual([
      ['a', 1500],
      ['b', 2000],
    ]);
    expect(b.acquired).toBe(true);
  });

  it(`is refused as a whole below level ${LEVEL_RENEWS_ENTRY}, changing nothing, on a build that reads it`, () => {
    for (const level of [1, LEVEL_RENEWS_ENTRY - 1]) {
      const feed = atLevel(level);
      const a = feed.acquire('k', 'alice', 1000);
      const result = renews(feed.at(1100), [{ key: 'k', owner: 'alice', token: a.token, ttlMs: 5000 }]);
      expect(result).toMatchObject({ type: 'error', code: 'CLUSTER_LEVEL' });
      expect(result.type === 'error' && result.message).toMatch(/needs cluster level 7.*the cluster is at/);
      // The entry's log time moved on (every entry's does); nothing else changed.
      expect(feed.machine.get('k')).toMatchObject({ held: true, token: a.token, expiresAtMs: 2000 });
      expect(feed.machine.leaseCount).toBe(1);
    }
  });

  it('a build of level 6 stops at a renews entry, naming what it reads (it never applies it)', () => {
    const old = Feed.withOptions({ readLevel: LEVEL_RENEWS_ENTRY - 1 });
    old.at(1000).termStart();
    const a = old.acquire('k', 'alice', 1000);
    expect(() => renews(old, [{ key: 'k', owner: 'alice', token: a.token, ttlMs: 5000 }])).toThrow(UnknownCommandError);
    expect(() => renews(old, [{ key: 'k', owner: 'alice', token: a.token, ttlMs: 5000 }])).toThrow(
      /tag 24 is newer than this build reads \(cluster level 6, command tags up to 23\)/,
    );
    expect(old.machine.get('k').expiresAtMs).toBe(2000);
  });

  it('below level 7 a lone renew keeps its dedup record: a retry replays its first outcome', () => {
    const feed = atLevel(LEVEL_RENEWS_ENTRY - 1);
    const a = feed.acquire('k', 'alice', 1000);
    const first = feed.at(1100).renew('k', 'alice', a.token, 1000, 'r-1');
    const retry = feed.at(1500).renew('k', 'alice', a.token, 1000, 'r-1');
    expect(first).toMatchObject({ renewed: true, replayed: false, expiresAtMs: 2100 });
    expect(retry).toMatchObject({ renewed: true, replayed: true, expiresAtMs: 2100 });
  });

  it('replicas agree: a level-7 machine restored from a snapshot applies the same renews alike', () => {
    const feed = atLevel(BUILD_LEVEL);
    const a = feed.acquire('k', 'alice', 1000);
    const copy = LockMachine.restore(feed.machine.snapshot());
    const entry = { type: 'renews' as const, timeMs: 1300, renews: [{ key: 'k', owner: 'alice', token: a.token, ttlMs: 700 }] };
    const index = feed.nextIndex;
    const mine = feed.apply(entry);
    const theirs = copy.applyCommand(index, feed.term, entry);
    expect(theirs).toEqual(mine);
    expect(copy.digest()).toBe(feed.machine.digest());
  });
});
