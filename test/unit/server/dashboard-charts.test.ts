// The dashboard's charts (dashboard-charts.ts) over the node's real metrics registry (metrics.ts): every
// chart finds the metrics it reads under their current names, and each sample turns counters into rates,
// histogram buckets into quantiles and gauges into levels. Sample times are passed in: no clock, no timer.
import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { DashboardCharts, quantileBetween, type ChartJson } from '../../../src/server/observability/dashboard-charts.js';
import { NodeMetrics, type MetricsSources } from '../../../src/server/observability/metrics.js';
import type { Status } from '../../../src/raft/core/types.js';
import type { ProgressView } from '../../../src/raft/core/progress.js';

function node(role: 'leader' | 'follower') {
  const state = { commitIndex: 100, appliedIndex: 97, lastIndex: 104 };
  const conf = { clusterId: 'c1', voters: ['n1', 'n2', 'n3'], learners: [], addresses: {}, removed: [] };
  const src: MetricsSources = {
    status: () =>
      ({
        id: 'n1',
        role,
        term: 2,
        leaderId: role === 'leader' ? 'n1' : 'n2',
        ...state,
        durableIndex: state.lastIndex,
        firstIndex: 1,
        voters: conf.voters,
        learners: conf.learners,
        conf,
        confIndex: 1,
      }) as Status,
    progress: () =>
      new Map<string, ProgressView>([
        ['n1', { match: 104, next: 105, state: 'replicate' }],
        ['n2', { match: 104, next: 105, state: 'replicate' }],
        ['n3', { match: 90, next: 91, state: 'probe' }],
      ]),
    peers: () => new Map(),
    leasesHeld: () => 0,
    waiters: () => 0,
    dedupEntries: () => 0,
  };
  return { metrics: new NodeMetrics('n1', src), state };
}

const chart = (charts: DashboardCharts, id: string): ChartJson => {
  const c = charts.view().charts.find((x) => x.id === id);
  if (!c) throw new Error(`no chart ${id}`);
  return c;
};
const series = (c: ChartJson) => Object.fromEntries(c.series.map((s) => [s.name, s.values]));

describe('dashboard charts', () => {
  it("every chart reads metrics that are in the node's registry under those names", async () => {
    const { metrics } = node('leader');
    const charts = new DashboardCharts(metrics.registry);
    await charts.sample(0);
    await charts.sample(2000);
    const view = charts.view();
    expect(view.charts.map((c) => c.id)).toEqual(['ops', 'acquire-latency', 'lag', 'leader-changes']);
    expect(view.charts.map((c) => [c.id, c.error])).toEqual(view.charts.map((c) => [c.id, null]));
    // And each of them has a column for the sample (a chart with a missing metric has none).
    expect(view.charts.map((c) => [c.id, c.times_ms])).toEqual(view.charts.map((c) => [c.id, [2000]]));
  });

  it('a chart whose metric is not in the registry says so instead of drawing nothing', async () => {
    const charts = new DashboardCharts(new Registry());
    await charts.sample(0);
    await charts.sample(2000);
    const ops = chart(charts, 'ops');
    expect(ops.error).toBe("metric leasehold_lock_operations_total is not in this node's registry: this chart has nothing to show");
    expect(ops.series).toEqual([]);
  });

  it('operations per second by kind, from the counter between two samples', async () => {
    const { metrics } = node('leader');
    const charts = new DashboardCharts(metrics.registry);
    metrics.lockOps.inc({ op: 'acquire', outcome: 'acquired' }, 3);
    await charts.sample(0); // the first sample only sets the baseline
    expect(chart(charts, 'ops').times_ms).toEqual([]);
    metrics.lockOps.inc({ op: 'acquire', outcome: 'acquired' }, 8);
    metrics.lockOps.inc({ op: 'acquire', outcome: 'not_acquired' }, 2);
    metrics.lockOps.inc({ op: 'release', outcome: 'released' }, 4);
    await charts.sample(2000);
    await charts.sample(4000); // nothing in this interval
    const ops = chart(charts, 'ops');
    expect(ops.times_ms).toEqual([2000, 4000]);
    expect(series(ops)).toEqual({ acquire: [5, 0], release: [2, 0] });
  });

  it("Acquire's p50 and p99 in ms over each interval; null where no Acquire ended", async () => {
    const { metrics } = node('leader');
    const charts = new DashboardCharts(metrics.registry);
    await charts.sample(0);
    // 90 fast acquires (in the 1-2.5 ms bucket) and 10 slow ones (0.25-0.5 s); renews do not count.
    for (let i = 0; i < 90; i++) metrics.lockOpSeconds.observe({ op: 'acquire' }, 0.002);
    for (let i = 0; i < 10; i++) metrics.lockOpSeconds.observe({ op: 'acquire' }, 0.4);
    for (let i = 0; i < 50; i++) metrics.lockOpSeconds.observe({ op: 'renew' }, 5);
    await charts.sample(2000);
    await charts.sample(4000);
    const s = series(chart(charts, 'acquire-latency'));
    // p50: rank 50 of 90 in (1, 2.5] ms: 1 + 1.5 × 50/90. p99: rank 99, the 9th of 10 in (250, 500] ms.
    expect(s['p50']![0]).toBeCloseTo(1 + (1.5 * 50) / 90, 9);
    expect(s['p99']![0]).toBeCloseTo(250 + (250 * 9) / 10, 9);
    expect([s['p50']![1], s['p99']![1]]).toEqual([null, null]);
  });

  it('quantiles: the highest finite bound above the last bucket; a counter restart counts from zero', () => {
    const b = (pairs: [number, number][]) => new Map(pairs);
    expect(
      quantileBetween(
        b([]),
        b([
          [1, 0],
          [Infinity, 4],
        ]),
        0.5,
      ),
    ).toBe(1);
    const before = b([
      [1, 50],
      [Infinity, 60],
    ]);
    const restarted = b([
      [1, 2],
      [Infinity, 2],
    ]);
    expect(quantileBetween(before, restarted, 0.5)).toBe(0.5);
    expect(quantileBetween(before, before, 0.5)).toBeNull();
  });

  it('replication lag: the leader shows each follower behind its log and its own commit − applied; a follower only its own', async () => {
    for (const role of ['leader', 'follower'] as const) {
      const { metrics, state } = node(role);
      const charts = new DashboardCharts(metrics.registry);
      await charts.sample(0);
      await charts.sample(2000);
      state.appliedIndex = 100;
      await charts.sample(4000);
      const s = series(chart(charts, 'lag'));
      if (role === 'leader')
        expect(s).toEqual({
          'this node: commit − applied': [3, 0],
          "n2: behind the leader's log": [0, 0],
          "n3: behind the leader's log": [14, 14],
        });
      else expect(s).toEqual({ 'this node: commit − applied': [3, 0] });
    }
  });

  it('leader changes per interval, and only the last window is kept', async () => {
    const { metrics } = node('follower');
    const charts = new DashboardCharts(metrics.registry, 1000, 3000);
    await charts.sample(0);
    for (let t = 1; t <= 5; t++) {
      if (t === 2) metrics.leaderChanges.inc(2);
      await charts.sample(t * 1000);
    }
    const c = chart(charts, 'leader-changes');
    expect(c.style).toBe('bars');
    expect(c.times_ms).toEqual([3000, 4000, 5000]);
    await charts.sample(5000); // a repeated time adds no column
    expect(chart(charts, 'leader-changes').times_ms).toEqual([3000, 4000, 5000]);
    const { metrics: m2 } = node('follower');
    const all = new DashboardCharts(m2.registry, 1000, 60_000);
    await all.sample(0);
    m2.leaderChanges.inc(2);
    await all.sample(1000);
    await all.sample(2000);
    expect(series(chart(all, 'leader-changes'))).toEqual({ 'leader changes': [2, 0] });
  });
});
