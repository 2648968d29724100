// A restart reads the key records with their keys as text (applied-store.ts scanTextKeys: far cheaper than a
// Buffer a key) and falls back to bytes where text cannot be trusted: a key holding U+FFFD (a real one, or
// bad UTF-8 decoded laxly) and a generation whose prefix is not ASCII. Either way the same state comes back,
// and a key that is not UTF-8 is refused.
import { MemoryLevel } from 'memory-level';
import { describe, expect, it } from 'vitest';
import { encodeCommand, type LockCommand } from '../../../src/lock/commands.js';
import { LockMachine } from '../../../src/lock/index.js';
import { RecordsRestorer, StoreRecords } from '../../../src/lock/store-records.js';
import { AppliedStore, META_KEY, decodeMeta } from '../../../src/state/applied-store.js';
import { LockStateStore, type RecordsModule } from '../../../src/state/lock-store.js';

const CONF = { clusterId: 'c', voters: ['n1'], learners: [], addresses: {}, removed: [] };
const inline = { soon: (f: () => void) => queueMicrotask(f), after: () => ({ cancel: () => {} }), every: () => ({ cancel: () => {} }) };
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** store-records.ts, counting how each key record reached the restorer. */
function countingRecords(counts: { text: number; bytes: number }): RecordsModule<LockMachine> {
  class Counting extends RecordsRestorer {
    override key(key: Uint8Array, value: Uint8Array): void {
      counts.bytes++;
      super.key(key, value);
    }
    override keyNamed(name: string, value: Uint8Array): void {
      counts.text++;
      super.keyNamed(name, value);
    }
  }
  return { StoreRecords, RecordsRestorer: Counting } as unknown as RecordsModule<LockMachine>;
}

function machineHolding(keys: string[]): LockMachine {
  const machine = new LockMachine({});
  let index = 0;
  const apply = (command: LockCommand) => machine.apply(++index, 1, encodeCommand(command));
  apply({ type: 'openSession', timeMs: 1_000, owner: 'o', ttlMs: 60_000, requestId: 's', lockDelayMs: 0 });
  keys.forEach((key, i) =>
    apply(
      i % 2 === 0
        ? { type: 'acquire', timeMs: 1_000, key, owner: 'o', ttlMs: 0, sessionId: 1, requestId: `r${i}` }
        : { type: 'acquire', timeMs: 1_000, key, owner: `p${i}`, ttlMs: 5_000, requestId: `r${i}` },
    ),
  );
  // A freed key too (a free record).
  apply({ type: 'release', timeMs: 1_000, key: keys[1]!, owner: 'p1', token: 3n, requestId: '' });
  return machine;
}

async function reload(db: MemoryLevel<Uint8Array, Uint8Array>, counts: { text: number; bytes: number }, scanBatchRecords?: number) {
  const store = new LockStateStore<LockMachine>(
    () => AppliedStore.open(db, undefined, undefined, scanBatchRecords),
    inline,
    countingRecords(counts),
  );
  const loaded = await store.load({});
  await store.close();
  return loaded!.machine;
}

function openDb(): MemoryLevel<Uint8Array, Uint8Array> {
  return new MemoryLevel<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' });
}

async function written(machine: LockMachine, replaces = 1): Promise<MemoryLevel<Uint8Array, Uint8Array>> {
  const db = openDb();
  const store = new LockStateStore<LockMachine>(() => AppliedStore.open(db), inline);
  for (let i = 0; i < replaces; i++) await store.replace(machine, { index: machine.appliedIndex, term: 1, conf: CONF });
  await store.close();
  await db.open();
  return db;
}

const PLAIN = ['alpha', 'a-key-of-twenty-chars', 'ключ-ü', '\uFEFFbom-first', 'zz-last'];

describe('key records read as text at a restart', () => {
  it('reads every key as text when none holds U+FFFD, the state byte for byte', async () => {
    const machine = machineHolding(PLAIN);
    const counts = { text: 0, bytes: 0 };
    const restored = await reload(await written(machine), counts);
    expect(hex(restored.snapshot())).toBe(hex(machine.snapshot()));
    expect(counts).toEqual({ text: PLAIN.length, bytes: 0 });
  });

  it('reads the keys from the first one holding U+FFFD on as bytes, each once, the state byte for byte', async () => {
    const keys = ['alpha', 'b\uFFFDreal', 'c-after', 'd-\uFFFD-too', 'e-last'];
    const machine = machineHolding(keys);
    const counts = { text: 0, bytes: 0 };
    const restored = await reload(await written(machine), counts);
    expect(hex(restored.snapshot())).toBe(hex(machine.snapshot()));
    expect(counts).toEqual({ text: 1, bytes: 4 }); // 'alpha' as text; from 'b\uFFFDreal' on as bytes
  });

  it('reads a generation whose prefix is not ASCII (the 128th) as bytes, the state byte for byte', async () => {
    const machine = machineHolding(PLAIN);
    const db = await written(machine, 128);
    expect(decodeMeta((await db.get(META_KEY))!).generation).toBe(128);
    const counts = { text: 0, bytes: 0 };
    const restored = await reload(db, counts);
    expect(hex(restored.snapshot())).toBe(hex(machine.snapshot()));
    expect(counts).toEqual({ text: 0, bytes: PLAIN.length });
  });

  it('refuses a key record whose key is not UTF-8 (read laxly as text, it holds U+FFFD)', async () => {
    const db = await written(machineHolding(PLAIN));
    const rows = await db.iterator().all();
    const [storedKey, value] = rows.find(([k]) => k[4] === 0x6b)!;
    const bad = Uint8Array.of(...storedKey.subarray(0, 5), 0x61, 0xff, 0x62);
    await db.del(storedKey);
    await db.put(bad, value);
    await expect(reload(db, { text: 0, bytes: 0 })).rejects.toThrow(/a key record with a bad key/);
  });
});

describe('a restart read in small reads', () => {
  // Every edge between two reads of the scans (the records before the key records, the key records as text
  // and, from a key holding U+FFFD on, as bytes, the records after them): each record reaches the restorer
  // once, none is lost where a read ends.
  const keys = Array.from({ length: 37 }, (_, i) => (i === 29 ? `k-${i}-\uFFFD` : `k-${String(i).padStart(2, '0')}`));
  for (const reads of [1, 2, 3, 7, 64]) {
    it(`in reads of ${reads} records: the state byte for byte, every key once`, async () => {
      const machine = machineHolding(keys);
      const counts = { text: 0, bytes: 0 };
      const restored = await reload(await written(machine), counts, reads);
      expect(hex(restored.snapshot())).toBe(hex(machine.snapshot()));
      expect(counts.text + counts.bytes).toBe(keys.length);
    });
  }
});

describe('remembered requests read with their keys as text', () => {
  // Their keys are identities (owner, request id): ASCII ones reach the restorer from a scratch array, others
  // as their UTF-8, and from one holding U+FFFD on they are read as bytes, as the key records are.
  function remembering(requests: [owner: string, requestId: string][]): LockMachine {
    const machine = new LockMachine({});
    let index = 0;
    const apply = (command: LockCommand) => machine.apply(++index, 1, encodeCommand(command));
    requests.forEach(([owner, requestId], i) => apply({ type: 'acquire', timeMs: 1_000, key: `k${i}`, owner, ttlMs: 5_000, requestId }));
    return machine;
  }
  const requests: [string, string][] = [
    ['o', 'r-1'],
    ['ключ', 'r-2'],
    ['o', 'ü-3'],
    ['p', 'x-\uFFFD-4'],
    ['o', 'r-5'],
    ['\uFFFD', 'r-6'],
    ['q', 'r-7'],
  ];

  for (const reads of [1, 2, 3, 64]) {
    it(`in reads of ${reads} records: the state byte for byte`, async () => {
      const machine = remembering(requests);
      const restored = await reload(await written(machine), { text: 0, bytes: 0 }, reads);
      expect(hex(restored.snapshot())).toBe(hex(machine.snapshot()));
      expect(restored.parts.dedup.size).toBe(requests.length);
    });
  }

  it('refuses one whose identity is not UTF-8 (read laxly as text, it holds U+FFFD)', async () => {
    const db = await written(remembering(requests.slice(0, 2)));
    const rows = await db.iterator().all();
    const [storedKey, value] = rows.find(([k]) => k[4] === 0x64)!;
    const bad = Uint8Array.of(...storedKey.subarray(0, 5), 2, 0x61, 0xff, 1, 0x62);
    await db.del(storedKey);
    await db.put(bad, value);
    await expect(reload(db, { text: 0, bytes: 0 })).rejects.toThrow(/invalid UTF-8/);
  });
});
