// Where a node's memory goes with N held locks: fills a fresh 3-node cluster of real processes (the
// held-scale bench's fill), then prints per node RSS, V8 heap used/total, external and array buffers
// (from each node's /metrics) serving, and again after a kill -9 + restart of all three, with the
// restart's phases read from the node logs. `--heap` also writes a V8 heap snapshot of every node while
// serving (SIGUSR2, into the out dir) for a retainer breakdown in DevTools.
//   node build/scripts/held-memory.js [--held 200000] [--heap] [--keep] [--out DIR] [--node-flag FLAG]...
// The fill line gives each node's longest event-loop stall during the fill (as held-scale does). `--profile DIR`:
// every node writes a CPU profile there (node --cpu-prof; the kill before the restart is a SIGTERM first, so the
// fill's profiles are written too), to find what held a loop.
// (--keep leaves the data dirs and logs, e.g. to time a restart's phases offline.) `--trace-gc` starts the
// nodes with V8's --trace-gc and prints, per node, the GC pauses of the fill and the restart: whether the
// event-loop stalls are the collector's. `--node-flag` passes a flag to node itself on every node (repeat it), e.g.
// `--node-flag --heap-growing-percent=50`: V8 flags NODE_OPTIONS refuses, to see what one does to the memory;
// with `--trace-gc --node-flag --trace-gc-nvp` the summary adds the bytes each kind of GC promoted. Every
// node's log (its GC lines with them) is written into the out dir as <member>.log. `--settle S` reads the
// memory again after S more seconds of serving with no load: how much of the reading right after the fill
// was garbage the collector had not given back yet (V8 shrinks a heap once allocation slows).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fill, rssNow } from './bench/held-scale.js';
import { leaseholdFactory, type LeaseholdCluster } from './bench/leasehold-system.js';
import { describeMemory, memoryOf } from './bench/node-memory.js';

const USAGE =
  'usage: node build/scripts/held-memory.js [--held N] [--heap] [--trace-gc] [--keep] [--out DIR] [--profile DIR] [--settle S] [--node-flag FLAG]...';
const VALUE_FLAGS = new Set(['--held', '--out', '--node-flag', '--profile', '--settle']);
const SWITCHES = new Set(['--heap', '--trace-gc', '--keep']);

/** The command line checked before anything starts: a run starts a 3-node cluster and fills it for
 *  minutes, so `--help`, a mistyped flag or a bad count must not start one. */
function checkArgs(argv: readonly string[]): void {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--help' || a === '-h') {
      console.log(USAGE);
      process.exit(0);
    }
    if (VALUE_FLAGS.has(a)) {
      if (argv[i + 1] === undefined || (a !== '--node-flag' && argv[i + 1]!.startsWith('--'))) usageError(`${a} needs a value`);
      i++;
    } else if (!SWITCHES.has(a)) usageError(`unknown argument ${a}`);
  }
  const held = arg('--held', '200000');
  if (!/^[1-9][0-9]*$/.test(held)) usageError(`--held: give a positive whole number of locks (got ${held})`);
  const settle = arg('--settle', '0');
  if (!/^[0-9]+$/.test(settle)) usageError(`--settle: give a whole number of seconds (got ${settle})`);
}

function usageError(message: string): never {
  console.error(`held-memory: ${message}\n${USAGE}`);
  process.exit(64);
}

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}

async function report(c: LeaseholdCluster, label: string): Promise<void> {
  const rss = rssNow(c);
  for (let i = 0; i < c.members.length; i++) {
    console.log(`${label} ${c.members[i]}: RSS ${rss.get(c.members[i]!)?.toFixed(0) ?? '?'} MB; ${describeMemory(await memoryOf(c, i))}`);
  }
}

/** V8 --trace-gc lines ("…: Mark-Compact 812.3 (901.0) -> 455.1 (910.2) MB, 123.4 / 0.0 ms …"): the
 *  pauses by kind, and the longest. */
function gcPauses(log: string): string {
  const byKind = new Map<string, number[]>();
  for (const m of log.matchAll(
    /: (Scavenge|Mark-Compact|Mark-Compact \(reduce\)|Minor Mark-Compact)\b[^\n]*?MB, ([0-9.]+) \/ [0-9.]+ ms/g,
  )) {
    const list = byKind.get(m[1]!) ?? [];
    list.push(Number(m[2]));
    byKind.set(m[1]!, list);
  }
  const parts = [...byKind].map(([kind, ms]) => {
    ms.sort((a, b) => b - a);
    const total = ms.reduce((a, b) => a + b, 0);
    return `${kind}: ${ms.length} pauses, ${total.toFixed(0)} ms in all, longest ${ms
      .slice(0, 5)
      .map((x) => x.toFixed(0))
      .join(' / ')} ms, over 50 ms: ${ms.filter((x) => x > 50).length}`;
  });
  return `GC (--trace-gc): ${parts.join('; ') || 'no lines'}${nvpSummary(log)}`;
}

/** V8 --trace-gc-nvp lines ("… pause=1.2 … gc=s … allocated=… promoted=123 …"): per kind (s scavenge, ms
 *  mark-compact, mmc minor mark-compact), the pauses and the bytes promoted to old space — what the run
 *  makes that lives through two scavenges, the old-space growth V8 then has to collect. */
function nvpSummary(log: string): string {
  const byKind = new Map<string, { n: number; pauseMs: number; maxMs: number; promoted: number; allocated: number }>();
  for (const m of log.matchAll(/ pause=([0-9.]+) [^\n]*? gc=(\w+) [^\n]*?allocated=(\d+) promoted=(\d+)/g)) {
    const k = byKind.get(m[2]!) ?? { n: 0, pauseMs: 0, maxMs: 0, promoted: 0, allocated: 0 };
    const ms = Number(m[1]);
    k.n++;
    k.pauseMs += ms;
    k.maxMs = Math.max(k.maxMs, ms);
    k.allocated += Number(m[3]);
    k.promoted += Number(m[4]);
    byKind.set(m[2]!, k);
  }
  if (byKind.size === 0) return '';
  const mb = (b: number) => (b / 1048576).toFixed(1);
  const parts = [...byKind].map(
    ([kind, k]) =>
      `gc=${kind}: ${k.n} pauses, ${k.pauseMs.toFixed(0)} ms in all, longest ${k.maxMs.toFixed(0)} ms, allocated ${mb(k.allocated)} MB, promoted ${mb(k.promoted)} MB`,
  );
  return `; (--trace-gc-nvp) ${parts.join('; ')}`;
}

async function main(): Promise<void> {
  checkArgs(process.argv.slice(2));
  const held = Number(arg('--held', '200000'));
  const out = arg('--out', `/tmp/held-memory-${process.pid}`);
  mkdirSync(out, { recursive: true });
  const heap = process.argv.includes('--heap');
  const extraYaml = `limits:\n  maxHeld: ${held + 100_000}\n  maxKeys: ${held + 1_000_000}\n`;
  const traceGc = process.argv.includes('--trace-gc');
  const nodeFlags = process.argv.flatMap((a, i) => (a === '--node-flag' ? [process.argv[i + 1]!] : []));
  const nodeArgs = [
    ...(heap ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${out}`] : []),
    ...(traceGc ? ['--trace-gc'] : []),
    ...nodeFlags,
  ];
  if (nodeFlags.length > 0) console.log(`node flags: ${nodeFlags.join(' ')}`);
  const profile = process.argv.indexOf('--profile');
  const profileDir = profile >= 0 ? resolve(process.argv[profile + 1]!) : undefined;
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  const c = await leaseholdFactory.start({
    extraYaml,
    nodeArgs,
    keep: process.argv.includes('--keep'),
    ...(profileDir ? { profileDir } : {}),
  });
  try {
    await c.loopLagMaxMs(); // resets each node's event-loop stall maximum: what follows is the fill's
    const f = await fill(c, held);
    const stallMs = await c.loopLagMaxMs();
    console.log(
      `filled ${held} in ${f.seconds.toFixed(1)} s (${Math.round(held / f.seconds)}/s), ${f.errors} errors; ` +
        `event-loop stall max (leader ${c.members[await c.leader()]}) ${c.members.map((id) => `${id} ${Math.round(stallMs.get(id) ?? NaN)}`).join(' / ')} ms`,
    );
    await new Promise((r) => setTimeout(r, 2000));
    await report(c, 'serving');
    const settleS = Number(arg('--settle', '0'));
    if (settleS > 0) {
      await new Promise((r) => setTimeout(r, settleS * 1000));
      await report(c, `serving, ${settleS} s later`);
    }
    if (heap) {
      for (const pid of c.pids().values()) process.kill(pid, 'SIGUSR2');
      await new Promise((r) => setTimeout(r, 20_000));
      console.log(`heap snapshots in ${out}`);
      // A heap snapshot collects garbage first: what is used now is live, the rest was garbage not yet collected.
      await report(c, 'after the heap snapshots (a full GC)');
    }
    const fillLogEnds = c.members.map((_, i) => c.logText(i).length);
    for (let i = 0; i < c.members.length; i++) await c.kill(i);
    const t0 = performance.now();
    for (let i = 0; i < c.members.length; i++) await c.restart(i);
    await c.waitAllServing(120_000);
    console.log(`restart to SERVING ${(performance.now() - t0).toFixed(0)} ms`);
    await new Promise((r) => setTimeout(r, 2000));
    await report(c, 'restarted');
    for (let i = 0; i < c.members.length; i++) {
      const lines = c
        .logText(i)
        .split('\n')
        .filter((l) => /restored|listening|serving|role\/term|snapshot/i.test(l));
      console.log(`--- ${c.members[i]} log (last lines of interest)\n${lines.slice(-8).join('\n')}`);
      writeFileSync(join(out, `${c.members[i]}.log`), c.logText(i));
      if (traceGc) {
        const log = c.logText(i);
        console.log(`    fill and serving ${gcPauses(log.slice(0, fillLogEnds[i]))}\n    restart ${gcPauses(log.slice(fillLogEnds[i]))}`);
      }
    }
  } finally {
    await c.stop();
  }
}

await main();
