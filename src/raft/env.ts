// Time, scheduling and randomness as the driver and the server's leader logic receive them. Production
// passes `realEnv()` (Node timers, setImmediate, Math.random, a monotonic clock); the simulator passes
// its own, so the same driver loop runs on virtual time under one seed.
import type { Rng } from './core/types.js';

export interface TimerHandle {
  cancel(): void;
}

export interface Scheduler {
  /** Run `fn` after the current event has finished (setImmediate in production). */
  soon(fn: () => void): void;
  /** Run `fn` once, `delayMs` from now. */
  after(delayMs: number, fn: () => void): TimerHandle;
  /** Run `fn` every `intervalMs` until cancelled. */
  every(intervalMs: number, fn: () => void): TimerHandle;
}

export interface NodeEnv {
  /** Milliseconds on a clock that never goes back (deadlines, stamps). */
  nowMs(): number;
  scheduler: Scheduler;
  /** Election-timeout jitter. */
  rng: Rng;
}

/** Node's timers. They are unref'd: a pending deadline never keeps a process alive on its own. */
export const realScheduler: Scheduler = {
  soon(fn) {
    setImmediate(fn);
  },
  after(delayMs, fn) {
    const t = setTimeout(fn, delayMs);
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
  every(intervalMs, fn) {
    const t = setInterval(fn, intervalMs);
    t.unref?.();
    return { cancel: () => clearInterval(t) };
  },
};

/** Math.random is fine for jitter outside the simulator: nothing depends on replaying it. */
export const processRng: Rng = { int: (n) => Math.floor(Math.random() * n) };

export function realEnv(): NodeEnv {
  // Anchored to the wall clock once, then monotonic: an NTP step must not move stamps or deadlines.
  const wallAtStart = Date.now() - performance.now();
  return { nowMs: () => Math.floor(wallAtStart + performance.now()), scheduler: realScheduler, rng: processRng };
}
