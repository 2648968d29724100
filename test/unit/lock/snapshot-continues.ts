// A check the random-log tests share: the machine's snapshot restores byte for byte; a sliced snapshot opened
// now, with entries applied between its slices, equals it; and the restored copy answers every entry applied
// since exactly as the original did, ending in the same state. And the applied store's records
// (store-records.ts), written batch by batch since the first check, restore to the same state and hold no
// record the state does not have.
import { expect } from 'vitest';
import { encodeCommand, LockMachine } from '../../../src/lock/index.js';
import type { LockCommand, LockMachineOptions, LockResult } from '../../../src/lock/index.js';
import { canonicalResult } from '../../sim/lock-invariants.js';
import { StoreRecords, restoreFromRecords, type RecordOp } from '../../../src/lock/store-records.js';

/** Each machine's tracker and the records its batches wrote so far (by key, hex). */
const stores = new WeakMap<LockMachine, { tracker: StoreRecords; records: Map<string, [Uint8Array, Uint8Array]> }>();

function write(records: Map<string, [Uint8Array, Uint8Array]>, ops: RecordOp[]): void {
  for (const op of ops) {
    const id = Buffer.from(op.key).toString('hex');
    if (op.value === null) records.delete(id);
    else records.set(id, [op.key, op.value]);
  }
}

/** The store's batches since the last check restore to the machine's state, and the store holds exactly its
 *  records. The first check of a machine attaches the tracker and writes the whole state. */
export function checkStoreRecords(machine: LockMachine, seed: number, options: Partial<LockMachineOptions>): void {
  const known = stores.get(machine);
  if (known === undefined) {
    const tracker = new StoreRecords(machine);
    const records = new Map<string, [Uint8Array, Uint8Array]>();
    write(records, tracker.all());
    stores.set(machine, { tracker, records });
    return;
  }
  write(known.records, known.tracker.take());
  const all = [...known.records.values()];
  const restored = restoreFromRecords(
    {
      rest: all.find(([k]) => k.length === 1 && k[0] === 0x72)![1],
      sessions: all.filter(([k]) => k[0] === 0x53).sort((a, b) => Buffer.compare(a[0], b[0])),
      keys: all.filter(([k]) => k[0] === 0x6b),
      dedup: all.filter(([k]) => k[0] === 0x64),
      lines: all.filter(([k]) => k[0] === 0x77),
      keyDelays: all.filter(([k]) => k[0] === 0x78),
    },
    options,
  ).machine;
  expect(restored.snapshot(), `seed ${seed} entry ${machine.appliedIndex}: the store's records restore to another state`).toEqual(
    machine.snapshot(),
  );
  const parts = machine.parts;
  expect(known.records.size, `seed ${seed}: records in the store`).toBe(
    parts.sessions.size +
      parts.lines.keyCount +
      parts.delays.keyCount +
      parts.leases.size +
      parts.freeKeyLastTokens.size +
      parts.dedup.size +
      1,
  );
}

export interface RandomLog {
  machine: LockMachine;
  next(): { command: LockCommand; term: number };
  apply(c: { command: LockCommand; term: number }): LockResult;
}

/** Runs the check on `log` now; returns the restored copy (for further checks) and how many entries applied
 *  between the snapshot's slices. */
export function checkSnapshotContinues(
  log: RandomLog,
  seed: number,
  options: Partial<LockMachineOptions>,
): { copy: LockMachine; slices: number } {
  checkStoreRecords(log.machine, seed, options);
  const bytes = log.machine.snapshot();
  const copy = LockMachine.restore(bytes, options);
  expect(copy.snapshot(), `seed ${seed} entry ${log.machine.appliedIndex}: restore is not byte-identical`).toEqual(bytes);
  const job = log.machine.beginSnapshot(bytes.length, 3);
  const replay: { next: { command: LockCommand; term: number }; result: LockResult }[] = [];
  while (!job.step()) {
    const next = log.next();
    replay.push({ next, result: log.apply(next) });
  }
  expect(job.finish(), `seed ${seed}: a sliced snapshot differs from the one taken at its opening`).toEqual(bytes);
  for (const { next, result } of replay) {
    const got = copy.apply(copy.appliedIndex + 1, next.term, encodeCommand(next.command));
    expect(canonicalResult(got), `seed ${seed}: the restored copy answered entry ${got.index} differently`).toBe(canonicalResult(result));
  }
  expect(copy.snapshot(), `seed ${seed}: the restored copy diverged after ${replay.length} entries`).toEqual(log.machine.snapshot());
  return { copy, slices: replay.length };
}
