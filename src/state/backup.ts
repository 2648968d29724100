// A backup of a live node's applied state (`leasehold snapshot save`), and reading one back (`snapshot status`,
// `snapshot restore`). The file is the applied store's records as one consistent LevelDB view saw them (an
// explicit snapshot of the moment the save began), so it is taken without stopping anything, like
// `etcdctl snapshot save`:
//   "LHBK" format:u8 clusterId:str
//   (0x01 key:bytes value:bytes)*        the records of the generation in force in the view, each key as
//                                        stored (generation prefix first)
//   0x00 count:uvarint meta:bytes        the meta record of the same view: the generation in force and the
//                                        applied point (index, term, configuration) its records reach
//   sha256:32 bytes                      of everything before it
// Files of earlier builds also hold the records of any other generation (a swap in progress); readBackup
// keeps only those in force. The values are their bytes and the meta record says so (format 1), whether or
// not the store keeps them in text form (applied-store.ts): a file is the same from every build.
import { createHash } from 'node:crypto';
import { ByteReader, ByteWriter, encodeUtf8 } from '../lock/bytes.js';
import {
  META_FORMAT_BYTES,
  META_KEY,
  REPLACE_BATCH_RECORDS,
  bytesOfTextForm,
  decodeMeta,
  encodeMeta,
  generationPrefix,
  type AppliedPoint,
  type RecordDb,
} from './applied-store.js';
import { textToScratch } from './text-form.js';
import { viewRows } from './view-rows.js';
import {
  DEDUP_RECORD,
  KEY_DELAY_RECORD,
  KEY_RECORD,
  REST_RECORD,
  SESSION_RECORD,
  WAIT_LINE_RECORD,
  type RecordOp,
  type StoredRecords,
} from '../lock/store-records.js';

const MAGIC = [0x4c, 0x48, 0x42, 0x4b]; // "LHBK"
const FORMAT = 1;
const RECORD = 0x01;
const END = 0x00;
const CHECKSUM_BYTES = 32;
/** Bytes per chunk handed to the stream (a gRPC message each). */
export const BACKUP_CHUNK_BYTES = 256 * 1024;

export class BackupError extends Error {
  override readonly name = 'BackupError';
}

/** The file's bytes in chunks, from one consistent view of `db`. */
export async function* backupChunks(db: RecordDb, clusterId: string): AsyncGenerator<Uint8Array> {
  const hash = createHash('sha256');
  let out = new ByteWriter(BACKUP_CHUNK_BYTES + 4096);
  const flush = (): Uint8Array => {
    const chunk = out.finish();
    hash.update(chunk);
    out = new ByteWriter(BACKUP_CHUNK_BYTES + 4096);
    return chunk;
  };
  for (const b of MAGIC) out.byte(b);
  out.byte(FORMAT);
  out.string(clusterId);
  // One view (a LevelDB snapshot) for the meta record and the records, so they are one state; the records
  // are read with the encodings a restart reads with (view-rows.ts), the meta record as bytes.
  const view = db.snapshot();
  let meta: Uint8Array;
  let count = 0;
  try {
    const stored = await db.get(META_KEY, { snapshot: view });
    if (stored === undefined) throw new BackupError('the node holds no applied state yet (its store is empty)');
    const { generation, point, textValues } = decodeMeta(stored);
    meta = encodeMeta(generation, point, META_FORMAT_BYTES);
    for await (const rows of viewRows(db, view, generation, textValues)) {
      for (const [key, value] of rows) {
        out.byte(RECORD);
        if (typeof key === 'string') out.string(key);
        else out.lengthPrefixed(key);
        out.lengthPrefixed(textValues ? bytesOfValue(value, key) : (value as Uint8Array));
        count++;
        if (out.size >= BACKUP_CHUNK_BYTES) yield flush();
      }
    }
  } finally {
    await view.close();
  }
  out.byte(END);
  out.uint(count);
  out.lengthPrefixed(meta);
  const last = flush();
  yield concat(last, new Uint8Array(hash.digest()));
}

/** The bytes a value of a generation in text form stands for (read as text, or as bytes by a store double
 *  that ignores the encoding); a value that is not text form names its record. */
function bytesOfValue(value: string | Uint8Array, key: string | Uint8Array): Uint8Array {
  if (typeof value === 'string') {
    const bytes = textToScratch(value);
    if (bytes !== null) return bytes;
    value = encodeUtf8(value); // not text form: refused below, naming the record
  }
  return bytesOfTextForm(value, (typeof key === 'string' ? encodeUtf8(key) : key).subarray(4));
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** What a backup file holds. */
export interface Backup {
  clusterId: string;
  point: AppliedPoint;
  generation: number;
  /** Records in the file (those of other generations included). */
  fileRecords: number;
  sizeBytes: number;
  sha256: string;
}

/** Where each record of a file lies (key start and end, value start and end, in the body), and which are in
 *  force: a million records read as two views each were most of `snapshot save`'s CPU after its stream, and
 *  of its collection — the views are made only for the records a reader walks, when it walks them. */
class RecordSpans {
  constructor(
    private readonly body: Uint8Array,
    private readonly spans: Uint32Array,
    readonly count: number,
    private readonly prefix: Uint8Array,
  ) {}

  /** The records in force whose record key starts with `kind` (all of them when undefined), in file order. */
  *inForce(kind?: number): Generator<[Uint8Array, Uint8Array]> {
    const { body, spans, prefix } = this;
    for (let i = 0; i < this.count; i++) {
      const keyStart = spans[4 * i]!;
      const keyEnd = spans[4 * i + 1]!;
      if (keyEnd - keyStart <= 4) continue;
      if (
        body[keyStart] !== prefix[0] ||
        body[keyStart + 1] !== prefix[1] ||
        body[keyStart + 2] !== prefix[2] ||
        body[keyStart + 3] !== prefix[3]
      )
        continue;
      if (kind !== undefined && body[keyStart + 4] !== kind) continue;
      yield [body.subarray(keyStart + 4, keyEnd), body.subarray(spans[4 * i + 2]!, spans[4 * i + 3]!)];
    }
  }
}

const spansOf = new WeakMap<Backup, RecordSpans>();

/** Reads and checks a backup file: a file whose checksum does not match is refused before anything else. */
export function readBackup(file: Uint8Array): Backup {
  // A plain view: a Buffer's subarray is a Buffer, made through its species constructor (slow, per record).
  const bytes = new Uint8Array(file.buffer, file.byteOffset, file.byteLength);
  if (bytes.length < MAGIC.length + 1 + CHECKSUM_BYTES) throw new BackupError(`not a leasehold backup: ${bytes.length} bytes`);
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) throw new BackupError('not a leasehold backup (bad magic)');
  const body = bytes.subarray(0, bytes.length - CHECKSUM_BYTES);
  const expected = Buffer.from(bytes.subarray(bytes.length - CHECKSUM_BYTES)).toString('hex');
  const actual = createHash('sha256').update(body).digest('hex');
  if (actual !== expected)
    throw new BackupError(`the backup's checksum does not match (sha256 ${actual}, the file says ${expected}): the file is damaged`);
  const input = new ByteReader(body, (message, offset) => new BackupError(`corrupt backup at byte ${offset}: ${message}`));
  input.raw(MAGIC.length);
  const format = input.byte();
  if (format !== FORMAT) input.fail(`format ${format}; this build reads ${FORMAT}`);
  const clusterId = input.string(1024);
  // Offsets in a file readFile can hold (under 4 GiB) fit 32 bits.
  let spans = new Uint32Array(4 * 1024);
  let count = 0;
  for (;;) {
    const tag = input.byte();
    if (tag === END) break;
    if (tag !== RECORD) input.fail(`unknown tag ${tag}`);
    if (4 * count + 4 > spans.length) {
      const grown = new Uint32Array(spans.length * 2);
      grown.set(spans);
      spans = grown;
    }
    const keyStart = input.skipLengthPrefixed(1 << 20);
    spans[4 * count] = keyStart;
    spans[4 * count + 1] = input.position;
    spans[4 * count + 2] = input.skipLengthPrefixed(1 << 26);
    spans[4 * count + 3] = input.position;
    count++;
  }
  const trailerCount = input.uint();
  if (trailerCount !== count) input.fail(`${count} records, the trailer says ${trailerCount}`);
  const { generation, point, textValues } = decodeMeta(input.lengthPrefixed(1 << 20));
  // A file holds values as they are (backupChunks); one that says otherwise was not written by a node.
  if (textValues) input.fail('the meta record says the values are in text form');
  input.end();
  const records = new RecordSpans(body, spans, count, generationPrefix(generation));
  const backup: Backup = {
    clusterId,
    point,
    generation,
    fileRecords: count,
    sizeBytes: bytes.length,
    sha256: expected,
  };
  spansOf.set(backup, records);
  return backup;
}

/** A backup's records as store-records.ts reads them (restoreFromRecords), the rest record found: each kind
 *  walked from the file when read (none of them a list). */
export function backupRecords(backup: Backup): StoredRecords {
  const spans = spansOf.get(backup);
  if (spans === undefined) throw new BackupError('not a backup read by readBackup');
  let rest: Uint8Array | undefined;
  for (const [k, v] of spans.inForce(REST_RECORD)) if (k.length === 1) rest = v;
  if (rest === undefined) throw new BackupError('the backup holds no rest record');
  const ofKind = (kind: number): Iterable<[Uint8Array, Uint8Array]> => ({ [Symbol.iterator]: () => spans.inForce(kind) });
  return {
    rest,
    sessions: ofKind(SESSION_RECORD),
    keys: ofKind(KEY_RECORD),
    dedup: ofKind(DEDUP_RECORD),
    lines: ofKind(WAIT_LINE_RECORD),
    keyDelays: ofKind(KEY_DELAY_RECORD),
  };
}

/** A backup's records in force (without their generation prefix: store-records.ts keys, as views into the
 *  file) in pieces for the applied store's replace, walked from the file as the store writes them: a restore
 *  holds one piece, not a list of every record (1.25M at a million locks). A piece is one of the store's
 *  replace batches. */
export function* backupPieces(backup: Backup, perPiece = REPLACE_BATCH_RECORDS): Generator<RecordOp[]> {
  const spans = spansOf.get(backup);
  if (spans === undefined) throw new BackupError('not a backup read by readBackup');
  let piece: RecordOp[] = [];
  for (const [key, value] of spans.inForce()) {
    piece.push({ key, value });
    if (piece.length === perPiece) {
      yield piece;
      piece = [];
    }
  }
  if (piece.length > 0) yield piece;
}
