// What the applied-store tests share: a scheduler the test fires by hand, a configuration, byte equality, a
// wait for the store's queued writes, and a machine's records written as the previous build's store kept them.
import type { LockMachine } from '../../../src/lock/index.js';
import { StoreRecords } from '../../../src/lock/store-records.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { MemoryLevel } from 'memory-level';
import {
  META_FORMAT_BYTES,
  META_KEY,
  encodeMeta,
  generationPrefix,
  type AppliedPoint,
  type RecordDb,
} from '../../../src/state/applied-store.js';
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

/** A store's LevelDB as a test writes it directly (`put`) and reopens it (`open`). */
export type TestDb = RecordDb & { open(): Promise<void>; put(key: Uint8Array, value: Uint8Array): Promise<void> };

/** The two LevelDBs the store runs on, each opened fresh by its factory: a real one in a temporary directory
 *  (removed by `cleanUp`) and memory-level. */
export function dbKinds(dirPrefix: string): { kinds: [string, () => Promise<TestDb>][]; cleanUp: () => void } {
  const dirs: string[] = [];
  const open = async (db: { open(): Promise<void> }): Promise<TestDb> => {
    await db.open();
    return db as unknown as TestDb;
  };
  return {
    kinds: [
      [
        'LevelDB',
        () => {
          const dir = mkdtempSync(join(tmpdir(), dirPrefix));
          dirs.push(dir);
          return open(new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' }));
        },
      ],
      ['memory-level', () => open(new MemoryLevel<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' }))],
    ],
    cleanUp: () => {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}
