// Seeded simulation of the lock service: the real LockMachine replicated by real Raft cores under faults,
// with the lock service's leader duties, drifting node and client clocks, clients that acquire / write to a
// fenced resource / renew / release, retry with the same request_id, stall past their TTL and misuse old
// tokens — checked after every event by the lock oracle (lock-invariants.ts), the clients' real-time
// mutual exclusion (lock-clients.ts) and the fenced resource (lock-resource.ts), on top of every Raft
// invariant of the harness.
//
//   npm run test:sim                                   all sim suites, this one included
//   SEED=17 npm run test:sim                           replay seed 17 (this file replays it with the lock
//   SEED=17 npx vitest run test/sim/lock-sim.test.ts   workload: summary + trace tail; SIM_TRACE=full)
//   SIM_LOCK_SEEDS=5000 SIM_LOCK_EVENTS=10000 SIM_LOCK_SEED_BASE=100000 npx vitest run test/sim/lock-sim.test.ts
//   SIM_LOCK=/abs/scratch/copy/of/src/lock npx vitest run test/sim/lock-sim.test.ts   (a planted bug)
//   SIM_LOCK_PROFILE='{"limitsShare":1,"leaderProposalTimeoutMs":30}' ...   (lock profile overrides, JSON)
// Without any of SIM_LOCK_SEEDS/_EVENTS/_SEED_BASE/_PROFILE, CI's two other sweeps run too: 50 seeds of 12,000
// events (from 200,001), and seeds 161-240 with limits everywhere and 30 ms proposal timeouts.
import { describe, expect, it } from 'vitest';
import { replaySeedSuite, seedSweepSuite } from './seed-suite.js';
import { SimViolation } from './cluster.js';
import { loadLockModule } from './lock-module.js';
import { SimFencedResource } from './lock-resource.js';
import { lockReplayHint, runLockSimulation, type LockRunResult } from './lock-sim.js';
import type { LockProfile } from './lock-clock.js';

const env = process.env;
const num = (v: string | undefined, d: number) => (v === undefined || v === '' ? d : Number(v));
const SEEDS = num(env['SIM_LOCK_SEEDS'], 1000);
const EVENTS = num(env['SIM_LOCK_EVENTS'], 5000);
const BASE = num(env['SIM_LOCK_SEED_BASE'], 1);
const CHUNKS = Math.max(1, Math.min(SEEDS, num(env['SIM_CHUNKS'], 8)));
/** CI's long runs: seeds of their own (not the main sweep's), 12,000 events each. Measured in one test:fast run
 *  on the shared 2-core machine: 60 of them 38 s and 100 limits seeds 30 s while the main sweep took 223 s;
 *  sized down from those to about 50 s together. */
const LONG = { seeds: 50, base: 200_001, events: 12_000 };
/** CI's limits-everywhere / short-timeout profile: seeds 161-240, 228 and 240 among them. */
const SHORT_TIMEOUTS = { seeds: 80, base: 161, profile: { limitsShare: 1, leaderProposalTimeoutMs: 30 } satisfies Partial<LockProfile> };
const module = await loadLockModule(env['SIM_LOCK']);
const PROFILE: Partial<LockProfile> = env['SIM_LOCK_PROFILE'] ? (JSON.parse(env['SIM_LOCK_PROFILE']) as Partial<LockProfile>) : {};
/** The harness test's seeds 1..EXERCISED_SEEDS (what the runs exercise) with the default profile. */
const EXERCISED_SEEDS = 120;
/** The main sweep runs those very seeds (same events, module and, without SIM_LOCK_PROFILE, profile: a run
 *  is deterministic, the harness test below checks it): their counts are kept as the sweep runs them, so
 *  the harness test reads them instead of running the seeds a second time (about 19 s of CI). A seed the
 *  sweep did not run this way (a -t filter, another SIM_LOCK_SEED_BASE, a failing seed) runs there again. */
const sweepRunsExercised = (env['SIM_LOCK_PROFILE'] ?? '') === '';
const exercisedBySweep = new Map<number, Record<string, number>>();

if (env['SEED'] !== undefined && env['SEED'] !== '') {
  replaySeedSuite(`lock simulation (${module.label})`, Number(env['SEED']), (seed, trace) =>
    runLockSimulation({ seed, events: EVENTS, module, lockProfile: PROFILE, ...trace }),
  );
} else {
  seedSweepSuite(
    `lock simulation (${module.label}): ${SEEDS} seeds x ${EVENTS} events`,
    { seeds: SEEDS, base: BASE, chunks: CHUNKS },
    async (seed) => {
      const r = await runLockSimulation({ seed, events: EVENTS, module, lockProfile: PROFILE });
      if (sweepRunsExercised && seed <= EXERCISED_SEEDS) exercisedBySweep.set(seed, exercisedCounts(r));
      return r;
    },
  );

  // CI's other lock seeds (skipped by a sweep of one's own choosing: SIM_LOCK_SEEDS, _EVENTS, _SEED_BASE or
  // _PROFILE). Longer runs: some failures need more than 5,000 events to build up (issue 38: a late copy of an
  // acquire superseding its own hold, first seen at 10,000). And the limits profile with 30 ms proposal
  // timeouts: every leader refusing by small limits while its proposals time out before they commit (seeds
  // 228 and 240 did not converge: housekeeping proposed its due entries again at every timeout).
  const custom = ['SIM_LOCK_SEEDS', 'SIM_LOCK_EVENTS', 'SIM_LOCK_SEED_BASE', 'SIM_LOCK_PROFILE'].some((k) => (env[k] ?? '') !== '');
  if (!custom) {
    seedSweepSuite(
      `lock simulation (${module.label}), long runs: ${LONG.seeds} seeds x ${LONG.events} events`,
      { ...LONG, chunks: 2 },
      (seed) => runLockSimulation({ seed, events: LONG.events, module }),
    );
    seedSweepSuite(
      `lock simulation (${module.label}), limits everywhere and 30 ms proposal timeouts: ${SHORT_TIMEOUTS.seeds} seeds`,
      { ...SHORT_TIMEOUTS, chunks: 2 },
      (seed) => runLockSimulation({ seed, events: EVENTS, module, lockProfile: SHORT_TIMEOUTS.profile }),
    );
  }

  // The harness checks run against the real lock machine only (SIM_LOCK sweeps a scratch copy above).
  const harness = env['SIM_LOCK'] === undefined || env['SIM_LOCK'] === '' ? describe : describe.skip;
  harness('lock simulation harness', () => {
    it('is deterministic: one seed, one run, bit for bit', async () => {
      for (const seed of [3, 77]) {
        const a = await runLockSimulation({ seed, events: EVENTS, module, fullTrace: true });
        const b = await runLockSimulation({ seed, events: EVENTS, module, fullTrace: true });
        expect(b.summary).toBe(a.summary);
        expect(b.cluster.trace.tail(Infinity)).toEqual(a.cluster.trace.tail(Infinity));
        expect(b.cluster.clients.history).toEqual(a.cluster.clients.history);
      }
    });

    it('exercises what it claims to: takeovers, leases carried across leader changes, fencing refusals, replays, FIFO waiters, forwarding, cancels, duplicates', async () => {
      const total: Record<string, number> = {};
      // 120 seeds: with the group clients and the real storage in the runs, a stale write refused by the
      // resource became rare (0 of 17 stale writes in seeds 1-60 were refused; 3 of 36 in 1-120).
      for (let seed = 1; seed <= EXERCISED_SEEDS; seed++) {
        const counts = exercisedBySweep.get(seed) ?? exercisedCounts(await runLockSimulation({ seed, events: EVENTS, module }));
        for (const [k, v] of Object.entries(counts)) total[k] = (total[k] ?? 0) + v;
      }
      for (const k of [
        'acquired',
        'takeovers',
        'renewed',
        'renewExpired',
        'released',
        'releaseRefused',
        'expired',
        'replays',
        'leasesExtended',
        'honestWrites',
        'staleRejected',
        'staleAccepted',
        'pauses',
        'supersededUses',
        'fiveNodeRuns',
        'streamsInstalled',
        'streamCrashes',
        'streamsRefused',
        'streamsInstalledAfterRefusal',
        // the real lock service: blocking acquires queued FIFO and granted, deadlines and cancels, calls
        // forwarded by followers (lost, duplicated; reaching a node that no longer leads: answered, never
        // forwarded again), linearizable Gets
        'blockingAcquires',
        'shortAttempts',
        'queuedGrants',
        'fifoChecked',
        'refusalAnswers',
        'forwarded',
        'forwardsLost',
        'forwardDuplicates',
        'lateDuplicates',
        'answersLost',
        'answeredAlreadyForwarded',
        'cancels',
        'getsChecked',
        // the replicated wait line, as the oracle modelled it: joins, retries keeping their place, hand-offs
        // decided by the entry that ended a hold, waits refused at their deadline, cancelled places
        'waitersJoined',
        'waitersReattached',
        'handOffs',
        'waitsRefused',
        'waitsCancelled',
        // lock-delay: holds that carry one, delays their expiry started, acquires refused in one, undelays
        'lockDelayAcquires',
        'delaysStarted',
        'delayRefusals',
        'undelays',
        // a holder that comes back late (issue 38): abandoned holds released or closed after they ran out,
        // which the entry ends as expired, into its lock-delay
        'lateEndsSent',
        'lateEnds',
        // keys with many holds (lock-oracle-groups.ts): grants, hand-offs, waits and refusals, supersedes, the
        // deliberate limit mismatches, groups that became free keys again, shared holds together
        'groupGrants',
        'groupHandOffs',
        'groupWaits',
        'groupRefusals',
        'supersedes',
        'limitMismatches',
        'mismatches',
        'groupsFreed',
        'maxShared',
        // an operator's revoke (issue 22 finding 6): revokes sent, by key alone too, holds they ended, the key
        // handed to a waiter in the revoking entry, on keys with many holds too; revoked holders that still
        // trusted their hold and wrote with its token
        'revokes',
        'revokesAll',
        'holdsRevoked',
        'revokeHandOffs',
        'groupRevokes',
        'trustedRevoked',
        'revokedWrites',
        // (level 5) revokes retried with their request id, answered with the first outcome
        'revokeReplays',
        // (level 7) renews entries, and renews that shared one with another renew of the same turn
        'renewsEntries',
        'renewsShared',
        // (level 6, issue 38) acquire records kept past the window while their owner held the key; refused
        // requests' ids sent again with other terms (session, limit, mode), refused REQUEST_ID_REUSED
        'dedupKeptWhileHeld',
        'requestIdsMisused',
        'requestIdsReused',
        'requestIdsRefused',
        // admission limits (a quarter of seeds: lock-clock.ts `limits`): calls refused RESOURCE_EXHAUSTED, the
        // clients told so, admissions the `limits` check judged, entries that left a count at its limit
        'exhausted',
        'exhaustedAnswers',
        'admissionsChecked',
        'entriesAtLimit',
      ]) {
        expect(total[k], k).toBeGreaterThan(0);
      }
    });

    it('the limits profile: every limit refuses RESOURCE_EXHAUSTED, and counts stand at their limits and above them by hand-offs', async () => {
      // Every seed with small limits (lock-clock.ts `limitsShare`; a quarter of the sweep's seeds have them).
      const refused: Record<string, number> = {};
      const checked = { admissionsChecked: 0, entriesAtLimit: 0, entriesOverLimit: 0 };
      // Seed 499: hand-offs push a count over its limit there (about one seed in a few hundred does; the
      // first forty do not since the applied store's timers joined the runs).
      for (const seed of [...Array.from({ length: 40 }, (_, i) => i + 1), 499]) {
        const w = (await runLockSimulation({ seed, events: EVENTS, module, lockProfile: { limitsShare: 1 } })).workload;
        for (const [limit, n] of Object.entries(w.servers.exhaustedBy)) refused[limit] = (refused[limit] ?? 0) + n;
        for (const k of Object.keys(checked) as (keyof typeof checked)[]) checked[k] += w.limits!.stats[k];
      }
      for (const [limit, n] of Object.entries(refused)) expect(n, `calls refused by limits.${limit}`).toBeGreaterThan(0);
      // Over a limit only by what the log granted waiters (the soft part the check models): it happens.
      for (const [k, n] of Object.entries(checked)) expect(n, k).toBeGreaterThan(0);
    });

    it('a rolling upgrade: the cluster moves to level 2 only once every member runs the new build, and no node meets an entry it cannot read', async () => {
      // Two nodes start on a level-1 build and run the new one from their first restart (lock-clock.ts
      // oldBuildNodes). An old build that met a level-2 entry or snapshot would stop: core-threw.
      const finals = { raised: 0, stayed: 0 };
      for (let seed = 1; seed <= 30; seed++) {
        const r = await runLockSimulation({ seed, events: EVENTS, module, lockProfile: { oldBuildNodes: 2 } });
        const o = r.workload.oracle.stats;
        if (o.clusterLevel >= 2) finals.raised++;
        else finals.stayed++;
        const everyNodeNew = r.cluster.nodes.slice(0, 2).every((n) => n.incarnation > 0);
        // Raised while an old build could still run: the gate failed (a node not restarted yet is still old).
        if (!everyNodeNew) expect(o.clusterLevel, `seed ${seed}: raised with an old build still running`).toBe(1);
      }
      expect(finals.raised, 'runs that finished the upgrade').toBeGreaterThan(0);
      expect(finals.stayed, 'runs that did not').toBeGreaterThan(0);
    });

    it('the real-time checks catch a client that counts its lease from the answer instead of the send', async () => {
      // A planted CLIENT bug (the lock machine is fine): the trust window opens when the acquire/renew answer
      // arrives, later than the grant the server measures from — so it outlives the server's lease.
      let caught: SimViolation | null = null;
      for (let seed = 1; seed <= 100 && caught === null; seed++) {
        try {
          await runLockSimulation({ seed, events: EVENTS, module, lockProfile: { clientTrustFrom: 'ack' } });
        } catch (e) {
          if (!(e instanceof SimViolation)) throw e;
          if (e.invariant !== 'liveness') caught = e;
        }
      }
      expect(caught?.invariant).toBe('extra-invariant');
      expect(caught?.message).toMatch(/mutual exclusion|fencing/);
    });

    it('the fenced resource takes only tokens >= the last one and reports what fencing cannot excuse', async () => {
      const r = new SimFencedResource();
      expect(r.write('k', 5n, 'alice', 1, true)).toBe(true);
      expect(r.write('k', 5n, 'alice', 2, true)).toBe(true); // the same holder writes again
      expect(r.write('k', 9n, 'bob', 3, true)).toBe(true);
      expect(r.write('k', 5n, 'alice', 4, false)).toBe(false); // a paused holder: fencing at work
      expect(r.violation).toBeNull();
      expect(r.stats).toMatchObject({ honestAccepted: 3, staleRejected: 1 });
      expect(r.write('k', 7n, 'carol', 5, true)).toBe(false); // carol believed she held it: two holders
      expect(r.violation).toMatch(/token 9 had already been accepted while carol still believed/);
      const twice = new SimFencedResource();
      twice.write('k', 4n, 'alice', 1, true);
      twice.write('k', 4n, 'bob', 2, true); // one token, two owners: a token issued twice
      expect(twice.violation).toMatch(/accepted from two owners/);
    });

    it('a violation names the seed, the invariant, the lock replay command and the trace tail', async () => {
      const { LOCK_MUTANTS, materializeMutant, removeMutant } = await import('./lock-mutants.js');
      const dir = materializeMutant(LOCK_MUTANTS.find((m) => m.id === 'd')!);
      try {
        const broken = await loadLockModule(dir);
        let caught: SimViolation | null = null;
        for (let seed = 1; seed <= 20 && caught === null; seed++) {
          try {
            await runLockSimulation({ seed, events: EVENTS, module: broken });
          } catch (e) {
            if (!(e instanceof SimViolation)) throw e;
            caught = e;
          }
        }
        expect(caught).not.toBeNull();
        const text = caught!.message;
        expect(text).toContain(`seed=${caught!.seed}`);
        expect(text).toContain(lockReplayHint(caught!.seed, broken));
        expect(text).toContain('last 60 trace lines:');
        expect(text).toMatch(/lock: acquire \d+ ok/);
      } finally {
        removeMutant(dir);
      }
    });
  });
}

/** What one run exercised, summed over seeds by the harness test: the oracle's, clients', resource's,
 *  servers' and limits' counts, and the cluster's. */
function exercisedCounts(r: LockRunResult): Record<string, number> {
  const w = r.workload;
  const stats = {
    ...w.oracle.stats,
    ...w.oracle.groups.stats,
    ...w.clients.stats,
    ...w.resource.stats,
    ...w.servers.stats,
    ...w.servers.checks.stats,
    ...w.stats,
    ...w.limits?.stats,
  };
  const counts: Record<string, number> = {};
  for (const [k, v] of Object.entries(stats)) if (Number.isFinite(v)) counts[k] = v;
  counts['fiveNodeRuns'] = (counts['fiveNodeRuns'] ?? 0) + (r.cluster.nodes.length === 5 ? 1 : 0);
  // The applied store streamed to followers behind the log (level 6) and swapped in, crashes mid-stream.
  counts['streamsInstalled'] = (counts['streamsInstalled'] ?? 0) + r.cluster.stats.streamsInstalled;
  counts['streamCrashes'] = (counts['streamCrashes'] ?? 0) + r.cluster.stats.streamCrashes;
  // Streams corrupted on their way into a follower's store (the fault arm): refused, and a good one installed
  // after.
  counts['streamsRefused'] = (counts['streamsRefused'] ?? 0) + r.cluster.stats.streamsRefused;
  counts['streamsInstalledAfterRefusal'] = (counts['streamsInstalledAfterRefusal'] ?? 0) + r.cluster.stats.streamsInstalledAfterRefusal;
  return counts;
}
