// expiredLeases() settles at most SETTLE_PER_CALL leases a call. After a stop longer than the leases had left
// to run, every lease's stored deadline (from before the stop) is past at the new term's log time, so all of
// them are candidates at once: a 1M-lock leader settled, touched and rewrote every one in its first
// housekeeping tick and lost its term. Until the due part is settled the answer is empty: late, never early.
import { describe, expect, it } from 'vitest';
import { encodeCommand, LockMachine } from '../../../src/lock/index.js';
import type { LockCommand } from '../../../src/lock/index.js';
import { SETTLE_PER_CALL } from '../../../src/lock/machine-views.js';
import { StoreRecords } from '../../../src/lock/store-records.js';

const LEASES = 2 * SETTLE_PER_CALL + 100;
const TTL_MS = 1_000;
const T0 = 1_764_000_000_000;
const STOP_MS = 3_600_000;

describe('settling due leases a bounded number at a time', () => {
  it('settles at most SETTLE_PER_CALL a call, answers nothing until all are settled, then exactly what is due', () => {
    const machine = new LockMachine();
    let term = 1;
    const apply = (command: LockCommand) =>
      machine.apply(machine.appliedIndex + 1, command.type === 'termStart' ? ++term : term, encodeCommand(command));
    apply({ type: 'termStart', timeMs: T0 });
    for (let i = 0; i < LEASES; i++)
      apply({ type: 'acquire', timeMs: T0 + 1, key: `k${i}`, owner: 'o', ttlMs: TTL_MS, requestId: `r${i}` });
    const records = new StoreRecords(machine);
    // The cluster stops for an hour; the new leader's term starts then: every lease is carried (observed
    // time is counted in completed terms: 0 of its ttl) to a full ttl from the term's start.
    const startMs = T0 + STOP_MS;
    apply({ type: 'termStart', timeMs: startMs });
    records.take(); // what the term start itself changed

    const settledPerCall: number[] = [];
    const answers: number[] = [];
    for (let call = 0; call < 4; call++) {
      answers.push(machine.expiredLeases(startMs, 100).length);
      settledPerCall.push(records.take().filter((op) => op.key[0] === 0x6b).length); // key records rewritten
    }
    expect(settledPerCall).toEqual([SETTLE_PER_CALL, SETTLE_PER_CALL, 100, 0]);
    expect(answers).toEqual([0, 0, 0, 0]); // nothing is due: every lease was extended to startMs + TTL_MS
    expect(machine.expiredLeases(startMs + TTL_MS - 1, 100)).toEqual([]);
    const due = machine.expiredLeases(startMs + TTL_MS, LEASES);
    expect(due.length).toBe(LEASES);
    expect(new Set(due.map((d) => d.key)).size).toBe(LEASES);
  });
});
