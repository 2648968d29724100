// The applied store keeps a generation's values in text form (src/state/text-form.ts; meta format 2) so that
// a restart reads them as strings. What must hold: the form is exact for every byte; a store of the previous
// build (meta format 1, values as they are) opens with its state byte for byte and is rewritten in text form
// once; what leaves the node — a snapshot stream, a backup file — is the same as from a store of format 1;
// and a value that is not text form is refused, naming the record. Over a real LevelDB (classic-level hands
// the values as strings) and over memory-level (it transcodes them).
import { join } from 'node:path';
import { MemoryLevel } from 'memory-level';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeCommand, type LockCommand } from '../../../src/lock/commands.js';
import { LockMachine } from '../../../src/lock/index.js';
import { AppliedStore, META_KEY, decodeMeta, type AppliedPoint, type RecordDb } from '../../../src/state/applied-store.js';
import { backupChunks } from '../../../src/state/backup.js';
import { LockStateStore } from '../../../src/state/lock-store.js';
import { StoreStream } from '../../../src/state/snapshot-stream.js';
import { fromTextForm, textToScratch, toTextForm } from '../../../src/state/text-form.js';
import { dbKinds, writeFormat1, type TestDb } from './store-fixtures.js';
import { SimRng } from '../../sim/rng.js';

const CONF = { clusterId: 'c', voters: ['n1'], learners: [], addresses: {}, removed: [] };
const inline = { soon: (f: () => void) => queueMicrotask(f), after: () => ({ cancel: () => {} }), every: () => ({ cancel: () => {} }) };
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const { kinds: KINDS, cleanUp } = dbKinds('text-form-');
afterAll(cleanUp);

type Db = TestDb;

/** A machine whose records hold bytes of every kind: long times (varints of many bytes), a value with every
 *  byte 0-255, non-ASCII keys and owners, a session, a free key, remembered requests, a wait line. */
function richMachine(): LockMachine {
  const machine = new LockMachine({});
  let index = 0;
  const apply = (command: LockCommand) => machine.apply(++index, 1, encodeCommand(command));
  const t = 1_764_000_000_000;
  apply({ type: 'openSession', timeMs: t, owner: 'sessión-ü', ttlMs: 60_000, requestId: 's', lockDelayMs: 0 });
  const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i);
  for (let i = 0; i < 40; i++) {
    const key = i % 3 === 0 ? `ключ-${i}` : `key-${i}`;
    apply(
      i % 2 === 0
        ? { type: 'acquire', timeMs: t + i, key, owner: 'sessión-ü', ttlMs: 0, sessionId: 1, requestId: `r${i}` }
        : { type: 'acquire', timeMs: t + i, key, owner: `p${i}`, ttlMs: 3_600_000, requestId: `r${i}`, value: everyByte },
    );
  }
  apply({ type: 'acquire', timeMs: t + 50, key: 'key-1', owner: 'waiter', ttlMs: 5_000, requestId: 'w1', waitMs: 60_000 });
  apply({ type: 'release', timeMs: t + 60, key: 'key-3', owner: 'p3', token: 5n, requestId: 'rel' });
  return machine;
}

const pointOf = (machine: LockMachine): AppliedPoint => ({ index: machine.appliedIndex, term: 1, conf: CONF });

/** The store the previous build wrote: generation 1, every value as it is, meta format 1. */
async function writeAsPreviousBuild(db: Db, machine: LockMachine): Promise<void> {
  await writeFormat1(db, machine, pointOf(machine));
}

async function load(db: Db) {
  const store = new LockStateStore<LockMachine>(() => AppliedStore.open(db), inline);
  const loaded = await store.load({});
  await store.close();
  await db.open();
  return loaded;
}

async function streamBytes(db: Db): Promise<string> {
  const stream = (await StoreStream.open(db, 512))!;
  const chunks: string[] = [];
  for (let offset = 0; ;) {
    const chunk = (await stream.chunkAt(offset))!;
    chunks.push(hex(chunk.data));
    offset += chunk.data.length;
    if (chunk.last) break;
  }
  await stream.close();
  return chunks.join('');
}

async function backupBytes(db: Db): Promise<string> {
  const parts: string[] = [];
  for await (const chunk of backupChunks(db, 'c')) parts.push(hex(chunk));
  return parts.join('');
}

describe('text form', () => {
  it('stands for every byte exactly, and a value of bytes below 0x80 is itself', () => {
    const every = Uint8Array.from({ length: 256 }, (_, i) => i);
    const text = toTextForm(every);
    expect(text.length).toBe(256 + 128);
    expect([...fromTextForm(text)!]).toEqual([...every]);
    expect([...textToScratch(new TextDecoder().decode(text))!]).toEqual([...every]);
    const ascii = Uint8Array.of(0, 1, 0x41, 0x7f);
    expect(toTextForm(ascii)).toBe(ascii);
    expect(fromTextForm(ascii)).toBe(ascii);
  });

  it('reads values of every length, again and after the scratch grows, as the bytes they stand for', () => {
    // textToScratch hands one view per length: a view kept from before the scratch grew must not be handed again.
    const rng = new SimRng(5);
    const lengths = [3, 40, 3, 0, 40, 255, 256, 257, 3, 1000, 40, 513, 3, 5000, 40];
    for (const length of lengths) {
      const bytes = Uint8Array.from({ length }, () => Math.floor(rng.float() * 256));
      const text = new TextDecoder().decode(toTextForm(bytes));
      expect(hex(textToScratch(text)!), `${length}`).toBe(hex(bytes));
    }
  });

  it('refuses what is not text form', () => {
    for (const bad of [[0x80], [0xc2], [0xc2, 0x41], [0xc4, 0x80], [0xc3, 0xc3], [0xef, 0xbf, 0xbd]]) {
      expect(fromTextForm(Uint8Array.from(bad)), `${bad}`).toBeNull();
    }
    expect(textToScratch('ok\uFFFD')).toBeNull();
    expect(textToScratch('\u0100')).toBeNull();
  });
});

describe.each(KINDS)('a store of values in text form (%s)', (_name, openDb) => {
  it('opens a store of the previous build (values as they are) byte for byte, and rewrites it in text form once', async () => {
    const machine = richMachine();
    const db = await openDb();
    await writeAsPreviousBuild(db, machine);
    const first = await load(db);
    expect(hex(first!.machine.snapshot())).toBe(hex(machine.snapshot()));
    const meta = decodeMeta((await db.get(META_KEY))!);
    expect(meta.textValues, 'rewritten in text form at its first open').toBe(true);
    expect(meta.generation).toBe(2);
    const again = await load(db);
    expect(hex(again!.machine.snapshot())).toBe(hex(machine.snapshot()));
    expect(decodeMeta((await db.get(META_KEY))!).generation, 'rewritten once, not at every open').toBe(2);
  });

  it('streams and backs up the same bytes as a store of the previous build', async () => {
    const machine = richMachine();
    const old = await openDb();
    await writeAsPreviousBuild(old, machine);
    const text = await openDb();
    const store = new LockStateStore<LockMachine>(() => AppliedStore.open(text), inline);
    await store.replace(machine, pointOf(machine)); // generation 1, in text form
    await store.close();
    await text.open();
    expect(decodeMeta((await text.get(META_KEY))!).textValues).toBe(true);
    expect(await streamBytes(text)).toBe(await streamBytes(old));
    expect(await backupBytes(text)).toBe(await backupBytes(old));
  });

  it('refuses a value that is not text form, naming the record', async () => {
    const machine = richMachine();
    const db = await openDb();
    const store = new LockStateStore<LockMachine>(() => AppliedStore.open(db), inline);
    await store.replace(machine, pointOf(machine));
    await store.close();
    await db.open();
    const rows = await (db as unknown as MemoryLevel<Uint8Array, Uint8Array>).iterator().all();
    const [key] = rows.find(([k]) => k[4] === 0x6b)!;
    await db.put(key, Uint8Array.of(0x03, 0xff, 0x01));
    await expect(load(db)).rejects.toThrow(/corrupt applied-store record \(kind 107, key "[^"]+"\): its value is not in text form/);
  });
});
