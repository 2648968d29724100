// A test-only clock for one node process: true time (this host's monotonic clock) seen through a wall-clock
// offset and a rate error. It becomes the node's NodeEnv, so the driver, the lock service and everything
// else that takes time from the env reads it; the system clock itself is never touched.
//
// The model follows src/raft/env.ts and src/lock/LEASES.md:
//   - wall(t) = t + offsetMs. A change of offsetMs is a wall-clock jump (forward or back).
//   - mono(t) advances at rate 1 + driftPpm/1e6 and never jumps; a drift change bends it, never steps it.
//   - nowMs() = wall at process start + mono — the node's stamps and deadlines, like realEnv(). A wall jump
//     therefore reaches nowMs() only through a restart (a new anchor), which is what an NTP step does to a
//     real node. Offsets between nodes are arbitrary in LEASES.md (A1); only rate matters within a term.
// Inside the model: any offset, any jump, and drift within the client's margin (leaseSafetyFraction,
// default 2 % = 20 000 ppm fast; slow clocks only hold leases longer). Outside it — so the checker may
// rightly flag what follows — a leader clock faster than the client's margin, and a monotonic clock that
// steps (not offered here: no host's CLOCK_MONOTONIC does that).
import { performance } from 'node:perf_hooks';
import { processRng, type NodeEnv, type Scheduler, type TimerHandle } from '../raft/env.js';
import type { ClockFaults } from './spec.js';

export const trueNowMs = (): number => performance.timeOrigin + performance.now();

const rateOf = (driftPpm: number | undefined): number => 1 + (driftPpm ?? 0) / 1e6;

export class FaultClock {
  private rate: number;
  /** True and monotonic time at the last rate change: mono(t) = baseMono + (t - baseTrue) * rate. */
  private baseTrueMs: number;
  private baseMonoMs = 0;
  private offsetMs: number;
  /** The wall clock as read once at start: nowMs() = anchor + mono, as in realEnv(). */
  private readonly anchorMs: number;

  constructor(
    initial: ClockFaults = {},
    private readonly trueNow: () => number = trueNowMs,
  ) {
    this.baseTrueMs = trueNow();
    this.offsetMs = initial.offsetMs ?? 0;
    this.rate = rateOf(initial.driftPpm);
    this.anchorMs = this.baseTrueMs + this.offsetMs;
  }

  /** Apply a new setting: the offset is a wall jump (seen at the next start), the drift bends mono from now. */
  set(c: ClockFaults): void {
    this.baseMonoMs = this.monoMs();
    this.baseTrueMs = this.trueNow();
    this.rate = rateOf(c.driftPpm);
    this.offsetMs = c.offsetMs ?? 0;
  }

  /** Milliseconds on the node's monotonic clock since it started. */
  monoMs(): number {
    return this.baseMonoMs + (this.trueNow() - this.baseTrueMs) * this.rate;
  }

  /** The node's stamps and deadlines (NodeEnv.nowMs). Never goes back: mono is non-decreasing. */
  nowMs(): number {
    return Math.floor(this.anchorMs + this.monoMs());
  }

  /** What the node's wall clock (Date.now) would say now: reported, never used for stamps. */
  wallMs(): number {
    return this.trueNow() + this.offsetMs;
  }

  /** How many node-clock milliseconds pass per true millisecond. */
  get ratePerTrueMs(): number {
    return this.rate;
  }

  /** Timers measured on this clock: a node whose clock runs fast fires them early in true time. */
  scheduler(): Scheduler {
    const after = (delayMs: number, fn: () => void): TimerHandle => {
      const targetMs = this.monoMs() + delayMs;
      let t: NodeJS.Timeout | null = null;
      const arm = () => {
        // Re-checked on every fire, so a rate change while the timer waits still ends it on the node's clock.
        const left = targetMs - this.monoMs();
        if (left <= 0.5) {
          t = null;
          fn();
          return;
        }
        t = setTimeout(arm, Math.max(1, left / this.rate));
        t.unref?.();
      };
      t = setTimeout(arm, Math.max(0, delayMs / this.rate));
      t.unref?.();
      return { cancel: () => (t ? clearTimeout(t) : undefined) };
    };
    return {
      soon: (fn) => setImmediate(fn),
      after,
      every: (intervalMs, fn) => {
        let cancelled = false;
        let current: TimerHandle | null = null;
        const tick = () => {
          if (cancelled) return;
          current = after(intervalMs, tick);
          fn();
        };
        current = after(intervalMs, tick);
        return {
          cancel: () => {
            cancelled = true;
            current?.cancel();
          },
        };
      },
    };
  }

  env(): NodeEnv {
    return { nowMs: () => this.nowMs(), scheduler: this.scheduler(), rng: processRng };
  }
}
