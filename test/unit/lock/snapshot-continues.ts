// A check the random-log tests share: the machine's snapshot restores byte for byte; a sliced snapshot opened
// now, with entries applied between its slices, equals it; and the restored copy answers every entry applied
// since exactly as the original did, ending in the same state.
import { expect } from 'vitest';
import { encodeCommand, LockMachine } from '../../../src/lock/index.js';
import type { LockCommand, LockMachineOptions, LockResult } from '../../../src/lock/index.js';
import { canonicalResult } from '../../sim/lock-invariants.js';

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
