// The figures one measured run produces; bench.json is a list of these plus the special workloads' results.
import type { LatencySummary } from './stats.js';

export interface NodeUsage {
  node: string;
  /** utime + stime of the node's process(es) during the run. */
  cpuSeconds: number;
  /** Time the node's main thread waited for a CPU during the run (schedstat run_delay). */
  runQueueMs?: number;
  /** Highest VmRSS sampled during the run. */
  peakRssMb: number;
  /** leasehold: the longest event-loop stall during the run (a snapshot on the loop shows here). */
  loopLagMaxMs?: number;
}

export interface RunRow {
  workload: string;
  system: string;
  round: number;
  clients: number;
  seconds: number;
  /** What one op is: 'cycles' (acquire + release), 'hand-offs', 'renews'. */
  opName: string;
  ops: number;
  opsPerSec: number;
  /** Latency of one op (the whole cycle for acquire + release). */
  latency: LatencySummary;
  /** Failed ops (RPC errors, waits that ran out); the loop goes on after one. */
  errors: number;
  /** Raft term increase over the run, as the members' status reports it: elections under load. */
  elections: number;
  nodes: NodeUsage[];
  /** CPU seconds of the benchmark process itself (all the clients) during the run. */
  clientCpuSeconds: number;
  /** The first few distinct error messages of the run. */
  errorSamples: string[];
  /** Workload-specific figures (e.g. the renew workload's acquire cycles). */
  extra: Record<string, number>;
}
