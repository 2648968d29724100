// `npm run bench -- --trace`: the latency waterfall. A fresh 3-node cluster whose nodes record stage
// stamps (LEASEHOLD_TRACE=1, src/trace/stages.ts); one client makes calls one at a time — Get, Acquire
// (wait 0, a fresh key: one commit), Release — on the leader, then on a follower. Each call's window
// [sent, answered] on the shared clock claims every stamp any node recorded inside it (calls never
// overlap, so a stamp in the window belongs to the call, up to the odd tick heartbeat; the median is
// robust to those). Per stage and node: how often it was seen, and when, from the moment the call left
// the client. The floors (floors.ts) are measured in the same run.
import { EndpointPool, newRequestId } from '../../src/client/rpc.js';
import { traceNowMs, type TraceStamp } from '../../src/trace/stages.js';
import { measureFloors, type Floors } from './floors.js';
import { leaseholdFactory, type LeaseholdCluster } from './leasehold-system.js';
import { percentile, summarize, type LatencySummary } from './stats.js';

type CallKind = 'Get' | 'Acquire' | 'Release';

interface Window {
  kind: CallKind;
  startMs: number;
  endMs: number;
}

export interface WaterfallRow {
  stage: string;
  /** 'client', 'leader', 'follower <id>' or 'serving follower'. */
  node: string;
  seen: number;
  p50Ms: number;
  p99Ms: number;
}

export interface Waterfall {
  via: 'leader' | 'follower';
  kind: CallKind;
  calls: LatencySummary;
  rows: WaterfallRow[];
  /** The call of median duration, stamp by stamp in time order (what the medians above blur). */
  example: { node: string; stage: string; atMs: number }[];
}

export interface TraceResult {
  floors: Floors;
  waterfalls: Waterfall[];
}

async function makeCalls(pool: EndpointPool, count: number, prefix: string, windows: Window[] | null): Promise<void> {
  const timed = async <T>(kind: CallKind, fn: () => Promise<T>): Promise<T> => {
    const startMs = traceNowMs();
    const out = await fn();
    windows?.push({ kind, startMs, endMs: traceNowMs() });
    return out;
  };
  const owner = `trace-${process.pid}`;
  for (let i = 0; i < count; i++) {
    const key = `${prefix}-${i}`;
    await timed('Get', () => pool.call('Get', { key }, Date.now() + 5000));
    const got = await timed('Acquire', () =>
      pool.call<{ acquired: boolean; token: string }>(
        'Acquire',
        { key, owner, ttl_ms: '10000', wait_ms: '0', request_id: newRequestId() },
        Date.now() + 5000,
      ),
    );
    if (!got.acquired) throw new Error(`trace: acquire of fresh key ${key} was refused`);
    await timed('Release', () => pool.call('Release', { key, owner, token: got.token, request_id: newRequestId() }, Date.now() + 5000));
  }
}

/** Joins the stamps of every node with the client's windows into one waterfall per call kind. */
export function joinWaterfall(
  via: 'leader' | 'follower',
  windows: readonly Window[],
  stampsByNode: ReadonlyMap<string, readonly TraceStamp[]>,
): Waterfall[] {
  const out: Waterfall[] = [];
  for (const kind of ['Get', 'Acquire', 'Release'] as const) {
    const ws = windows.filter((w) => w.kind === kind).sort((a, b) => a.startMs - b.startMs);
    const offsets = new Map<string, number[]>(); // node|stage -> offsets from the window's start
    const byWindow = ws.map(() => [] as { node: string; stage: string; atMs: number }[]);
    for (const [node, stamps] of stampsByNode) {
      // Stamps are in time order per node: walk them with the windows (both sorted).
      let j = 0;
      for (const [wi, w] of ws.entries()) {
        while (j < stamps.length && stamps[j]!.atMs < w.startMs) j++;
        // Each occurrence of a stage in the window is its own row: `stage`, then `stage #2`, `stage #3` ...
        // (a node that writes twice for one call shows both writes).
        const first = new Map<string, number>();
        const seen = new Map<string, number>();
        for (let k = j; k < stamps.length && stamps[k]!.atMs <= w.endMs; k++) {
          const s = stamps[k]!;
          byWindow[wi]!.push({ node, stage: s.stage, atMs: s.atMs - w.startMs });
          const n = (seen.get(s.stage) ?? 0) + 1;
          seen.set(s.stage, n);
          first.set(n === 1 ? s.stage : `${s.stage} #${n}`, s.atMs - w.startMs);
        }
        for (const [stage, at] of first) {
          const key = `${node}|${stage}`;
          if (!offsets.has(key)) offsets.set(key, []);
          offsets.get(key)!.push(at);
        }
      }
    }
    const rows: WaterfallRow[] = [];
    for (const [key, xs] of offsets) {
      const [node, stage] = key.split('|') as [string, string];
      xs.sort((a, b) => a - b);
      // A stage seen in under a tenth of the calls is a stray (a tick's heartbeat, a checkpoint).
      if (xs.length < ws.length / 10) continue;
      rows.push({ stage, node, seen: xs.length / ws.length, p50Ms: percentile(xs, 50), p99Ms: percentile(xs, 99) });
    }
    const calls = ws.map((w) => w.endMs - w.startMs);
    const callsSorted = [...calls].sort((a, b) => a - b);
    rows.push({
      stage: 'answer received',
      node: 'client',
      seen: 1,
      p50Ms: percentile(callsSorted, 50),
      p99Ms: percentile(callsSorted, 99),
    });
    rows.sort((a, b) => a.p50Ms - b.p50Ms);
    const order = calls.map((d, i) => [d, i] as const).sort((a, b) => a[0] - b[0]);
    const mid = order[Math.floor(order.length / 2)];
    const example =
      mid === undefined
        ? []
        : [...byWindow[mid[1]]!, { node: 'client', stage: 'answer received', atMs: mid[0] }].sort((a, b) => a.atMs - b.atMs);
    out.push({ via, kind, calls: summarize(calls), rows, example });
  }
  return out;
}

export async function runTrace(calls: number, opts: { keep: boolean }): Promise<TraceResult> {
  const floors = await measureFloors();
  const waterfalls: Waterfall[] = [];
  const previous = process.env['LEASEHOLD_TRACE'];
  process.env['LEASEHOLD_TRACE'] = '1';
  let cluster: LeaseholdCluster;
  try {
    cluster = await leaseholdFactory.start({ keep: opts.keep, label: 'trace' });
  } finally {
    if (previous === undefined) delete process.env['LEASEHOLD_TRACE'];
    else process.env['LEASEHOLD_TRACE'] = previous;
  }
  try {
    const leader = await cluster.leader();
    const follower = (leader + 1) % cluster.members.length;
    for (const [via, member] of [
      ['leader', leader],
      ['follower', follower],
    ] as const) {
      const pool = new EndpointPool({ endpoints: [cluster.cluster.endpoint(cluster.members[member]!)], attemptTimeoutMs: 3000 });
      try {
        await makeCalls(pool, 50, `warm-${via}`, null);
        await Promise.all(cluster.members.map((_, i) => cluster.traceStamps(i))); // drop the warm-up's stamps
        const windows: Window[] = [];
        await makeCalls(pool, calls, `trace-${via}`, windows);
        const stamps = new Map<string, TraceStamp[]>();
        for (let i = 0; i < cluster.members.length; i++) {
          const name =
            i === leader ? 'leader' : i === member ? `follower ${cluster.members[i]} (serving)` : `follower ${cluster.members[i]}`;
          stamps.set(name, await cluster.traceStamps(i));
        }
        waterfalls.push(...joinWaterfall(via, windows, stamps));
      } finally {
        pool.close();
      }
    }
  } finally {
    await cluster.stop();
  }
  return { floors, waterfalls };
}

const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');

export function floorsTable(f: Floors): string {
  const line = (name: string, s: LatencySummary) => `${name.padEnd(44)} ${f2(s.p50Ms).padStart(7)} ${f2(s.p99Ms).padStart(7)}`;
  return [
    '== floors (same machine, same run) ==',
    `${'what'.padEnd(44)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}`,
    line('grpc-js unary round trip, two processes', f.unary),
    line('peer round trip over two client streams', f.peerRoundTrip),
    line('LevelDB batch, 2 puts, sync', f.levelSync),
    line('fdatasync after a 200 B append', f.fdatasync),
    '(a store save(): one entry of 150 B and a hard state, as a node writes per proposal)',
    ...f.storeSave.map(({ label, floor }) => `${line(label, floor.latency)}   ${floor.cpuUsPerSave.toFixed(0)} us CPU per save`),
  ].join('\n');
}

export function waterfallTable(w: Waterfall, f: Floors): string {
  const head = `== waterfall: ${w.kind} via the ${w.via}, ${w.calls.count} calls one at a time: p50 ${f2(w.calls.p50Ms)} ms, p99 ${f2(w.calls.p99Ms)} ms ==`;
  const lines = [
    head,
    `${'at p50'.padStart(7)} ${'step'.padStart(6)} ${'at p99'.padStart(7)}  ${'seen'.padStart(5)}  ${'node'.padEnd(24)} stage`,
  ];
  let prev = 0;
  for (const r of w.rows) {
    lines.push(
      `${f2(r.p50Ms).padStart(7)} ${f2(r.p50Ms - prev).padStart(6)} ${f2(r.p99Ms).padStart(7)}  ${`${Math.round(r.seen * 100)}%`.padStart(5)}  ${r.node.padEnd(24)} ${r.stage}`,
    );
    prev = r.p50Ms;
  }
  if (w.example.length > 0) {
    lines.push(`the median call (${f2(w.example[w.example.length - 1]!.atMs)} ms), stamp by stamp:`);
    let before = 0;
    for (const e of w.example) {
      lines.push(`${f2(e.atMs).padStart(7)} ${f2(e.atMs - before).padStart(6)}  ${e.node.padEnd(24)} ${e.stage}`);
      before = e.atMs;
    }
  }
  const rtt = f.unary.p50Ms + f.peerRoundTrip.p50Ms;
  if (w.kind === 'Get' && w.via === 'leader')
    lines.push(
      `budget (unary + peer round trip + 0.3 ms): ${f2(rtt + 0.3)} ms; p50 ${f2(w.calls.p50Ms)} ms: ${w.calls.p50Ms <= rtt + 0.3 ? 'met' : 'NOT met'}`,
    );
  if (w.kind === 'Acquire' && w.via === 'leader') {
    const budget = rtt + f.fdatasync.p50Ms + 0.5;
    lines.push(
      `budget (unary + peer round trip + fdatasync + 0.5 ms): ${f2(budget)} ms; p50 ${f2(w.calls.p50Ms)} ms: ${w.calls.p50Ms <= budget ? 'met' : 'NOT met'}`,
    );
  }
  return lines.join('\n');
}
