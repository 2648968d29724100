// Side-by-side lock benchmark: leasehold vs etcd 3.4 on the same machine, same cluster shape (3 members on
// loopback, each with its own data dir, fsync on), same client concurrency.
//
//   npm run build && npm run build:test && node build/scripts/bench.js [--seconds 10] [--workers 32] [--keys 0] [--no-etcd]
//
// Workload per worker, in a loop until the time is up: lock a key, then unlock it (one "cycle").
//   --keys 0  (default) uncontended: every cycle uses a fresh key.
//   --keys N  contended: workers pick among N hot keys; a busy key is simply refused (no waiting) and counts
//             as a refused attempt, so both systems do the same "try-lock" work.
// leasehold: Acquire (one RPC) + Release (one RPC), through the public gRPC API with request ids.
// etcd: the cheapest correct equivalent — each worker holds ONE session lease (granted once, as
// etcd's concurrency.Session does), lock = Txn(create_revision(key) == 0 -> Put(key, lease)),
// unlock = Delete(key). That is also one RPC each way, so the comparison favours etcd if anything
// (no per-lock lease, no fencing token bookkeeping beyond the revision).
// Reported: cycles/s, and p50/p99 latency of the lock step. Figures go in closing notes, not in tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { EndpointPool } from '../src/client/rpc.js';
import type { AcquireResponse, ReleaseResponse } from '../src/transport/proto.js';
import { TestCluster, freePorts, waitFor } from '../test/integration/harness.js';

interface Args {
  seconds: number;
  workers: number;
  keys: number;
  etcd: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { seconds: 10, workers: 32, keys: 0, etcd: true };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--seconds') a.seconds = Number(argv[++i]);
    else if (k === '--workers') a.workers = Number(argv[++i]);
    else if (k === '--keys') a.keys = Number(argv[++i]);
    else if (k === '--no-etcd') a.etcd = false;
    else throw new Error(`unknown argument ${k}`);
  }
  return a;
}

interface Result {
  system: string;
  cycles: number;
  refused: number;
  errors: number;
  seconds: number;
  lockLatenciesMs: number[];
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function report(r: Result): string {
  const lat = [...r.lockLatenciesMs].sort((x, y) => x - y);
  return `${r.system.padEnd(10)} ${(r.cycles / r.seconds).toFixed(0).padStart(7)} cycles/s  lock p50 ${pct(lat, 50).toFixed(2)} ms  p99 ${pct(lat, 99).toFixed(2)} ms  (cycles ${r.cycles}, refused ${r.refused}, errors ${r.errors})`;
}

async function runWorkers(args: Args, system: string, cycle: (worker: number, n: number) => Promise<{ lockMs: number; refused: boolean }>): Promise<Result> {
  const result: Result = { system, cycles: 0, refused: 0, errors: 0, seconds: args.seconds, lockLatenciesMs: [] };
  const end = performance.now() + args.seconds * 1000;
  await Promise.all(
    Array.from({ length: args.workers }, async (_, w) => {
      for (let n = 0; performance.now() < end; n++) {
        try {
          const r = await cycle(w, n);
          result.lockLatenciesMs.push(r.lockMs);
          if (r.refused) result.refused++;
          else result.cycles++;
        } catch {
          result.errors++;
        }
      }
    }),
  );
  return result;
}

function keyFor(args: Args, w: number, n: number): string {
  return args.keys > 0 ? `hot-${(w * 7 + n) % args.keys}` : `bench-${w}-${n}`;
}

async function benchLeasehold(args: Args): Promise<Result> {
  const c = await TestCluster.create({ extraYaml: '' });
  try {
    c.startAll();
    await c.waitForLeader();
    const pool = c.pool();
    // Warm up channels and the leader's term start.
    await pool.call<AcquireResponse>('Acquire', { key: 'warm', owner: 'w', ttl_ms: '1000', request_id: 'warm' }, Date.now() + 10_000);
    return await runWorkers(args, 'leasehold', async (w, n) => {
      const key = keyFor(args, w, n);
      const owner = `worker-${w}`;
      const t0 = performance.now();
      const a = await pool.call<AcquireResponse>('Acquire', { key, owner, ttl_ms: '10000', request_id: `a-${w}-${n}` }, Date.now() + 5000);
      const lockMs = performance.now() - t0;
      if (!a.acquired) return { lockMs, refused: true };
      const r = await pool.call<ReleaseResponse>('Release', { key, owner, token: a.token, request_id: `r-${w}-${n}` }, Date.now() + 5000);
      if (!r.released) throw new Error(`release refused: ${r.reason}`);
      return { lockMs, refused: false };
    });
  } finally {
    await c.stop();
  }
}

async function benchEtcd(args: Args): Promise<Result | null> {
  if (!existsSync('/usr/bin/etcd')) {
    console.log('etcd: /usr/bin/etcd not found (apt-get install etcd-server etcd-client) — skipped');
    return null;
  }
  const { Etcd3 } = await import('etcd3');
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-etcd-'));
  const ports = await freePorts(6);
  const names = ['e1', 'e2', 'e3'];
  const peer = (i: number) => `http://127.0.0.1:${ports[3 + i]}`;
  const clientUrl = (i: number) => `http://127.0.0.1:${ports[i]}`;
  const initial = names.map((n, i) => `${n}=${peer(i)}`).join(',');
  const procs: ChildProcess[] = names.map((name, i) =>
    spawn('/usr/bin/etcd', [
      '--name', name,
      '--data-dir', join(dir, name),
      '--listen-client-urls', clientUrl(i),
      '--advertise-client-urls', clientUrl(i),
      '--listen-peer-urls', peer(i),
      '--initial-advertise-peer-urls', peer(i),
      '--initial-cluster', initial,
      '--initial-cluster-state', 'new',
      '--initial-cluster-token', 'bench',
      '--logger', 'zap',
      '--log-level', 'error',
    ], { stdio: 'ignore' }),
  );
  const client = new Etcd3({ hosts: names.map((_, i) => clientUrl(i)) });
  try {
    await waitFor('etcd to elect a leader', async () => {
      await client.put('warm').value('1');
      return true;
    }, 30_000, 200);
    // One session lease per worker, as etcd's concurrency.Session does.
    const leases = await Promise.all(Array.from({ length: args.workers }, () => client.lease(10, { autoKeepAlive: true })));
    const leaseIds = await Promise.all(leases.map((l) => l.grant()));
    return await runWorkers(args, 'etcd 3.4', async (w, n) => {
      const key = keyFor(args, w, n);
      const t0 = performance.now();
      const txn = await client
        .if(key, 'Create', '==', 0)
        .then(client.put(key).value(`worker-${w}`).lease(leaseIds[w]!))
        .commit();
      const lockMs = performance.now() - t0;
      if (!txn.succeeded) return { lockMs, refused: true };
      await client.delete().key(key);
      return { lockMs, refused: false };
    });
  } finally {
    client.close();
    for (const p of procs) p.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  console.log(`bench: ${args.workers} workers, ${args.seconds} s, ${args.keys > 0 ? `${args.keys} hot keys (try-lock)` : 'a fresh key per cycle'}`);
  const ours = await benchLeasehold(args);
  console.log(report(ours));
  if (args.etcd) {
    const theirs = await benchEtcd(args);
    if (theirs) {
      console.log(report(theirs));
      const ratio = ours.cycles / ours.seconds / (theirs.cycles / theirs.seconds);
      console.log(`leasehold / etcd throughput ratio: ${ratio.toFixed(2)}x`);
    }
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
