// A machine restored from the applied store: each lease comes back carried through the term starts it had
// not seen (store-records.ts: its record counts the ones it saw), and the two lease heaps are rebuilt from
// them (deadline-heap.ts rebuild). A lease carried from the wrong term start has the wrong times, and a heap
// built out of order ends the wrong leases at a later term start. Checked: both heaps' invariants right after
// the restore, and the restored machine against the one that never stopped over the same further entries
// (term starts among them), the state compared after each term start.
import { MemoryLevel } from 'memory-level';
import { describe, expect, it } from 'vitest';
import { encodeCommand, LockMachine, type LockCommand } from '../../../src/lock/index.js';
import { AppliedStore } from '../../../src/state/applied-store.js';
import { LockStateStore } from '../../../src/state/lock-store.js';
import { SimRng } from '../../sim/rng.js';

const CONF = { clusterId: 'c', voters: ['n1'], learners: [], addresses: {}, removed: [] };
const inline = { soon: (f: () => void) => queueMicrotask(f), after: () => ({ cancel: () => {} }), every: () => ({ cancel: () => {} }) };
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** Entries for `machine`: acquires of many TTLs among term starts (after gaps), so its leases have seen
 *  different numbers of term starts, some extended, some ended. */
class Entries {
  private readonly rng: SimRng;
  private clockMs = 1_000;
  private term = 1;
  private n = 0;

  constructor(seed: number) {
    this.rng = new SimRng(seed);
  }

  next(): { term: number; command: LockCommand } {
    const roll = this.rng.float();
    if (roll < 0.08) {
      this.clockMs += Math.floor(this.rng.float() * 3_000); // a gap: the old leader's last stamp to the new one
      return { term: ++this.term, command: { type: 'termStart', timeMs: this.clockMs } };
    }
    this.clockMs += Math.floor(this.rng.float() * 40);
    const key = `k${Math.floor(this.rng.float() * 150)}`;
    const ttlMs = 500 + Math.floor(this.rng.float() * 8_000);
    return {
      term: this.term,
      command: { type: 'acquire', timeMs: this.clockMs, key, owner: `o${this.n % 5}`, ttlMs, requestId: `r${this.n++}` },
    };
  }
}

function applyNext(machine: LockMachine, entries: Entries): void {
  const { term, command } = entries.next();
  machine.apply(machine.appliedIndex + 1, term, encodeCommand(command));
}

async function restored(machine: LockMachine): Promise<LockMachine> {
  const db = new MemoryLevel<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' });
  const writer = new LockStateStore<LockMachine>(() => AppliedStore.open(db), inline);
  await writer.replace(machine, { index: machine.appliedIndex, term: 1, conf: CONF });
  await writer.close();
  await db.open();
  const reader = new LockStateStore<LockMachine>(() => AppliedStore.open(db), inline);
  const loaded = await reader.load({});
  await reader.close();
  return loaded!.machine;
}

describe('lease heaps rebuilt at a restore', () => {
  for (const seed of [1, 2, 3, 4]) {
    it(`seed ${seed}: in heap order by the right keys, and the restored machine goes on as the one that never stopped`, async () => {
      const machine = new LockMachine();
      const entries = new Entries(seed);
      for (let i = 0; i < 600; i++) applyNext(machine, entries);
      const epochsSeen = new Set([...machine.parts.leases.values()].map((lease) => lease.epochsSeen));
      expect(epochsSeen.size, 'leases that have seen different numbers of term starts').toBeGreaterThan(2);
      const copy = await restored(machine);
      expect(hex(copy.snapshot())).toBe(hex(machine.snapshot()));
      expect(copy.parts.endBy.checkInvariant(), 'the end-by heap').toBe(true);
      expect(copy.parts.deadlines.checkInvariant(), 'the deadline heap').toBe(true);
      for (let i = 0; i < 400; i++) {
        const { term, command } = entries.next();
        const bytes = encodeCommand(command);
        const index = machine.appliedIndex + 1;
        expect(copy.apply(index, term, bytes), `entry ${index} (${command.type})`).toEqual(machine.apply(index, term, bytes));
        if (command.type === 'termStart') expect(hex(copy.snapshot()), `after the term start at ${index}`).toBe(hex(machine.snapshot()));
      }
      expect(hex(copy.snapshot())).toBe(hex(machine.snapshot()));
    });
  }
});

describe('a restore of holds under sessions beside holds of their own', () => {
  it('puts only the holds of no session in the lease heaps, from the store and from a snapshot', async () => {
    const machine = new LockMachine();
    const apply = (command: LockCommand) => machine.apply(machine.appliedIndex + 1, 1, encodeCommand(command));
    const sessions: number[] = [];
    for (let s = 0; s < 3; s++) {
      apply({ type: 'openSession', timeMs: 1_000, owner: `o${s}`, ttlMs: 60_000, requestId: `open-${s}`, lockDelayMs: 0 });
      sessions.push(machine.appliedIndex); // a session's id is its entry's index
    }
    for (let i = 0; i < 300; i++) {
      const owner = `o${i % 3}`;
      const timeMs = 1_000 + i;
      if (i % 2 === 0) apply({ type: 'acquire', timeMs, key: `k${i}`, owner, ttlMs: 0, sessionId: sessions[i % 3]!, requestId: `r${i}` });
      else apply({ type: 'acquire', timeMs, key: `k${i}`, owner, ttlMs: 500 + i, requestId: `r${i}` });
    }
    const own = [...machine.parts.leases.values()].filter((lease) => lease.session === null).length;
    expect(own).toBe(150);
    for (const copy of [await restored(machine), LockMachine.restore(machine.snapshot())]) {
      expect(hex(copy.snapshot())).toBe(hex(machine.snapshot()));
      for (const heap of [copy.parts.deadlines, copy.parts.endBy]) {
        expect(heap.size).toBe(own);
        expect(heap.checkInvariant()).toBe(true);
      }
      // Every hold of its own is due by then; a session's holds are not (they end with their session).
      expect(copy.expiredLeases(50_000, 1_000)).toEqual(machine.expiredLeases(50_000, 1_000));
    }
  });
});
