// The restart of a kept 3-node cluster, timed phase by phase (issue 36: restart of all three to SERVING).
// held-memory fills a cluster for minutes before it restarts it once; this restarts the data dirs a
// `held-memory --keep` run left, as often as asked, each run on a fresh copy (a restart writes to its data
// dir: a new term, the store's batches), all three nodes started at once as held-memory does. Per node it
// prints, in ms from its spawn: the log loaded and the store restored (the node's own figures), listening,
// its first campaign, leader known, SERVING; and the CPU it had used when the cluster was SERVING, when it
// was first seen SERVING itself, and when it logged SERVING (its own figure: no poll's lag in it).
//   node build/scripts/restart-timing.js --dir KEPT [--runs 3] [--node-flag FLAG]... [--keep-runs]
// KEPT is the directory held-memory printed ("kept leasehold data and logs in ..."). `--node-flag` passes a
// flag to node on every node (e.g. --cpu-prof --cpu-prof-dir=DIR: the nodes then stop with SIGTERM, so
// that node writes the profiles). `--keep-runs` leaves each run's copy with its logs.
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { EndpointPool } from '../src/client/rpc.js';

const MAIN_JS = resolve('dist/src/cli/main.js');
const USAGE = 'usage: node build/scripts/restart-timing.js --dir KEPT [--runs 3] [--node-flag FLAG]... [--keep-runs]';
const SERVING_TIMEOUT_MS = 120_000;
const POLL_MS = 25;

function arg(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

interface NodeRun {
  id: string;
  child: ChildProcess;
  spawnedAtMs: number;
  servingAtMs: number | null;
  /** Its CPU when it was first seen SERVING: its own start's cost, before the work of a new term (a leader's
   *  expiries, a follower applying them) that the figure at the last node's SERVING also holds. */
  cpuMsAtOwnServing: number | null;
  cpuMsAtServing: number | null;
}

/** The nodes' ids and client addresses, from the kept cluster.yaml (the harness writes it, one form). */
function nodesOf(yaml: string): { id: string; address: string }[] {
  return [...yaml.matchAll(/- id: (\S+)\n\s+address: (\S+)/g)].map((m) => ({ id: m[1]!, address: m[2]! }));
}

/** CPU (user + system) a live process has used, in ms, from /proc (Linux). */
function cpuMsOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return null;
  }
}

/** The epoch ms of the first log line holding `needle` (pino's "time"), or null. */
function firstAt(lines: string[], needle: string): { timeMs: number; line: Record<string, unknown> } | null {
  for (const l of lines) {
    if (!l.includes(needle)) continue;
    try {
      const line = JSON.parse(l) as Record<string, unknown>;
      return { timeMs: line['time'] as number, line };
    } catch {
      continue;
    }
  }
  return null;
}

/** A fresh channel per ask, as the harness's status() does: one kept across asks to a node not yet listening
 *  backs off (grpc's reconnect backoff) and sees it SERVING seconds late. */
async function isServing(address: string): Promise<boolean> {
  const pool = new EndpointPool({ endpoints: [address] });
  try {
    return (await pool.status(address, Date.now() + 500)).serving === true;
  } catch {
    return false;
  } finally {
    pool.close();
  }
}

async function runOnce(kept: string, nodeFlags: string[], keep: boolean, run: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'restart-timing-'));
  const yaml = readFileSync(join(kept, 'cluster.yaml'), 'utf8');
  const nodes = nodesOf(yaml);
  cpSync(join(kept, 'cluster.yaml'), join(dir, 'cluster.yaml'));
  for (const n of nodes) cpSync(join(kept, n.id), join(dir, n.id), { recursive: true });
  const runs: NodeRun[] = [];
  const t0 = Date.now();
  for (const n of nodes) {
    const log = createWriteStream(join(dir, `${n.id}.log`));
    const child = spawn(process.execPath, [...nodeFlags, MAIN_JS, 'serve', '--config', join(dir, 'cluster.yaml'), '--id', n.id], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    runs.push({ id: n.id, child, spawnedAtMs: Date.now(), servingAtMs: null, cpuMsAtOwnServing: null, cpuMsAtServing: null });
  }
  try {
    while (runs.some((r) => r.servingAtMs === null)) {
      if (Date.now() - t0 > SERVING_TIMEOUT_MS) throw new Error(`not every node SERVING after ${SERVING_TIMEOUT_MS} ms (logs in ${dir})`);
      await Promise.all(
        runs.map(async (r, i) => {
          if (r.servingAtMs !== null) return;
          if (await isServing(nodes[i]!.address)) {
            r.servingAtMs = Date.now();
            r.cpuMsAtOwnServing = cpuMsOf(r.child.pid!);
          }
        }),
      );
      await new Promise((done) => setTimeout(done, POLL_MS));
    }
    for (const r of runs) r.cpuMsAtServing = cpuMsOf(r.child.pid!);
  } finally {
    // A profile (--cpu-prof) is written at a clean exit: SIGTERM then; else kill -9, as a crash would.
    const signal = nodeFlags.some((f) => f.startsWith('--cpu-prof')) ? 'SIGTERM' : 'SIGKILL';
    await Promise.all(
      runs.map(
        (r) =>
          new Promise<void>((done) => (r.child.exitCode !== null ? done() : (r.child.once('exit', () => done()), r.child.kill(signal)))),
      ),
    );
  }
  const allMs = Math.max(...runs.map((r) => r.servingAtMs! - t0));
  console.log(`run ${run}: all SERVING ${allMs} ms after the first spawn`);
  const lastLogged = Math.max(
    ...runs.map((r) => {
      const f = firstAt(readFileSync(join(dir, `${r.id}.log`), 'utf8').split('\n'), '"health: SERVING"');
      return f === null ? NaN : f.timeMs - t0;
    }),
  );
  console.log(`  (all SERVING by their logs ${lastLogged} ms after the first spawn)`);
  console.log(
    '  node  restored(log+store ms)    listening  campaign  leader-known  SERVING(log)  SERVING(polled)  cpu-ms  cpu-ms(own SERVING)  cpu-ms(SERVING log)',
  );
  for (const r of runs) {
    const lines = readFileSync(join(dir, `${r.id}.log`), 'utf8').split('\n');
    const at = (needle: string) => {
      const f = firstAt(lines, needle);
      return f === null ? '-' : String(f.timeMs - r.spawnedAtMs);
    };
    const restored = firstAt(lines, '"raft node restored from storage"');
    const phases = restored === null ? '' : ` (${String(restored.line['logLoadMs'])}+${String(restored.line['storeLoadMs'])})`;
    const leaderKnown = lines.find((l) => l.includes('"raft role/term changed"') && /"leaderId":"[^"]+"/.test(l));
    const leaderMs = leaderKnown === undefined ? '-' : String((JSON.parse(leaderKnown) as { time: number }).time - r.spawnedAtMs);
    console.log(
      `  ${r.id.padEnd(4)}  ${(String(restored === null ? '-' : restored.timeMs - r.spawnedAtMs) + phases).padEnd(24)}  ${at('"leasehold node serving"').padStart(9)}  ${at('"pre-candidate"').padStart(8)}  ${leaderMs.padStart(12)}  ${at('"health: SERVING"').padStart(12)}  ${String(r.servingAtMs! - r.spawnedAtMs).padStart(15)}  ${String(r.cpuMsAtServing ?? '-').padStart(6)}  ${String(r.cpuMsAtOwnServing ?? '-').padStart(19)}  ${String(firstAt(lines, '"health: SERVING"')?.line['processCpuMs'] ?? '-').padStart(18)}`,
    );
  }
  if (keep) console.log(`  kept in ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  if (process.argv.includes('--help')) {
    console.log(USAGE);
    return;
  }
  const kept = arg('--dir');
  if (kept === undefined) throw new Error(`--dir: the directory a held-memory --keep run left\n${USAGE}`);
  const runs = Number(arg('--runs') ?? '3');
  const nodeFlags = process.argv.flatMap((a, i) => (a === '--node-flag' ? [process.argv[i + 1]!] : []));
  for (let run = 1; run <= runs; run++) await runOnce(kept, nodeFlags, process.argv.includes('--keep-runs'), run);
}

await main();
