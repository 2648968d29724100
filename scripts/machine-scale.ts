// In-process scale measurement of the lock state machine (issue 8, "1M held locks"): what a held lock and a
// remembered request_id cost in heap and RSS, how big the snapshot is, how long it takes to write and to
// restore, and the longest event-loop stall while a snapshot is written.
//
//   npm run build:test && node --expose-gc build/scripts/machine-scale.js [--locks 1000000] [--owners 0]
//        [--dedup 250000] [--json]
//
// Locks: N acquire entries (distinct keys, ttl 1 h; --owners 0 = one owner per lock, else that many owners
// round-robin), encoded and applied through LockMachine.apply exactly as LockFsm applies committed entries.
// Dedup: a second machine filled with acquire+release cycles on 100 keys, every command with a fresh
// request_id, until the table holds --dedup records (its cap is set to that), so it measures the records
// and not the leases. "heap" is the JS heap plus array buffers. Figures go in notes, not in tests.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { encodeCommand } from '../src/lock/commands.js';
import { LockMachine } from '../src/lock/machine.js';

interface Args {
  locks: number;
  owners: number;
  dedup: number;
  json: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { locks: 1_000_000, owners: 0, dedup: 250_000, json: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = Number(argv[i + 1]);
    if (flag === '--locks') args.locks = value;
    else if (flag === '--owners') args.owners = value;
    else if (flag === '--dedup') args.dedup = value;
    else if (flag === '--json') {
      args.json = true;
      continue;
    } else throw new Error(`unknown argument ${flag}`);
    i++;
  }
  return args;
}

const gc = (globalThis as { gc?: () => void }).gc;
function settle(): { heapMB: number; rssMB: number; heap: number; rss: number } {
  if (gc === undefined) throw new Error('run node with --expose-gc');
  gc();
  gc();
  const m = process.memoryUsage();
  // Typed arrays live outside the JS heap (arrayBuffers): count them, or a table kept in them looks free.
  const heap = m.heapUsed + m.arrayBuffers;
  return { heap, rss: m.rss, heapMB: round(heap / 2 ** 20), rssMB: round(m.rss / 2 ** 20) };
}

function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function cpuSince(start: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1000;
}

const T0 = 1_764_000_000_000;
const HOUR_MS = 3_600_000;

/** A snapshot job, when the machine offers one (sliced snapshots); absent on the synchronous machine. */
interface SnapshotJobLike {
  step(): boolean;
  finish(): Uint8Array;
}
type SlicedMachine = LockMachine & { beginSnapshot?: () => SnapshotJobLike };

/**
 * Write a snapshot the way the driver does and measure the longest loop stall meanwhile: synchronously
 * (one call) on a machine without beginSnapshot, else one slice per setImmediate turn, with `applyBetween`
 * applying more entries between slices (the state keeps changing while the snapshot is written).
 */
async function timedSnapshot(
  machine: SlicedMachine,
  applyBetween: () => void,
): Promise<{
  bytes: Uint8Array;
  ms: number;
  cpuMs: number;
  maxStallMs: number;
  maxSliceMs: number;
  maxSliceCpuMs: number;
  slices: number;
}> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  await new Promise((r) => setTimeout(r, 20));
  delay.reset();
  const start = performance.now();
  let bytes: Uint8Array;
  let slices = 0;
  let maxSliceMs = 0;
  // CPU time too: on a shared machine wall time mostly measures the neighbours.
  let cpuMs = 0;
  let maxSliceCpuMs = 0;
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  if (machine.beginSnapshot === undefined) {
    const c = cpu();
    bytes = machine.snapshot();
    slices = 1;
    maxSliceMs = performance.now() - start;
    cpuMs = maxSliceCpuMs = cpu() - c;
  } else {
    const job = machine.beginSnapshot();
    for (;;) {
      const t = performance.now();
      const c = cpu();
      const done = job.step();
      const finished = done ? job.finish() : null;
      const sliceCpu = cpu() - c;
      cpuMs += sliceCpu;
      maxSliceCpuMs = Math.max(maxSliceCpuMs, sliceCpu);
      maxSliceMs = Math.max(maxSliceMs, performance.now() - t);
      slices++;
      if (finished !== null) {
        bytes = finished;
        break;
      }
      applyBetween();
      await new Promise((r) => setImmediate(r));
    }
  }
  const ms = performance.now() - start;
  await new Promise((r) => setTimeout(r, 5));
  delay.disable();
  // The histogram sees stalls of the event loop as a whole; the slice timer sees our own work.
  return { bytes, ms, cpuMs, maxStallMs: Math.max(maxSliceMs, delay.max / 1e6), maxSliceMs, maxSliceCpuMs, slices };
}

function timedRestore(bytes: Uint8Array, machine: LockMachine): { restored: LockMachine; ms: number; cpuMs: number } {
  const start = performance.now();
  const cpu = process.cpuUsage();
  const restored = LockMachine.restore(bytes, machine.options);
  return { restored, ms: performance.now() - start, cpuMs: cpuSince(cpu) };
}

function figures(snap: Awaited<ReturnType<typeof timedSnapshot>>, restore: { ms: number; cpuMs: number }) {
  return {
    serialiseMs: Math.round(snap.ms),
    serialiseCpuMs: Math.round(snap.cpuMs),
    slices: snap.slices,
    maxStallMs: round(snap.maxStallMs),
    maxSliceMs: round(snap.maxSliceMs),
    maxSliceCpuMs: round(snap.maxSliceCpuMs),
    restoreMs: Math.round(restore.ms),
    restoreCpuMs: Math.round(restore.cpuMs),
  };
}

async function measureLocks(args: Args) {
  const base = settle();
  const machine = new LockMachine({ dedupMaxEntries: 250_000 }) as SlicedMachine;
  let index = 0;
  const ownerOf = (i: number) => `owner-${String(args.owners === 0 ? i : i % args.owners).padStart(8, '0')}`;
  const applyStart = performance.now();
  for (let i = 0; i < args.locks; i++) {
    const data = encodeCommand({
      type: 'acquire',
      timeMs: T0 + i,
      key: `lock:${String(i).padStart(10, '0')}`,
      owner: ownerOf(i),
      ttlMs: HOUR_MS,
      requestId: '',
    });
    machine.apply(++index, 1, data);
  }
  const applyMs = performance.now() - applyStart;
  const held = settle();
  if (machine.leaseCount !== args.locks) throw new Error(`expected ${args.locks} leases, have ${machine.leaseCount}`);
  // While a sliced snapshot is written, keep applying acquire+release of fresh keys (a serving leader).
  let extra = 0;
  const applyBetween = () => {
    for (let k = 0; k < 20; k++) {
      const key = `churn:${extra++}`;
      machine.apply(
        ++index,
        1,
        encodeCommand({ type: 'acquire', timeMs: T0 + args.locks + extra, key, owner: 'churner', ttlMs: 1000, requestId: '' }),
      );
      machine.apply(
        ++index,
        1,
        encodeCommand({ type: 'release', timeMs: T0 + args.locks + extra, key, owner: 'churner', token: BigInt(index - 1), requestId: '' }),
      );
    }
  };
  const snap = await timedSnapshot(machine, applyBetween);
  const restore = timedRestore(snap.bytes, machine);
  if (restore.restored.leaseCount !== args.locks) throw new Error('restore lost leases');
  return {
    locks: args.locks,
    owners: args.owners === 0 ? args.locks : args.owners,
    applyPerSec: Math.round(args.locks / (applyMs / 1000)),
    heapMB: round((held.heap - base.heap) / 2 ** 20),
    rssMB: held.rssMB,
    heapBytesPerLock: Math.round((held.heap - base.heap) / args.locks),
    snapshotBytes: snap.bytes.length,
    snapshotBytesPerLock: round(snap.bytes.length / args.locks),
    ...figures(snap, restore),
  };
}

async function measureDedup(args: Args) {
  const base = settle();
  const machine = new LockMachine({ dedupMaxEntries: args.dedup, dedupWindowMs: 10 * 60_000 }) as SlicedMachine;
  let index = 0;
  let cycle = 0;
  while (machine.dedupSize < args.dedup) {
    const key = `hot:${cycle % 100}`;
    const owner = `client-${String(cycle % 16).padStart(4, '0')}`;
    const timeMs = T0 + Math.floor(cycle / 1000);
    const rid = `${owner}-req-${String(cycle).padStart(12, '0')}`;
    machine.apply(++index, 1, encodeCommand({ type: 'acquire', timeMs, key, owner, ttlMs: 30_000, requestId: `${rid}-a` }));
    machine.apply(++index, 1, encodeCommand({ type: 'release', timeMs, key, owner, token: BigInt(index - 1), requestId: `${rid}-r` }));
    cycle++;
  }
  const full = settle();
  const snap = await timedSnapshot(machine, () => {});
  const restore = timedRestore(snap.bytes, machine);
  if (restore.restored.dedupSize !== machine.dedupSize) throw new Error('restore lost dedup records');
  return {
    records: machine.dedupSize,
    heapMB: round((full.heap - base.heap) / 2 ** 20),
    rssMB: full.rssMB,
    heapBytesPerRecord: Math.round((full.heap - base.heap) / machine.dedupSize),
    snapshotBytes: snap.bytes.length,
    snapshotBytesPerRecord: round(snap.bytes.length / machine.dedupSize),
    ...figures(snap, restore),
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const out: Record<string, unknown> = { node: process.version };
  if (args.locks > 0) out['locks'] = await measureLocks(args);
  if (args.dedup > 0) out['dedup'] = await measureDedup(args);
  console.log(args.json ? JSON.stringify(out) : out);
}

await main();
