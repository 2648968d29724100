// The idle workload: a fresh 3-member cluster with no client traffic at all, and each member's CPU over the
// run as a share of one core (utime + stime from /proc, procstat.ts). Issue 19's goal is each leasehold node
// <= 2 % of a core idle; etcd runs the same way in the same run so the table says what an idle Raft cluster
// costs on this machine. What an idle node still does: its Raft tick, the leader's heartbeats and their
// answers, its health and quorum watches, and the lock leader's housekeeping tick.
import { ProcSampler } from './procstat.js';
import type { SystemCluster } from './system.js';

export interface IdleResult {
  system: string;
  round: number;
  /** Length of the measured window (after the settle time). */
  seconds: number;
  /** CPU of each member over the window, in % of one core. */
  nodes: { node: string; cpuPercent: number }[];
}

/** After a leader is known, wait this long before measuring: the first term's entries, the first
 *  snapshots of an empty machine and the connections' set-up are start-up, not idling. */
const SETTLE_MS = 3000;
/** How often /proc is read during the window; only the first and last samples count for CPU. */
const SAMPLE_EVERY_MS = 1000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function runIdle(c: SystemCluster, seconds: number, round: number): Promise<IdleResult> {
  await c.leader();
  await sleep(SETTLE_MS);
  const sampler = new ProcSampler(() => c.pids(), SAMPLE_EVERY_MS);
  const startedNs = process.hrtime.bigint();
  sampler.start();
  await sleep(seconds * 1000);
  const usage = sampler.stop();
  const elapsedS = Number(process.hrtime.bigint() - startedNs) / 1e9;
  return idleResultOf(c.system, round, elapsedS, usage);
}

export function idleResultOf(
  system: string,
  round: number,
  elapsedS: number,
  usage: readonly { node: string; cpuSeconds: number }[],
): IdleResult {
  return { system, round, seconds: elapsedS, nodes: usage.map((u) => ({ node: u.node, cpuPercent: (100 * u.cpuSeconds) / elapsedS })) };
}

/** The goal per node (issue 19): an idle leasehold node takes at most this share of one core. */
export const IDLE_GOAL_PERCENT = 2;

export function idleTable(results: readonly IdleResult[]): string {
  const lines = [
    `== idle: a 3-member cluster with no traffic; CPU of each member in % of one core (goal for leasehold: each <= ${IDLE_GOAL_PERCENT} %) ==`,
  ];
  for (const r of results) {
    const worst = Math.max(...r.nodes.map((n) => n.cpuPercent));
    const goal = r.system === 'leasehold' ? (worst <= IDLE_GOAL_PERCENT ? '; goal met' : '; goal not met') : '';
    lines.push(
      `${r.system.padEnd(12)} round ${r.round}: ${r.nodes.map((n) => `${n.node} ${n.cpuPercent.toFixed(1)} %`).join(', ')} over ${r.seconds.toFixed(1)} s (max ${worst.toFixed(1)} %${goal})`,
    );
  }
  return lines.join('\n');
}
