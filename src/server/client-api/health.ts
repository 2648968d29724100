// grpc.health.v1 as SPEC "Health" defines it: SERVING only while this node can serve lock calls (a
// leader that heard from a quorum within an election timeout, or a follower that heard from its leader
// within one — RaftNode.serving()). A load balancer or readiness probe can then tell a node without
// quorum from a healthy one. Re-evaluated when the node's role or leader changes (refresh(): how a node
// becomes SERVING) and on a timer (how it stops: no word within the window is a matter of time); transitions
// are logged.
import type { HealthImplementation } from 'grpc-health-check';
import type { NodeLogger } from '../../raft/logger.js';
import { realScheduler, type Scheduler, type TimerHandle } from '../../raft/env.js';

const SERVICES = ['', 'leasehold.v1.Lock'] as const;

export class HealthReporter {
  private timer: TimerHandle | null = null;
  private last: boolean | null = null;

  constructor(
    private readonly health: HealthImplementation,
    private readonly judge: () => { serving: boolean; reason: string },
    private readonly logger: NodeLogger,
    private readonly nodeId: string,
  ) {
    this.set(false, 'starting');
  }

  /** Looks every `everyMs` on `scheduler` (the node's: its timers of one interval share one wake-up). */
  start(everyMs: number, scheduler: Pick<Scheduler, 'every'> = realScheduler): void {
    this.update();
    this.timer = scheduler.every(everyMs, () => this.update());
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
    this.set(false, 'shutting down');
  }

  /** Re-evaluate now (the node's role or leader changed); nothing before start() or after stop(). */
  refresh(): void {
    if (this.timer !== null) this.update();
  }

  private update(): void {
    const { serving, reason } = this.judge();
    this.set(serving, reason);
  }

  private set(serving: boolean, reason: string): void {
    if (serving === this.last) return;
    for (const s of SERVICES) this.health.setStatus(s, serving ? 'SERVING' : 'NOT_SERVING');
    if (this.last !== null) {
      // With the CPU the process has used so far: at a start, what getting to SERVING cost it (issue 36's
      // restart figure, read from the log by scripts/restart-timing, with no poll's lag in it).
      if (serving) this.logger.info({ nodeId: this.nodeId, reason, processCpuMs: processCpuMs() }, 'health: SERVING');
      else this.logger.warn({ nodeId: this.nodeId, reason }, 'health: NOT_SERVING');
    }
    this.last = serving;
  }
}

function processCpuMs(): number {
  const used = process.cpuUsage();
  return Math.round((used.user + used.system) / 1000);
}
