// A second workload, to show (and test) how a state machine plugs into the simulator — the lock machine
// will plug in the same way. A counter: every write adds a positive amount; apply returns the new total
// (the client learns it on ack), reads return the total. Checks use only what clients saw:
//   - an acknowledged increment's total was produced by exactly one entry (totals strictly increase);
//   - a read invoked after an increment was acknowledged returns at least that increment's total, and
//     a later read never returns less than an earlier completed one (linearizable counter).
import type { Entry } from '../../src/raft/core/types.js';
import { fnv1a, type SimStateMachine } from './machine.js';
import type { Ack, HistoryEvent, ReadServe, SimWorkload, WriteContext } from './workload.js';

export class CounterMachine implements SimStateMachine {
  total = 0;
  private rolling = 0x811c9dc5;

  apply(entry: Entry): unknown {
    if (entry.kind !== 'normal') return undefined;
    const amount = new DataView(entry.data.buffer, entry.data.byteOffset, entry.data.byteLength).getUint32(4, true);
    this.total += amount;
    this.rolling = fnv1a(entry.data, this.rolling);
    return this.total;
  }

  digest(): string {
    return `${this.total}:${this.rolling}`;
  }

  snapshot(): Uint8Array {
    const out = new Uint8Array(12);
    const dv = new DataView(out.buffer);
    dv.setFloat64(0, this.total, true);
    dv.setUint32(8, this.rolling, true);
    return out;
  }

  restore(data: Uint8Array): void {
    if (data.length === 0) {
      this.total = 0;
      this.rolling = 0x811c9dc5;
      return;
    }
    const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
    this.total = dv.getFloat64(0, true);
    this.rolling = dv.getUint32(8, true);
  }
}

export class CounterWorkload implements SimWorkload<CounterMachine> {
  readonly name = 'counter';
  readonly readRatio = 0.4;
  /** Every history event seen through observe(), to check the hook delivers them all. */
  readonly observed: HistoryEvent[] = [];

  createStateMachine(): CounterMachine {
    return new CounterMachine();
  }

  nextWrite(ctx: WriteContext): Uint8Array {
    const out = new Uint8Array(8);
    const dv = new DataView(out.buffer);
    dv.setUint32(0, ctx.opId, true);
    dv.setUint32(4, 1 + ctx.rng.int(5), true);
    return out;
  }

  /** Driver-side proposals: a zero increment whenever a node becomes leader (like the lock machine's
   *  leader-epoch entry). Counted, to check the hook runs. */
  electedProposals = 0;
  leaderProposals(ctx: { reason: 'elected' | 'tick' }): Uint8Array[] {
    if (ctx.reason !== 'elected') return [];
    this.electedProposals++;
    return [new Uint8Array(8)];
  }

  readValue(sm: CounterMachine, _read: ReadServe): unknown {
    return sm.total;
  }

  checkRead(sm: CounterMachine, read: ReadServe, ackedBefore: readonly Ack[]): string | null {
    for (const a of ackedBefore) {
      if ((a.result as number) > sm.total)
        return `read op${read.opId} at ${read.node} sees total ${sm.total}, below acknowledged total ${String(a.result)}`;
    }
    return null;
  }

  checkAck(ack: Ack, all: readonly Ack[]): string | null {
    for (let i = 0; i < all.length - 1; i++) {
      const other = all[i]!;
      if (other.result === ack.result && other.index !== ack.index)
        return `two entries (${other.index}, ${ack.index}) both produced total ${String(ack.result)}`;
    }
    return null;
  }

  observe(event: HistoryEvent): void {
    this.observed.push(event);
  }

  checkHistory(history: readonly HistoryEvent[]): string | null {
    // Reads must never go backwards in real time: a read invoked after another read completed returns
    // at least its value; and at least the total of every increment acknowledged before it started.
    const invokedAt = new Map<number, number>();
    for (const e of history) if (e.type === 'invoke') invokedAt.set(e.opId, e.time);
    const done = history.filter((e) => e.type === 'ok').sort((a, b) => a.time - b.time);
    for (const r of done) {
      if (r.kind !== 'read') continue;
      const start = invokedAt.get(r.opId)!;
      for (const prior of done) {
        if (prior.time >= start) break;
        if ((prior.result as number) > (r.result as number)) {
          return `read op${r.opId} (invoked ${start.toFixed(2)}ms) returned ${String(r.result)}, but op${prior.opId} completed earlier with ${String(prior.result)}`;
        }
      }
    }
    return null;
  }
}
