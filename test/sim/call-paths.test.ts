// The server's call handling under a seeded simulation (call-paths.ts): Lock/Stream multiplexing, a
// follower's Forward stream, deadlines across the hop and owner binding, over connections that reset, delay
// and duplicate. Replay one seed with CALL_SEED=<n>.
import { describe, expect, it } from 'vitest';
import { CallPathsSim } from './call-paths.js';

const ONE = process.env.CALL_SEED;
const SEEDS = ONE !== undefined ? [Number(ONE)] : Array.from({ length: Number(process.env.CALL_SEEDS ?? 12) }, (_, i) => i + 1);

describe('server call handling, simulated', () => {
  it.each(SEEDS)(
    'seed %i: every call answered once with its own answer; forwarded calls end by their deadline; session waiters keep their place across resets',
    async (seed) => {
      const report = await new CallPathsSim(seed).run();
      expect(report.violations, JSON.stringify(report.stats)).toEqual([]);
      // The run exercised what it checks.
      expect(report.stats.grants).toBeGreaterThan(50);
      expect(report.stats.forwardedCalls).toBeGreaterThan(50);
      expect(report.stats.resets).toBeGreaterThan(10);
      expect(report.stats.forwardResets).toBeGreaterThan(3);
      expect(report.stats.giveUps).toBeGreaterThan(5);
    },
  );
});
