// The two ways a simulation test file runs seeds, shared by sim.test.ts (Raft) and lock-sim.test.ts (lock):
// replay one seed (SEED=n: summary, trace tail, speed), or sweep a range in chunks, collecting every failing
// seed before failing the chunk, and report the events/second at the end.
import { afterAll, describe, it } from 'vitest';
import { SimViolation } from './cluster.js';

export interface SeedRunResult {
  summary: string;
  wallMs: number;
  stats: { events: number };
  cluster: { trace: { length: number; tail(n: number): string[] } };
}

export interface TraceOptions {
  fullTrace: boolean;
  traceLines: number;
}

/** `SEED=n`: run that seed alone and print its summary and trace tail (SIM_TRACE=full for every line). */
export function replaySeedSuite(label: string, seed: number, run: (seed: number, trace: TraceOptions) => Promise<SeedRunResult>): void {
  describe(`${label} replay of seed ${seed}`, () => {
    it(`seed ${seed} keeps every invariant`, async () => {
      const full = process.env['SIM_TRACE'] === 'full';
      try {
        const r = await run(seed, { fullTrace: full, traceLines: full ? Infinity : 60 });
        console.log(r.summary);
        console.log(
          `trace (${full ? 'all' : 'last 60'} of ${r.cluster.trace.length} lines):\n` +
            r.cluster.trace.tail(full ? Infinity : 60).join('\n'),
        );
        console.log(`${r.stats.events} events in ${r.wallMs.toFixed(0)}ms = ${((r.stats.events / r.wallMs) * 1000).toFixed(0)} events/s`);
      } catch (e) {
        if (e instanceof SimViolation) console.log(e.message);
        throw e;
      }
    });
  });
}

/** Seeds [base, base + seeds) in `chunks` tests; a chunk fails listing all of its failing seeds. */
export function seedSweepSuite(
  label: string,
  range: { seeds: number; base: number; chunks: number },
  run: (seed: number) => Promise<SeedRunResult>,
): void {
  let totalEvents = 0;
  let totalMs = 0;
  describe(label, () => {
    const per = Math.ceil(range.seeds / range.chunks);
    for (let c = 0; c < range.chunks; c++) {
      const lo = range.base + c * per;
      const hi = Math.min(range.base + range.seeds, lo + per); // exclusive
      if (lo >= hi) continue;
      it(
        `seeds ${lo}..${hi - 1}`,
        async () => {
          const failures: SimViolation[] = [];
          for (let seed = lo; seed < hi; seed++) {
            try {
              const r = await run(seed);
              totalEvents += r.stats.events;
              totalMs += r.wallMs;
            } catch (e) {
              if (!(e instanceof SimViolation)) throw e;
              failures.push(e);
            }
          }
          if (failures.length > 0) {
            const seeds = failures.map((f) => `${f.seed} (${f.invariant})`).join(', ');
            throw new Error(`${failures.length} failing seed(s) in ${label}: ${seeds}\n\nfirst failure:\n${failures[0]!.message}`);
          }
          // A chunk's budget is its seeds: about 1 s each (a lock seed takes ~0.12 s on a quiet 2-core machine
          // with the real storage under it, ~0.5 s with that machine loaded 4x), and never below vitest's 60 s.
        },
        Math.max(60_000, (hi - lo) * 1000),
      );
    }
    afterAll(() => {
      if (totalMs > 0)
        console.log(
          `${label}: ${totalEvents} events in ${(totalMs / 1000).toFixed(1)}s = ${((totalEvents / totalMs) * 1000).toFixed(0)} events/s`,
        );
    });
  });
}
