// A lock-delay running at a term start is carried across the term's log-time jump (T - P) as live leases are
// (cluster level 6, versions.ts LEVEL_DELAY_CARRIED; key-delays.ts carryOver): the jump is the new leader's
// clock being ahead, and must not count as time the delay has run.
import { describe, expect, it } from 'vitest';
import { BUILD_LEVEL } from '../../../src/lock/versions.js';
import { Feed } from './feed.js';

/** `k` held by a lease of 500 ms with a 2,000 ms lock-delay from log time 1000, expired at 1600: 1,900 ms left. */
function delayedAt(level: number): Feed {
  const feed = new Feed();
  feed.at(1000);
  feed.raiseLevel(level);
  const a = feed.delayed('k', 'a', 500, 2000);
  feed.at(1600).expire('k', a.token);
  expect(feed.machine.delayLeftMs('k')).toBe(1900);
  return feed;
}

describe('a running lock-delay across a term start', () => {
  it('a leader whose clock runs 5 s ahead leaves it all: nobody is granted the key until the delay has run', () => {
    const feed = delayedAt(BUILD_LEVEL);
    feed.termStart(6600);
    expect(feed.machine.delayLeftMs('k')).toBe(1900);
    expect(feed.acquire('k', 'b', 500)).toMatchObject({ acquired: false, delayMsLeft: 1900 });
    expect(feed.at(8499).acquire('k', 'b', 500).acquired).toBe(false);
    expect(feed.at(8500).acquire('k', 'b', 500).acquired).toBe(true);
  });

  it('a term start with no jump changes nothing; a delay that had passed before it is not revived', () => {
    const same = delayedAt(BUILD_LEVEL);
    same.termStart(1600);
    expect(same.machine.delayLeftMs('k')).toBe(1900);
    const passed = delayedAt(BUILD_LEVEL);
    passed.at(3600).acquire('other', 'c', 500); // an entry at 3600: log time passes the delay's end (3500)
    passed.termStart(9000);
    expect(passed.machine.delayLeftMs('k')).toBe(0);
  });

  it('below level 6 the old rule stays (every replica judges alike until every member reads 6)', () => {
    const feed = delayedAt(5);
    feed.termStart(6600);
    expect(feed.machine.delayLeftMs('k')).toBe(0);
  });
});
