// held-scale's backup phase (issue 36's goal "snapshot save of a 1M-lock node while a 16-client load runs"):
// `leasehold snapshot save` streams a follower's applied state while 16 clients cycle fresh keys; the row is
// compared with the same load without the save (its p99, elections). Later, once the cluster is done with, every
// data dir is rebuilt from the file with `snapshot restore` and the restored cluster must serve a sample of the
// held keys with the owner and token they had.
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { GetResponse } from '../../src/wire/lock.js';
import { runCli } from '../../test/integration/harness.js';
import type { LeaseholdCluster } from './leasehold-system.js';
import { runLoop, type LoopSpec } from './loop.js';
import type { RunRow } from './types.js';

/** How many held keys are probed before and after the restore (spread evenly over the fill's keys). */
const SAMPLE_KEYS = 2000;
const PROBES_IN_FLIGHT = 50;
/** The save starts this long after the load's clock, so the row has a stretch without it as well. */
const SAVE_AFTER_MS = 1000;

export interface BackupFacts {
  index: number;
  keys: number;
  holds: number;
  sessions: number;
  size_bytes: number;
}

export interface BackupUnderLoad {
  savedFrom: string;
  saveMs: number;
  facts: BackupFacts;
  /** 16 clients cycling fresh keys while the save ran. */
  load: RunRow;
  /** load p99 / p99 of the same load without the save, just before. */
  p99Ratio: number;
}

export interface RestoredFromBackup {
  /** The three `snapshot restore` runs, one after another. */
  restoreMs: number;
  /** From starting the three restored nodes to every one SERVING. */
  startToServingMs: number;
  sampled: number;
}

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A `snapshot` command may take minutes at a million locks. */
const CLI_TIMEOUT_MS = 10 * 60_000;
const cli = (args: string[], cwd: string): Promise<CliRun> => runCli(args, cwd, CLI_TIMEOUT_MS);

function ok(what: string, r: CliRun): CliRun {
  if (r.code !== 0) throw new Error(`held-scale: ${what} exited ${String(r.code)}: ${r.stderr.trim()}`);
  return r;
}

/** Owner and token of every sampled key, as the cluster serves them now ('' = not held). */
export async function sampleHolders(c: LeaseholdCluster, held: number): Promise<Map<string, string>> {
  const { leader } = await c.cluster.waitForLeader();
  const step = Math.max(1, Math.floor(held / SAMPLE_KEYS));
  const keys: string[] = [];
  for (let i = 0; i < held; i += step) keys.push(`held-${i}`);
  const out = new Map<string, string>();
  for (let at = 0; at < keys.length; at += PROBES_IN_FLIGHT) {
    await Promise.all(
      keys.slice(at, at + PROBES_IN_FLIGHT).map(async (key) => {
        const g = await c.cluster.raw<GetResponse>(leader, 'Get', { key }, 10_000);
        out.set(key, g.held ? `${g.owner}#${String(g.token)}` : '');
      }),
    );
  }
  return out;
}

export async function saveUnderLoad(c: LeaseholdCluster, spec: LoopSpec, without: RunRow, file: string): Promise<BackupUnderLoad> {
  const leader = await c.leader();
  const from = c.members[(leader + 1) % c.members.length]!;
  let saveMs = NaN;
  let saved: CliRun | undefined;
  const load = await runLoop(c, {
    ...spec,
    opName: 'cycles (snapshot save beside)',
    alongside: async () => {
      await new Promise((r) => setTimeout(r, SAVE_AFTER_MS));
      const t0 = performance.now();
      saved = ok('snapshot save', await cli(['snapshot', 'save', file, '--endpoints', c.cluster.endpoint(from), '--json'], c.cluster.dir));
      saveMs = performance.now() - t0;
    },
  });
  const facts = JSON.parse(saved!.stdout) as BackupFacts;
  return { savedFrom: from, saveMs, facts, load, p99Ratio: load.latency.p99Ms / without.latency.p99Ms };
}

/** Every node stopped, its data dir put aside, rebuilt from `file`, started; the sample must match. */
export async function restoreFromBackup(
  c: LeaseholdCluster,
  file: string,
  held: number,
  before: Map<string, string>,
): Promise<RestoredFromBackup> {
  for (let i = 0; i < c.members.length; i++) await c.kill(i);
  for (const id of c.members) renameSync(join(c.cluster.dir, id), join(c.cluster.dir, `${id}.before-restore`));
  const t0 = performance.now();
  for (const id of c.members)
    ok(
      `snapshot restore --id ${id}`,
      await cli(['snapshot', 'restore', file, '--config', c.cluster.configPath, '--id', id], c.cluster.dir),
    );
  const restoreMs = performance.now() - t0;
  const t1 = performance.now();
  for (let i = 0; i < c.members.length; i++) await c.restart(i);
  await c.waitAllServing(120_000);
  const startToServingMs = performance.now() - t1;
  const after = await sampleHolders(c, held);
  const wrong = [...before].filter(([key, holder]) => holder === '' || after.get(key) !== holder);
  if (wrong.length > 0)
    throw new Error(
      `held-scale: ${wrong.length} of ${before.size} sampled keys differ after the restore, e.g. ${wrong[0]![0]}: ` +
        `${wrong[0]![1] || 'free'} before, ${after.get(wrong[0]![0]) || 'free'} after`,
    );
  return { restoreMs, startToServingMs, sampled: before.size };
}
