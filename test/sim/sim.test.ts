// Seeded cluster simulation of the real Raft core (see test/sim/cluster.ts).
//
//   npm run test:sim                         1,000 seeds x 5,000 events (mixed 3- and 5-node clusters, with
//                                            membership changes; SIM_MEMBERSHIP=0 for a fixed voter set)
//   SEED=1234 npm run test:sim               replay exactly one seed; prints its summary and trace tail
//   SEED=1234 SIM_TRACE=full npm run test:sim   ... and every trace line
//   SIM_SEEDS=1000 SIM_EVENTS=5000 SIM_SEED_BASE=7000 npm run test:sim   other counts / ranges
//   SIM_CORE=/abs/path/raft.ts npm run test:sim  run against a scratch copy of the core (planted bugs)
//   node scripts/sim-sweep.mjs --seeds 20000  thousands of seeds on all cores (see scripts/sim-sweep.ts)
import { describe, expect, it } from 'vitest';
import { replaySeedSuite, seedSweepSuite } from './seed-suite.js';
import { defaultCore, runSimulation, SimViolation, type CoreModule } from './cluster.js';
import { CounterWorkload } from './counter-workload.js';
import { MUTANTS } from './mutants.js';
import { loadStorageMutant, materializeStorageMutant, removeStorageMutant, STORAGE_MUTANTS } from './storage-mutants.js';
import type { HistoryEvent } from './workload.js';

const env = process.env;
const num = (v: string | undefined, d: number) => (v === undefined || v === '' ? d : Number(v));
const SEEDS = num(env['SIM_SEEDS'], 1000);
const EVENTS = num(env['SIM_EVENTS'], 5000);
const BASE = num(env['SIM_SEED_BASE'], 1);
const CHUNKS = Math.max(1, Math.min(SEEDS, num(env['SIM_CHUNKS'], 8)));
/** The sweep runs with membership changes in the fault schedule (membership.ts); SIM_MEMBERSHIP=0 without. */
const MEMBERSHIP = env['SIM_MEMBERSHIP'] !== '0';

const core: CoreModule = env['SIM_CORE'] ? ((await import(env['SIM_CORE'])) as CoreModule) : defaultCore;

if (env['SEED'] !== undefined && env['SEED'] !== '') {
  replaySeedSuite('simulation', Number(env['SEED']), (seed, trace) =>
    runSimulation({ seed, events: EVENTS, core, membership: MEMBERSHIP, ...trace }),
  );
} else {
  seedSweepSuite(
    `simulation: ${SEEDS} seeds x ${EVENTS} events${MEMBERSHIP ? ', membership changes' : ''}`,
    { seeds: SEEDS, base: BASE, chunks: CHUNKS },
    (seed) => runSimulation({ seed, events: EVENTS, core, membership: MEMBERSHIP }),
  );

  describe('simulation harness', () => {
    it('is deterministic: one seed, one run, bit for bit', async () => {
      for (const seed of [7, 4242]) {
        const a = await runSimulation({ seed, events: EVENTS, core, fullTrace: true });
        const b = await runSimulation({ seed, events: EVENTS, core, fullTrace: true });
        expect(b.summary).toBe(a.summary);
        expect(b.cluster.trace.tail(Infinity)).toEqual(a.cluster.trace.tail(Infinity));
        expect(b.cluster.clients.history).toEqual(a.cluster.clients.history);
      }
    });

    it('reports a violation with the seed, the invariant, node states, a replay command and the trace tail', async () => {
      const mutant = MUTANTS.find((m) => m.name.startsWith('votedFor forgotten'))!;
      let caught: SimViolation | null = null;
      for (let seed = 1; seed <= mutant.maxSeeds && caught === null; seed++) {
        try {
          await runSimulation({ seed, events: EVENTS, core: mutant.core(defaultCore), traceLines: 60 });
        } catch (e) {
          if (!(e instanceof SimViolation)) throw e;
          if (e.invariant !== 'liveness') caught = e;
        }
      }
      expect(caught).not.toBeNull();
      const text = caught!.message;
      expect(text).toContain(`seed=${caught!.seed}`);
      expect(text).toContain(`invariant "${caught!.invariant}"`);
      expect(text).toContain(`SEED=${caught!.seed} npm run test:sim`);
      const traceLines = text.split('last 60 trace lines:\n')[1]!.split('\n');
      expect(traceLines.length).toBe(60);
    });
  });

  describe('simulation plug-ins', () => {
    it('runs a custom state machine and workload with every hook, plus an extra invariant', async () => {
      for (let seed = 1; seed <= 60; seed++) {
        const workload = new CounterWorkload();
        let extraChecks = 0;
        const r = await runSimulation({
          seed,
          events: EVENTS,
          core,
          workload,
          invariants: [
            (sim) => {
              extraChecks++;
              for (const n of sim.nodes) if (n.up && n.applied > sim.facts.maxCommitted) return `${n.id} applied past every commit`;
              return null;
            },
          ],
        });
        expect(extraChecks).toBe(r.stats.events);
        expect(workload.electedProposals).toBeGreaterThan(0);
        expect(workload.observed).toEqual(r.cluster.clients.history);
      }
    });

    it('the custom workload history check rejects a non-linearizable history', () => {
      const w = new CounterWorkload();
      const bad: HistoryEvent[] = [
        { type: 'invoke', opId: 1, clientId: 0, kind: 'read', time: 0 },
        { type: 'ok', opId: 1, clientId: 0, kind: 'read', time: 1, result: 7 },
        { type: 'invoke', opId: 2, clientId: 1, kind: 'read', time: 2 },
        { type: 'ok', opId: 2, clientId: 1, kind: 'read', time: 3, result: 5 },
      ];
      expect(w.checkHistory(bad)).toMatch(/returned 5, but op1 completed earlier with 7/);
      expect(w.checkHistory(bad.slice(0, 2))).toBeNull();
    });
  });

  // A checker that cannot fail proves nothing: wrap the real core with classic bugs and make sure the
  // simulator catches each within a bounded number of seeds.
  if (env['SIM_CORE'] === undefined) {
    describe('simulation catches planted bugs', () => {
      for (const mutant of MUTANTS) {
        it(`catches: ${mutant.name}`, async () => {
          for (let seed = 1; seed <= mutant.maxSeeds; seed++) {
            try {
              await runSimulation({
                seed,
                events: mutant.events ?? EVENTS,
                core: mutant.core(defaultCore),
                profile: mutant.profile,
                workload: mutant.workload,
                membership: mutant.membership,
              });
            } catch (e) {
              if (!(e instanceof SimViolation)) throw e;
              // Liveness says nothing about a planted safety bug; and a seed that also fails on the
              // real core is the core's failure, not the mutant's: keep looking.
              if (e.invariant === 'liveness') continue;
              try {
                await runSimulation({
                  seed,
                  events: mutant.events ?? EVENTS,
                  core: defaultCore,
                  profile: mutant.profile,
                  workload: mutant.workload,
                  membership: mutant.membership,
                });
              } catch (base) {
                if (base instanceof SimViolation) continue;
                throw base;
              }
              if (!mutant.expect.includes(e.invariant))
                throw new Error(
                  `mutant "${mutant.name}" was reported as ${e.invariant}, expected one of ${mutant.expect.join(', ')}\n${e.message}`,
                );
              return;
            }
          }
          throw new Error(`mutant "${mutant.name}" survived ${mutant.maxSeeds} seeds`);
        });
      }
    });

    // The nodes persist through the real WalStorage (sim-disk.ts, durable.ts): a planted bug in it must trip
    // a named check — a check that reads the disk, not a liveness timeout.
    describe('simulation catches planted storage bugs', () => {
      for (const mutant of STORAGE_MUTANTS) {
        it(`catches: ${mutant.name}`, async () => {
          const root = materializeStorageMutant(mutant);
          try {
            const storage = await loadStorageMutant(root);
            for (let seed = 1; seed <= mutant.maxSeeds; seed++) {
              try {
                await runSimulation({ seed, events: EVENTS, membership: MEMBERSHIP, storage });
              } catch (e) {
                if (!(e instanceof SimViolation)) throw e;
                if (e.invariant === 'liveness') continue;
                if (!mutant.expect.includes(e.invariant))
                  throw new Error(
                    `storage mutant "${mutant.name}" was reported as ${e.invariant}, expected one of ${mutant.expect.join(', ')}\n${e.message}`,
                  );
                return;
              }
            }
            throw new Error(`storage mutant "${mutant.name}" survived ${mutant.maxSeeds} seeds`);
          } finally {
            removeStorageMutant(root);
          }
        });
      }
    });
  }
}
