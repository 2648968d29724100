import { describe, expect, it } from 'vitest';
import { mean, median, percentile, ratio, summarize } from '../../../scripts/bench/stats.js';
import { keyPicker } from '../../../scripts/bench/workloads.js';

describe('bench stats', () => {
  it('percentiles are nearest-rank: an observed value, p99 of 1..100 is 99', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 90)).toBe(90);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([1, 2], 50)).toBe(1);
    expect(percentile([1, 2], 51)).toBe(2);
    expect(percentile([], 50)).toBeNaN();
  });

  it('summarize sorts numerically (not as strings) and reports the max', () => {
    const s = summarize([100, 9, 20, 3, 1000]);
    expect(s).toEqual({ count: 5, p50Ms: 20, p90Ms: 1000, p99Ms: 1000, maxMs: 1000 });
    expect(summarize([]).maxMs).toBeNaN();
  });

  it('median, mean, and a ratio that refuses to divide by nothing', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(mean([1, 2, 6])).toBe(3);
    expect(mean([])).toBeNaN();
    expect(ratio(3, 2)).toBe(1.5);
    expect(ratio(3, 0)).toBeNaN();
    expect(ratio(NaN, 2)).toBeNaN();
  });
});

describe('bench key picker', () => {
  it('is deterministic per client and spreads over every key', () => {
    const a = keyPicker(3, 100);
    const b = keyPicker(3, 100);
    const seqA = Array.from({ length: 5000 }, () => a());
    expect(Array.from({ length: 5000 }, () => b())).toEqual(seqA);
    const counts = new Array<number>(100).fill(0);
    for (const k of seqA) counts[k]!++;
    // 50 expected per key; a biased generator (e.g. a float LCG's low bits) leaves keys empty.
    expect(Math.min(...counts)).toBeGreaterThan(20);
    expect(Math.max(...counts)).toBeLessThan(90);
    expect(keyPicker(4, 100)()).not.toBe(keyPicker(3, 100)());
  });
});
