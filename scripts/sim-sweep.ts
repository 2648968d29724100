// Sweep thousands of simulation seeds on every core and report the failing ones.
//
//   node scripts/sim-sweep.mjs                          10,000 seeds from seed 1, 2,000 events each
//   node scripts/sim-sweep.mjs --seeds 50000 --from 1000000 --events 4000 --workers 2
//   node scripts/sim-sweep.mjs --mutant "leader commits"   measure how fast a planted bug is caught
//   node scripts/sim-sweep.mjs --core /tmp/scratch/raft.ts  sweep a scratch copy of the core
//   node scripts/sim-sweep.mjs --nodes 5 --no-liveness     force 5-node clusters / safety only
//
// scripts/sim-sweep.mjs compiles this file (and what it imports: test/sim, src/raft/core) with tsc into
// a temporary directory and runs it with node; this file then fans the seeds out over worker threads
// (seeds interleaved so slow seeds spread evenly) and prints failures grouped by invariant, with the
// full report of the first failure of each kind. Replay any of them with SEED=<n> npm run test:sim.
// Exit code 1 when any seed failed (when sweeping a mutant: when it was never caught).
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { cpus } from 'node:os';
import { defaultCore, runSimulation, SimViolation, type CoreModule } from '../test/sim/cluster.js';
import { MUTANTS } from '../test/sim/mutants.js';

interface SweepArgs {
  from: number;
  seeds: number;
  events: number;
  workers: number;
  mutant: string | null;
  core: string | null;
  nodes: number | null;
  liveness: boolean;
}

interface Failure {
  seed: number;
  invariant: string;
  message: string;
}

interface WorkerDone {
  kind: 'done';
  events: number;
  ms: number;
  seeds: number;
  failures: Failure[];
}

interface WorkerProgress {
  kind: 'progress';
  seeds: number;
  failed: number;
}

function parseArgs(argv: string[]): SweepArgs {
  const a: SweepArgs = {
    from: 1,
    seeds: 10_000,
    events: 2000,
    workers: Math.max(1, Math.min(2, cpus().length)),
    mutant: null,
    core: null,
    nodes: null,
    liveness: true,
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    const v = () => {
      const x = argv[++i];
      if (x === undefined) throw new Error(`${k} needs a value`);
      return x;
    };
    if (k === '--from') a.from = Number(v());
    else if (k === '--seeds') a.seeds = Number(v());
    else if (k === '--events') a.events = Number(v());
    else if (k === '--workers') a.workers = Number(v());
    else if (k === '--mutant') a.mutant = v();
    else if (k === '--core') a.core = v();
    else if (k === '--nodes') a.nodes = Number(v());
    else if (k === '--no-liveness') a.liveness = false;
    else throw new Error(`unknown option ${k} (see the comment at the top of scripts/sim-sweep.ts)`);
  }
  return a;
}

async function loadCore(args: SweepArgs): Promise<CoreModule> {
  let core: CoreModule = args.core ? ((await import(args.core)) as CoreModule) : defaultCore;
  if (args.mutant) {
    const m = MUTANTS.find((x) => x.name.toLowerCase().includes(args.mutant!.toLowerCase()));
    if (!m) throw new Error(`no mutant matches "${args.mutant}"; known: ${MUTANTS.map((x) => x.name).join('; ')}`);
    core = m.core(core);
  }
  return core;
}

async function runSlice(args: SweepArgs, worker: number): Promise<void> {
  const core = await loadCore(args);
  const mutant = args.mutant ? MUTANTS.find((x) => x.name.toLowerCase().includes(args.mutant!.toLowerCase())) : undefined;
  const failures: Failure[] = [];
  let events = 0;
  let seeds = 0;
  const t0 = performance.now();
  for (let s = args.from + worker; s < args.from + args.seeds; s += args.workers) {
    seeds++;
    try {
      const r = await runSimulation({
        seed: s,
        events: mutant?.events ?? args.events,
        core,
        workload: mutant?.workload,
        profile: { ...(mutant?.profile ?? {}), ...(args.nodes ? { nodeCount: args.nodes } : {}) },
        liveness: args.liveness,
      });
      events += r.stats.events;
    } catch (e) {
      if (e instanceof SimViolation) failures.push({ seed: s, invariant: e.invariant, message: e.message });
      else failures.push({ seed: s, invariant: 'harness-error', message: (e as Error).stack ?? String(e) });
    }
    if (seeds % 250 === 0) parentPort!.postMessage({ kind: 'progress', seeds: 250, failed: failures.length } satisfies WorkerProgress);
  }
  parentPort!.postMessage({ kind: 'progress', seeds: seeds % 250, failed: failures.length } satisfies WorkerProgress);
  parentPort!.postMessage({ kind: 'done', events, ms: performance.now() - t0, seeds, failures } satisfies WorkerDone);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.core) args.core = new URL(args.core, `file://${process.cwd()}/`).href;
  console.log(
    `sweep: seeds ${args.from}..${args.from + args.seeds - 1}, ${args.events} events each, ${args.workers} workers${args.mutant ? `, mutant "${args.mutant}"` : ''}${args.core ? `, core ${args.core}` : ''}`,
  );
  const t0 = performance.now();
  let done = 0;
  let failedSoFar = 0;
  const perWorkerFailed = new Array<number>(args.workers).fill(0);
  const results = await Promise.all(
    Array.from(
      { length: args.workers },
      (_, w) =>
        new Promise<WorkerDone>((resolve, reject) => {
          const worker = new Worker(new URL(import.meta.url), { workerData: { args, worker: w } });
          worker.on('message', (m: WorkerDone | WorkerProgress) => {
            if (m.kind === 'progress') {
              done += m.seeds;
              perWorkerFailed[w] = m.failed;
              failedSoFar = perWorkerFailed.reduce((x, y) => x + y, 0);
              if (m.seeds > 0 && done % 1000 < 250) {
                console.log(`  ${done}/${args.seeds} seeds, ${failedSoFar} failed, ${((performance.now() - t0) / 1000).toFixed(0)}s`);
              }
            } else resolve(m);
          });
          worker.on('error', reject);
        }),
    ),
  );
  const wallS = (performance.now() - t0) / 1000;
  const events = results.reduce((s, r) => s + r.events, 0);
  const failures = results.flatMap((r) => r.failures).sort((a, b) => a.seed - b.seed);
  console.log(
    `\n${args.seeds} seeds in ${wallS.toFixed(1)}s wall: ${events} events (passing seeds) = ${(events / wallS).toFixed(0)} events/s overall`,
  );
  // Group by invariant and the shape of the detail line (numbers and node ids blanked), so one bug
  // shows up once however many seeds hit it.
  const byInvariant = new Map<string, Failure[]>();
  for (const f of failures) {
    const detail = (f.message.split('\n')[1] ?? '')
      .trim()
      .replace(/\bn\d+\b/g, 'n?')
      .replace(/\d+/g, '#')
      .slice(0, 100);
    const key = `${f.invariant} — ${detail}`;
    (byInvariant.get(key) ?? byInvariant.set(key, []).get(key)!).push(f);
  }
  for (const [inv, fs] of byInvariant) {
    console.log(
      `\n=== ${inv}: ${fs.length} seed(s): ${fs
        .slice(0, 40)
        .map((f) => f.seed)
        .join(' ')}${fs.length > 40 ? ' ...' : ''}`,
    );
    console.log(fs[0]!.message);
  }
  if (args.mutant) {
    const safety = failures.filter((f) => f.invariant !== 'liveness');
    console.log(
      `\nmutant "${args.mutant}": caught by a safety invariant in ${safety.length}/${args.seeds} seeds${safety.length ? `, first at seed ${safety[0]!.seed}` : ''}`,
    );
    process.exitCode = safety.length > 0 ? 0 : 1;
  } else {
    console.log(failures.length === 0 ? '\nno failures' : `\n${failures.length} failing seed(s)`);
    process.exitCode = failures.length === 0 ? 0 : 1;
  }
}

if (isMainThread) {
  main().catch((e) => {
    console.error(e);
    process.exitCode = 2;
  });
} else {
  const { args, worker } = workerData as { args: SweepArgs; worker: number };
  runSlice(args, worker).catch((e) => {
    throw e;
  });
}
