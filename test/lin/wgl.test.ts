// The WGL search itself, on the textbook register model, so its correctness does not rest on the lock model.
import { describe, expect, it } from 'vitest';
import { checkLinearizable, type Model, type TimedOp } from './wgl.js';

type RegOp = { kind: 'write'; value: number } | { kind: 'read'; value: number };
const register: Model<number, RegOp> = {
  init: () => 0,
  step: (s, op) => (op.kind === 'write' ? op.value : op.value === s ? s : null),
  key: (s) => String(s),
};
const w = (value: number, callMs: number, retMs: number): TimedOp<RegOp> => ({ callMs, retMs, op: { kind: 'write', value } });
const r = (value: number, callMs: number, retMs: number): TimedOp<RegOp> => ({ callMs, retMs, op: { kind: 'read', value } });

describe('WGL linearizability search', () => {
  it('accepts a read that overlaps a write and returns either value', () => {
    expect(checkLinearizable([w(1, 0, 10), r(1, 5, 6)], register).linearizable).toBe(true);
    expect(checkLinearizable([w(1, 0, 10), r(0, 5, 6)], register).linearizable).toBe(true);
  });

  it('rejects a read of the old value after the write completed', () => {
    const res = checkLinearizable([w(1, 0, 10), r(0, 11, 12)], register);
    expect(res.linearizable).toBe(false);
    if (res.linearizable === false) expect(res.stuckAt).toBe(1);
  });

  it('rejects reads that see two concurrent writes in opposite orders', () => {
    // Two writers overlap; reader 1 sees 1 then 2, reader 2 sees 2 then 1 — no single order explains both.
    const ops = [w(1, 0, 100), w(2, 0, 100), r(1, 10, 20), r(2, 30, 40), r(2, 10, 20), r(1, 30, 40)];
    expect(checkLinearizable(ops, register).linearizable).toBe(false);
    // Same reads where both readers agree: fine.
    const agree = [w(1, 0, 100), w(2, 0, 100), r(1, 10, 20), r(2, 30, 40), r(1, 10, 20), r(2, 30, 40)];
    expect(checkLinearizable(agree, register).linearizable).toBe(true);
  });

  it('needs backtracking: the first choice of order is wrong', () => {
    const ops = [w(1, 0, 50), w(2, 0, 50), r(1, 60, 70)];
    expect(checkLinearizable(ops, register).linearizable).toBe(true);
  });

  it('handles a long concurrent history quickly (the cache prunes)', () => {
    const ops: TimedOp<RegOp>[] = [];
    for (let i = 0; i < 400; i++) {
      ops.push(w(i, i * 10, i * 10 + 25)); // each write overlaps the next two
      ops.push(r(i, i * 10 + 26, i * 10 + 27));
    }
    // Each read returns the write that just completed: valid if the two still-running writes go after it.
    const started = Date.now();
    expect(checkLinearizable(ops, register, { budgetMs: 5000 }).linearizable).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
    // One read in the middle sees a value two writes old: the later writes had completed.
    ops[401] = r(190, 2006, 2007);
    expect(checkLinearizable(ops, register, { budgetMs: 5000 }).linearizable).toBe(false);
  });

  it('reports unknown, not a verdict, when the budget runs out', () => {
    const ops: TimedOp<RegOp>[] = [];
    for (let i = 0; i < 22; i++) ops.push(w(i, 0, 1000));
    for (let i = 0; i < 22; i++) ops.push(r(-1, 1001 + i, 1002 + i)); // impossible, but only after trying every order
    const res = checkLinearizable(ops, register, { budgetMs: 50 });
    expect(res.linearizable).toBe('unknown');
  });
});
