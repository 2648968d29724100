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

/** Periodic callbacks of one interval share one Node interval timer, run in the order they were added:
 *  the Raft tick, the lock leader's housekeeping and the node's health and quorum looks then wake the
 *  event loop once per period instead of once each (on two shared cores a wake-up costs ~50 µs; at idle
 *  they were a quarter of a node's CPU, issue 37). A callback added later runs at the group's next beat,
 *  within one interval, which is all a periodic look needs. A period that is a whole multiple of a running
 *  group's rides that group, on every k-th beat (the quorum watch's 250 ms on the 50 ms tick): its own timer
 *  would be a wake-up of its own, out of phase with the tick's. */
const everyGroups = new Map<number, { timer: NodeJS.Timeout; entries: EveryEntry[] }>();

interface EveryEntry {
  fn: () => void;
  live: boolean;
  /** Runs on every `beats`-th beat of its group (1: every beat)... */
  beats: number;
  /** ...counting its group's beats since it was added. */
  beaten: number;
}

function everyShared(intervalMs: number, fn: () => void): TimerHandle {
  let groupMs = intervalMs;
  let group = everyGroups.get(intervalMs);
  if (group === undefined) {
    for (const [ms, g] of everyGroups) {
      if (intervalMs % ms === 0 && (group === undefined || ms > groupMs)) {
        group = g;
        groupMs = ms;
      }
    }
  }
  if (group === undefined) {
    const entries: EveryEntry[] = [];
    // A copy per beat, and a cancelled entry skipped: a callback that cancels another (a role change in
    // the Raft tick stops the housekeeping) or adds one behaves as with a timer each.
    const timer = setInterval(() => {
      for (const e of entries.slice()) {
        if (!e.live) continue;
        if (++e.beaten < e.beats) continue;
        e.beaten = 0;
        e.fn();
      }
    }, intervalMs);
    timer.unref?.();
    group = { timer, entries };
    everyGroups.set(intervalMs, group);
  }
  const entry: EveryEntry = { fn, live: true, beats: intervalMs / groupMs, beaten: 0 };
  group.entries.push(entry);
  const g = group;
  return {
    cancel: () => {
      if (!entry.live) return;
      entry.live = false;
      g.entries.splice(g.entries.indexOf(entry), 1);
      if (g.entries.length === 0 && everyGroups.get(groupMs) === g) {
        clearInterval(g.timer);
        everyGroups.delete(groupMs);
      }
    },
  };
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
  every: everyShared,
};

/** Math.random is fine for jitter outside the simulator: nothing depends on replaying it. */
export const processRng: Rng = { int: (n) => Math.floor(Math.random() * n) };

export function realEnv(): NodeEnv {
  // Anchored to the wall clock once, then monotonic: an NTP step must not move stamps or deadlines.
  const wallAtStart = Date.now() - performance.now();
  return { nowMs: () => Math.floor(wallAtStart + performance.now()), scheduler: realScheduler, rng: processRng };
}
