// In-process measurement of issue 36's restart after a long stop: a machine with a full table of remembered
// requests (dedup.ts) applies one entry (the new term's first, as after an election) whose log time is past
// the whole dedup window, and its changes are written to a LevelDB as a node's write-behind writes them.
// Prints the time and CPU of the apply, of StoreRecords.take() and of the batch write, and the ops written.
// Figures go in notes, not in tests.
//
//   npm run build:test && node build/scripts/dedup-expiry.js [--records 250000] [--mode released|held]
//        [--level 7] [--gap-min 11]
// --mode released: acquire + release pairs, none of them kept past the window (the records are forgotten);
// --mode held: acquires whose holds live on (ttl 1 h, carried over the stop), which cluster level 6 keeps
// (each is remembered again at the new log time). It also applies an entry one window after that one
// (laterApplyMs, laterOps): what a kept table costs again every window while its holds live. `--profile FILE` writes a CPU profile of the entry's apply,
// take and write (not the fill): `node scripts/profile-groups.mjs FILE`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { Level } from 'level';
import { encodeCommand, type LockCommand } from '../src/lock/commands.js';
import { LockMachine } from '../src/lock/machine.js';
import { StoreRecords } from '../src/lock/store-records.js';
import { AppliedStore, type AppliedPoint } from '../src/state/applied-store.js';

interface Args {
  records: number;
  mode: 'released' | 'held';
  level: number;
  gapMin: number;
  /** Where to write a CPU profile of the entry's apply, take and write only (not the fill). */
  profile: string | null;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { records: 250_000, mode: 'released', level: 7, gapMin: 11, profile: null };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--records') args.records = Number(argv[++i]);
    else if (flag === '--mode') args.mode = argv[++i] === 'held' ? 'held' : 'released';
    else if (flag === '--level') args.level = Number(argv[++i]);
    else if (flag === '--gap-min') args.gapMin = Number(argv[++i]);
    else if (flag === '--profile') args.profile = argv[++i]!;
    else throw new Error(`unknown argument ${flag}`);
  }
  return args;
}

const T0 = 1_764_000_000_000;
const HOUR_MS = 3_600_000;
/** The machine's default dedup window (types.ts). */
const DEDUP_WINDOW_MS = 600_000;
const CONF = { clusterId: 'c', voters: ['a'], learners: [], addresses: {}, removed: [] };

function timed<T>(f: () => T): { value: T; ms: number; cpuMs: number } {
  const t = performance.now();
  const c = process.cpuUsage();
  const value = f();
  const u = process.cpuUsage(c);
  return { value, ms: Math.round(performance.now() - t), cpuMs: Math.round((u.user + u.system) / 1000) };
}

async function timedAsync<T>(f: () => Promise<T>): Promise<{ value: T; ms: number; cpuMs: number }> {
  const t = performance.now();
  const c = process.cpuUsage();
  const value = await f();
  const u = process.cpuUsage(c);
  return { value, ms: Math.round(performance.now() - t), cpuMs: Math.round((u.user + u.system) / 1000) };
}

/** A machine whose dedup table is full: `records` remembered requests over ~50 s of log time. */
function fillMachine(args: Args): { machine: LockMachine; index: number; lastMs: number } {
  const machine = new LockMachine({ dedupMaxEntries: args.records });
  let index = 0;
  let timeMs = T0;
  const apply = (command: LockCommand) => machine.apply(++index, 1, encodeCommand(command));
  if (args.level >= 2) apply({ type: 'clusterLevel', timeMs, level: args.level });
  if (args.mode === 'held') {
    for (let i = 0; i < args.records; i++) {
      timeMs = T0 + Math.floor(i / 5); // the held-scale fill's rate: 5,000 a second of log time
      apply({ type: 'acquire', timeMs, key: `held-${i}`, owner: `bench-${i % 32}`, ttlMs: HOUR_MS, requestId: `r-${i}` });
    }
  } else {
    for (let i = 0; i < args.records / 2; i++) {
      timeMs = T0 + Math.floor(i / 5);
      const owner = `bench-${i % 32}`;
      const granted = apply({ type: 'acquire', timeMs, key: `k-${i % 1000}`, owner, ttlMs: 30_000, requestId: `a-${i}` });
      if (granted.type !== 'acquire' || !granted.acquired) throw new Error(`acquire ${i}: ${JSON.stringify(granted)}`);
      apply({ type: 'release', timeMs, key: `k-${i % 1000}`, owner, token: granted.token, requestId: `r-${i}` });
    }
  }
  if (machine.dedupSize !== args.records) throw new Error(`expected ${args.records} remembered, have ${machine.dedupSize}`);
  return { machine, index, lastMs: timeMs };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), 'dedup-expiry-'));
  const out: Record<string, unknown> = { ...args };
  const fill = timed(() => fillMachine(args));
  out.fillMs = fill.ms;
  const { machine } = fill.value;
  let index = fill.value.index;
  const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open({ writeBufferSize: 1 << 20, cacheSize: 2 << 20 });
  const store = await AppliedStore.open(db);
  const tracker = new StoreRecords(machine);
  const point = (): AppliedPoint => ({ index, term: 2, conf: CONF });
  const all = tracker.all();
  await store.replace([all], point());
  out.recordsWritten = all.length;

  const session = args.profile === null ? null : new Session();
  if (session !== null) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  // The new term's first entry, `gapMin` minutes of log time after the last one.
  const entry = encodeCommand({ type: 'termStart', timeMs: fill.value.lastMs + args.gapMin * 60_000 });
  const apply = timed(() => machine.apply(++index, 2, entry));
  out.applyMs = apply.ms;
  out.applyCpuMs = apply.cpuMs;
  out.dedupAfter = machine.dedupSize;
  const take = timed(() => tracker.take());
  out.takeMs = take.ms;
  out.takeCpuMs = take.cpuMs;
  out.ops = take.value.length;
  out.deletes = take.value.filter((op) => op.value === null).length;
  // As the write-behind writes it: fed in slices, the loop's turn between them.
  const pause = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const write = await timedAsync(() => store.write(take.value, point(), false, pause));
  out.writeMs = write.ms;
  out.writeCpuMs = write.cpuMs;
  if (session !== null) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(args.profile!, JSON.stringify(profile));
    session.disconnect();
  }
  // One window of log time later: the records kept at that entry are all asked about again, at one entry.
  const later = encodeCommand({ type: 'checkpoint', timeMs: fill.value.lastMs + args.gapMin * 60_000 + DEDUP_WINDOW_MS });
  const laterApply = timed(() => machine.apply(++index, 2, later));
  out.laterApplyMs = laterApply.ms;
  out.laterOps = tracker.take().length;
  const compact = await timedAsync(async () => {
    await (db as unknown as { compactRange?: (a: Uint8Array, b: Uint8Array) => Promise<void> }).compactRange?.(
      Uint8Array.of(0),
      Uint8Array.of(0xff, 0xff),
    );
  });
  out.compactMs = compact.ms;
  out.compactCpuMs = compact.cpuMs;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify(out));
}

await main();
