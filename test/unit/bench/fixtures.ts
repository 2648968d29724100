// A RunRow with everything a table needs; tests override what they check.
import type { RunRow } from '../../../scripts/bench/types.js';

export function row(over: Partial<RunRow>): RunRow {
  return {
    workload: 'blocking',
    system: 'leasehold',
    round: 1,
    clients: 16,
    seconds: 10,
    opName: 'cycles',
    ops: 1000,
    opsPerSec: 100,
    latency: { count: 1000, p50Ms: 10, p90Ms: 20, p99Ms: 40, maxMs: 80 },
    errors: 0,
    elections: 0,
    nodes: [
      { node: 'n1', cpuSeconds: 1.5, peakRssMb: 90 },
      { node: 'n2', cpuSeconds: 1.2, peakRssMb: 91 },
    ],
    clientCpuSeconds: 2.5,
    extra: {},
    errorSamples: [],
    ...over,
  };
}
