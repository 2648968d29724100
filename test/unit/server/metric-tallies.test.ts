// The hot path's tallies (metric-tallies.ts) and the wrappers that feed them (instrument.ts): whatever reads
// the registry sees exactly what prom-client fed call by call would show — the same series, counts, buckets
// and sums — and nothing is lost across reads or when a buffer fills between reads.
import { describe, expect, it } from 'vitest';
import { Counter, Histogram, Registry, type MetricValueWithName } from 'prom-client';
import { CounterTally, HistogramTally, TallyGroup } from '../../../src/server/observability/metric-tallies.js';
import { NodeMetrics, type MetricsSources } from '../../../src/server/observability/metrics.js';
import { instrumentLockService, instrumentProposals } from '../../../src/server/observability/instrument.js';
import { LeaderUnavailableError, type LockService } from '../../../src/lock-on-raft/lock-service.js';
import { ProposalTimeoutError } from '../../../src/raft/errors.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** A counter and a histogram fed through tallies, beside the same two fed directly. */
function pair() {
  const direct = new Registry();
  const viaTallies = new Registry();
  const group = new TallyGroup();
  const metric = (r: Registry, collect?: () => void) => ({
    c: new Counter({ name: 'c', help: 'c', labelNames: ['op'], registers: [r], ...(collect ? { collect } : {}) }),
    h: new Histogram({ name: 'h', help: 'h', labelNames: ['op'], buckets: BUCKETS, registers: [r], ...(collect ? { collect } : {}) }),
  });
  const d = metric(direct);
  const t = metric(viaTallies, () => group.flush());
  return { direct, viaTallies, d, t, group };
}

describe('metric tallies', () => {
  it('a read sees every count and observation, in the series, buckets and sums prom-client would show', async () => {
    const { direct, viaTallies, d, t, group } = pair();
    const a = group.add(new CounterTally(t.c, { op: 'a' }));
    const b = group.add(new CounterTally(t.c, { op: 'b' }));
    const ha = group.add(new HistogramTally(t.h, { op: 'a' }, 4));
    for (let i = 0; i < 11; i++) {
      const v = 0.0007 * i * i; // spread over every bucket, +Inf included
      a.inc();
      d.c.inc({ op: 'a' });
      if (i % 3 === 0) {
        b.inc();
        d.c.inc({ op: 'b' });
      }
      ha.observe(v);
      d.h.observe({ op: 'a' }, v);
      if (i === 5) expect(await viaTallies.metrics()).toBe(await direct.metrics()); // a read between
    }
    expect(await viaTallies.metrics()).toBe(await direct.metrics());
    // Read twice: a flushed tally adds nothing again.
    expect(await viaTallies.metrics()).toBe(await direct.metrics());
    expect(await viaTallies.getMetricsAsJSON()).toEqual(await direct.getMetricsAsJSON());
  });

  it('a full buffer hands its observations over at once (bounded memory when nothing reads)', async () => {
    const { t } = pair();
    const h = new HistogramTally(t.h, { op: 'x' }, 3);
    for (let i = 0; i < 7; i++) h.observe(0.5);
    // No collect ran (t.h's collect flushes the group, which h is not in): two buffers' worth reached prom-client.
    const values = (await t.h.get()).values as MetricValueWithName<string>[];
    const counted = values.find((v) => v.metricName === 'h_count' && v.labels['op'] === 'x');
    expect(counted?.value).toBe(6);
  });
});

function metricsOf(): NodeMetrics {
  const src = {
    status: () => ({ role: 'leader', term: 1, leaderId: 'n1', commitIndex: 0, appliedIndex: 0, lastIndex: 0, id: 'n1' }),
    progress: () => new Map(),
    peers: () => new Map(),
    leasesHeld: () => 0,
    waiters: () => 0,
    dedupEntries: () => 0,
  } as unknown as MetricsSources;
  return new NodeMetrics('n1', src);
}

async function valuesOf(m: NodeMetrics, name: string): Promise<Record<string, number>> {
  const metric = m.registry.getSingleMetric(name)!;
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values as MetricValueWithName<string>[]) {
    const { node: _node, ...labels } = v.labels as Record<string, string>;
    const k = `${v.metricName ?? name}${JSON.stringify(labels)}`;
    out[k] = v.value;
  }
  return out;
}

describe('the instrumented lock service and proposals', () => {
  it('count each call by outcome and time it; a throw or a rejection counts as its failure', async () => {
    const m = metricsOf();
    const service = {
      acquire: (r: { ok: boolean }) => Promise.resolve({ acquired: r.ok }),
      release: () => Promise.reject(new LeaderUnavailableError('no leader', 'n2')),
      renew: () => {
        throw new Error('thrown, not rejected');
      },
      get: () => Promise.resolve({ held: false }),
      label: 'passes through',
      name(this: { label: string }) {
        return this.label;
      },
    } as unknown as LockService;
    const s = instrumentLockService(service, m);
    await s.acquire({ ok: true } as never, 100);
    await s.acquire({ ok: false } as never, 100);
    await s.acquire({ ok: true } as never, 100);
    await expect(s.release({} as never, 100)).rejects.toThrow('no leader');
    await expect(s.renew({} as never, 100)).rejects.toThrow('thrown, not rejected');
    // Everything else reaches the service itself, a method bound to it (and the same function each read).
    const passing = s as unknown as { label: string; name(): string };
    expect(passing.label).toBe('passes through');
    expect(passing.name()).toBe('passes through');
    expect((s as unknown as { name: unknown }).name).toBe((s as unknown as { name: unknown }).name);
    const ops = await valuesOf(m, 'leasehold_lock_operations_total');
    expect(ops).toEqual({
      'leasehold_lock_operations_total{"op":"acquire","outcome":"acquired"}': 2,
      'leasehold_lock_operations_total{"op":"acquire","outcome":"not_acquired"}': 1,
      'leasehold_lock_operations_total{"op":"release","outcome":"not_leader"}': 1,
      'leasehold_lock_operations_total{"op":"renew","outcome":"error"}': 1,
    });
    const times = await valuesOf(m, 'leasehold_lock_operation_duration_seconds');
    expect(times['leasehold_lock_operation_duration_seconds_count{"op":"acquire"}']).toBe(3);
    expect(times['leasehold_lock_operation_duration_seconds_count{"op":"release"}']).toBe(1);
    expect(times['leasehold_lock_operation_duration_seconds_count{"op":"renew"}']).toBe(1);
    expect(times['leasehold_lock_operation_duration_seconds_count{"op":"get"}']).toBeUndefined();
  });

  it('count proposals by outcome and time the committed ones', async () => {
    const m = metricsOf();
    let n = 0;
    const node = {
      propose: (_data: Uint8Array, _timeoutMs: number) =>
        n++ === 1 ? Promise.reject(new ProposalTimeoutError(5, 7)) : Promise.resolve({ index: n, result: null }),
    };
    const p = instrumentProposals(node, m);
    await p.propose(new Uint8Array(), 5);
    await expect(p.propose(new Uint8Array(), 5)).rejects.toThrow();
    await p.propose(new Uint8Array(), 5);
    expect(await valuesOf(m, 'leasehold_raft_proposals_total')).toEqual({
      'leasehold_raft_proposals_total{"outcome":"committed"}': 2,
      'leasehold_raft_proposals_total{"outcome":"timeout"}': 1,
    });
    expect((await valuesOf(m, 'leasehold_raft_proposal_duration_seconds'))['leasehold_raft_proposal_duration_seconds_count{}']).toBe(2);
  });
});
