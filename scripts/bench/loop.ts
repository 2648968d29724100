// The client loop every system gets: N sessions, session c pinned to member c mod 3 (so clients are spread
// round-robin over all members), each running `op` back to back until the time is up. Measures op latency,
// errors, the members' CPU and RSS, and the elections (raft term increase) during the run.
import { performance } from 'node:perf_hooks';
import { roleChangesInLog } from './node-log.js';
import { ProcSampler } from './procstat.js';
import { summarize } from './stats.js';
import type { LockSession, SessionOptions, SystemCluster } from './system.js';
import type { RunRow } from './types.js';

export interface LoopSpec {
  workload: string;
  opName: string;
  clients: number;
  seconds: number;
  round: number;
  sessionOptions?: SessionOptions;
  /** 'spread' (default): client c on member c mod 3. 'leader' / 'follower': every client on the current
   *  leader, or on a follower (each request forwarded), so a one-client row does not depend on where the
   *  election happened to put the leader. */
  pin?: Pin;
  /** One op of client `c`, its n-th. Resolves true when done, false when it did not happen (a wait ran
   *  out): not an op, counted as an error. Throws on an RPC error (counted, then the loop goes on). */
  op: (session: LockSession, c: number, n: number) => Promise<boolean>;
  /** Ran once per session before the clock starts (channels, leases, the leader's first entry). */
  warmUp?: (session: LockSession, c: number) => Promise<void>;
  /** Work run beside the loop from the moment the clock starts (e.g. a backup taken under load): the loop
   *  runs for `seconds` and at least until it settles, so the row covers all of it; its error is thrown. */
  alongside?: () => Promise<void>;
}

export type Pin = 'spread' | 'leader' | 'follower';

export async function openSessions(
  cluster: SystemCluster,
  count: number,
  opts?: SessionOptions,
  pin: Pin = 'spread',
): Promise<LockSession[]> {
  const n = cluster.members.length;
  const leader = pin === 'spread' ? 0 : await cluster.leader();
  const memberOf = (c: number) => (pin === 'spread' ? c % n : pin === 'leader' ? leader : (leader + 1) % n);
  return Promise.all(Array.from({ length: count }, (_, c) => cluster.session(memberOf(c), opts)));
}

/** Latencies and error count of `op` run back to back by every session until `until` (a performance.now()
 *  time, or a function that says when to stop). */
export interface Driven {
  latenciesMs: number[];
  errors: number;
  timeouts: number;
  /** The first few distinct error messages, to tell an overload from a bug. */
  errorSamples: string[];
}

export const ERROR_SAMPLES = 5;

export async function drive(sessions: readonly LockSession[], until: number | (() => boolean), op: LoopSpec['op']): Promise<Driven> {
  const over = typeof until === 'number' ? () => performance.now() >= until : until;
  const latenciesMs: number[] = [];
  let errors = 0;
  let timeouts = 0;
  const errorSamples = new Set<string>();
  await Promise.all(
    sessions.map(async (s, c) => {
      for (let n = 0; !over(); n++) {
        const t0 = performance.now();
        try {
          if (await op(s, c, n)) latenciesMs.push(performance.now() - t0);
          else {
            errors++;
            timeouts++;
          }
        } catch (err) {
          errors++;
          if (errorSamples.size < ERROR_SAMPLES) errorSamples.add(err instanceof Error ? err.message : String(err));
          // Do not spin on a member that refuses everything (it is down, or has no leader yet).
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    }),
  );
  return { latenciesMs, errors, timeouts, errorSamples: [...errorSamples] };
}

export interface Measured<T> {
  seconds: number;
  nodes: RunRow['nodes'];
  elections: number;
  /** From the node logs where the system has them (leasehold): summed over the members. */
  roleChanges: Record<string, number>;
  /** CPU of this benchmark process (every client of the run shares it, and the machine's cores). */
  clientCpuSeconds: number;
  result: T;
}

function logLengths(cluster: SystemCluster): number[] {
  return cluster.members.map((_, i) => cluster.logText?.(i).length ?? 0);
}

function roleChangesSince(cluster: SystemCluster, lengths: readonly number[]): Record<string, number> {
  if (!cluster.logText) return {};
  const sum = { becameLeader: 0, preVotes: 0, votes: 0 };
  cluster.members.forEach((_, i) => {
    const r = roleChangesInLog(cluster.logText!(i).slice(lengths[i]));
    sum.becameLeader += r.becameLeader;
    sum.preVotes += r.preVotes;
    sum.votes += r.votes;
  });
  return sum;
}

/** Runs `body` with the members' CPU/RSS sampled and their raft term read before and after. */
export async function measured<T>(cluster: SystemCluster, body: () => Promise<T>): Promise<Measured<T>> {
  const termBefore = await cluster.maxTerm();
  const logsBefore = logLengths(cluster);
  await cluster.loopLagMaxMs?.().catch(() => undefined); // resets the nodes' stall maxima
  const sampler = new ProcSampler(() => cluster.pids());
  sampler.start();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let result: T;
  try {
    result = await body();
  } catch (err) {
    sampler.stop();
    throw err;
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const lag = await cluster.loopLagMaxMs?.().catch(() => undefined);
  const nodes = sampler.stop().map((u) => (lag?.has(u.node) ? { ...u, loopLagMaxMs: lag.get(u.node)! } : u));
  const termAfter = await cluster.maxTerm();
  return {
    seconds,
    nodes,
    elections: termAfter - termBefore,
    roleChanges: roleChangesSince(cluster, logsBefore),
    clientCpuSeconds: (cpu.user + cpu.system) / 1e6,
    result,
  };
}

export async function runLoop(cluster: SystemCluster, spec: LoopSpec): Promise<RunRow> {
  const sessions = await openSessions(cluster, spec.clients, spec.sessionOptions, spec.pin);
  try {
    if (spec.warmUp) await Promise.all(sessions.map((s, c) => spec.warmUp!(s, c)));
    const m = await measured(cluster, async () => {
      const endMs = performance.now() + spec.seconds * 1000;
      if (spec.alongside === undefined) return drive(sessions, endMs, spec.op);
      let settled = false;
      const beside = spec.alongside().finally(() => (settled = true));
      const driven = await drive(sessions, () => settled && performance.now() >= endMs, spec.op);
      await beside;
      return driven;
    });
    return {
      workload: spec.pin && spec.pin !== 'spread' ? `${spec.workload} (${spec.pin})` : spec.workload,
      system: cluster.system,
      round: spec.round,
      clients: spec.clients,
      seconds: m.seconds,
      opName: spec.opName,
      ops: m.result.latenciesMs.length,
      opsPerSec: m.result.latenciesMs.length / m.seconds,
      latency: summarize(m.result.latenciesMs),
      errors: m.result.errors,
      elections: m.elections,
      nodes: m.nodes,
      clientCpuSeconds: m.clientCpuSeconds,
      // Of the errors, the waits that ran out (the rest are RPC errors); and the role changes.
      extra: { ...(m.result.timeouts > 0 ? { timeouts: m.result.timeouts } : {}), ...nonZero(m.roleChanges) },
      errorSamples: m.result.errorSamples,
    };
  } finally {
    for (const s of sessions) s.close();
  }
}

/** The entries that are not 0: a table cell of extras stays short when nothing happened. */
export function nonZero(figures: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(figures).filter(([, v]) => v !== 0));
}

/** acquire + release of `key` as one op; false when the wait ran out. */
export async function cycle(s: LockSession, key: string, waitMs: number, ttlMs: number): Promise<boolean> {
  const lock = await s.acquire(key, { waitMs, ttlMs });
  if (!lock) return false;
  await s.release(lock);
  return true;
}
