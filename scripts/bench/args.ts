// Command line of `npm run bench -- ...`.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ALL_WORKLOADS = [
  'idle',
  'uncontended',
  'blocking',
  'one-client',
  'one-client-unary',
  'hot-key',
  'renew',
  'held-scale',
  'failover',
] as const;
export type WorkloadName = (typeof ALL_WORKLOADS)[number];

export interface BenchArgs {
  compareEtcd: boolean;
  /** Also the etcd Txn/Delete try-lock row where it applies (uncontended, one-client). */
  etcdTxn: boolean;
  workloads: WorkloadName[];
  seconds: number;
  clients: number[];
  rounds: number;
  outDir: string;
  quick: boolean;
  keep: boolean;
  held?: number[];
  kills: number;
  /** --node-flag FLAG (repeatable): passed to node on every leasehold member, e.g. a V8 flag NODE_OPTIONS
   *  refuses (`--heap-growing-percent=50`), to measure what it does beside the same run's other rows. */
  nodeFlags: string[];
  /** --profile DIR: leasehold members write `node --cpu-prof` profiles there (pids.txt maps them). */
  profileDir?: string;
  /** One niced busy-loop process beside the clusters for the whole run (a shared machine). */
  backgroundJob: boolean;
  /** The whole run is stopped (clusters killed, partial results written) after this long. */
  maxMinutes: number;
  /** --trace: the latency waterfall and the floors (trace.ts); alone unless --workloads is given too. */
  trace: boolean;
  /** Calls of each kind the waterfall times, per serving node (--trace-calls). */
  traceCalls: number;
}

export const USAGE = `usage: npm run bench -- [--compare etcd] [--workloads ${ALL_WORKLOADS.join(',')}]
       [--seconds S] [--clients 1,4,16,64] [--rounds 2] [--out DIR] [--quick] [--keep]
       [--held 100000,1000000] [--kills 10] [--no-txn] [--max-minutes 150] [--profile DIR]
       [--background-job] [--trace [--trace-calls 300]] [--node-flag FLAG]...`;

function list(v: string | undefined, flag: string): number[] {
  const xs = (v ?? '').split(',').map((x) => Number(x.trim()));
  if (xs.length === 0 || xs.some((x) => !Number.isSafeInteger(x) || x <= 0))
    throw new Error(`${flag}: give positive integers separated by commas (got ${v ?? 'nothing'})`);
  return xs;
}

function positive(v: string | undefined, flag: string): number {
  const n = Number(v);
  if (!(n > 0) || !Number.isFinite(n)) throw new Error(`${flag}: give a positive number (got ${v ?? 'nothing'})`);
  return n;
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const quick = argv.includes('--quick');
  const a: BenchArgs = {
    compareEtcd: false,
    etcdTxn: true,
    workloads: [...ALL_WORKLOADS],
    seconds: quick ? 3 : 10,
    clients: quick ? [4, 16] : [1, 4, 16, 64],
    rounds: quick ? 1 : 2,
    outDir: '',
    quick,
    keep: false,
    kills: quick ? 3 : 10,
    backgroundJob: false,
    maxMinutes: 150,
    trace: false,
    traceCalls: 300,
    nodeFlags: [],
  };
  let workloadsGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    const v = () => argv[++i];
    if (k === '--quick') continue;
    else if (k === '--compare') {
      const what = v();
      if (what !== 'etcd') throw new Error(`--compare: only "etcd" is supported (got ${what ?? 'nothing'})`);
      a.compareEtcd = true;
    } else if (k === '--workloads') {
      const names = (v() ?? '').split(',').map((x) => x.trim());
      const bad = names.filter((x) => !(ALL_WORKLOADS as readonly string[]).includes(x));
      if (bad.length || names.length === 0)
        throw new Error(`--workloads: unknown ${bad.join(',') || '(empty)'}; known: ${ALL_WORKLOADS.join(',')}`);
      a.workloads = names as WorkloadName[];
      workloadsGiven = true;
    } else if (k === '--seconds') a.seconds = positive(v(), k);
    else if (k === '--clients') a.clients = list(v(), k);
    else if (k === '--rounds') a.rounds = list(v(), k)[0]!;
    else if (k === '--out') a.outDir = v() ?? '';
    else if (k === '--keep') a.keep = true;
    else if (k === '--held') a.held = list(v(), k);
    else if (k === '--kills') a.kills = list(v(), k)[0]!;
    else if (k === '--no-txn') a.etcdTxn = false;
    else if (k === '--background-job') a.backgroundJob = true;
    else if (k === '--profile') a.profileDir = resolve(v() ?? '');
    else if (k === '--max-minutes') a.maxMinutes = positive(v(), k);
    else if (k === '--trace') a.trace = true;
    else if (k === '--trace-calls') a.traceCalls = list(v(), k)[0]!;
    else if (k === '--node-flag') {
      const flag = v();
      if (flag === undefined || !flag.startsWith('--'))
        throw new Error(`--node-flag: give a node flag such as --heap-growing-percent=50 (got ${flag ?? 'nothing'})`);
      a.nodeFlags.push(flag);
    } else if (k === '--help' || k === '-h') throw new Error(USAGE);
    else throw new Error(`unknown argument ${k}\n${USAGE}`);
  }
  if (a.trace && !workloadsGiven) a.workloads = [];
  return a;
}

/** The --out dir, created; a fresh one under the OS temp dir when none was given. */
export function makeOutDir(outDir: string): string {
  if (!outDir) return mkdtempSync(join(tmpdir(), 'leasehold-bench-out-'));
  mkdirSync(outDir, { recursive: true });
  return outDir;
}
