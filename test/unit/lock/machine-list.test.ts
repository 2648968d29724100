// listKeys (SPEC "List"): the keys held or waited on under a prefix, in UTF-8 byte order, paged.
import { describe, expect, it } from 'vitest';
import { compareUtf8 } from '../../../src/lock/list-keys.js';
import { Feed } from './feed.js';

describe('listKeys', () => {
  it('pages through held and waited-on keys under a prefix in byte order; free and run-out keys are not listed', () => {
    const feed = new Feed();
    feed.at(1000);
    const keys = Array.from({ length: 25 }, (_, i) => `jobs/${String(i).padStart(2, '0')}`);
    for (const k of [...keys].reverse()) feed.acquire(k, 'a', 60_000);
    feed.acquire('other/1', 'a', 60_000);
    const gone = feed.acquire('jobs/zz-released', 'b', 60_000);
    feed.release('jobs/zz-released', 'b', gone.token);
    feed.acquire('jobs/zz-short', 'b', 100); // runs out at 1100, no entry ended it
    const pages: string[][] = [];
    let after = '';
    feed.at(2000).apply({ type: 'checkpoint', timeMs: 2000 });
    for (;;) {
      const page = feed.machine.listKeys('jobs/', after, 10);
      pages.push(page);
      if (page.length < 10) break;
      after = page[page.length - 1]!;
    }
    expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
    expect(pages.flat()).toEqual(keys);
    // The run-out key is listed again once someone holds it.
    feed.wait('jobs/zz-short', 'c', 1000, 60_000);
    expect(feed.machine.listKeys('jobs/zz', '', 10)).toEqual(['jobs/zz-short']);
  });

  it('orders by UTF-8 bytes, not UTF-16 units', () => {
    const astral = '\u{1F600}'; // a surrogate pair in UTF-16 (0xD83D...), 0xF0... in UTF-8
    const high = '\uFF21'; // U+FF21: 0xEF... in UTF-8, above the pair's 0xD8 in UTF-16
    expect(high < astral).toBe(false); // UTF-16 order puts the pair first
    expect(compareUtf8(high, astral)).toBeLessThan(0);
    const words = ['b', 'a', astral, high, 'ab', '', 'é'];
    expect([...words].sort(compareUtf8)).toEqual([...words].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))));
  });
});
