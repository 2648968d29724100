// held-scale (leasehold only; etcd has no equivalent run here): fill N held locks (ttl 1 h) as fast as
// the cluster takes them — many sessions, each with several acquires in flight, all to the leader — then
// report per-node RSS while serving, the log's compactions and any snapshot made for a follower (from the node
// log) and bytes on disk, restart of all
// three to SERVING, and acquire + release throughput with N held against the same cluster with none.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { restoreFromBackup, sampleHolders, saveUnderLoad, type BackupUnderLoad, type RestoredFromBackup } from './backup-under-load.js';
import { leaseholdFactory, type LeaseholdCluster } from './leasehold-system.js';
import { measured, openSessions, runLoop } from './loop.js';
import { rssMbOf } from './procstat.js';
import { memoryOf, type NodeMemory } from './node-memory.js';
import { compactionsInLog } from './node-log.js';
import { track } from './run-state.js';
import type { StartOptions } from './system.js';
import type { RunRow } from './types.js';
import { uncontended, type BenchScale } from './workloads.js';

const HOUR_MS = 3_600_000;
const FILL_SESSIONS = 32;
const FILL_IN_FLIGHT_PER_SESSION = 8;
/** Give up a fill that has not finished by then (a full 1M fill at 1,000/s takes ~17 min). */
const FILL_DEADLINE_MS = 60 * 60_000;
const FILL_PROGRESS_EVERY_MS = 15_000;

export interface NodeScale {
  node: string;
  rssServingMb: number;
  rssAfterRestartMb: number;
  /** What the RSS is made of (the node's /metrics), serving and after the restart. */
  memoryServing: NodeMemory;
  memoryAfterRestart: NodeMemory;
  /** Log compactions below the applied store (the log's share of the state's persistence). */
  compactions: number;
  /** Snapshots made for a follower behind the compacted log, and the last one's size. */
  followerSnapshots: number;
  lastSnapshotBytes: number;
  dataDirBytes: number;
}

export interface HeldScaleResult {
  held: number;
  fillSeconds: number;
  fillPerSec: number;
  /** Acquires of the fill that failed (RPC error, deadline); each key is tried again until it is held. */
  fillErrors: number;
  /** Retries that found their key held already: the failed attempt had committed. */
  fillRetriedHeld: number;
  /** Raft term increase while filling (snapshots of a growing state must not cost elections). */
  fillElections: number;
  fillCpuSeconds: number[];
  /** Longest event-loop stall per node while filling: snapshots of a growing state are taken then. */
  fillLoopStallMaxMs: number[];
  fillRoleChanges: Record<string, number>;
  restartToServingMs: number;
  nodes: NodeScale[];
  throughputNone: RunRow;
  throughputHeld: RunRow;
  /** The same load as throughputHeld with `snapshot save` of a follower beside it. */
  backup: BackupUnderLoad;
  /** A new cluster built from that backup (`snapshot restore` on every node). */
  restored: RestoredFromBackup;
  /** cycles/s with N held over cycles/s with none (the goal: >= 0.8). */
  heldRatio: number;
}

export function heldSizes(scale: BenchScale, override?: number[]): number[] {
  return override ?? (scale.quick ? [20_000] : [100_000, 1_000_000]);
}

/** Bytes of every file under `path` (a node's data dir). */
export function dirBytes(path: string): number {
  let total = 0;
  for (const e of readdirSync(path, { withFileTypes: true })) {
    const p = join(path, e.name);
    total += e.isDirectory() ? dirBytes(p) : statSync(p).size;
  }
  return total;
}

export async function fill(c: LeaseholdCluster, held: number): Promise<{ seconds: number; errors: number; alreadyHeld: number }> {
  const leader = await c.leader();
  // One session per member index would spread them; the fill goes to the leader: it is setup, not the
  // measured path, and the leader takes them fastest.
  const sessions = await Promise.all(Array.from({ length: FILL_SESSIONS }, () => c.session(leader)));
  let next = 0;
  let done = 0;
  let errors = 0;
  let alreadyHeld = 0;
  /** Keys whose acquire failed with an RPC error: taken again first, so the fill ends with exactly N. */
  const retry: number[] = [];
  const t0 = performance.now();
  const deadline = t0 + FILL_DEADLINE_MS;
  let lastDone = 0;
  const progress = setInterval(() => {
    console.log(
      `   fill: ${done.toLocaleString('en-US')} of ${held.toLocaleString('en-US')} held, ${Math.round(((done - lastDone) * 1000) / FILL_PROGRESS_EVERY_MS)}/s now`,
    );
    lastDone = done;
  }, FILL_PROGRESS_EVERY_MS);
  try {
    await Promise.all(
      sessions.flatMap((s) =>
        Array.from({ length: FILL_IN_FLIGHT_PER_SESSION }, async () => {
          while ((retry.length > 0 || next < held) && performance.now() < deadline) {
            const i = retry.pop() ?? next++;
            try {
              if (await s.acquire(`held-${i}`, { waitMs: 0, ttlMs: HOUR_MS })) done++;
              else alreadyHeld++; // an earlier attempt of this key (by another session) did commit after all
            } catch {
              errors++;
              retry.push(i);
              await new Promise((r) => setTimeout(r, 50));
            }
          }
        }),
      ),
    );
  } finally {
    clearInterval(progress);
    for (const s of sessions) s.close();
  }
  if (retry.length > 0 || next < held)
    throw new Error(`held-scale: fill of ${held} stopped at ${done} after ${FILL_DEADLINE_MS / 60_000} min`);
  return { seconds: (performance.now() - t0) / 1000, errors, alreadyHeld };
}

export function rssNow(c: LeaseholdCluster): Map<string, number> {
  return new Map([...c.pids()].map(([id, pid]) => [id, rssMbOf(pid)]));
}

async function sampleRss(c: LeaseholdCluster, ms: number): Promise<Map<string, number>> {
  const peak = new Map<string, number>();
  for (const end = performance.now() + ms; performance.now() < end;) {
    for (const [id, mb] of rssNow(c)) peak.set(id, Math.max(peak.get(id) ?? 0, mb));
    await new Promise((r) => setTimeout(r, 100));
  }
  return peak;
}

export async function runHeldScale(held: number, scale: BenchScale, round: number, start: StartOptions): Promise<HeldScaleResult> {
  // Room above N for the throughput runs' own keys (free keys are kept for lock.freeKeyRetentionMs).
  const extraYaml = `limits:\n  maxHeld: ${held + 100_000}\n  maxKeys: ${held + 1_000_000}\n`;
  const c = await leaseholdFactory.start({ ...start, extraYaml });
  const untrack = track(c);
  try {
    const throughput = (label: string) =>
      runLoop(c, { ...uncontended.spec(scale, 16, round), workload: 'held-scale', opName: `cycles (${label})` });
    const throughputNone = { ...(await throughput('0 held')), extra: { held: 0 } };
    const fm = await measured(c, () => fill(c, held));
    const f = fm.result;
    const rssServing = await sampleRss(c, 1000);
    const memServing = await Promise.all(c.members.map((_, i) => memoryOf(c, i)));
    const throughputHeld = { ...(await throughput(`${held} held`)), extra: { held } };
    const sample = await sampleHolders(c, held);
    const backupFile = join(c.cluster.dir, 'backup.lhb');
    const backup = await saveUnderLoad(c, { ...uncontended.spec(scale, 16, round), workload: 'held-scale' }, throughputHeld, backupFile);
    const logs = new Map(c.members.map((id) => [id, compactionsInLog(c.cluster.logOf(id))]));
    const disk = new Map(c.members.map((id) => [id, dirBytes(join(c.cluster.dir, id))]));
    for (let i = 0; i < c.members.length; i++) await c.kill(i);
    const t0 = performance.now();
    for (let i = 0; i < c.members.length; i++) await c.restart(i);
    await c.waitAllServing(120_000);
    const restartToServingMs = performance.now() - t0;
    const rssAfter = await sampleRss(c, 1000);
    const memAfter = await Promise.all(c.members.map((_, i) => memoryOf(c, i)));
    // Held locks survive the restart (ttl 1 h): a quick proof the state came back, not just the process.
    const [probe] = await openSessions(c, 1);
    try {
      if (await probe!.acquire('held-0', { waitMs: 0, ttlMs: 1000 })) throw new Error('held-scale: held-0 was free after the restart');
    } finally {
      probe!.close();
    }
    const restored = await restoreFromBackup(c, backupFile, held, sample);
    return {
      held,
      fillSeconds: f.seconds,
      fillPerSec: held / f.seconds,
      fillErrors: f.errors,
      fillRetriedHeld: f.alreadyHeld,
      fillElections: fm.elections,
      fillRoleChanges: fm.roleChanges,
      fillCpuSeconds: fm.nodes.map((n) => n.cpuSeconds),
      fillLoopStallMaxMs: fm.nodes.map((n) => n.loopLagMaxMs ?? NaN),
      restartToServingMs,
      nodes: c.members.map((id, i) => ({
        node: id,
        rssServingMb: rssServing.get(id) ?? NaN,
        rssAfterRestartMb: rssAfter.get(id) ?? NaN,
        memoryServing: memServing[i]!,
        memoryAfterRestart: memAfter[i]!,
        compactions: logs.get(id)!.compactions,
        followerSnapshots: logs.get(id)!.followerSnapshots,
        lastSnapshotBytes: logs.get(id)!.lastSnapshotBytes,
        dataDirBytes: disk.get(id)!,
      })),
      throughputNone,
      throughputHeld,
      backup,
      restored,
      heldRatio: throughputHeld.opsPerSec / throughputNone.opsPerSec,
    };
  } finally {
    untrack();
    await c.stop();
  }
}
