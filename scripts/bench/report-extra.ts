// Tables of the two workloads that are not a plain client loop: held-scale and failover.
import type { FailoverResult } from './failover.js';
import type { HeldScaleResult } from './held-scale.js';
import { describeMemory } from './node-memory.js';
import { median } from './stats.js';

const n0 = (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '-');
const mb = (bytes: number) => (Number.isFinite(bytes) ? (bytes / 1024 / 1024).toFixed(1) : '-');

function roles(r: Record<string, number>): string {
  const parts = Object.entries(r).map(([k, v]) => `${k}=${v}`);
  return parts.length ? ` [${parts.join(' ')}]` : '';
}

export function heldScaleTable(results: readonly HeldScaleResult[]): string {
  const lines = ['== held-scale: N held locks (ttl 1 h), leasehold only (etcd not run here) =='];
  for (const r of results) {
    lines.push(
      `held ${n0(r.held)}: fill ${r.fillSeconds.toFixed(1)} s (${n0(r.fillPerSec)}/s, ${r.fillErrors} errors (retried; ${r.fillRetriedHeld} had committed), ${r.fillElections} elections${roles(r.fillRoleChanges)}, cpu s ${r.fillCpuSeconds.map((x) => x.toFixed(0)).join('/')}, loop stall max ms ${r.fillLoopStallMaxMs.map(n0).join('/')}); restart of all 3 to SERVING ${n0(r.restartToServingMs)} ms; ` +
        `cycles/s with none ${n0(r.throughputNone.opsPerSec)} (p99 ${r.throughputNone.latency.p99Ms.toFixed(1)} ms), with N held ${n0(r.throughputHeld.opsPerSec)} (p99 ${r.throughputHeld.latency.p99Ms.toFixed(1)} ms, max ${r.throughputHeld.latency.maxMs.toFixed(1)} ms): ratio ${r.heldRatio.toFixed(2)}x`,
    );
    const b = r.backup;
    lines.push(
      `  snapshot save of ${b.savedFrom} (a follower) under 16 clients: ${n0(b.saveMs)} ms, ${mb(b.facts.size_bytes)} MB, index ${b.facts.index}, ${n0(b.facts.holds)} holds; ` +
        `load beside it ${n0(b.load.opsPerSec)} cycles/s, p99 ${b.load.latency.p99Ms.toFixed(1)} ms (${b.p99Ratio.toFixed(2)}x the p99 without it), max ${b.load.latency.maxMs.toFixed(1)} ms, ${b.load.elections} elections, ${b.load.errors} errors; ` +
        `restore of 3 data dirs ${n0(r.restored.restoreMs)} ms, restored cluster to SERVING ${n0(r.restored.startToServingMs)} ms, ${r.restored.sampled} sampled keys with their owner and token`,
    );
    for (const nd of r.nodes) {
      lines.push(
        `  ${nd.node}: RSS serving ${n0(nd.rssServingMb)} MB (${describeMemory(nd.memoryServing)}), after restart ${n0(nd.rssAfterRestartMb)} MB (${describeMemory(nd.memoryAfterRestart)}); log compactions ${nd.compactions}, snapshots made for a follower ${nd.followerSnapshots}` +
          `${nd.followerSnapshots > 0 ? ` (last ${mb(nd.lastSnapshotBytes)} MB)` : ''}; data dir ${mb(nd.dataDirBytes)} MB`,
      );
    }
  }
  return lines.join('\n');
}

export function failoverTable(results: readonly FailoverResult[]): string {
  const lines = [
    '== failover: kill -9 of the leader under light load (1 client per member); ms from the kill to the next acquire through a survivor ==',
  ];
  for (const r of results) {
    lines.push(
      `${r.system.padEnd(12)} round ${r.round}: ${r.kills} kills, median ${n0(r.medianMs)} ms, max ${n0(r.maxMs)} ms, term +${r.termIncrease} (${r.termIncrease - r.kills} beyond one per kill)${roles(r.roleChanges)}; ` +
        `load ${r.backgroundCycles} cycles, ${r.backgroundErrors} errors; all: ${r.recoveryMs.map(n0).join(' ')}`,
    );
  }
  const systems = [...new Set(results.map((r) => r.system))];
  if (systems.length > 1) {
    const med = (s: string) => median(results.filter((r) => r.system === s).flatMap((r) => r.recoveryMs));
    lines.push(`median over rounds: ${systems.map((s) => `${s} ${n0(med(s))} ms`).join(', ')}`);
  }
  return lines.join('\n');
}
