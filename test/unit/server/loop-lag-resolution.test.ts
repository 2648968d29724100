// The event-loop lag histogram samples at metrics.loopLagResolutionMs (issue 37): its timer wakes the node
// every period, busy or idle, and at prom-client's own 10 ms that was 100 wake-ups a second, most of what
// an idle node did. The node's metrics pass the setting on to prom-client, 50 ms unless configured.
import { describe, expect, it, vi } from 'vitest';

const precisions = vi.hoisted(() => [] as (number | undefined)[]);
vi.mock('prom-client', async (importOriginal) => {
  const real = await importOriginal<typeof import('prom-client')>();
  return {
    ...real,
    collectDefaultMetrics: (config?: Parameters<typeof real.collectDefaultMetrics>[0]) => {
      precisions.push(config?.eventLoopMonitoringPrecision);
      real.collectDefaultMetrics(config);
    },
  };
});

const { NodeMetrics } = await import('../../../src/server/observability/metrics.js');
const { DEFAULT_SETTINGS } = await import('../../../src/config/schema.js');
const { parseConfig } = await import('../../../src/config/index.js');

const src = {
  status: () => ({ role: 'follower', term: 1, leaderId: 'n2', commitIndex: 0, appliedIndex: 0, lastIndex: 0, id: 'n1' }),
  progress: () => new Map(),
  peers: () => new Map(),
  leasesHeld: () => 0,
  waiters: () => 0,
  dedupEntries: () => 0,
} as unknown as ConstructorParameters<typeof NodeMetrics>[1];

const NODES = 'nodes:\n  - { id: n1, address: 127.0.0.1:7001, dataDir: /tmp/n1 }\n';

describe('event-loop lag resolution (metrics.loopLagResolutionMs)', () => {
  it("defaults to the Raft tick, 50 ms, not prom-client's 10", () => {
    expect(DEFAULT_SETTINGS.metrics.loopLagResolutionMs).toBe(50);
    precisions.length = 0;
    new NodeMetrics('n1', src);
    expect(precisions).toEqual([50]);
  });

  it('passes a configured period on to the lag histogram', () => {
    const config = parseConfig(`${NODES}metrics:\n  loopLagResolutionMs: 25\n`, '/etc/leasehold/cluster.yaml');
    expect(config.metrics.loopLagResolutionMs).toBe(25);
    precisions.length = 0;
    new NodeMetrics('n1', src, config.metrics.loopLagResolutionMs);
    expect(precisions).toEqual([25]);
  });

  it('refuses a period below 1 ms', () => {
    expect(() => parseConfig(`${NODES}metrics:\n  loopLagResolutionMs: 0\n`, '/etc/leasehold/cluster.yaml')).toThrow(/loopLagResolutionMs/);
  });
});
