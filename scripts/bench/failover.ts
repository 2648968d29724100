// failover: kill -9 of the leader under light load, repeated; the figure is the time from the kill to the
// first successful acquire through a survivor (probed on every survivor at once, one short attempt each,
// again every few ms). The killed member is restarted and caught up before the next kill.
import { performance } from 'node:perf_hooks';
import { cycle, drive, measured, openSessions } from './loop.js';
import { median } from './stats.js';
import type { LockSession, SystemCluster } from './system.js';
import type { NodeUsage } from './types.js';
import { CYCLE_TTL_MS, WAIT_MS } from './workloads.js';

const PROBE_ATTEMPT_MS = 250;
const PROBE_EVERY_MS = 5;
const RECOVERY_DEADLINE_MS = 30_000;

export interface FailoverResult {
  system: string;
  round: number;
  kills: number;
  recoveryMs: number[];
  medianMs: number;
  maxMs: number;
  /** Raft term increase over all kills; each kill needs one election, more is a split vote or spurious. */
  termIncrease: number;
  /** leasehold: role changes from the node logs (becameLeader, preVotes, votes). */
  roleChanges: Record<string, number>;
  backgroundCycles: number;
  backgroundErrors: number;
  nodes: NodeUsage[];
}

/** ms from `t0` to the first acquire that succeeds on any of `probes`. */
async function timeToAcquire(probes: readonly LockSession[], t0: number, tag: string): Promise<number> {
  for (let attempt = 0; performance.now() - t0 < RECOVERY_DEADLINE_MS; attempt++) {
    const won = await new Promise<number | null>((resolve) => {
      let pending = probes.length;
      for (const [i, s] of probes.entries()) {
        s.acquire(`${tag}-${attempt}-${i}`, { waitMs: 0, ttlMs: CYCLE_TTL_MS, once: true }).then(
          (lock) => {
            if (lock) {
              resolve(performance.now() - t0);
              void s.release(lock).catch(() => undefined);
            } else if (--pending === 0) resolve(null);
          },
          () => {
            if (--pending === 0) resolve(null);
          },
        );
      }
    });
    if (won !== null) return won;
    await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
  }
  throw new Error(`failover: no acquire succeeded within ${RECOVERY_DEADLINE_MS} ms of the kill`);
}

export async function runFailover(cluster: SystemCluster, kills: number, round: number): Promise<FailoverResult> {
  const n = cluster.members.length;
  // Probe sessions on every member; after a kill only the survivors' are used.
  const probes = await Promise.all(cluster.members.map((_, i) => cluster.session(i, { attemptTimeoutMs: PROBE_ATTEMPT_MS })));
  const load = await openSessions(cluster, n);
  let stopLoad = false;
  const recoveryMs: number[] = [];
  try {
    await Promise.all(probes.map((s, i) => cycle(s, `warm-probe-${i}`, WAIT_MS, CYCLE_TTL_MS)));
    const m = await measured(cluster, async () => {
      // Light load: one client per member, acquire + release of fresh keys, until the kills are done.
      const background = drive(load, () => stopLoad, (s, c, i) => cycle(s, `fo-load-${round}-${c}-${i}`, WAIT_MS, CYCLE_TTL_MS));
      for (let k = 0; k < kills; k++) {
        const leader = await cluster.leader();
        const t0 = performance.now();
        await cluster.kill(leader);
        recoveryMs.push(await timeToAcquire(probes.filter((_, i) => i !== leader), t0, `fo-probe-${round}-${k}`));
        await cluster.restart(leader);
        await cluster.leader(60_000); // every member, the restarted one too, agrees on a leader again
      }
      stopLoad = true;
      return background;
    });
    return {
      system: cluster.system,
      round,
      kills,
      recoveryMs,
      medianMs: median(recoveryMs),
      maxMs: Math.max(...recoveryMs),
      termIncrease: m.elections,
      roleChanges: m.roleChanges,
      backgroundCycles: m.result.latenciesMs.length,
      backgroundErrors: m.result.errors,
      nodes: m.nodes,
    };
  } finally {
    stopLoad = true;
    for (const s of [...probes, ...load]) s.close();
  }
}
