// The node's watch history and watchers (watch-hub.ts): resume without gaps, refuse what was dropped,
// wait for a full transport instead of buffering, cut off a watcher the history left behind, end every
// watch when the state is replaced.
import { describe, expect, it } from 'vitest';
import type { LockEvent } from '../../../src/lock/events.js';
import {
  OutOfRangeError,
  TooManyWatchersError,
  WatchHub,
  type WatchEnd,
  type WatchFilter,
} from '../../../src/server/client-api/watch-hub.js';

const ev = (index: number, key: string, kind: LockEvent['kind'] = 'ACQUIRED'): LockEvent => ({
  index,
  key,
  kind,
  owner: 'o',
  token: BigInt(index),
  sessionId: 0,
  value: null,
  shared: false,
});
const all: WatchFilter = { key: null, prefix: '', includeRenewals: false };

/** A transport that takes `room` events, then is full until drain(room) is called. */
function watcher(room = Infinity) {
  const got: string[] = [];
  const ends: WatchEnd[] = [];
  const progress: number[] = [];
  let left = room;
  let onDrain: (() => void) | null = null;
  return {
    got,
    ends,
    progress,
    drain(more: number) {
      left = more;
      const fn = onDrain;
      onDrain = null;
      fn?.();
    },
    sink: {
      write: (e: LockEvent) => {
        got.push(`${e.index}:${e.key}:${e.kind}`);
        return --left > 0;
      },
      onDrain: (fn: () => void) => {
        onDrain = fn;
      },
      progress: (i: number) => progress.push(i),
      end: (r: WatchEnd) => ends.push(r),
    },
  };
}

function hub(historyEvents: number, maxWatchers = 10, applied = { index: 0 }) {
  return new WatchHub({ historyEvents, maxWatchers, appliedIndex: () => applied.index });
}

describe('WatchHub', () => {
  it('resumes after an index with every later event, then stays live; filters by key, prefix and renewals', () => {
    const applied = { index: 3 };
    const h = hub(100, 10, applied);
    h.record(ev(1, 'a/1'));
    h.record(ev(2, 'b/1'));
    h.record(ev(2, 'a/2'));
    h.record(ev(3, 'a/1', 'RENEWED'));
    const w = watcher();
    h.open({ key: null, prefix: 'a/', includeRenewals: false }, 1, w.sink);
    expect(w.got).toEqual(['2:a/2:ACQUIRED']);
    expect(w.progress).toEqual([3]);
    h.record(ev(4, 'a/3'));
    h.record(ev(4, 'b/2'));
    expect(w.got).toEqual(['2:a/2:ACQUIRED', '4:a/3:ACQUIRED']);
    expect(w.progress).toEqual([3]); // once
    applied.index = 4;
    const k = watcher();
    h.open({ key: 'a/1', prefix: '', includeRenewals: true }, 0, k.sink);
    expect(k.got).toEqual([]); // from now: no replay
    expect(k.progress).toEqual([4]);
    h.record(ev(5, 'a/1', 'RENEWED'));
    h.record(ev(5, 'a/10'));
    expect(k.got).toEqual(['5:a/1:RENEWED']);
  });

  it('refuses a resume from before the history it still keeps, naming the oldest index it can resume after', () => {
    const h = hub(3);
    for (let i = 1; i <= 5; i++) h.record(ev(i, 'k'));
    // Kept: 3, 4, 5. After 2 is fine (3 is the next event); after 1 would miss 2.
    expect(h.oldestAfterIndex).toBe(2);
    expect(() => h.open(all, 1, watcher().sink)).toThrow(OutOfRangeError);
    const w = watcher();
    h.open(all, 2, w.sink);
    expect(w.got).toEqual(['3:k:ACQUIRED', '4:k:ACQUIRED', '5:k:ACQUIRED']);
  });

  it('a full transport waits for drain and misses nothing; one the history leaves behind is cut off, the others go on', () => {
    const applied = { index: 0 };
    const h = hub(4, 10, applied);
    const slow = watcher(2);
    const fast = watcher();
    h.open(all, 0, slow.sink);
    h.open(all, 0, fast.sink);
    for (let i = 1; i <= 3; i++) h.record(ev(i, 'k'));
    expect(slow.got).toEqual(['1:k:ACQUIRED', '2:k:ACQUIRED']); // full after two: nothing more written
    slow.drain(10);
    expect(slow.got).toHaveLength(3); // the third, from the history, on drain
    slow.drain(0); // room for one more write only... (write returns false at once)
    for (let i = 4; i <= 5; i++) h.record(ev(i, 'k'));
    expect(slow.got).toHaveLength(4);
    // Five more while it is full: the history (4 events) drops ones it was never sent.
    for (let i = 6; i <= 10; i++) h.record(ev(i, 'k'));
    expect(slow.ends.map((e) => e.code)).toEqual(['backlog']);
    expect(fast.got).toHaveLength(10);
    expect(fast.ends).toEqual([]);
    expect(h.watcherCount).toBe(1);
  });

  it('a replaced state ends every watch and restarts the history at its index; the watcher limit holds', () => {
    const h = hub(100, 2);
    h.record(ev(1, 'k'));
    const a = watcher();
    const b = watcher();
    const handle = h.open(all, 0, a.sink);
    h.open(all, 0, b.sink);
    expect(() => h.open(all, 0, watcher().sink)).toThrow(TooManyWatchersError);
    handle.close();
    h.open(all, 0, watcher().sink);
    h.reset(40);
    expect(b.ends.map((e) => e.code)).toEqual(['reset']);
    expect(a.ends).toEqual([]); // closed before: not told again
    expect(h.watcherCount).toBe(0);
    expect(() => h.open(all, 39, watcher().sink)).toThrow(OutOfRangeError);
    h.record(ev(41, 'k'));
    const c = watcher();
    h.open(all, 40, c.sink);
    expect(c.got).toEqual(['41:k:ACQUIRED']);
  });
});
