// The renew workload: many held leases renewing (each every ttl/3, as LockClient does), while a few clients
// acquire and release fresh keys beside them. Ops are renews (latency of one renew); `extra` has the
// acquire + release cycles, and the leases lost (a renew came too late: that lock stops renewing). etcd: each held lock has its own lease (a leasehold lock is its own lease),
// renewed by one LeaseKeepAlive round trip.
import { performance } from 'node:perf_hooks';
import { ERROR_SAMPLES, cycle, drive, measured, nonZero, openSessions } from './loop.js';
import { summarize } from './stats.js';
import { LeaseLostError, type HeldLock, type LockSession, type SystemCluster } from './system.js';
import type { RunRow } from './types.js';
import { CYCLE_TTL_MS, WAIT_MS, type BenchScale } from './workloads.js';

export const RENEW_TTL_MS = 3000;
const HOLDER_SESSIONS = 16;
const CYCLE_CLIENTS = 4;

/** The sessions row: the same N holds under this many sessions (leases), each renewed every ttl/3. */
const HOLD_SESSIONS = 10;

export const renewDescription =
  `N held leases (ttl ${RENEW_TTL_MS} ms) each renewed every ttl/3, plus ${CYCLE_CLIENTS} clients doing acquire + release of fresh keys; clients = N. ` +
  `"renew (sessions)": the same N holds under ${HOLD_SESSIONS} sessions (etcd: ${HOLD_SESSIONS} clients' leases), one renew per session every ttl/3`;

export function heldForRenew(scale: BenchScale): number {
  return scale.quick ? 200 : 1000;
}

/**
 * Renews what is already taken while the rest is still being taken, every ttl/3 and uncounted, until the
 * measured window starts. On a loaded machine taking 1,000 holds outlasts their 3 s ttl; a lease that ran
 * out before the window is the bench's doing, not a lost lock (a real holder renews from the moment it
 * holds). A lease lost anyway shows in the window: its first measured renew is refused and counted lost.
 */
class FillKeepAlive {
  private stopped = false;
  private readonly loops: Promise<void>[] = [];
  private readonly kept: { s: LockSession; lock: HeldLock }[] = [];

  add(s: LockSession, lock: HeldLock): void {
    this.kept.push({ s, lock });
    this.loops.push(this.loop(s, lock));
  }

  private async loop(s: LockSession, lock: HeldLock): Promise<void> {
    for (;;) {
      await new Promise((r) => setTimeout(r, RENEW_TTL_MS / 3));
      if (this.stopped) return;
      await s.renew(lock).catch(() => undefined);
    }
  }

  /** Stops every loop (at most one interval), then renews everything it kept once more, so the measured
   *  loop — whose first renews are spread over one interval — takes over leases with a full ttl left: a
   *  hold taken just before the fill ended would otherwise wait up to two intervals for its next renew. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
    await Promise.all(this.kept.map(({ s, lock }) => s.renew(lock).catch(() => undefined)));
  }
}

/** Takes `count` holds round-robin over `holders`; `keep` renews each session's first hold (sessions: one
 *  renew keeps all its holds) or every hold (each its own lease) while the fill goes on. */
async function takeHeld(
  holders: readonly LockSession[],
  count: number,
  round: number,
  keep: FillKeepAlive,
  sessions: boolean,
): Promise<{ s: LockSession; lock: HeldLock }[]> {
  const held: { s: LockSession; lock: HeldLock }[] = [];
  await Promise.all(
    holders.map(async (s, h) => {
      for (let i = h; i < count; i += holders.length) {
        const lock = await s.acquire(`held-${round}-${i}`, { waitMs: 0, ttlMs: RENEW_TTL_MS });
        if (!lock) throw new Error(`renew workload: held-${round}-${i} is taken already`);
        if (!sessions || i === h) keep.add(s, lock);
        held.push({ s, lock });
      }
    }),
  );
  return held;
}

/** Renews every lock once per interval until `until`; a refused or failed renew is an error. */
async function renewLoops(
  held: readonly { s: LockSession; lock: HeldLock }[],
  until: number,
): Promise<{ latenciesMs: number[]; errors: number; lost: number; errorSamples: string[] }> {
  const intervalMs = RENEW_TTL_MS / 3;
  const latenciesMs: number[] = [];
  let errors = 0;
  let lost = 0;
  const errorSamples = new Set<string>();
  await Promise.all(
    held.map(async ({ s, lock }, i) => {
      // Spread the first renews over one interval, as locks taken at different times would be.
      let next = performance.now() + (i / held.length) * intervalMs;
      for (;;) {
        const waitMs = next - performance.now();
        if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
        if (performance.now() >= until) return;
        const t0 = performance.now();
        try {
          await s.renew(lock);
          latenciesMs.push(performance.now() - t0);
        } catch (err) {
          errors++;
          if (errorSamples.size < ERROR_SAMPLES) errorSamples.add(err instanceof Error ? err.message : String(err));
          // A lapsed lease stays lapsed: count it once, not once per interval for the rest of the run.
          if (err instanceof LeaseLostError) {
            lost++;
            return;
          }
        }
        next = t0 + intervalMs;
      }
    }),
  );
  return { latenciesMs, errors, lost, errorSamples: [...errorSamples] };
}

/**
 * `sessions` false: every held lock is its own lease and renews alone (16 clients hold them). true: the same
 * holds live under HOLD_SESSIONS sessions, and one renew per session keeps them all (the renew loop then
 * renews one lock per session, which renews its session).
 */
export async function runRenew(cluster: SystemCluster, scale: BenchScale, round: number, sessions = false): Promise<RunRow> {
  const count = heldForRenew(scale);
  const holders = sessions
    ? await openSessions(cluster, HOLD_SESSIONS, { sessionTtlMs: RENEW_TTL_MS })
    : await openSessions(cluster, HOLDER_SESSIONS, { leasePerLock: true });
  const cyclers = await openSessions(cluster, CYCLE_CLIENTS);
  try {
    const keep = new FillKeepAlive();
    let held: { s: LockSession; lock: HeldLock }[];
    try {
      held = await takeHeld(holders, count, round, keep, sessions);
    } finally {
      await keep.stop();
    }
    const renewed = sessions ? holders.map((s) => held.find((h) => h.s === s)!) : held;
    const m = await measured(cluster, async () => {
      const until = performance.now() + scale.seconds * 1000;
      const [renews, cycles] = await Promise.all([
        renewLoops(renewed, until),
        drive(cyclers, until, (s, c, n) => cycle(s, `renew-cycle-${round}-${c}-${n}`, WAIT_MS, CYCLE_TTL_MS)),
      ]);
      return { renews, cycles };
    });
    const cycleLatency = summarize(m.result.cycles.latenciesMs);
    return {
      workload: sessions ? 'renew (sessions)' : 'renew',
      system: cluster.system,
      round,
      clients: count,
      seconds: m.seconds,
      opName: 'renews',
      ops: m.result.renews.latenciesMs.length,
      opsPerSec: m.result.renews.latenciesMs.length / m.seconds,
      latency: summarize(m.result.renews.latenciesMs),
      errors: m.result.renews.errors,
      elections: m.elections,
      nodes: m.nodes,
      clientCpuSeconds: m.clientCpuSeconds,
      errorSamples: [...m.result.renews.errorSamples, ...m.result.cycles.errorSamples],
      extra: {
        offeredRenewsPerSec: renewed.length / (RENEW_TTL_MS / 3 / 1000),
        leasesLost: m.result.renews.lost,
        cyclesPerSec: m.result.cycles.latenciesMs.length / m.seconds,
        cycleP99Ms: cycleLatency.p99Ms,
        cycleErrors: m.result.cycles.errors,
        ...nonZero(m.roleChanges),
      },
    };
  } finally {
    for (const s of [...holders, ...cyclers]) s.close();
  }
}
