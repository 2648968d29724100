// A backup (`leasehold snapshot save`) reads the store through one explicit snapshot, its records with the
// encodings a restart reads with (view-rows.ts: keys as text while they are valid UTF-8, values as text in a
// generation of text form). What must hold: the file holds exactly the records of the generation in force —
// compared with the machine's own records (StoreRecords.all), not with another read of the store — whatever
// the keys hold (bad UTF-8, a literal U+FFFD, non-ASCII names), whatever the generation's prefix (ASCII or
// not), values as text or as bytes; and a write that lands while the save runs is not in it: the records and
// the meta record are one state. Over a real LevelDB and over memory-level.
import { createHash } from 'node:crypto';
import { MemoryLevel } from 'memory-level';
import { afterAll, describe, expect, it } from 'vitest';
import { ByteWriter } from '../../../src/lock/bytes.js';
import { encodeCommand, type LockCommand } from '../../../src/lock/commands.js';
import { LockMachine } from '../../../src/lock/index.js';
import { DEDUP_RECORD, KEY_RECORD, REST_RECORD, SESSION_RECORD, StoreRecords } from '../../../src/lock/store-records.js';
import {
  META_FORMAT_BYTES,
  META_FORMAT_TEXT,
  META_KEY,
  encodeMeta,
  generationPrefix,
  type AppliedPoint,
  type RecordDb,
} from '../../../src/state/applied-store.js';
import { BACKUP_CHUNK_BYTES, backupChunks, backupPieces, backupRecords, readBackup, type Backup } from '../../../src/state/backup.js';
import { toTextForm } from '../../../src/state/text-form.js';
import { viewRows } from '../../../src/state/view-rows.js';
import { dbKinds, type TestDb } from './store-fixtures.js';

const CONF = { clusterId: 'c', voters: ['n1'], learners: [], addresses: {}, removed: [] };
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const { kinds: KINDS, cleanUp } = dbKinds('backup-view-');
afterAll(cleanUp);

type Db = TestDb;

/**
 * A machine whose record keys read as text stop being text part-way: remembered requests of an owner of 200
 * characters (its length is a varint of two bytes, the first 0x80 or more: bad UTF-8, read as U+FFFD), a key
 * holding a literal U+FFFD (valid UTF-8, still read on as bytes), non-ASCII keys, values of every byte; and
 * `holds` plain holds after them (key records sort after the remembered requests).
 */
function machineOf(holds: number): LockMachine {
  const machine = new LockMachine({});
  let index = 0;
  const apply = (command: LockCommand) => machine.apply(++index, 1, encodeCommand(command));
  const t = 1_764_000_000_000;
  const longOwner = 'o'.repeat(200);
  const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i);
  apply({ type: 'acquire', timeMs: t, key: 'long-owner', owner: longOwner, ttlMs: 3_600_000, requestId: 'r-long' });
  apply({ type: 'acquire', timeMs: t, key: 'a\uFFFDb', owner: 'p', ttlMs: 3_600_000, requestId: 'r-fffd', value: everyByte });
  apply({ type: 'acquire', timeMs: t, key: 'ключ', owner: 'владелец', ttlMs: 3_600_000, requestId: 'r-cyr' });
  for (let i = 0; i < holds; i++) {
    const value = i % 7 === 0 ? everyByte : Uint8Array.of(i & 0xff, 0x80, 0xff);
    apply({ type: 'acquire', timeMs: t + i, key: `held-${i}`, owner: `owner-${i % 13}`, ttlMs: 3_600_000, requestId: `r${i}`, value });
  }
  return machine;
}

const pointOf = (machine: LockMachine): AppliedPoint => ({ index: machine.appliedIndex, term: 1, conf: CONF });

/** `machine`'s records as generation `generation` in force, values in text form or as bytes; returns them
 *  (without the prefix) as the file must hold them, in key order. */
async function writeAt(db: Db, machine: LockMachine, generation: number, text: boolean): Promise<[string, string][]> {
  const prefix = generationPrefix(generation);
  const tracker = new StoreRecords(machine);
  const records: [string, string][] = [];
  for (const op of tracker.all()) {
    await db.put(Uint8Array.of(...prefix, ...op.key), text ? toTextForm(op.value!) : op.value!);
    records.push([hex(op.key), hex(op.value!)]);
  }
  tracker.detach();
  await db.put(META_KEY, encodeMeta(generation, pointOf(machine), text ? META_FORMAT_TEXT : META_FORMAT_BYTES));
  return records.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

async function fileOf(db: RecordDb): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of backupChunks(db, 'c')) parts.push(chunk);
  return Uint8Array.from(Buffer.concat(parts));
}

/** The records in force of a backup, as `snapshot restore` hands them to the store (one piece each). */
function recordsOf(backup: Backup): [Uint8Array, Uint8Array][] {
  return [...backupPieces(backup)].flat().map(({ key, value }) => [key, value!]);
}

/** `snapshot restore`'s pieces (backupPieces) at several sizes: every piece full but the last, and together
 *  the records in force in file order, as hex pairs. */
function piecesOf(backup: Backup): string[][][] {
  return [1, 7, 10_000].map((perPiece) => {
    const pieces = [...backupPieces(backup, perPiece)];
    for (const [i, piece] of pieces.entries()) {
      // Every piece full but the last, which holds what is left: at least one record, at most a piece.
      const full = i < pieces.length - 1;
      expect(piece.length, `piece ${i} of ${perPiece}`).toBeGreaterThanOrEqual(full ? perPiece : 1);
      expect(piece.length, `piece ${i} of ${perPiece}`).toBeLessThanOrEqual(perPiece);
    }
    return pieces.flat().map(({ key, value }) => [hex(key), hex(value!)]);
  });
}

describe('a backup file of an earlier build', () => {
  it('holding the records of a generation being swapped in beside those in force, reads as those in force', async () => {
    // Earlier builds saved every generation of the view: the file is laid out here by hand, as they wrote it.
    const db = new MemoryLevel<Uint8Array, Uint8Array>({ keyEncoding: 'view', valueEncoding: 'view' });
    await db.open();
    const machine = machineOf(10);
    const expected = await writeAt(db as unknown as Db, machine, 2, false);
    const out = new ByteWriter();
    for (const b of [0x4c, 0x48, 0x42, 0x4b, 1]) out.byte(b);
    out.string('c');
    const rows: [Uint8Array, Uint8Array][] = [
      [Uint8Array.of(...generationPrefix(1), 0x6b, 0x41), Uint8Array.of(1)], // an old generation's hold
      ...(await db.iterator({ gte: generationPrefix(2), lt: generationPrefix(3) }).all()),
      [Uint8Array.of(...generationPrefix(3), 0x72), Uint8Array.of(2)], // a new generation's rest record
      [Uint8Array.of(...generationPrefix(3), 0x6b, 0x42), Uint8Array.of(3)],
    ];
    for (const [key, value] of rows) {
      out.byte(1);
      out.lengthPrefixed(key);
      out.lengthPrefixed(value);
    }
    out.byte(0);
    out.uint(rows.length);
    out.lengthPrefixed(encodeMeta(2, pointOf(machine), META_FORMAT_BYTES));
    const body = out.finish();
    const file = Uint8Array.from(Buffer.concat([body, createHash('sha256').update(body).digest()]));
    const backup = readBackup(file);
    expect(backup.fileRecords).toBe(rows.length);
    expect(recordsOf(backup).map(([k, v]) => [hex(k), hex(v)])).toEqual(expected);
    expect(piecesOf(backup)).toEqual([expected, expected, expected]);
    const stored = backupRecords(backup);
    expect([...stored.keys].length).toBe(13);
    expect(hex(stored.rest)).toBe(expected.find(([k]) => k === hex(Uint8Array.of(REST_RECORD)))![1]);
    await db.close();
  });
});

describe.each(KINDS)('a backup read through one view (%s)', (_name, openDb) => {
  // 0x7F7F7F7F: the last generation whose prefix is ASCII (keys read as text); 0x80: one whose is not; and
  // 0x0000007F, whose next generation's prefix is not ASCII (the range's end must not reach LevelDB as text).
  for (const generation of [1, 0x7f, 0x80, 0x7f7f7f7f])
    for (const text of [true, false])
      it(`holds exactly the records in force: generation ${generation.toString(16)}, values ${text ? 'as text' : 'as bytes'}`, async () => {
        const db = await openDb();
        const machine = machineOf(40);
        // A stale generation beside it (a swap that did not finish): not in the file.
        await db.put(Uint8Array.of(...generationPrefix(generation + 1), 0x6b, 0x41), Uint8Array.of(1));
        if (generation > 1) await db.put(Uint8Array.of(...generationPrefix(generation - 1), 0x6b, 0x41), Uint8Array.of(2));
        const expected = await writeAt(db, machine, generation, text);
        const backup = readBackup(await fileOf(db));
        expect(backup.generation).toBe(generation);
        expect(backup.point.index).toBe(machine.appliedIndex);
        expect(backup.fileRecords).toBe(expected.length);
        expect(recordsOf(backup).map(([k, v]) => [hex(k), hex(v)])).toEqual(expected);
        expect(piecesOf(backup)).toEqual([expected, expected, expected]);
        // backupRecords walks the file by kind, as often as asked, without the list: the same records.
        const stored = backupRecords(backup);
        const ofKind = (kind: number) => expected.filter(([k]) => k.startsWith(kind.toString(16)));
        for (const [kind, walk] of [
          [KEY_RECORD, stored.keys],
          [DEDUP_RECORD, stored.dedup],
          [SESSION_RECORD, stored.sessions],
        ] as const) {
          for (let pass = 0; pass < 2; pass++)
            expect(
              [...walk].map(([k, v]) => [hex(k), hex(v)]),
              `kind ${kind}`,
            ).toEqual(ofKind(kind));
        }
        expect(ofKind(KEY_RECORD).length).toBe(43);
        expect(hex(stored.rest)).toBe(ofKind(REST_RECORD)[0]![1]);
        await db.close();
      });

  it('reads on as bytes from the first key that is not text, neither skipping nor repeating a row', async () => {
    const db = await openDb();
    const machine = machineOf(30);
    const expected = await writeAt(db, machine, 1, true);
    // Reads of one and of two rows: the stop falls at a read's first row and inside one.
    for (const readRows of [1, 2, 1000]) {
      const view = db.snapshot();
      const keys: string[] = [];
      let asText = 0;
      for await (const rows of viewRows(db, view, 1, true, readRows)) {
        for (const [key] of rows) {
          if (typeof key === 'string') asText++;
          keys.push(typeof key === 'string' ? hex(Buffer.from(key, 'utf8')) : hex(key));
        }
      }
      await view.close();
      expect(keys, `reads of ${readRows}`).toEqual(expected.map(([k]) => hex(generationPrefix(1)) + k));
      // The rows before the long owner's remembered request were read as text, the rest not.
      expect(asText, `reads of ${readRows}`).toBeGreaterThan(0);
      expect(asText, `reads of ${readRows}`).toBeLessThan(keys.length);
    }
    await db.close();
  });

  it('is one state: a batch that lands while the save runs is not in the file', async () => {
    const db = await openDb();
    // Enough records for several chunks, so the save is suspended between them.
    const machine = machineOf(6000);
    await writeAt(db, machine, 1, true);
    const before = await fileOf(db);
    expect(before.length).toBeGreaterThan(2 * BACKUP_CHUNK_BYTES);
    const parts: Uint8Array[] = [];
    let wrote = false;
    for await (const chunk of backupChunks(db, 'c')) {
      parts.push(chunk);
      if (!wrote) {
        // A write-behind batch: a record changed, one added, one deleted, and the meta record moved on.
        const prefix = generationPrefix(1);
        const key = (name: string) => Uint8Array.of(...prefix, 0x6b, ...Buffer.from(name));
        await db.batch([
          { type: 'put', key: key('held-5999'), value: Uint8Array.of(9, 9, 9) },
          { type: 'put', key: key('zzz-new'), value: Uint8Array.of(7) },
          { type: 'del', key: key('held-0') },
          { type: 'put', key: META_KEY, value: encodeMeta(1, { ...pointOf(machine), index: machine.appliedIndex + 5 }, META_FORMAT_TEXT) },
        ]);
        wrote = true;
      }
    }
    expect(wrote).toBe(true);
    expect(hex(Uint8Array.from(Buffer.concat(parts)))).toBe(hex(before));
    // And a save begun after the write holds it.
    const after = readBackup(await fileOf(db));
    expect(after.point.index).toBe(machine.appliedIndex + 5);
    expect(recordsOf(after).some(([k]) => Buffer.from(k.subarray(1)).toString() === 'zzz-new')).toBe(true);
    await db.close();
  });

  it('reads the meta record from the same view as the records: a batch landing as the save begins is not in it', async () => {
    const db = await openDb();
    const machine = machineOf(20);
    await writeAt(db, machine, 1, true);
    const before = await fileOf(db);
    // The write-behind's batch lands while the save asks for the meta record (after it took its view).
    let landed = false;
    const racing: RecordDb = {
      get: async (key, options) => {
        if (!landed) {
          landed = true;
          await db.batch([
            { type: 'put', key: Uint8Array.of(...generationPrefix(1), 0x6b, 0x5a), value: Uint8Array.of(1) },
            {
              type: 'put',
              key: META_KEY,
              value: encodeMeta(1, { ...pointOf(machine), index: machine.appliedIndex + 1 }, META_FORMAT_TEXT),
            },
          ]);
        }
        return db.get(key, options);
      },
      batch: db.batch.bind(db) as RecordDb['batch'],
      snapshot: () => db.snapshot(),
      iterator: db.iterator.bind(db),
      clear: (options) => db.clear(options),
      close: () => db.close(),
    };
    expect(hex(await fileOf(racing))).toBe(hex(before));
    expect(landed).toBe(true);
    await db.close();
  });
});
