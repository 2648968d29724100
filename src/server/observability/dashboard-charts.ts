// The dashboard's pictures (README "Dashboard"): a few time series of the last minutes — lock operations
// per second by kind, Acquire's p50/p99, replication lag per member, leader changes — read from this node's
// own Prometheus registry (metrics.ts) every few seconds and kept in memory, so a page opened now already
// shows the minutes before it. No other service is asked: the node samples itself.
//
// Each chart names the registry metrics it reads. A name the registry does not have (a renamed metric) is
// reported in the chart's `error`, so a broken chart says why instead of quietly drawing nothing.
import type { MetricValueWithName, Registry } from 'prom-client';

/** A metric's values at one sample, by metric name (prom-client's get(): histograms as _bucket/_sum/_count). */
type Reading = ReadonlyMap<string, readonly MetricValueWithName<string>[]>;
/** A chart's values at one sample time, by series name; null: nothing to say for that interval. */
type Points = Map<string, number | null>;

interface ChartDef {
  readonly id: string;
  readonly title: string;
  readonly unit: string;
  /** `bars` for counts per interval, `line` for rates and levels. */
  readonly style: 'line' | 'bars';
  readonly metrics: readonly string[];
  /** This sample's points from the previous reading and this one (rates need both); dtS > 0. */
  points(prev: Reading, cur: Reading, dtS: number): Points;
}

/** The registry names the charts read (metrics.ts registers them; README "Metrics" lists them). */
export const CHART_METRICS = {
  lockOps: 'leasehold_lock_operations_total',
  lockOpSeconds: 'leasehold_lock_operation_duration_seconds',
  peerLag: 'leasehold_raft_peer_match_lag_entries',
  commitIndex: 'leasehold_raft_commit_index',
  appliedIndex: 'leasehold_raft_applied_index',
  leaderChanges: 'leasehold_raft_leader_changes_total',
} as const;

const M = CHART_METRICS;

function valuesOf(r: Reading, name: string): readonly MetricValueWithName<string>[] {
  return r.get(name) ?? [];
}

/** Sums a metric's values by one label (counters: cumulative counts). */
function sumBy(r: Reading, name: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const v of valuesOf(r, name)) {
    const key = v.labels[label];
    if (key === undefined) continue;
    out.set(String(key), (out.get(String(key)) ?? 0) + v.value);
  }
  return out;
}

function single(r: Reading, name: string): number {
  return valuesOf(r, name).reduce((s, v) => s + v.value, 0);
}

/** A counter's increase between two readings; a restart of the counter (smaller now) counts from zero. */
function increase(before: number, now: number): number {
  return now >= before ? now - before : now;
}

/** Cumulative bucket counts of one histogram series, by upper bound (seconds, +Inf last). */
function bucketsOf(r: Reading, name: string, op: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const v of valuesOf(r, name)) {
    if (v.metricName !== `${name}_bucket` || v.labels['op'] !== op) continue;
    const le = v.labels['le'];
    out.set(le === '+Inf' ? Infinity : Number(le), v.value);
  }
  return out;
}

/**
 * The q-quantile of the observations between two readings of a histogram, interpolated linearly inside
 * its bucket as Prometheus' histogram_quantile does; null when nothing was observed in between.
 */
export function quantileBetween(before: Map<number, number>, now: Map<number, number>, q: number): number | null {
  const bounds = [...now.keys()].sort((a, b) => a - b);
  const counts = bounds.map((le) => increase(before.get(le) ?? 0, now.get(le)!));
  const total = counts[counts.length - 1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i]! < rank) continue;
    const lower = i === 0 ? 0 : bounds[i - 1]!;
    const upper = bounds[i]!;
    // Above the highest finite bound nothing more is known: answer that bound, as Prometheus does.
    if (upper === Infinity) return lower;
    const below = i === 0 ? 0 : counts[i - 1]!;
    const inBucket = counts[i]! - below;
    return inBucket <= 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
  }
  return null;
}

const CHARTS: readonly ChartDef[] = [
  {
    id: 'ops',
    title: 'lock operations per second, by kind',
    unit: 'ops/s',
    style: 'line',
    metrics: [M.lockOps],
    points(prev, cur, dtS) {
      const before = sumBy(prev, M.lockOps, 'op');
      const out: Points = new Map();
      for (const [op, n] of sumBy(cur, M.lockOps, 'op')) out.set(op, increase(before.get(op) ?? 0, n) / dtS);
      return out;
    },
  },
  {
    id: 'acquire-latency',
    title: 'Acquire latency p50 / p99 (queueing included)',
    unit: 'ms',
    style: 'line',
    metrics: [M.lockOpSeconds],
    points(prev, cur) {
      const before = bucketsOf(prev, M.lockOpSeconds, 'acquire');
      const now = bucketsOf(cur, M.lockOpSeconds, 'acquire');
      const ms = (s: number | null) => (s === null ? null : s * 1000);
      return new Map([
        ['p50', ms(quantileBetween(before, now, 0.5))],
        ['p99', ms(quantileBetween(before, now, 0.99))],
      ]);
    },
  },
  {
    id: 'lag',
    title: 'replication lag per member',
    unit: 'entries',
    style: 'line',
    metrics: [M.peerLag, M.commitIndex, M.appliedIndex],
    points(_prev, cur) {
      // Every node knows its own commit − applied; only the leader knows how far each follower is behind.
      const out: Points = new Map([['this node: commit − applied', single(cur, M.commitIndex) - single(cur, M.appliedIndex)]]);
      for (const v of valuesOf(cur, M.peerLag)) {
        const peer = v.labels['peer'];
        if (peer !== undefined) out.set(`${String(peer)}: behind the leader's log`, v.value);
      }
      return out;
    },
  },
  {
    id: 'leader-changes',
    title: 'leader changes per sample interval',
    unit: 'changes',
    style: 'bars',
    metrics: [M.leaderChanges],
    points(prev, cur) {
      return new Map([['leader changes', increase(single(prev, M.leaderChanges), single(cur, M.leaderChanges))]]);
    },
  },
];

export interface ChartJson {
  id: string;
  title: string;
  unit: string;
  style: 'line' | 'bars';
  /** Why the chart cannot be drawn (a metric it reads is not in the registry); null when it can. */
  error: string | null;
  /** One column per sample: the sample times (ms since the epoch, this node's clock). */
  times_ms: number[];
  /** Each series' value at each sample time; null where it had nothing (no Acquire in that interval). */
  series: { name: string; values: (number | null)[] }[];
}

export interface ChartsJson {
  sample_every_ms: number;
  window_ms: number;
  charts: ChartJson[];
}

/** The samples of the last `windowMs`, taken by sample() (the runtime calls it every `sampleEveryMs`). */
export class DashboardCharts {
  private last: { atMs: number; reading: Reading } | null = null;
  private readonly samples: { atMs: number; points: Map<string, Points> }[] = [];
  private readonly missing = new Map<string, string>();
  private readonly maxSamples: number;

  constructor(
    private readonly registry: Registry,
    readonly sampleEveryMs = 2000,
    readonly windowMs = 5 * 60_000,
  ) {
    this.maxSamples = Math.max(2, Math.ceil(windowMs / sampleEveryMs));
  }

  /** Reads the charts' metrics now; from the second call on, adds one column to every chart. */
  async sample(nowMs: number): Promise<void> {
    const reading = new Map<string, readonly MetricValueWithName<string>[]>();
    for (const chart of CHARTS) {
      for (const name of chart.metrics) {
        if (reading.has(name)) continue;
        const metric = this.registry.getSingleMetric(name);
        if (metric === undefined) {
          this.missing.set(chart.id, `metric ${name} is not in this node's registry: this chart has nothing to show`);
          continue;
        }
        // Copied: prom-client hands out its live value objects, which the next inc() would change.
        reading.set(
          name,
          (await metric.get()).values.map((v: MetricValueWithName<string>) => ({
            value: v.value,
            labels: { ...v.labels },
            ...(v.metricName !== undefined ? { metricName: v.metricName } : {}),
          })),
        );
      }
    }
    const prev = this.last;
    this.last = { atMs: nowMs, reading };
    if (prev === null || nowMs <= prev.atMs) return;
    const dtS = (nowMs - prev.atMs) / 1000;
    const points = new Map<string, Points>();
    for (const chart of CHARTS) if (!this.missing.has(chart.id)) points.set(chart.id, chart.points(prev.reading, reading, dtS));
    this.samples.push({ atMs: nowMs, points });
    if (this.samples.length > this.maxSamples) this.samples.shift();
  }

  view(): ChartsJson {
    const times = this.samples.map((s) => s.atMs);
    return {
      sample_every_ms: this.sampleEveryMs,
      window_ms: this.windowMs,
      charts: CHARTS.map((chart) => {
        const names: string[] = [];
        for (const s of this.samples) for (const name of s.points.get(chart.id)?.keys() ?? []) if (!names.includes(name)) names.push(name);
        return {
          id: chart.id,
          title: chart.title,
          unit: chart.unit,
          style: chart.style,
          error: this.missing.get(chart.id) ?? null,
          times_ms: times,
          series: names.map((name) => ({ name, values: this.samples.map((s) => s.points.get(chart.id)?.get(name) ?? null) })),
        };
      }),
    };
  }
}

/** Samples `charts` every sampleEveryMs from now on (once at once); the returned function stops it. */
export function startSampling(charts: DashboardCharts, onError: (err: unknown) => void): () => void {
  let busy = false;
  const tick = () => {
    if (busy) return; // a slow read (a loaded node) skips a beat rather than piling reads up
    busy = true;
    charts
      .sample(Date.now())
      .catch(onError)
      .finally(() => {
        busy = false;
      });
  };
  tick();
  const timer = setInterval(tick, charts.sampleEveryMs);
  timer.unref();
  return () => clearInterval(timer);
}
