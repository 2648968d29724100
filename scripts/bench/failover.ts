// failover: kill -9 of the leader under light load, repeated; the figure is the time from the kill to the
// first successful acquire through a survivor (one-shot acquires sent to every survivor every 25 ms). The killed member is restarted and caught up before the next kill.
import { performance } from 'node:perf_hooks';
import { cycle, drive, measured, openSessions } from './loop.js';
import { median } from './stats.js';
import type { LockSession, SystemCluster } from './system.js';
import type { NodeUsage } from './types.js';
import { CYCLE_TTL_MS, WAIT_MS } from './workloads.js';

/** One probe acquire's cap: long enough for a healthy answer on a loaded machine. */
const PROBE_ATTEMPT_MS = 1000;
const PROBE_EVERY_MS = 25;
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

/**
 * ms from `t0` to the first acquire that succeeds on any of `probes`. A new one-shot acquire goes to every
 * survivor every PROBE_EVERY_MS whether or not earlier ones have answered, so a slow answer (a loaded
 * machine) neither hides the recovery nor blurs it by more than PROBE_EVERY_MS.
 */
function timeToAcquire(probes: readonly LockSession[], t0: number, tag: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let done = false;
    let n = 0;
    const finish = (result: () => void) => {
      if (done) return;
      done = true;
      clearInterval(timer);
      result();
    };
    const fire = () => {
      if (performance.now() - t0 > RECOVERY_DEADLINE_MS) {
        finish(() => reject(new Error(`failover: no acquire succeeded within ${RECOVERY_DEADLINE_MS} ms of the kill`)));
        return;
      }
      for (const s of probes) {
        s.acquire(`${tag}-${n++}`, { waitMs: 0, ttlMs: CYCLE_TTL_MS, once: true }).then(
          (lock) => {
            if (!lock) return;
            const ms = performance.now() - t0;
            void s.release(lock).catch(() => undefined);
            finish(() => resolve(ms));
          },
          () => undefined, // no leader yet, or the member is still cut off: the next probe goes out anyway
        );
      }
    };
    const timer = setInterval(fire, PROBE_EVERY_MS);
    fire();
  });
}

export async function runFailover(cluster: SystemCluster, kills: number, round: number): Promise<FailoverResult> {
  const n = cluster.members.length;
  // Probe sessions on every member; after a kill only the survivors' are used.
  const probes = await Promise.all(cluster.members.map((_, i) => cluster.session(i, { onceTimeoutMs: PROBE_ATTEMPT_MS })));
  const load = await openSessions(cluster, n);
  let stopLoad = false;
  const recoveryMs: number[] = [];
  try {
    await Promise.all(probes.map((s, i) => cycle(s, `warm-probe-${i}`, WAIT_MS, CYCLE_TTL_MS)));
    const m = await measured(cluster, async () => {
      // Light load: one client per member, acquire + release of fresh keys, until the kills are done.
      const background = drive(
        load,
        () => stopLoad,
        (s, c, i) => cycle(s, `fo-load-${round}-${c}-${i}`, WAIT_MS, CYCLE_TTL_MS),
      );
      for (let k = 0; k < kills; k++) {
        const leader = await cluster.leader();
        const t0 = performance.now();
        await cluster.kill(leader);
        recoveryMs.push(
          await timeToAcquire(
            probes.filter((_, i) => i !== leader),
            t0,
            `fo-probe-${round}-${k}`,
          ),
        );
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
