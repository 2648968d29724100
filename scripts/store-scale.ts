// In-process scale measurement of the applied store (issue 36): a machine holding N locks under sessions,
// with a full table of remembered requests (as the held-scale bench's fill leaves it), written to a LevelDB
// exactly as a node's store writes it (LockStateStore.replace), then opened and read back as a restart does
// (LockStateStore.load). Prints the time and CPU of each step, the records and bytes on disk, and the heap
// the restored machine holds. Figures go in notes, not in tests.
//
//   npm run build:test && node --expose-gc build/scripts/store-scale.js [--locks 1000000] [--dedup 250000]
//        [--sessions 32] [--dir PATH] [--keep] [--read-only]
// (--sessions 0: every lock a lease of its own, ttl 1 h, as the held-scale bench's fill takes them.)
// `--keep` leaves the store in --dir; `--read-only` only reads the store a `--keep` run left in --dir, and
// never deletes it (profile the restart with `node --cpu-prof --expose-gc build/scripts/store-scale.js --dir D
// --read-only`). A store an earlier build wrote (applied-store format 1) is rewritten once by that first load,
// as a node's first start on this build does: time a second --read-only run for the restart itself.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Level } from 'level';
import { encodeCommand, type LockCommand } from '../src/lock/commands.js';
import { LockMachine } from '../src/lock/machine.js';
import { AppliedStore } from '../src/state/applied-store.js';
import { LockStateStore } from '../src/state/lock-store.js';
import { dirBytes } from './bench/held-scale.js';

interface Args {
  locks: number;
  dedup: number;
  sessions: number;
  dir: string | null;
  keep: boolean;
  readOnly: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { locks: 1_000_000, dedup: 250_000, sessions: 32, dir: null, keep: false, readOnly: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--keep') args.keep = true;
    else if (flag === '--read-only') args.readOnly = true;
    else if (flag === '--dir') args.dir = argv[++i]!;
    else if (flag === '--locks') args.locks = Number(argv[++i]);
    else if (flag === '--dedup') args.dedup = Number(argv[++i]);
    else if (flag === '--sessions') args.sessions = Number(argv[++i]);
    else throw new Error(`unknown argument ${flag}`);
  }
  if (args.readOnly && args.dir === null) throw new Error('--read-only: give --dir, the store a --keep run left');
  return args;
}

const T0 = 1_764_000_000_000;
const HOUR_MS = 3_600_000;
const gc = (globalThis as { gc?: () => void }).gc;

function heapMb(): number {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return Math.round((m.heapUsed + m.arrayBuffers) / 2 ** 20);
}

/** Runs `f`, returning its result with wall and CPU milliseconds. */
async function timed<T>(f: () => Promise<T> | T): Promise<{ value: T; ms: number; cpuMs: number }> {
  const t = performance.now();
  const c = process.cpuUsage();
  const value = await f();
  const u = process.cpuUsage(c);
  return { value, ms: Math.round(performance.now() - t), cpuMs: Math.round((u.user + u.system) / 1000) };
}

/** Owners of --sessions 0's leases (the bench's fill runs 32 clients). */
const OWN_LEASE_OWNERS = 32;

function fillMachine(args: Args): LockMachine {
  const machine = new LockMachine({ dedupMaxEntries: args.dedup });
  let index = 0;
  const apply = (command: LockCommand) => machine.apply(++index, 1, encodeCommand(command));
  const sessions: number[] = [];
  for (let s = 0; s < args.sessions; s++) {
    apply({ type: 'openSession', timeMs: T0, owner: `bench-${s}`, ttlMs: HOUR_MS, requestId: `open-${s}`, lockDelayMs: 0 });
    sessions.push(index); // a session's id is its entry's index
  }
  for (let i = 0; i < args.locks; i++) {
    const timeMs = T0 + Math.floor(i / 5); // about the fill's rate: 5,000 a second of log time
    const key = `held-${i}`;
    if (args.sessions === 0) {
      // --sessions 0: each lock a lease of its own (ttl 1 h), as the held-scale bench's fill takes them.
      apply({ type: 'acquire', timeMs, key, owner: `bench-${i % OWN_LEASE_OWNERS}`, ttlMs: HOUR_MS, requestId: `r-${i}` });
      continue;
    }
    const s = i % args.sessions;
    apply({ type: 'acquire', timeMs, key, owner: `bench-${s}`, ttlMs: 0, sessionId: sessions[s]!, requestId: `r-${i}` });
  }
  if (machine.leaseCount !== args.locks) throw new Error(`expected ${args.locks} leases, have ${machine.leaseCount}`);
  return machine;
}

const inline = { soon: (f: () => void) => void Promise.resolve().then(f), every: () => ({ cancel: () => {} }) };

function lockStore(dir: string): LockStateStore<LockMachine> {
  return new LockStateStore<LockMachine>(async () => {
    const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
    await db.open({ writeBufferSize: 1 << 20, cacheSize: 2 << 20 });
    return AppliedStore.open(db);
  }, inline as never);
}

/** Fills a machine and writes it as a node's store does, recording the figures in `out`. */
async function writeStore(args: Args, dir: string, out: Record<string, unknown>): Promise<void> {
  const fill = await timed(() => fillMachine(args));
  out.fillMs = fill.ms;
  out.heapFilledMb = heapMb();
  const store = lockStore(dir);
  const write = await timed(() =>
    store.replace(fill.value, {
      index: fill.value.appliedIndex,
      term: 1,
      conf: { clusterId: 'c', voters: ['a'], learners: [], addresses: {}, removed: [] },
    }),
  );
  await store.close();
  out.writeMs = write.ms;
  out.writeCpuMs = write.cpuMs;
  out.diskBytes = dirBytes(dir);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const dir = args.dir ?? mkdtempSync(join(tmpdir(), 'store-scale-'));
  const out: Record<string, unknown> = { locks: args.locks, dedup: args.dedup, sessions: args.sessions, dir };
  // In a function of its own, so the filled machine is garbage before the restored one is measured.
  if (!args.readOnly) await writeStore(args, dir, out);
  const before = heapMb();
  const store = lockStore(dir);
  const load = await timed(() => store.load({ dedupMaxEntries: args.dedup }));
  if (load.value === null) throw new Error(`no state in ${dir}`);
  out.loadMs = load.ms;
  out.loadCpuMs = load.cpuMs;
  out.loadedLeases = load.value.machine.leaseCount;
  out.heapRestoredMb = heapMb() - before;
  out.rssMb = Math.round(process.memoryUsage().rss / 2 ** 20);
  await store.close();
  // A store this run did not write is never deleted (--read-only reads one a --keep run left).
  if (!args.keep && !args.readOnly) rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify(out, null, 1));
}

await main();
