// Virtual time for driver tests: a NodeEnv whose timers fire only when the test advances the clock, in
// (time, order) order, with every promise continuation settled between two timers. Deterministic: no
// real timers, no sleeps.
import type { NodeEnv, Scheduler, TimerHandle } from '../../../src/raft/env.js';
import type { Rng } from '../../../src/raft/core/types.js';
import { SimRng } from '../../sim/rng.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  every: number;
  cancelled: boolean;
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class VirtualEnv implements Scheduler {
  nowMs = 0;
  private timers: Timer[] = [];
  private seq = 0;
  readonly rng: Rng;

  constructor(seed = 1) {
    this.rng = SimRng.derive(seed, 'driver-test');
  }

  /** An env for one node (all nodes share the clock and the timer queue). */
  env(): NodeEnv {
    return { nowMs: () => this.nowMs, scheduler: this, rng: this.rng };
  }

  soon(fn: () => void): void {
    this.add(0, fn, 0);
  }

  after(delayMs: number, fn: () => void): TimerHandle {
    const t = this.add(delayMs, fn, 0);
    return { cancel: () => (t.cancelled = true) };
  }

  every(intervalMs: number, fn: () => void): TimerHandle {
    const t = this.add(intervalMs, fn, intervalMs);
    return { cancel: () => (t.cancelled = true) };
  }

  private add(delayMs: number, fn: () => void, every: number): Timer {
    const t: Timer = { at: this.nowMs + Math.max(0, delayMs), seq: this.seq++, fn, every, cancelled: false };
    this.timers.push(t);
    return t;
  }

  /** Fire timers in order until `done()` holds; throws if it does not within `withinMs` of virtual time. */
  async runUntil(what: string, done: () => boolean, withinMs = 10_000): Promise<void> {
    const deadline = this.nowMs + withinMs;
    await settle();
    while (!done()) {
      const next = this.next();
      if (next === null || next.at > deadline) throw new Error(`${what} did not happen within ${withinMs} virtual ms (now ${this.nowMs})`);
      this.nowMs = next.at;
      // A periodic timer stays queued (same object, so its handle still cancels it); a one-shot leaves.
      if (next.every > 0) {
        next.at += next.every;
        next.seq = this.seq++;
      } else {
        this.timers.splice(this.timers.indexOf(next), 1);
      }
      next.fn();
      await settle();
    }
  }

  /** Runs virtual time until `p` settles; its outcome. */
  async until<T>(p: Promise<T>, withinMs = 10_000): Promise<T> {
    let done = false;
    const watched = p.finally(() => (done = true));
    await this.runUntil('a call to settle', () => done, withinMs);
    return watched;
  }

  /** Let `ms` of virtual time pass. */
  async advance(ms: number): Promise<void> {
    const target = this.nowMs + ms;
    await this.runUntil(`advancing ${ms}ms`, () => (this.next()?.at ?? Infinity) > target, ms + 1);
    this.nowMs = target;
  }

  /** The earliest live timer (cancelled ones are dropped on the way). */
  private next(): Timer | null {
    this.timers = this.timers.filter((t) => !t.cancelled);
    let best: Timer | null = null;
    for (const t of this.timers) if (best === null || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    return best;
  }
}
