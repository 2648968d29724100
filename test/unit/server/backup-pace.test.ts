// The backup stream's pacing (backup-pace.ts) on a fake clock: how long it pauses after each chunk; and what a
// request's pace_percent asks for.
import { describe, expect, it } from 'vitest';
import { DEFAULT_PACE_PERCENT, paceShare, paced, type PaceClock } from '../../../src/server/client-api/backup-pace.js';

/** A clock that moves only when told: the chunks "take" time as the source advances it; sleeps advance it too. */
function fakeClock(): PaceClock & { now: number; sleeps: number[] } {
  const c = {
    now: 0,
    sleeps: [] as number[],
    nowMs: () => c.now,
    sleep: (ms: number) => {
      c.sleeps.push(ms);
      c.now += ms;
      return Promise.resolve();
    },
  };
  return c;
}

async function* chunksTaking(clock: { now: number }, costsMs: number[]): AsyncGenerator<number> {
  for (const [i, cost] of costsMs.entries()) {
    clock.now += cost;
    yield i;
  }
}

describe('paced backup stream', () => {
  it('after each chunk waits (1 / share - 1) times what the chunk took, so it is busy a share of the time at most', async () => {
    const clock = fakeClock();
    const got: number[] = [];
    for await (const i of paced(chunksTaking(clock, [10, 40, 2]), 0.25, clock)) {
      got.push(i);
      clock.now += 2; // the consumer's write of the chunk counts as the chunk's time too
    }
    expect(got).toEqual([0, 1, 2]);
    expect(clock.sleeps).toEqual([36, 126, 12]);
    const busy = 10 + 40 + 2 + 3 * 2;
    expect(busy / clock.now).toBeCloseTo(0.25, 10);
  });

  it('a share of 1 never pauses, and every chunk still arrives in order', async () => {
    const clock = fakeClock();
    const got: number[] = [];
    for await (const i of paced(chunksTaking(clock, [5, 5, 5, 5]), 1, clock)) got.push(i);
    expect(got).toEqual([0, 1, 2, 3]);
    expect(clock.sleeps).toEqual([]);
  });

  it('an error of the source reaches the consumer after the chunks before it', async () => {
    const clock = fakeClock();
    async function* failing(): AsyncGenerator<number> {
      yield 1;
      throw new Error('store closed');
    }
    const got: number[] = [];
    await expect(
      (async () => {
        for await (const i of paced(failing(), 0.5, clock)) got.push(i);
      })(),
    ).rejects.toThrow('store closed');
    expect(got).toEqual([1]);
  });

  it('a consumer that stops early (the call was cancelled) closes the source: its view of the store is released', async () => {
    const clock = fakeClock();
    let closed = false;
    async function* source(): AsyncGenerator<number> {
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        closed = true;
      }
    }
    for await (const i of paced(source(), 0.5, clock)) if (i === 2) break;
    expect(closed).toBe(true);
  });
});

describe("a Snapshot request's pace_percent", () => {
  it('0 or unset is the default share, 1..100 its own, anything else an error naming the field', () => {
    expect(paceShare(undefined)).toBe(DEFAULT_PACE_PERCENT / 100);
    expect(paceShare(0)).toBe(DEFAULT_PACE_PERCENT / 100);
    expect(paceShare(1)).toBe(0.01);
    expect(paceShare(100)).toBe(1);
    expect(paceShare(101)).toEqual({ invalid: 'pace_percent: 101 is over 100 (100 = unpaced)' });
    expect(paceShare(2.5)).toEqual({ invalid: 'pace_percent: 2.5 is not a whole percent' });
  });
});
