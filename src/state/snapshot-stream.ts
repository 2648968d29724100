// A snapshot streamed from the applied store to a follower behind the log's start (cluster level 6,
// versions.ts LEVEL_RECORD_STREAM): the records of the generation in force as one LevelDB view saw them (an
// iterator reads a snapshot of the moment it was opened, so batches written while the stream runs never
// leak into it), read with nextv a chunk at a time as the leader sends them — the whole state is never one
// buffer. The point it covers is the meta record of that same view: exactly what the store held.
//
// A chunk (InstallSnapshot.chunk; the offsets the Raft core counts are byte offsets in the concatenation):
//   "LHR" format:u8 last:u8 count:uvarint (key:bytes value:bytes)*count
//   and after the last chunk's records: total:uvarint index:uvarint term:uvarint sha256:32 bytes
// Keys are record keys (store-records.ts) without the generation prefix, values their bytes (a store that keeps
// them in text form, applied-store.ts, sends what they stand for: the stream is the same from every build). The checksum covers every chunk's
// record bytes (from after `count` to the end of its records) in order, and `total` counts them: the
// receiver (snapshot-sink.ts) swaps the new generation in only when both agree with what it wrote.
// A chunk is cut once its records reach the chunk size, so where chunks start depends only on the view:
// an earlier chunk asked again (a follower that starts over, a lost chunk) is read again by seeking the
// same iterator to the key it started at.
import { createHash, type Hash } from 'node:crypto';
import { ByteReader, ByteWriter } from '../lock/bytes.js';
import { META_KEY, bytesOfTextForm, decodeMeta, generationPrefix, type AppliedPoint, type RecordDb } from './applied-store.js';

const MAGIC = [0x4c, 0x48, 0x52]; // "LHR"
const FORMAT = 1;
export const STREAM_CHECKSUM_BYTES = 32;
/** Records one nextv reads at most: about a chunk's worth (a record is rarely under 32 bytes), so what is
 *  read ahead of a chunk stays near its size. */
const READ_RECORDS = 512;
const READ_RECORD_BYTES = 32;

export class SnapshotStreamError extends Error {
  override readonly name = 'SnapshotStreamError';
}

/** The first chunk of a snapshot says which kind it is: a record stream, or (from a leader below level 6)
 *  the whole-state encoding (src/lock/snapshot.ts, "LHS"). */
export function isRecordStream(firstChunk: Uint8Array): boolean {
  return firstChunk.length >= 4 && firstChunk[0] === MAGIC[0] && firstChunk[1] === MAGIC[1] && firstChunk[2] === MAGIC[2];
}

export interface StreamChunk {
  data: Uint8Array;
  /** The stream's last chunk. */
  last: boolean;
}

/** The trailer the last chunk carries. */
export interface StreamTrailer {
  total: number;
  index: number;
  term: number;
  sha256: Uint8Array;
}

/** One chunk read back: its records and, for the last, the trailer; `hashed` is the byte range the
 *  checksum covers. */
export interface DecodedChunk {
  records: [Uint8Array, Uint8Array][];
  hashed: Uint8Array;
  trailer: StreamTrailer | null;
}

export function decodeChunk(bytes: Uint8Array, maxRecordBytes: number): DecodedChunk {
  const input = new ByteReader(
    bytes,
    (message, offset) => new SnapshotStreamError(`corrupt snapshot stream chunk at byte ${offset}: ${message}`),
  );
  for (const b of MAGIC) if (input.byte() !== b) input.fail('not a record stream chunk');
  const format = input.byte();
  if (format !== FORMAT) input.fail(`format ${format}; this build reads ${FORMAT}`);
  const last = input.byte();
  if (last > 1) input.fail(`last flag ${last}`);
  const count = input.uint();
  const from = input.position;
  const records: [Uint8Array, Uint8Array][] = [];
  for (let i = 0; i < count; i++) {
    const key = input.lengthPrefixed(maxRecordBytes);
    if (key.length === 0) input.fail('an empty record key');
    records.push([key, input.lengthPrefixed(maxRecordBytes)]);
  }
  const hashed = bytes.subarray(from, input.position);
  let trailer: StreamTrailer | null = null;
  if (last === 1) {
    const total = input.uint();
    const index = input.uint();
    const term = input.uint();
    trailer = { total, index, term, sha256: input.raw(STREAM_CHECKSUM_BYTES) };
  }
  input.end();
  return { records, hashed, trailer };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function hasPrefix(key: Uint8Array, prefix: Uint8Array): boolean {
  if (key.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}

/**
 * The leader's side: one LevelDB view of the store, read a chunk at a time. Chunks are asked for by offset
 * (the Raft core's); one at the frontier extends the stream, one already made is read again from where it
 * began (seek), and the last two are kept for resends. Reads are one at a time (an iterator serves one).
 */
export class StoreStream {
  /** Chunk start offset -> the first key it holds (with the generation prefix): where to seek to read it again. */
  private readonly starts = new Map<number, Uint8Array>();
  private readonly recent = new Map<number, StreamChunk>();
  /** The offset the next chunk made at the iterator's position starts at. */
  private position = 0;
  /** Rows read but not yet put in a chunk (nextv reads past a chunk's end). */
  private rows: [Uint8Array, Uint8Array][] = [];
  private rowAt = 0;
  private ended = false;
  /** The first offset never made yet: chunks from here on extend the checksum and the count. */
  private frontier = 0;
  private readonly hash: Hash = createHash('sha256');
  private readonly readRecords: number;
  private total = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly it: ReturnType<RecordDb['iterator']>,
    private readonly prefix: Uint8Array,
    readonly point: AppliedPoint,
    private readonly chunkBytes: number,
    /** The view's values are in text form (its meta record says so). */
    private readonly textValues: boolean,
  ) {
    this.readRecords = Math.max(1, Math.min(READ_RECORDS, Math.ceil(chunkBytes / READ_RECORD_BYTES)));
  }

  /** Opens a view of `db` and reads its meta record; null when the store holds no state. */
  static async open(db: RecordDb, chunkBytes: number): Promise<StoreStream | null> {
    // One iterator for the records and the meta record, so the point is the view's own.
    const it = db.iterator({ gte: generationPrefix(0) });
    try {
      it.seek(META_KEY);
      const [row] = await it.nextv(1);
      if (row === undefined || !sameBytes(row[0], META_KEY)) {
        await it.close();
        return null;
      }
      const { generation, point, textValues } = decodeMeta(row[1]);
      const prefix = generationPrefix(generation);
      it.seek(prefix);
      const stream = new StoreStream(it, prefix, point, Math.max(1, chunkBytes), textValues);
      stream.starts.set(0, prefix);
      return stream;
    } catch (err) {
      await it.close().catch(() => {});
      throw err;
    }
  }

  /** The chunk that starts at `offset`; null when no chunk of this stream starts there. */
  chunkAt(offset: number): Promise<StreamChunk | null> {
    const read = this.queue.then(() => this.read(offset));
    this.queue = read.catch(() => {});
    return read;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    await this.it.close();
  }

  private async read(offset: number): Promise<StreamChunk | null> {
    if (this.closed) return null;
    const kept = this.recent.get(offset);
    if (kept !== undefined) return kept;
    if (offset !== this.position) {
      const start = this.starts.get(offset);
      if (start !== undefined) this.seekTo(offset, start);
      else if (offset > this.frontier && !this.ended) {
        // Past what this stream has made (a follower that had part of an earlier stream of the same view:
        // the same point makes the same chunks): make the chunks between, without keeping them.
        if (this.position !== this.frontier) this.seekTo(this.frontier, this.starts.get(this.frontier)!);
        while (this.position < offset && !(await this.make()).last);
        if (this.position !== offset) return null;
      } else return null;
    }
    const chunk = await this.make();
    this.recent.set(offset, chunk);
    if (this.recent.size > 2) this.recent.delete(this.recent.keys().next().value!);
    return chunk;
  }

  private seekTo(offset: number, start: Uint8Array): void {
    this.it.seek(start);
    this.rows = [];
    this.rowAt = 0;
    this.ended = false;
    this.position = offset;
  }

  private async nextRow(): Promise<[Uint8Array, Uint8Array] | null> {
    if (this.ended) return null;
    if (this.rowAt >= this.rows.length) {
      this.rows = await this.it.nextv(this.readRecords);
      this.rowAt = 0;
    }
    const row = this.rows[this.rowAt];
    if (row === undefined || !hasPrefix(row[0], this.prefix)) {
      this.ended = true;
      return null;
    }
    return row;
  }

  private async make(): Promise<StreamChunk> {
    const offset = this.position;
    const extends_ = offset === this.frontier;
    const out = new ByteWriter(Math.min(this.chunkBytes, 1 << 20) + 64);
    for (const b of MAGIC) out.byte(b);
    out.byte(FORMAT);
    const records = new ByteWriter(Math.min(this.chunkBytes, 1 << 20) + 64);
    let count = 0;
    while (records.size < this.chunkBytes) {
      const row = await this.nextRow();
      if (row === null) break;
      this.rowAt++;
      const key = row[0].subarray(this.prefix.length);
      records.lengthPrefixed(key);
      records.lengthPrefixed(this.textValues ? bytesOfTextForm(row[1], key) : row[1]);
      count++;
    }
    const last = (await this.nextRow()) === null;
    const body = records.view();
    if (extends_) {
      this.hash.update(body);
      this.total += count;
    }
    out.byte(last ? 1 : 0);
    out.uint(count);
    out.raw(body);
    if (last) {
      // Made at the frontier, or made again after it was (a resend): the checksum and count are whole.
      out.uint(this.total);
      out.uint(this.point.index);
      out.uint(this.point.term);
      out.raw(this.hash.copy().digest());
    }
    const data = out.finish();
    this.position = offset + data.length;
    if (extends_) this.frontier = this.position;
    if (!last) {
      const next = this.rows[this.rowAt];
      if (next !== undefined) this.starts.set(this.position, next[0]);
    }
    return { data, last };
  }
}
