// `npm run bench -- [--compare etcd] ...`: leasehold (and etcd 3.4 through its own v3lock service) on fresh
// 3-member clusters of real processes on this machine, the same client loop for both, the systems
// alternated A B A B per workload. Prints a table per workload and writes bench.json and bench.svg to --out.
// The workloads and what they mean: README "Benchmarks"; the code: scripts/bench/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALL_WORKLOADS, makeOutDir, parseBenchArgs, type BenchArgs, type WorkloadName } from './bench/args.js';
import { ETCD_INSTALL_HINT, etcdInstalled, etcdTxnFactory, etcdV3LockFactory } from './bench/etcd-system.js';
import { runFailover, type FailoverResult } from './bench/failover.js';
import { heldSizes, runHeldScale, type HeldScaleResult } from './bench/held-scale.js';
import { leaseholdFactory } from './bench/leasehold-system.js';
import { runLoop } from './bench/loop.js';
import { renewDescription, runRenew } from './bench/renew.js';
import { failoverTable, heldScaleTable } from './bench/report-extra.js';
import { idleTable, runIdle, type IdleResult } from './bench/idle.js';
import { ratios, workloadTable } from './bench/report.js';
import { startBackgroundJob, stopAll, stopBackgroundJob, withCluster } from './bench/run-state.js';
import { chartSvg } from './bench/svg.js';
import { floorsTable, runTrace, waterfallTable, type TraceResult } from './bench/trace.js';
import type { SystemFactory } from './bench/system.js';
import type { RunRow } from './bench/types.js';
import { BLOCKING_KEYS, LOOP_WORKLOADS, type BenchScale } from './bench/workloads.js';

interface BenchResults {
  startedAt: string;
  finishedAt?: string;
  args: BenchArgs;
  rows: RunRow[];
  ratios: ReturnType<typeof ratios>;
  heldScale: HeldScaleResult[];
  failover: FailoverResult[];
  idle: IdleResult[];
  /** Runs that failed (a cluster that did not start, a fill that did not finish ...); the others went on. */
  failures: { workload: string; system: string; round: number; error: string }[];
  trace?: TraceResult;
  /** Set when the run was cut short (SIGINT, --max-minutes, an error). */
  aborted?: string;
}

function systemsFor(args: BenchArgs, opts: { tryLockOk: boolean; etcd: boolean }): SystemFactory[] {
  const out: SystemFactory[] = [leaseholdFactory];
  if (args.compareEtcd && opts.etcd) out.push(etcdV3LockFactory);
  if (args.compareEtcd && opts.etcd && opts.tryLockOk && args.etcdTxn) out.push(etcdTxnFactory);
  return out;
}

function writeResults(args: BenchArgs, results: BenchResults): void {
  results.ratios = ratios(results.rows);
  writeFileSync(join(args.outDir, 'bench.json'), JSON.stringify(results, null, 2));
  const sweep = results.rows.filter((r) => r.workload === 'blocking');
  if (sweep.length) writeFileSync(join(args.outDir, 'bench.svg'), chartSvg(`blocking acquire + release, ${BLOCKING_KEYS} keys`, sweep));
}

/** One run of a workload on one system; a failure is recorded and printed, and the benchmark goes on (one
 *  cluster that does not come up on a busy machine must not throw away an hour of results). */
async function attempt(
  results: BenchResults,
  what: { workload: string; system: string; round: number },
  body: () => Promise<void>,
): Promise<void> {
  try {
    await body();
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    console.error(`!! ${what.workload} round ${what.round} on ${what.system} failed: ${error}`);
    results.failures.push({ ...what, error });
  }
}

async function runWorkload(name: WorkloadName, args: BenchArgs, scale: BenchScale, results: BenchResults): Promise<string> {
  const base = {
    keep: args.keep,
    ...(args.profileDir ? { profileDir: args.profileDir } : {}),
    ...(args.nodeFlags.length > 0 ? { nodeArgs: args.nodeFlags } : {}),
  };
  const start = (round: number) => ({ ...base, label: `${name} round ${round}` });
  if (name === 'held-scale') {
    for (const held of heldSizes(scale, args.held)) {
      console.log(`-- held-scale: ${held.toLocaleString('en-US')} held`);
      await attempt(results, { workload: `held-scale ${held}`, system: 'leasehold', round: 1 }, async () => {
        results.heldScale.push(await runHeldScale(held, scale, 1, { ...base, label: `held-scale ${held}` }));
      });
    }
    return heldScaleTable(results.heldScale);
  }
  if (name === 'idle') {
    for (let round = 1; round <= args.rounds; round++) {
      for (const f of systemsFor(args, { tryLockOk: false, etcd: true })) {
        console.log(`-- idle round ${round}: ${f.system}`);
        await attempt(results, { workload: name, system: f.system, round }, async () => {
          results.idle.push(await withCluster(f, { ...start(round), defaultLoopLag: true }, (c) => runIdle(c, args.seconds, round)));
        });
      }
    }
    return idleTable(results.idle);
  }
  if (name === 'failover') {
    for (let round = 1; round <= args.rounds; round++) {
      for (const f of systemsFor(args, { tryLockOk: false, etcd: true })) {
        console.log(`-- failover round ${round}: ${f.system}, ${args.kills} kills`);
        await attempt(results, { workload: name, system: f.system, round }, async () => {
          results.failover.push(await withCluster(f, start(round), (c) => runFailover(c, args.kills, round)));
        });
      }
    }
    return failoverTable(results.failover);
  }
  if (name === 'renew') {
    for (let round = 1; round <= args.rounds; round++) {
      for (const f of systemsFor(args, { tryLockOk: false, etcd: true })) {
        console.log(`-- renew round ${round}: ${f.system}`);
        await attempt(results, { workload: name, system: f.system, round }, async () => {
          results.rows.push(await withCluster(f, start(round), (c) => runRenew(c, scale, round)));
        });
        console.log(`-- renew (sessions) round ${round}: ${f.system}`);
        await attempt(results, { workload: `${name} (sessions)`, system: f.system, round }, async () => {
          results.rows.push(await withCluster(f, start(round), (c) => runRenew(c, scale, round, true)));
        });
      }
    }
    return workloadTable('renew', renewDescription, results.rows);
  }
  const w = LOOP_WORKLOADS.find((x) => x.name === name)!;
  for (let round = 1; round <= args.rounds; round++) {
    for (const f of systemsFor(args, { tryLockOk: w.tryLockOk, etcd: true })) {
      await attempt(results, { workload: name, system: f.system, round }, () =>
        withCluster(f, start(round), async (c) => {
          for (const clients of w.clientCounts(scale)) {
            for (const pin of w.pins ?? ['spread' as const]) {
              console.log(`-- ${name} round ${round}: ${f.system}, ${clients} clients${pin === 'spread' ? '' : ` on the ${pin}`}`);
              results.rows.push(await runLoop(c, { ...w.spec(scale, clients, round), pin }));
            }
          }
        }),
      );
    }
  }
  return workloadTable(name, w.description, results.rows);
}

async function main(): Promise<number> {
  let args: BenchArgs;
  try {
    args = parseBenchArgs(process.argv.slice(2));
  } catch (err) {
    console.error((err as Error).message);
    return 64;
  }
  if (args.compareEtcd && !etcdInstalled()) {
    console.error(ETCD_INSTALL_HINT);
    return 3;
  }
  args.outDir = makeOutDir(args.outDir);
  if (args.profileDir) mkdirSync(args.profileDir, { recursive: true });
  if (args.backgroundJob) console.log(`bench: a niced busy loop runs beside the clusters (pid ${startBackgroundJob()})`);
  const scale: BenchScale = { seconds: args.seconds, clients: args.clients, quick: args.quick };
  const results: BenchResults = {
    startedAt: new Date().toISOString(),
    args,
    rows: [],
    ratios: [],
    heldScale: [],
    failover: [],
    idle: [],
    failures: [],
  };
  const abort = async (why: string, code: number) => {
    console.error(`bench: ${why}: stopping every cluster`);
    results.aborted = why;
    await stopAll();
    try {
      writeResults(args, results);
      console.error(`bench: partial results in ${args.outDir}`);
    } catch (err) {
      console.error(`bench: could not write the partial results: ${String(err)}`);
    }
    process.exit(code);
  };
  process.once('SIGINT', () => void abort('interrupted (SIGINT)', 130));
  process.once('SIGTERM', () => void abort('terminated (SIGTERM)', 143));
  const watchdog = setTimeout(() => void abort(`still running after --max-minutes ${args.maxMinutes}`, 2), args.maxMinutes * 60_000);

  console.log(
    `bench: ${args.workloads.join(', ')}; ${args.seconds} s per run, ${args.rounds} round(s), systems: leasehold${args.compareEtcd ? ` vs etcd-v3lock${args.etcdTxn ? ' (+ etcd-txn where no one waits)' : ''}` : ''}; out: ${args.outDir}`,
  );
  const tables: string[] = [];
  try {
    if (args.trace) {
      console.log(`-- trace: floors, then ${args.traceCalls} calls of each kind one at a time, via the leader and via a follower`);
      const t = await runTrace(args.traceCalls, { keep: args.keep });
      results.trace = t;
      const table = [floorsTable(t.floors), ...t.waterfalls.map((w) => waterfallTable(w, t.floors))].join('\n\n');
      tables.push(table);
      console.log(`\n${table}\n`);
      writeResults(args, results);
    }
    for (const name of ALL_WORKLOADS.filter((w) => args.workloads.includes(w))) {
      const table = await runWorkload(name, args, scale, results);
      tables.push(table);
      console.log(`\n${table}\n`);
      writeResults(args, results);
    }
  } catch (err) {
    clearTimeout(watchdog);
    console.error(err);
    await abort(`failed: ${(err as Error).message}`, 1);
  }
  clearTimeout(watchdog);
  stopBackgroundJob();
  results.finishedAt = new Date().toISOString();
  writeResults(args, results);
  const failed = results.failures.map((f) => `!! ${f.workload} round ${f.round} on ${f.system}: ${f.error}`).join('\n');
  console.log(
    `\n==== all tables ====\n\n${tables.join('\n\n')}\n\n${failed ? `${failed}\n\n` : ''}bench.json and bench.svg in ${args.outDir}`,
  );
  return results.failures.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
