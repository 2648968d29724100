// A backup of a live node's applied state (`leasehold snapshot save`), and reading one back (`snapshot status`,
// `snapshot restore`). The file is the applied store's records as one consistent LevelDB view saw them (an
// iterator reads a snapshot of the moment it was opened), so it is taken without stopping anything, like
// `etcdctl snapshot save`:
//   "LHBK" format:u8 clusterId:str
//   (0x01 key:bytes value:bytes)*        every record of the view, each key as stored (generation prefix first)
//   0x00 count:uvarint meta:bytes        the meta record of the same view: the generation in force and the
//                                        applied point (index, term, configuration) its records reach
//   sha256:32 bytes                      of everything before it
// Records of another generation than the meta names (a swap was in progress) are in the file but not in
// the state; readBackup keeps only those in force. The values of those in force are their bytes and the meta
// record says so (format 1), whether or not the store keeps them in text form (applied-store.ts): a file is
// the same from every build.
import { createHash } from 'node:crypto';
import { ByteReader, ByteWriter } from '../lock/bytes.js';
import {
  META_FORMAT_BYTES,
  META_KEY,
  bytesOfTextForm,
  decodeMeta,
  encodeMeta,
  generationPrefix,
  type AppliedPoint,
  type RecordDb,
} from './applied-store.js';
import {
  DEDUP_RECORD,
  KEY_DELAY_RECORD,
  KEY_RECORD,
  REST_RECORD,
  SESSION_RECORD,
  WAIT_LINE_RECORD,
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
  // One iterator over everything, so all is from the same view: the meta record first (0xff 0x6d sorts after
  // every generation prefix: a seek), then the records of every generation.
  const it = db.iterator({ gte: new Uint8Array(4) });
  let meta: Uint8Array | null = null;
  let count = 0;
  try {
    it.seek(META_KEY);
    const [row] = await it.nextv(1);
    if (row === undefined || !isMetaKey(row[0])) throw new BackupError('the node holds no applied state yet (its store is empty)');
    const { generation, point, textValues } = decodeMeta(row[1]);
    meta = encodeMeta(generation, point, META_FORMAT_BYTES);
    const inForce = generationPrefix(generation);
    it.seek(new Uint8Array(4));
    for (;;) {
      const rows = await it.nextv(1000);
      if (rows.length === 0) break;
      for (const [key, value] of rows) {
        if (isMetaKey(key)) continue;
        out.byte(RECORD);
        out.lengthPrefixed(key);
        const mine =
          textValues && key.length > 4 && key[0] === inForce[0] && key[1] === inForce[1] && key[2] === inForce[2] && key[3] === inForce[3];
        out.lengthPrefixed(mine ? bytesOfTextForm(value, key.subarray(4)) : value);
        count++;
        if (out.size >= BACKUP_CHUNK_BYTES) yield flush();
      }
    }
  } finally {
    await it.close();
  }
  out.byte(END);
  out.uint(count);
  out.lengthPrefixed(meta);
  const last = flush();
  yield concat(last, new Uint8Array(hash.digest()));
}

function isMetaKey(key: Uint8Array): boolean {
  return key.length === META_KEY.length && key[0] === META_KEY[0] && key[1] === META_KEY[1];
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
  /** The records of the generation in force, without their generation prefix (store-records.ts keys). */
  records: [Uint8Array, Uint8Array][];
  /** Records in the file (those of other generations included). */
  fileRecords: number;
  sizeBytes: number;
  sha256: string;
}

/** Reads and checks a backup file: a file whose checksum does not match is refused before anything else. */
export function readBackup(bytes: Uint8Array): Backup {
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
  const all: [Uint8Array, Uint8Array][] = [];
  for (;;) {
    const tag = input.byte();
    if (tag === END) break;
    if (tag !== RECORD) input.fail(`unknown tag ${tag}`);
    all.push([input.lengthPrefixed(1 << 20), input.lengthPrefixed(1 << 26)]);
  }
  const count = input.uint();
  if (count !== all.length) input.fail(`${all.length} records, the trailer says ${count}`);
  const { generation, point, textValues } = decodeMeta(input.lengthPrefixed(1 << 20));
  // A file holds values as they are (backupChunks); one that says otherwise was not written by a node.
  if (textValues) input.fail('the meta record says the values are in text form');
  input.end();
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, generation);
  const records: [Uint8Array, Uint8Array][] = [];
  for (const [key, value] of all) {
    if (key.length > 4 && key[0] === prefix[0] && key[1] === prefix[1] && key[2] === prefix[2] && key[3] === prefix[3])
      records.push([key.subarray(4), value]);
  }
  return { clusterId, point, generation, records, fileRecords: all.length, sizeBytes: bytes.length, sha256: expected };
}

/** A backup's records as store-records.ts reads them (restoreFromRecords), the rest record found. */
export function backupRecords(backup: Backup): StoredRecords {
  const rest = backup.records.find(([k]) => k.length === 1 && k[0] === REST_RECORD);
  if (rest === undefined) throw new BackupError('the backup holds no rest record');
  return {
    rest: rest[1],
    sessions: backup.records.filter(([k]) => k[0] === SESSION_RECORD),
    keys: backup.records.filter(([k]) => k[0] === KEY_RECORD),
    dedup: backup.records.filter(([k]) => k[0] === DEDUP_RECORD),
    lines: backup.records.filter(([k]) => k[0] === WAIT_LINE_RECORD),
    keyDelays: backup.records.filter(([k]) => k[0] === KEY_DELAY_RECORD),
  };
}
