// The applied store: the lock machine's records in LevelDB, beside the write-ahead log (etcd keeps its applied
// state in bbolt beside its WAL the same way). The WAL makes an entry durable; this store holds the effects of
// applied entries, written behind (write-behind.ts) with the index they reach, so a restart opens the store at
// that index and replays the log above it (the log's entries below it stay only as a catch-up tail for
// followers: src/raft/stored-start.ts).
//
// Layout (every key a byte string; the records themselves are src/lock/store-records.ts's):
//   [generation: 4 bytes, big-endian] + record key      the records of one generation of the state
//   0xff 'm'                                             the meta record: the generation in force and the
//                                                        applied point (index, term, configuration) its
//                                                        records are the state of; its format says how the
//                                                        generation's values are kept: as they are (1), or
//                                                        in text form (2, text-form.ts: a restart reads
//                                                        them as strings, far cheaper than Buffers)
// A batch (write) puts and deletes records of the generation in force and puts the meta record in the same
// LevelDB batch: a crash keeps all of it or none, so the records are always the state at the meta's index.
// A whole new state (a snapshot from the leader, a restore, a migrated data dir) is written as the next
// generation in bounded batches while the old one stays in force; one small synced batch then moves the meta
// record to it — the swap — and the old generation is deleted. A crash before the swap leaves the old state in
// force and the half-written generation is garbage, deleted at the next open; after it, the new one is whole.
import { decodeConf, encodeConf } from '../raft/core/conf.js';
import type { ConfState } from '../raft/core/types.js';
import { ByteReader, ByteWriter, encodeUtf8 } from '../lock/bytes.js';
import { asciiToScratch, fromTextForm, textToScratch, toTextForm } from './text-form.js';
import {
  DEDUP_RECORD,
  KEY_DELAY_RECORD,
  KEY_RECORD,
  REST_RECORD,
  REST_RECORD_KEY,
  SESSION_RECORD,
  WAIT_LINE_RECORD,
  type RecordOp,
  type StoredRecords,
} from '../lock/store-records.js';

/** One op of an array-form LevelDB batch. */
export type DbOp = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

/** A LevelDB batch built op by op (abstract-level's chained batch): nothing of it is written, or visible,
 *  until write(), which commits it whole — atomically, as the array form does. classic-level copies each
 *  key and value into its native batch at put/del, so the caller's bytes are not kept. */
export interface RecordBatch {
  put(key: Uint8Array, value: Uint8Array): unknown;
  del(key: Uint8Array): unknown;
  write(options?: { sync?: boolean }): Promise<void>;
  /** Drops a batch that will not be written. */
  close(): Promise<void>;
}

/** A consistent view of the store (LevelDB's explicit snapshot): a read given it sees every write finished
 *  before it was taken and none after, so several iterators, each with its own encodings, read one state. */
export interface StoreView {
  close(): Promise<void>;
}

/** What the store needs of a LevelDB (`level`'s Level, memory-level's MemoryLevel, both opened with
 *  keyEncoding and valueEncoding 'view'). */
export interface RecordDb {
  get(key: Uint8Array, options?: { snapshot?: StoreView }): Promise<Uint8Array | undefined>;
  batch(ops: DbOp[], options?: { sync?: boolean }): Promise<void>;
  batch(): RecordBatch;
  snapshot(): StoreView;
  iterator(options: { gte?: Uint8Array; lt?: Uint8Array; snapshot?: StoreView }): {
    nextv(size: number): Promise<[Uint8Array, Uint8Array][]>;
    /** Moves to the first key at or after `target`, in the same view (a snapshot stream reads a chunk again). */
    seek(target: Uint8Array): void;
    close(): Promise<void>;
  };
  clear(options: { gte?: Uint8Array; lt?: Uint8Array }): Promise<void>;
  close(): Promise<void>;
}

/** The applied point the records are the state of: the last entry applied, its term, and the configuration
 *  as of it — together, a snapshot's metadata (the store counts as a snapshot at this index). */
export interface AppliedPoint {
  index: number;
  term: number;
  conf: ConfState;
}

export class AppliedStoreError extends Error {
  override readonly name = 'AppliedStoreError';
}

/** The meta record's key (after every generation's records). */
export const META_KEY = Uint8Array.of(0xff, 0x6d);
/** A generation whose values are kept as they are: what builds before text form wrote (still read; a node
 *  rewrites such a store whole at its start, lock-store.ts), and what a backup file says (backup.ts). */
export const META_FORMAT_BYTES = 1;
/** A generation whose values are kept in text form (text-form.ts): every generation this build writes. */
export const META_FORMAT_TEXT = 2;
/** Records one read of a scan returns (fewer round trips to LevelDB's thread at a restart). */
export const SCAN_BATCH_RECORDS = 10_000;
/** Records a batch of a new generation writes at most (a bounded amount of work and memory per batch). */
export const REPLACE_BATCH_RECORDS = 10_000;
/** Ops a write-behind batch hands LevelDB between two yields to the event loop: classic-level's array form
 *  reads and copies every op on the main thread in one go (a follower's burst of tens of thousands of
 *  changes held the loop for half a second); fed in slices, the batch stays one and the loop is held for
 *  one slice's copies at most (~1 ms). */
export const WRITE_SLICE_OPS = 2_000;

/** Waits for the event loop to run what queued meanwhile (the write-behind's scheduler.soon). */
export type Pause = () => Promise<void>;

export function generationPrefix(generation: number): Uint8Array {
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, generation);
  return prefix;
}

function withPrefix(prefix: Uint8Array, key: Uint8Array): Uint8Array {
  const out = new Uint8Array(prefix.length + key.length);
  out.set(prefix, 0);
  out.set(key, prefix.length);
  return out;
}

/** An iterator whose keys LevelDB decodes as UTF-8 (abstract-level's per-iterator keyEncoding). */
type TextKeyIterator = (options: { gte: Uint8Array; lt: Uint8Array; keyEncoding: 'utf8'; valueEncoding: 'utf8' | 'view' }) => {
  nextv(size: number): Promise<[string | Uint8Array, string | Uint8Array][]>;
  close(): Promise<void>;
};

/** An iterator whose values LevelDB decodes as UTF-8 (a generation of values in text form). */
type TextValueIterator = (options: { gte: Uint8Array; lt: Uint8Array; valueEncoding: 'utf8' }) => {
  nextv(size: number): Promise<[Uint8Array, string | Uint8Array][]>;
  close(): Promise<void>;
};

/** Whether the key records of the generation with `prefix` can be read as text: the range's bounds reach
 *  LevelDB as UTF-8, which holds them byte for byte only when the generation's bytes are ASCII (else they
 *  are read as bytes: slower, the same records). */
export function keyRecordsAsText(prefix: Uint8Array): boolean {
  for (const b of prefix) if (b >= 0x80) return false;
  return true;
}

let nameUnits = new Uint16Array(64);

/** A key record's name from its stored key read as text (generation, kind, name), in a string of its own:
 *  slice() of 13 or more characters makes a V8 sliced string, which keeps the whole stored key alive and
 *  costs ~40 bytes more a key held. */
function nameOf(stored: string): string {
  const length = stored.length - 5;
  if (length < 13) return stored.slice(5);
  if (nameUnits.length < length) nameUnits = new Uint16Array(length * 2);
  for (let i = 0; i < length; i++) nameUnits[i] = stored.charCodeAt(5 + i);
  return String.fromCharCode.apply(null, nameUnits.subarray(0, length) as unknown as number[]);
}

/** A record's key without its generation from its stored key read as text (scanTextKeys): in a scratch array
 *  the next call overwrites (the visitor copies what it keeps) when it is ASCII, as a store's remembered
 *  requests' identities are; else its UTF-8 (exact: the string held no U+FFFD). */
function recordKeyOfText(stored: string): Uint8Array {
  return asciiToScratch(stored, 4) ?? encodeUtf8(stored.slice(4));
}

const noPause: Pause = () => Promise.resolve();

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** A stored key without its generation: a plain Uint8Array view (LevelDB hands Buffers, whose subarray is
 *  a Buffer made through its species constructor — a tenth of a restart's CPU at a million records). */
function recordKey(key: Uint8Array): Uint8Array {
  return new Uint8Array(key.buffer, key.byteOffset + 4, key.length - 4);
}

/** The meta record of `generation` at `point`, of `format` (how the generation's values are kept). */
export function encodeMeta(generation: number, point: AppliedPoint, format: number): Uint8Array {
  const out = new ByteWriter(128);
  out.byte(format);
  out.uint(generation);
  out.uint(point.index);
  out.uint(point.term);
  out.lengthPrefixed(encodeConf(point.conf));
  return out.finish();
}

/** The meta record: the generation in force, the applied point, and whether the generation's values are in
 *  text form (exported for the simulator's checks). */
export function decodeMeta(bytes: Uint8Array): { generation: number; point: AppliedPoint; textValues: boolean } {
  const input = new ByteReader(
    bytes,
    (message, offset) => new AppliedStoreError(`corrupt applied-store meta record at byte ${offset}: ${message}`),
  );
  const format = input.byte();
  if (format !== META_FORMAT_BYTES && format !== META_FORMAT_TEXT)
    input.fail(`format ${format}; this build reads ${META_FORMAT_BYTES} and ${META_FORMAT_TEXT}`);
  const generation = input.uint();
  if (generation < 1 || generation >= 0xff000000) input.fail(`generation ${generation}`);
  const index = input.uint();
  const term = input.uint();
  let conf: ConfState;
  try {
    conf = decodeConf(input.lengthPrefixed(1 << 20));
  } catch (err) {
    throw new AppliedStoreError(`corrupt applied-store meta record: configuration: ${(err as Error).message}`);
  }
  input.end();
  return { generation, point: { index, term, conf }, textValues: format === META_FORMAT_TEXT };
}

/** The records of the generation in force, read back whole (a restart, a backup). */
export interface StoredState extends StoredRecords {
  point: AppliedPoint;
  /** Records read (the rest record included). */
  count: number;
}

export class AppliedStore {
  private generation = 0;
  private prefix = generationPrefix(0);
  private pointValue: AppliedPoint | null = null;
  /** The generation in force keeps its values in text form (meta format 2). */
  private textValues = true;
  /** The last generation begun (beginIncoming), swapped in or not. */
  private incoming: IncomingGeneration | null = null;

  private constructor(
    readonly db: RecordDb,
    private readonly replaceBatchRecords: number,
    private readonly writeSliceOps: number,
    private readonly scanBatchRecords: number,
  ) {}

  /** Opens the store and deletes what an interrupted swap or an old generation left behind. */
  static async open(
    db: RecordDb,
    replaceBatchRecords = REPLACE_BATCH_RECORDS,
    writeSliceOps = WRITE_SLICE_OPS,
    /** Records one read of a restart's scans returns (tests read in small reads, to cross their edges). */
    scanBatchRecords = SCAN_BATCH_RECORDS,
  ): Promise<AppliedStore> {
    if (!(writeSliceOps >= 1)) throw new AppliedStoreError(`writeSliceOps ${writeSliceOps}: at least 1`);
    if (!(scanBatchRecords >= 1)) throw new AppliedStoreError(`scanBatchRecords ${scanBatchRecords}: at least 1`);
    const store = new AppliedStore(db, replaceBatchRecords, writeSliceOps, scanBatchRecords);
    const meta = await db.get(META_KEY);
    if (meta !== undefined) {
      const { generation, point, textValues } = decodeMeta(meta);
      store.useGeneration(generation);
      store.pointValue = point;
      store.textValues = textValues;
    }
    await store.dropOtherGenerations();
    return store;
  }

  /** The state in force keeps its values as they are (a store of a build before text form): it is read as
   *  such, and its owner rewrites it whole (replace) so that later restarts read it as text. */
  get valuesAsBytes(): boolean {
    return this.pointValue !== null && !this.textValues;
  }

  /** The applied point the store holds; null when it holds no state yet. */
  get point(): AppliedPoint | null {
    return this.pointValue;
  }

  /** Reads every record of the state in force; null when there is none. Throws AppliedStoreError when the
   *  rest record is missing (a store that lost records is not a state). */
  async read(): Promise<StoredState | null> {
    if (this.pointValue === null) return null;
    const sessions: [Uint8Array, Uint8Array][] = [];
    const lines: [Uint8Array, Uint8Array][] = [];
    const keyDelays: [Uint8Array, Uint8Array][] = [];
    const keys: [Uint8Array, Uint8Array][] = [];
    const dedup: [Uint8Array, Uint8Array][] = [];
    let rest: Uint8Array | null = null;
    let count = 0;
    const textValues = this.textValues;
    await this.scan(this.generation, (key, stored) => {
      count++;
      const value = textValues ? bytesOfTextForm(stored, key.subarray(4)) : stored;
      const kind = key[4];
      const record = key.subarray(4);
      if (kind === SESSION_RECORD) sessions.push([record, value]);
      else if (kind === WAIT_LINE_RECORD) lines.push([record, value]);
      else if (kind === KEY_DELAY_RECORD) keyDelays.push([record, value]);
      else if (kind === KEY_RECORD) keys.push([record, value]);
      else if (kind === DEDUP_RECORD) dedup.push([record, value]);
      else if (kind === REST_RECORD && key.length === 5) rest = value;
      else throw new AppliedStoreError(`unknown applied-store record kind ${kind}`);
    });
    if (rest === null) throw new AppliedStoreError(`the applied store holds index ${this.pointValue.index} but no rest record`);
    return { point: this.pointValue, rest, sessions, keys, dedup, lines, keyDelays, count };
  }

  /**
   * Hands the state in force to `visit` record by record, the rest record first (it says how to read the
   * others), so a restart never holds every record at once; resolves with the point they reach, or null when
   * the store holds no state. Read before the store is written to (at a node's start): the rest record and
   * the scan are two reads.
   */
  async readInto(visit: {
    rest(value: Uint8Array): void;
    /** In id order, before the key records (which name them): the store's key order. */
    session(key: Uint8Array, value: Uint8Array): void;
    key(key: Uint8Array, value: Uint8Array): void;
    /** A key record whose key LevelDB handed as text (scanTextKeys): the key's name, checked to be what its
     *  bytes say; when absent, every key record goes to key(). */
    keyNamed?(name: string, value: Uint8Array): void;
    dedup(key: Uint8Array, value: Uint8Array): void;
    line(key: Uint8Array, value: Uint8Array): void;
    keyDelay(key: Uint8Array, value: Uint8Array): void;
  }): Promise<AppliedPoint | null> {
    const point = this.pointValue;
    if (point === null) return null;
    const stored = await this.db.get(withPrefix(this.prefix, Uint8Array.of(REST_RECORD)));
    if (stored === undefined) throw new AppliedStoreError(`the applied store holds index ${point.index} but no rest record`);
    visit.rest(this.textValues ? bytesOfTextForm(stored, REST_RECORD_KEY) : stored);
    const prefix = this.prefix;
    const keysFrom = withPrefix(prefix, Uint8Array.of(KEY_RECORD));
    const keysTo = withPrefix(prefix, Uint8Array.of(KEY_RECORD + 1));
    const textValues = this.textValues;
    const visitRecord = (key: Uint8Array, stored: string | Uint8Array): void => {
      const kind = key[4];
      const value = textValues ? valueOfText(stored, key) : (stored as Uint8Array);
      if (kind === KEY_RECORD) visit.key(recordKey(key), value);
      else if (kind === SESSION_RECORD) visit.session(recordKey(key), value);
      else if (kind === WAIT_LINE_RECORD) visit.line(recordKey(key), value);
      else if (kind === KEY_DELAY_RECORD) visit.keyDelay(recordKey(key), value);
      else if (kind === DEDUP_RECORD) visit.dedup(recordKey(key), value);
      else if (kind !== REST_RECORD || key.length !== 5) throw new AppliedStoreError(`unknown applied-store record kind ${kind}`);
    };
    const asText = keyRecordsAsText(prefix);
    const dedupFrom = withPrefix(prefix, Uint8Array.of(DEDUP_RECORD));
    const dedupTo = withPrefix(prefix, Uint8Array.of(DEDUP_RECORD + 1));
    // The records before the key records first, in the store's order (the sessions: key records name them).
    await this.scanRange(prefix, dedupFrom, visitRecord);
    if (asText) {
      // The remembered requests' keys as text too: a Buffer each was most of the native time of their read.
      const dedup = visit.dedup.bind(visit);
      await this.scanAsText(dedupFrom, dedupTo, visitRecord, (stored, value) => {
        const key = recordKeyOfText(stored);
        dedup(key, textValues ? valueOfText(value, key, true) : (value as Uint8Array));
      });
    } else await this.scanRange(dedupFrom, dedupTo, visitRecord);
    await this.scanRange(dedupTo, keysFrom, visitRecord);
    if (visit.keyNamed !== undefined && asText) {
      const keyNamed = visit.keyNamed.bind(visit);
      await this.scanAsText(keysFrom, keysTo, visitRecord, (stored, value) => {
        const name = nameOf(stored);
        keyNamed(name, textValues ? valueOfText(value, KEY_RECORD, name) : (value as Uint8Array));
      });
    } else await this.scanRange(keysFrom, keysTo, visitRecord);
    await this.scanRange(keysTo, generationPrefix(this.generation + 1), visitRecord);
    return point;
  }

  /** Visits the records in [gte, lt) in key order: their values as stored, read as text (a string) when the
   *  generation in force keeps them in text form — a store double that ignores the encoding hands bytes. */
  private async scanRange(gte: Uint8Array, lt: Uint8Array, visit: (key: Uint8Array, value: string | Uint8Array) => void): Promise<void> {
    const it = this.textValues
      ? (this.db.iterator as unknown as TextValueIterator).call(this.db, { gte, lt, valueEncoding: 'utf8' })
      : this.db.iterator({ gte, lt });
    // The next read is asked for before this one's rows are visited: LevelDB's thread reads it meanwhile.
    let next = it.nextv(this.scanBatchRecords);
    try {
      for (;;) {
        const rows = await next;
        if (rows.length === 0) break;
        next = it.nextv(this.scanBatchRecords);
        for (const [key, value] of rows) visit(key, value);
      }
    } finally {
      await next.catch(() => {}); // a read in flight ends before the iterator closes
      await it.close();
    }
  }

  /** Visits the records in [gte, lt) with their keys read as text (scanTextKeys), and from where that stops,
   *  the rest as bytes (visitRecord), strictly. */
  private async scanAsText(
    gte: Uint8Array,
    lt: Uint8Array,
    visitRecord: (key: Uint8Array, value: string | Uint8Array) => void,
    visitText: (stored: string, value: string | Uint8Array) => void,
  ): Promise<void> {
    const stopped = await this.scanTextKeys(gte, lt, visitText);
    if (stopped === undefined) return;
    if (stopped === null) return this.scanRange(gte, lt, visitRecord);
    // From the last record visited as text, which is not visited again.
    await this.scanRange(stopped, lt, (key, value) => {
      if (compareBytes(key, stopped) > 0) visitRecord(key, value);
    });
  }

  /**
   * Visits the records in [gte, lt) with their keys read as text (generation, kind, rest): LevelDB makes a
   * string of a key for a fraction of what a Buffer costs (a million Buffers were ~0.6 s of a restart's CPU).
   * Its decoding is lax (bad UTF-8 becomes U+FFFD), so at the first key holding a U+FFFD — a key that has one,
   * or a corrupt one — it stops and returns the stored key of the last record it visited (null when none),
   * for the caller to read the ones after it as bytes, strictly; undefined when it read them all. A key with no
   * U+FFFD was valid UTF-8, so its string encodes back to exactly its bytes.
   */
  private async scanTextKeys(
    gte: Uint8Array,
    lt: Uint8Array,
    visit: (stored: string, value: string | Uint8Array) => void,
  ): Promise<Uint8Array | null | undefined> {
    const valueEncoding = this.textValues ? 'utf8' : 'view';
    const it = (this.db.iterator as unknown as TextKeyIterator).call(this.db, { gte, lt, keyEncoding: 'utf8', valueEncoding });
    let last: string | null = null; // the stored key of the last record visited
    let next = it.nextv(this.scanBatchRecords); // asked for ahead, as scanRange does
    try {
      for (;;) {
        const rows = await next;
        if (rows.length === 0) return undefined;
        next = it.nextv(this.scanBatchRecords);
        for (const [key, value] of rows) {
          // (A store double that ignores the encoding hands bytes: they are all read as bytes.)
          if (typeof key !== 'string' || key.includes('\uFFFD'))
            return last === null ? null : withPrefix(gte.subarray(0, 4), encodeUtf8(last.slice(4)));
          visit(key, value);
          last = key;
        }
      }
    } finally {
      await next.catch(() => {});
      await it.close();
    }
  }

  /** Visits every record of the state in force in key order, from one consistent view of the store (a
   *  LevelDB iterator reads a snapshot of the moment it was opened), each value as stored (bytes). */
  private async scan(generation: number, visit: (key: Uint8Array, value: Uint8Array) => void): Promise<void> {
    const it = this.db.iterator({ gte: generationPrefix(generation), lt: generationPrefix(generation + 1) });
    try {
      for (;;) {
        const rows = await it.nextv(this.scanBatchRecords);
        if (rows.length === 0) break;
        for (const [key, value] of rows) visit(key, value);
      }
    } finally {
      await it.close();
    }
  }

  /**
   * One batch: the changed records and the point they reach, atomically; synced only when asked (before the
   * WAL is compacted past entries whose effects it holds). The ops are fed to one chained batch
   * `writeSliceOps` at a time with `pause()` between slices, and only then is it written: one commit, so a
   * crash while it is fed loses it whole and the meta record never covers records that are not there. The
   * caller writes one batch at a time (write-behind.ts): a replace or swap never runs while one is fed.
   */
  async write(ops: readonly RecordOp[], point: AppliedPoint, sync = false, pause: Pause = noPause): Promise<void> {
    if (this.pointValue === null) throw new AppliedStoreError('write() before the store holds a state: replace() first');
    const prefix = this.prefix;
    const generation = this.generation;
    const textValues = this.textValues;
    const batch = this.db.batch();
    try {
      for (let at = 0; at < ops.length; at++) {
        if (at > 0 && at % this.writeSliceOps === 0) await pause();
        const op = ops[at]!;
        const key = withPrefix(prefix, op.key);
        if (op.value === null) batch.del(key);
        else batch.put(key, textValues ? toTextForm(op.value) : op.value);
      }
      batch.put(META_KEY, encodeMeta(generation, point, textValues ? META_FORMAT_TEXT : META_FORMAT_BYTES));
    } catch (err) {
      await batch.close().catch(() => {}); // nothing of it was written
      throw err;
    }
    await batch.write({ sync });
    this.pointValue = point;
  }

  /** Makes `records` (a whole state, in any number of pieces) the state in force at `point`: written as a new
   *  generation in bounded batches, then swapped in by one synced batch, then the old one deleted. */
  async replace(records: Iterable<readonly RecordOp[]>, point: AppliedPoint): Promise<void> {
    const incoming = await this.beginIncoming();
    for (const piece of records) {
      const rows: [Uint8Array, Uint8Array][] = [];
      for (const op of piece) if (op.value !== null) rows.push([op.key, op.value]); // a whole state deletes nothing
      await incoming.put(rows);
    }
    await this.swapIn(incoming, point);
  }

  /** A new generation to write a whole state into while the one in force stays in force. What an earlier
   *  try left there (a stream that started over) is deleted first. */
  async beginIncoming(): Promise<IncomingGeneration> {
    const next = this.generation + 1;
    // open() deleted every generation but the one in force; only a try since then can have left records.
    if (this.incoming !== null && this.incoming.generation === next && this.incoming.touched) {
      await this.db.clear({ gte: generationPrefix(next), lt: generationPrefix(next + 1) });
    }
    this.incoming = new IncomingGeneration(this.db, next, this.replaceBatchRecords);
    return this.incoming;
  }

  /** `incoming` is not to be swapped in (a stream refused, or not wanted): what was written of it is deleted
   *  now, so refused streams never pile up on disk. A crash before the delete lands leaves garbage the next
   *  open deletes. */
  async dropIncoming(incoming: IncomingGeneration): Promise<void> {
    if (this.incoming !== incoming) return;
    this.incoming = null;
    if (incoming.touched) {
      await this.db.clear({ gte: generationPrefix(incoming.generation), lt: generationPrefix(incoming.generation + 1) });
    }
  }

  /** The swap: one synced batch of the meta record makes `incoming` (written whole) the state in force at
   *  `point`; only then is the old generation deleted. */
  async swapIn(incoming: IncomingGeneration, point: AppliedPoint): Promise<void> {
    if (incoming.generation !== this.generation + 1) {
      throw new AppliedStoreError(`generation ${incoming.generation} cannot follow generation ${this.generation}`);
    }
    await this.db.batch([{ type: 'put', key: META_KEY, value: encodeMeta(incoming.generation, point, META_FORMAT_TEXT) }], {
      sync: true,
    });
    const old = this.generation;
    this.useGeneration(incoming.generation);
    this.pointValue = point;
    this.textValues = true;
    if (old > 0) await this.db.clear({ gte: generationPrefix(old), lt: generationPrefix(old + 1) });
  }

  async close(): Promise<void> {
    await this.db.close();
  }

  private useGeneration(generation: number): void {
    this.generation = generation;
    this.prefix = generationPrefix(generation);
  }

  private async dropOtherGenerations(): Promise<void> {
    const end = generationPrefix(0xff000000);
    if (this.generation === 0) {
      await this.db.clear({ gte: generationPrefix(0), lt: end });
      return;
    }
    await this.db.clear({ gte: generationPrefix(0), lt: this.prefix });
    await this.db.clear({ gte: generationPrefix(this.generation + 1), lt: end });
  }
}

/** A generation being written (AppliedStore.beginIncoming): it counts for nothing until swapped in. */
export class IncomingGeneration {
  private readonly prefix: Uint8Array;
  /** Records written so far. */
  written = 0;
  /** A write was started (it may land even if it has not resolved). */
  touched = false;

  constructor(
    private readonly db: RecordDb,
    readonly generation: number,
    private readonly batchRecords: number,
  ) {
    this.prefix = generationPrefix(generation);
  }

  /** Writes records (keys without the generation prefix) in batches of a bounded size, not synced: the
   *  swap's synced batch comes after them all. A new generation keeps its values in text form. */
  async put(rows: readonly (readonly [Uint8Array, Uint8Array])[]): Promise<void> {
    for (let at = 0; at < rows.length; at += this.batchRecords) {
      const batch: DbOp[] = [];
      for (const [key, value] of rows.slice(at, at + this.batchRecords))
        batch.push({ type: 'put', key: withPrefix(this.prefix, key), value: toTextForm(value) });
      this.touched = true;
      await this.db.batch(batch);
      this.written += batch.length;
    }
  }
}

/** A record's kind and key for an error (the record key without the generation). */
function describeRecord(recordKey: Uint8Array): string {
  return `kind ${recordKey[0]}, key of ${recordKey.length - 1} bytes`;
}

function notTextForm(what: string): AppliedStoreError {
  return new AppliedStoreError(`corrupt applied-store record (${what}): its value is not in text form`);
}

/** The bytes a text-form value stands for: `stored` read as a string (in the scratch array: the visitor
 *  copies what it keeps), or as bytes by a store double that ignores the encoding. `key` names the record in
 *  an error: its stored key (`name` true: without the generation), or (a key record read as text) its kind,
 *  with `name`. */
function valueOfText(stored: string | Uint8Array, key: Uint8Array | number, name?: string | true): Uint8Array {
  const value = typeof stored === 'string' ? textToScratch(stored) : fromTextForm(stored);
  if (value !== null) return value;
  if (typeof key === 'number') throw notTextForm(`kind ${key}, key ${JSON.stringify(name)}`);
  throw notTextForm(describeRecord(name === true ? key : key.subarray(4)));
}

/** The bytes of a value read as bytes from a generation in text form (a read for a backup, a stream). */
export function bytesOfTextForm(stored: Uint8Array, recordKey: Uint8Array): Uint8Array {
  const value = fromTextForm(stored);
  if (value === null) throw notTextForm(describeRecord(recordKey));
  return value;
}
