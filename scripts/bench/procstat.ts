// CPU seconds and peak RSS of the cluster's node processes during one run, from /proc (Linux only): CPU is
// utime + stime of /proc/<pid>/stat, RSS is VmRSS of /proc/<pid>/status sampled every sampleMs. A node
// killed and restarted mid-run (failover) is summed over all the PIDs it had.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { NodeUsage } from './types.js';

let clockTicks: number | null = null;
function ticksPerSecond(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** utime + stime in ticks, or null when the process is gone. Fields after the `(comm)` are split on spaces
 *  (comm itself may hold spaces); utime and stime are fields 14 and 15 of stat(5). */
export function cpuTicksOf(statText: string): number {
  const rest = statText.slice(statText.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state), so field n is rest[n - 3].
  return Number(rest[11]) + Number(rest[12]);
}

export function rssKbOf(statusText: string): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(statusText);
  return m ? Number(m[1]) : 0;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

export function rssMbOf(pid: number): number {
  const s = read(`/proc/${pid}/status`);
  return s ? rssKbOf(s) / 1024 : NaN;
}

interface PidTrack {
  node: string;
  firstTicks: number;
  lastTicks: number;
  firstRunDelayNs: number;
  lastRunDelayNs: number;
}

/** run_delay of /proc/<pid>/schedstat (its second field): nanoseconds the process's main thread spent
 *  runnable but waiting for a CPU. On a machine whose cores the nodes and clients share, it is how long
 *  a hop waited for a core rather than for the disk or the network. */
export function runDelayNsOf(schedstatText: string): number {
  const f = schedstatText.trim().split(/\s+/);
  return Number(f[1] ?? 0);
}

export class ProcSampler {
  private readonly tracks = new Map<number, PidTrack>();
  private readonly peakKb = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  /** `pids` is asked on every sample, so restarted nodes are picked up. */
  constructor(
    private readonly pids: () => Map<string, number>,
    private readonly sampleMs = 250,
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.sampleMs);
  }

  sample(): void {
    for (const [node, pid] of this.pids()) {
      const stat = read(`/proc/${pid}/stat`);
      const status = read(`/proc/${pid}/status`);
      if (stat === null || status === null) continue;
      const ticks = cpuTicksOf(stat);
      const sched = read(`/proc/${pid}/schedstat`);
      const delayNs = sched === null ? 0 : runDelayNsOf(sched);
      const t = this.tracks.get(pid);
      // A PID first seen mid-run is a restarted node: its CPU counts from 0 (it did all of it in this run).
      if (t) {
        t.lastTicks = ticks;
        t.lastRunDelayNs = delayNs;
      } else {
        const fresh = this.timer !== null;
        this.tracks.set(pid, {
          node,
          firstTicks: fresh ? 0 : ticks,
          lastTicks: ticks,
          firstRunDelayNs: fresh ? 0 : delayNs,
          lastRunDelayNs: delayNs,
        });
      }
      this.peakKb.set(node, Math.max(this.peakKb.get(node) ?? 0, rssKbOf(status)));
    }
  }

  stop(): NodeUsage[] {
    this.sample();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const nodes = [...new Set([...this.tracks.values()].map((t) => t.node))].sort();
    return nodes.map((node) => {
      const tracks = [...this.tracks.values()].filter((t) => t.node === node);
      const ticks = tracks.reduce((a, t) => a + t.lastTicks - t.firstTicks, 0);
      const delayNs = tracks.reduce((a, t) => a + t.lastRunDelayNs - t.firstRunDelayNs, 0);
      return { node, cpuSeconds: ticks / ticksPerSecond(), peakRssMb: (this.peakKb.get(node) ?? 0) / 1024, runQueueMs: delayNs / 1e6 };
    });
  }
}
