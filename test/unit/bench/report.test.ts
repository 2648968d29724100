import { describe, expect, it } from 'vitest';
import { cpuMsPerOp, ratios, workloadTable } from '../../../scripts/bench/report.js';
import { row } from './fixtures.js';

describe('bench report', () => {
  const rows = [
    row({ system: 'leasehold', round: 1, opsPerSec: 100, latency: { count: 1, p50Ms: 1, p90Ms: 2, p99Ms: 30, maxMs: 40 } }),
    row({ system: 'etcd-v3lock', round: 1, opsPerSec: 200, latency: { count: 1, p50Ms: 1, p90Ms: 2, p99Ms: 20, maxMs: 40 } }),
    row({ system: 'leasehold', round: 2, opsPerSec: 300, latency: { count: 1, p50Ms: 1, p90Ms: 2, p99Ms: 50, maxMs: 60 } }),
    row({ system: 'etcd-v3lock', round: 2, opsPerSec: 200, ops: 4000, latency: { count: 1, p50Ms: 1, p90Ms: 2, p99Ms: 20, maxMs: 40 } }),
    row({ system: 'leasehold', clients: 4, opsPerSec: 50 }),
    row({ workload: 'uncontended', system: 'etcd-v3lock', opsPerSec: 999 }),
  ];

  it('ratios average the rounds and pair only the same workload and client count', () => {
    const r = ratios(rows);
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ workload: 'blocking', clients: 16, other: 'etcd-v3lock' });
    expect(r[0]!.throughputRatio).toBeCloseTo(1.0); // (100 + 300) / 2 over 200
    expect(r[0]!.p99Ratio).toBeCloseTo(2.0); // (30 + 50) / 2 over 20
    // Node CPU per op: 2.7 s over 1,000 ops = 2.7 ms for each leasehold row; etcd's 2.7 and 0.675 (4,000 ops).
    expect(r[0]!.cpuPerOpRatio).toBeCloseTo(2.7 / ((2.7 + 0.675) / 2));
  });

  it("node cpu ms per op is every node's CPU over the ops, and undefined without ops", () => {
    expect(cpuMsPerOp(row({}))).toBeCloseTo(2.7);
    expect(cpuMsPerOp(row({ ops: 0 }))).toBeNaN();
  });

  it('no ratio without a leasehold row', () => {
    expect(ratios(rows.filter((r) => r.system !== 'leasehold'))).toEqual([]);
  });

  it('the table has a line per row, the per-node figures, and the ratio line', () => {
    const t = workloadTable('blocking', 'desc', rows).split('\n');
    expect(t[0]).toBe('== blocking: desc (ops = cycles) ==');
    expect(t[1]).toMatch(/^system\s+round\s+clients\s+ops\/s\s+p50 ms/);
    expect(t.filter((l) => /^(leasehold|etcd-v3lock)\s/.test(l))).toHaveLength(5);
    // cpu s, node cpu ms/op, client cpu s, cpu wait ('-': not measured), RSS, loop stall ('-').
    expect(t.find((l) => l.startsWith('leasehold    2 '))).toMatch(/\b300\b.*\b50\.0\b.*1\.5\/1\.2\s+2\.70\s+2\.5\s+-\s+90\/91\s+-$/);
    const lagged = workloadTable('blocking', 'd', [
      row({
        nodes: [
          { node: 'n1', cpuSeconds: 1, peakRssMb: 90, loopLagMaxMs: 12.4, runQueueMs: 1450.4 },
          { node: 'n2', cpuSeconds: 1, peakRssMb: 90, runQueueMs: 876 },
        ],
      }),
    ]);
    expect(lagged).toMatch(/1,450\/876\s+90\/90\s+12\/-$/m);
    expect(t.at(-1)).toBe('ratio leasehold/etcd-v3lock @16 clients: throughput 1.00x, p99 2.00x, node cpu per op 1.60x');
  });

  it('a run with errors lists their first messages under the table', () => {
    const t = workloadTable('blocking', 'desc', [row({ errors: 2, errorSamples: ['UNAVAILABLE: no leader', 'DEADLINE_EXCEEDED: x'] })]);
    expect(t).toContain('errors of leasehold round 1 @16: UNAVAILABLE: no leader | DEADLINE_EXCEEDED: x');
    expect(workloadTable('blocking', 'desc', [row({})])).not.toContain('errors of');
  });
});

describe('bench report variants', () => {
  it('rows of one workload with a pin show it beside the system, and pair only within the same pin', () => {
    const rows = [
      row({ workload: 'one-client (leader)', clients: 1, system: 'leasehold', opsPerSec: 100 }),
      row({ workload: 'one-client (follower)', clients: 1, system: 'leasehold', opsPerSec: 50 }),
      row({ workload: 'one-client (leader)', clients: 1, system: 'etcd-v3lock', opsPerSec: 200 }),
      row({ workload: 'one-client (follower)', clients: 1, system: 'etcd-v3lock', opsPerSec: 200 }),
    ];
    const t = workloadTable('one-client', 'desc', rows);
    expect(t).toMatch(/^leasehold \(follower\)\s+1\s+1\s+50\b/m);
    expect(t).toContain('ratio leasehold/etcd-v3lock (leader) @1 clients: throughput 0.50x');
    expect(t).toContain('ratio leasehold/etcd-v3lock (follower) @1 clients: throughput 0.25x');
  });
});
