// Runs one seed of the lock simulation: the harness (cluster.ts) with the lock workload, its per-event
// invariant, per-seed lock knobs (lock-clock.ts) and the lock module under test (real or SIM_LOCK scratch).
import { SimCluster, SimViolation, type SimProfile, type SimStats } from './cluster.js';
import { lockProfileFor, type LockProfile } from './lock-clock.js';
import { realLockModule, type LockModule } from './lock-module.js';
import { LockWorkload } from './lock-workload.js';

export interface LockRunOptions {
  seed: number;
  events?: number;
  module?: LockModule;
  lockProfile?: Partial<LockProfile>;
  profile?: Partial<SimProfile>;
  traceLines?: number;
  fullTrace?: boolean;
  liveness?: boolean;
}

export interface LockRunResult {
  seed: number;
  stats: SimStats;
  summary: string;
  wallMs: number;
  cluster: SimCluster;
  workload: LockWorkload;
}

export function lockReplayHint(seed: number, module: LockModule): string {
  const lock = module === realLockModule ? '' : `SIM_LOCK=${module.label} `;
  return `lock replay: ${lock}SEED=${seed} npx vitest run test/sim/lock-sim.test.ts   (SIM_TRACE=full for every trace line)`;
}

/** Run one seed; throws SimViolation (with the lock summary and replay command appended) on any violation. */
export async function runLockSimulation(o: LockRunOptions): Promise<LockRunResult> {
  const module = o.module ?? realLockModule;
  const lockProfile = lockProfileFor(o.seed, o.lockProfile);
  const workload = new LockWorkload(module, o.seed, lockProfile);
  const cluster = new SimCluster({
    seed: o.seed,
    events: o.events ?? 2000,
    workload,
    invariants: [workload.invariant],
    profile: {
      ...(lockProfile.faultMeanMs > 0 ? { faultMeanMs: lockProfile.faultMeanMs } : {}),
      ...o.profile,
      clients: lockProfile.clients,
    },
    traceLines: o.traceLines ?? 60,
    fullTrace: o.fullTrace ?? false,
    liveness: o.liveness ?? true,
  });
  workload.attach(cluster);
  const t0 = performance.now();
  let stats: SimStats;
  try {
    stats = await cluster.run();
  } catch (e) {
    if (!(e instanceof SimViolation)) throw e;
    throw new SimViolation(e.seed, e.invariant, `${e.message}\n  ${workload.summary()}\n  ${lockReplayHint(o.seed, module)}`);
  }
  return {
    seed: o.seed,
    stats,
    summary: `${cluster.summary()}\n  ${workload.summary()}\n  lock profile: ${JSON.stringify(lockProfile)}`,
    wallMs: performance.now() - t0,
    cluster,
    workload,
  };
}
