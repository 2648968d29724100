// What the applied-store tests share: a scheduler the test fires by hand, a configuration, byte equality, and
// a wait for the store's queued writes.
import type { Scheduler } from '../../../src/raft/env.js';

export class ManualScheduler implements Scheduler {
  private readonly intervals: (() => void)[] = [];
  soon(fn: () => void): void {
    queueMicrotask(fn);
  }
  after(_delayMs: number, fn: () => void) {
    queueMicrotask(fn);
    return { cancel: () => {} };
  }
  every(_intervalMs: number, fn: () => void) {
    this.intervals.push(fn);
    return { cancel: () => this.intervals.splice(this.intervals.indexOf(fn), 1) };
  }
  fire(): void {
    for (const fn of [...this.intervals]) fn();
  }
}

export const CONF = { clusterId: 'c', voters: ['n1', 'n2', 'n3'], learners: [], addresses: {}, removed: [] };
export const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}
