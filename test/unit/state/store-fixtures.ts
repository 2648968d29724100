// What the applied-store tests share: a scheduler the test fires by hand, a configuration, byte equality, a
// wait for the store's queued writes, and a machine's records written as the previous build's store kept them.
import type { LockMachine } from '../../../src/lock/index.js';
import { StoreRecords } from '../../../src/lock/store-records.js';
import { META_FORMAT_BYTES, META_KEY, encodeMeta, generationPrefix, type AppliedPoint } from '../../../src/state/applied-store.js';
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

/** `machine`'s records as a store of meta format 1 keeps them (generation 1, every value as it is) at `point`. */
export async function writeFormat1(
  db: { put(key: Uint8Array, value: Uint8Array): Promise<void> },
  machine: LockMachine,
  point: AppliedPoint,
): Promise<void> {
  const tracker = new StoreRecords(machine);
  const prefix = generationPrefix(1);
  for (const op of tracker.all()) await db.put(Uint8Array.of(...prefix, ...op.key), op.value!);
  tracker.detach();
  await db.put(META_KEY, encodeMeta(1, point, META_FORMAT_BYTES));
}
