// Plain-text tables of the runs: one table per workload, a row per system/round/client count, then the
// ratio leasehold / other for each comparable group (same workload and client count), rounds averaged.
import { mean, ratio } from './stats.js';
import type { RunRow } from './types.js';

export const OURS = 'leasehold';

function fmt(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return '-';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** CPU the cluster's nodes spent per operation (all nodes, user + system): what two shared cores pay for
 *  each op, the measure issue 37's goals are in. NaN when no op completed. */
export function cpuMsPerOp(r: RunRow): number {
  if (r.ops <= 0) return NaN;
  return (1000 * r.nodes.reduce((sum, n) => sum + n.cpuSeconds, 0)) / r.ops;
}

function cells(r: RunRow, workload: string): string[] {
  const variant = r.workload.slice(workload.length).trim();
  const cpu = r.nodes.map((n) => fmt(n.cpuSeconds, 1)).join('/');
  const rss = r.nodes.map((n) => fmt(n.peakRssMb)).join('/');
  const lag = r.nodes.some((n) => n.loopLagMaxMs !== undefined) ? r.nodes.map((n) => fmt(n.loopLagMaxMs ?? NaN)).join('/') : '-';
  const runq = r.nodes.some((n) => n.runQueueMs !== undefined) ? r.nodes.map((n) => fmt(n.runQueueMs ?? NaN)).join('/') : '-';
  const extra = Object.entries(r.extra)
    .map(([k, v]) => `${k}=${fmt(v, Number.isInteger(v) ? 0 : 1)}`)
    .join(' ');
  return [
    variant ? `${r.system} ${variant}` : r.system,
    String(r.round),
    String(r.clients),
    fmt(r.opsPerSec),
    fmt(r.latency.p50Ms, 1),
    fmt(r.latency.p90Ms, 1),
    fmt(r.latency.p99Ms, 1),
    fmt(r.latency.maxMs, 1),
    String(r.errors),
    String(r.elections),
    cpu,
    fmt(cpuMsPerOp(r), 2),
    fmt(r.clientCpuSeconds, 1),
    runq,
    rss,
    lag,
    extra,
  ];
}

const HEADER = [
  'system',
  'round',
  'clients',
  'ops/s',
  'p50 ms',
  'p90 ms',
  'p99 ms',
  'max ms',
  'errors',
  'elections',
  'cpu s per node',
  'node cpu ms/op',
  'client cpu s',
  'cpu wait ms per node',
  'peak RSS MB per node',
  'loop stall max ms',
  'extra',
];

function table(rows: string[][]): string {
  const widths = HEADER.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export interface RatioLine {
  workload: string;
  clients: number;
  other: string;
  /** mean ops/s of leasehold over mean ops/s of the other system (> 1: leasehold is faster). */
  throughputRatio: number;
  /** mean p99 of leasehold over the other's (< 1: leasehold's tail is shorter). */
  p99Ratio: number;
  /** mean node CPU per op of leasehold over the other's (< 1: leasehold spends less). */
  cpuPerOpRatio: number;
}

/** leasehold vs every other system that ran the same workload with the same client count. */
export function ratios(rows: readonly RunRow[]): RatioLine[] {
  const out: RatioLine[] = [];
  const groups = new Map<string, RunRow[]>();
  for (const r of rows) {
    const k = `${r.workload}\u0000${r.clients}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  for (const group of groups.values()) {
    const bySystem = (s: string) => group.filter((r) => r.system === s);
    const ours = bySystem(OURS);
    if (ours.length === 0) continue;
    for (const other of [...new Set(group.map((r) => r.system))].filter((s) => s !== OURS)) {
      const theirs = bySystem(other);
      out.push({
        workload: group[0]!.workload,
        clients: group[0]!.clients,
        other,
        throughputRatio: ratio(mean(ours.map((r) => r.opsPerSec)), mean(theirs.map((r) => r.opsPerSec))),
        p99Ratio: ratio(mean(ours.map((r) => r.latency.p99Ms)), mean(theirs.map((r) => r.latency.p99Ms))),
        cpuPerOpRatio: ratio(mean(ours.map(cpuMsPerOp)), mean(theirs.map(cpuMsPerOp))),
      });
    }
  }
  return out;
}

/** The table of one workload's rows, with its ratio lines under it. */
export function workloadTable(workload: string, description: string, rows: readonly RunRow[]): string {
  // 'one-client (leader)' and 'one-client (follower)' are rows of 'one-client'.
  const mine = rows.filter((r) => r.workload === workload || r.workload.startsWith(`${workload} (`));
  const opName = mine[0]?.opName ?? 'ops';
  const lines = [`== ${workload}: ${description} (ops = ${opName}) ==`, table([HEADER, ...mine.map((r) => cells(r, workload))])];
  for (const r of mine.filter((x) => x.errorSamples.length > 0)) {
    lines.push(`errors of ${r.system} round ${r.round} @${r.clients}: ${r.errorSamples.join(' | ')}`);
  }
  for (const q of ratios(mine)) {
    const variant = q.workload.slice(workload.length);
    lines.push(
      `ratio ${OURS}/${q.other}${variant} @${q.clients} clients: throughput ${fmt(q.throughputRatio, 2)}x, p99 ${fmt(q.p99Ratio, 2)}x, node cpu per op ${fmt(q.cpuPerOpRatio, 2)}x`,
    );
  }
  return lines.join('\n');
}
