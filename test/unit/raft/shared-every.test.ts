// realScheduler.every: periodic callbacks of one interval share one Node interval timer (one wake-up per
// beat for the Raft tick, the housekeeping and the health look), a whole multiple of a running interval
// rides its timer on every k-th beat (the quorum watch), and each behaves as a timer of its own otherwise.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { realScheduler } from '../../../src/raft/env.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('realScheduler.every', () => {
  it('runs the callbacks of one interval on one timer, in the order they were added', () => {
    const runs: string[] = [];
    const a = realScheduler.every(50, () => runs.push('a'));
    vi.advanceTimersByTime(20);
    const b = realScheduler.every(50, () => runs.push('b'));
    const c = realScheduler.every(30, () => runs.push('c'));
    expect(vi.getTimerCount()).toBe(2); // 50 and 30, not three
    vi.advanceTimersByTime(30); // t = 50: the 50 group's first beat (b joined it), the 30 group's first
    expect(runs).toEqual(['a', 'b', 'c']);
    vi.advanceTimersByTime(50); // t = 100: 50 group; 30 group at 80
    expect(runs).toEqual(['a', 'b', 'c', 'c', 'a', 'b']);
    a.cancel();
    b.cancel();
    c.cancel();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a callback cancelled by an earlier one in the same beat does not run; cancel twice is harmless', () => {
    const runs: string[] = [];
    let second: { cancel(): void } | null = null;
    const first = realScheduler.every(40, () => {
      runs.push('first');
      second?.cancel();
    });
    second = realScheduler.every(40, () => runs.push('second'));
    vi.advanceTimersByTime(40);
    expect(runs).toEqual(['first']);
    second.cancel();
    expect(vi.getTimerCount()).toBe(1);
    first.cancel();
    first.cancel();
    expect(vi.getTimerCount()).toBe(0);
    // A new callback of that interval after the group emptied gets a timer of its own again.
    const again = realScheduler.every(40, () => runs.push('again'));
    vi.advanceTimersByTime(40);
    expect(runs).toEqual(['first', 'again']);
    again.cancel();
  });

  it('a whole multiple of a running interval rides its timer on every k-th beat, counted from when it joined', () => {
    const runs: string[] = [];
    const tick = realScheduler.every(50, () => runs.push('tick'));
    vi.advanceTimersByTime(20);
    const watch = realScheduler.every(150, () => runs.push('watch'));
    const other = realScheduler.every(70, () => runs.push('other')); // not a multiple: a timer of its own
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersByTime(130); // t = 150: beats at 50, 100, 150; the watch's first beat is the third after it joined
    expect(runs.filter((r) => r !== 'other')).toEqual(['tick', 'tick', 'tick', 'watch']);
    runs.length = 0;
    vi.advanceTimersByTime(150); // t = 300: three more beats, the watch on the last
    expect(runs.filter((r) => r !== 'other')).toEqual(['tick', 'tick', 'tick', 'watch']);
    // The watch keeps its period when the tick stops: the group beats on for it alone.
    tick.cancel();
    runs.length = 0;
    vi.advanceTimersByTime(300);
    expect(runs.filter((r) => r !== 'other')).toEqual(['watch', 'watch']);
    watch.cancel();
    other.cancel();
    expect(vi.getTimerCount()).toBe(0);
  });
});
