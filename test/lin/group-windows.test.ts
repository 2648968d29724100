// The checker's rules for keys with many holds (group-windows.ts), fed good and bad histories: a checker that
// cannot fail proves nothing, so each rule is shown failing.
import { describe, expect, it } from 'vitest';
import { checkHistory } from './checker.js';
import { HistoryBuilder } from './fixtures.js';

const P = 'pool';
const D = 'doc';

/** A semaphore acquire of `limit`, granted with `token`, held during `window`. */
function slot(h: HistoryBuilder, p: string, token: bigint, window: [number, number], limit = 3) {
  const op = h.acquired(p, P, token, [window[0] - 5, window[0]], window);
  op.limit = limit;
  return op;
}

function shared(h: HistoryBuilder, p: string, token: bigint, window: [number, number], isShared = true) {
  const op = h.acquired(p, D, token, [window[0] - 5, window[0]], window);
  if (isShared) op.shared = true;
  return op;
}

const kinds = (h: HistoryBuilder) => [...new Set(checkHistory(h.ops).violations.map((v) => v.kind))].sort();

describe('checker: keys with many holds', () => {
  it('three holders of a semaphore of 3 at once, then a fourth after one left: valid', () => {
    const h = new HistoryBuilder();
    slot(h, 'A', 5n, [10, 100]);
    slot(h, 'B', 6n, [20, 110]);
    slot(h, 'C', 7n, [30, 120]);
    slot(h, 'D', 9n, [100, 150]); // starts exactly as A's window ends: touching, not overlapping
    const v = checkHistory(h.ops);
    expect(v.violations).toEqual([]);
    expect(v.windows).toBe(4);
    expect(v.linearizability[P]).toBe('skipped');
  });

  it('a fourth holder of a semaphore of 3 while three hold: over-limit, naming the four', () => {
    const h = new HistoryBuilder();
    slot(h, 'A', 5n, [10, 100]);
    slot(h, 'B', 6n, [20, 110]);
    slot(h, 'C', 7n, [30, 120]);
    slot(h, 'D', 9n, [99, 150]);
    const v = checkHistory(h.ops);
    expect(kinds(h)).toEqual(['over-limit']);
    expect(v.violations[0]!.message).toMatch(/4 holders of "pool" \(a semaphore of 3\)/);
  });

  it('readers together are valid; an exclusive hold overlapping a reader is shared-with-exclusive', () => {
    const good = new HistoryBuilder();
    shared(good, 'R1', 5n, [10, 100]);
    shared(good, 'R2', 6n, [20, 90]);
    shared(good, 'W', 8n, [100, 150], false);
    expect(checkHistory(good.ops).violations).toEqual([]);
    const bad = new HistoryBuilder();
    shared(bad, 'R1', 5n, [10, 100]);
    shared(bad, 'W', 8n, [60, 150], false);
    expect(kinds(bad)).toEqual(['shared-with-exclusive']);
  });

  it('tokens still may not repeat on a key with many holds', () => {
    const h = new HistoryBuilder();
    slot(h, 'A', 5n, [10, 100]);
    slot(h, 'B', 5n, [8, 110]); // concurrent acquires (neither acknowledged before the other was sent)
    expect(kinds(h)).toEqual(['token-reuse']);
  });
});

describe('checker: tokens and the wait line on keys with many holds', () => {
  it('token-order covers group keys: a token lower than one acknowledged before the acquire was sent', () => {
    const h = new HistoryBuilder();
    slot(h, 'A', 9n, [10, 100]);
    slot(h, 'B', 5n, [30, 110]); // sent at 25, after A's token 9 was acknowledged at 10
    expect(kinds(h)).toEqual(['token-order']);
  });

  it('fifo-order on a semaphore: a newcomer overtaking a queued waiter is caught; one sent before the QUEUED was seen is not', () => {
    const run = (bSentMs: number) => {
      const h = new HistoryBuilder();
      slot(h, 'A', 5n, [10, 100], 2);
      slot(h, 'B', 6n, [20, 110], 2);
      Object.assign(h.acquired('W', P, 9n, [30, 120], [120, 200], 'W/w'), { limit: 2, waitMs: 500 });
      h.queued(P, 'W/w', 40, 8n);
      Object.assign(h.acquired('N', P, 7n, [bSentMs, 100], [100, 180], 'N/n'), { limit: 2 });
      return h;
    };
    expect(kinds(run(50))).toEqual(['fifo-order']);
    expect(kinds(run(35))).toEqual([]);
  });
});
