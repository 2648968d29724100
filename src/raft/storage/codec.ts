// Binary records and LevelDB keys for the Raft store. Every value ends in a CRC32 of all bytes before it,
// so a flipped bit or a truncated value is detected at load time instead of silently feeding the core a
// wrong term, vote or command. Uint8Array/DataView records (a Buffer view only to hand bytes to the CRC), no JSON per entry.
import { crc32 as nativeCrc32 } from '@node-rs/crc32';
import { decodeConf, emptyConf, encodeConf } from '../core/conf.js';
import type { Entry, EntryKind, HardState, SnapshotMeta } from '../core/types.js';
import { CorruptRecordError } from './errors.js';

// ---- CRC32 (IEEE 802.3) ----
// @node-rs/crc32 (SIMD, native): node:zlib exports crc32() only from Node 20.15 (and 22.2) on while
// package.json's engines take any Node 20, and a hand-written
// table loop runs at ~400 MB/s — 75-500 ms of blocked event loop for each 30-45 MB snapshot
// of a million held locks, at every snapshot save, install and restart.
// Measured on 30 MB: table loop 74 ms, crc-32 (pure JS, slicing) 33 ms, @node-rs/crc32 4.5 ms.

export function crc32(bytes: Uint8Array, start = 0, end = bytes.length): number {
  return nativeCrc32(Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start)) >>> 0;
}

// ---- Keys ----
// Entry keys are 'e' + 8-byte big-endian index: LevelDB orders keys bytewise, so big-endian fixed width
// makes iteration order equal index order (a decimal string would put 10 before 9).

const TWO_POW_32 = 0x1_0000_0000; // declared before ENTRY_RANGE, which encodes a key at module load
const ENTRY_PREFIX = 0x65; // 'e'
const ENTRY_KEY_LENGTH = 9;
export const HARD_STATE_KEY: Uint8Array = new TextEncoder().encode('h');
export const SNAPSHOT_META_KEY: Uint8Array = new TextEncoder().encode('s/meta');
export const SNAPSHOT_DATA_KEY: Uint8Array = new TextEncoder().encode('s/data');
/** Snapshots kept by the WAL store ('S' + 8-byte big-endian index + 'm'eta or 'd'ata): one per index, so a
 *  new snapshot never overwrites the one the WAL still starts from (wal-storage.ts). */
const SNAPSHOT_PREFIX = 0x53; // 'S'
const SNAPSHOT_KEY_LENGTH = 10;
export const SNAPSHOT_RANGE = { gte: Uint8Array.of(SNAPSHOT_PREFIX), lt: Uint8Array.of(SNAPSHOT_PREFIX + 1) } as const;
export function snapshotKey(index: number, part: 'meta' | 'data'): Uint8Array {
  const key = new Uint8Array(SNAPSHOT_KEY_LENGTH);
  key[0] = SNAPSHOT_PREFIX;
  writeU64(new DataView(key.buffer), 1, index);
  key[9] = part === 'meta' ? 0x6d : 0x64;
  return key;
}
/** The index in a snapshot key, or null when the key is not one. */
export function snapshotKeyIndex(key: Uint8Array): number | null {
  if (key.length !== SNAPSHOT_KEY_LENGTH || key[0] !== SNAPSHOT_PREFIX) return null;
  return readU64(new DataView(key.buffer, key.byteOffset, key.byteLength), 1);
}
/** Iterator bounds covering every entry key and nothing else. */
export const ENTRY_RANGE = { gte: entryKey(0), lt: Uint8Array.of(ENTRY_PREFIX + 1) } as const;

export function entryKey(index: number): Uint8Array {
  const key = new Uint8Array(ENTRY_KEY_LENGTH);
  key[0] = ENTRY_PREFIX;
  writeU64(new DataView(key.buffer), 1, index);
  return key;
}

/** The index in an entry key, or null when the key is not a well-formed entry key. */
export function entryKeyIndex(key: Uint8Array): number | null {
  if (key.length !== ENTRY_KEY_LENGTH || key[0] !== ENTRY_PREFIX) return null;
  return readU64(new DataView(key.buffer, key.byteOffset, key.byteLength), 1);
}

// ---- Records ----

// One tag byte per record type; a new layout gets a new tag, so old data is never misread.
const TAG_ENTRY = 0x45; // 'E' v1
const TAG_HARD_STATE = 0x48; // 'H' v1
const TAG_SNAPSHOT_META = 0x4d; // 'M' v1: voters only (read, never written)
const TAG_SNAPSHOT_META_V2 = 0x4e; // 'N' v2: the whole configuration (learners, addresses, cluster id)
const TAG_SNAPSHOT_DATA = 0x44; // 'D' v1
const TAG_SNAPSHOT_HEADER = 0x57; // 'W' v1: the WAL store's snapshot meta, with its raw data's length and CRC
const CRC_BYTES = 4;
const NULL_STRING = 0xffff; // u16 length marking votedFor = null
const KINDS: readonly EntryKind[] = ['normal', 'noop', 'config'];

/** An entry record's bytes before its data: tag, index, term, kind. */
const ENTRY_HEAD_BYTES = 1 + 8 + 8 + 1;

export function encodeEntry(entry: Entry): Uint8Array {
  const out = new Uint8Array(encodedEntryLength(entry));
  encodeEntryAt(entry, out, new DataView(out.buffer, out.byteOffset, out.byteLength), 0);
  return out;
}

/** How many bytes encodeEntry makes of `entry`. */
export function encodedEntryLength(entry: Entry): number {
  return ENTRY_HEAD_BYTES + entry.data.length + CRC_BYTES;
}

/** encodeEntry's bytes written into `out` at `at` (`view`: a DataView of exactly `out`), with no buffer of
 *  their own: the WAL writes a save's entries straight into the one block it keeps (wal-frame.ts). */
export function encodeEntryAt(entry: Entry, out: Uint8Array, view: DataView, at: number): void {
  const kind = KINDS.indexOf(entry.kind);
  if (kind < 0) throw new RangeError(`unknown entry kind ${String(entry.kind)}`);
  view.setUint8(at, TAG_ENTRY);
  writeU64(view, at + 1, entry.index);
  writeU64(view, at + 9, entry.term);
  view.setUint8(at + 17, kind);
  out.set(entry.data, at + ENTRY_HEAD_BYTES);
  const dataEnd = at + ENTRY_HEAD_BYTES + entry.data.length;
  view.setUint32(dataEnd, crc32(out, at, dataEnd));
}

/** The index is stored in the value too, so a value under the wrong key is caught, not trusted. */
export function decodeEntry(value: Uint8Array): Entry {
  const r = Reader.open(value, TAG_ENTRY, 'entry');
  const index = r.u64();
  const term = r.u64();
  const kind = KINDS[r.u8()];
  if (kind === undefined) throw new CorruptRecordError('entry record has an unknown kind');
  return { index, term, kind, data: r.rest() };
}

export function encodeHardState(hs: HardState): Uint8Array {
  const voted = hs.votedFor === null ? null : new TextEncoder().encode(hs.votedFor);
  const w = new Writer(1 + 8 + 8 + 2 + (voted?.length ?? 0));
  w.u8(TAG_HARD_STATE).u64(hs.term).u64(hs.commitIndex).str(voted);
  return w.finish();
}

export function decodeHardState(value: Uint8Array): HardState {
  const r = Reader.open(value, TAG_HARD_STATE, 'hard state');
  const term = r.u64();
  const commitIndex = r.u64();
  const votedFor = r.str();
  r.end();
  return { term, votedFor, commitIndex };
}

export function encodeSnapshotMeta(meta: SnapshotMeta): Uint8Array {
  const conf = encodeConf(meta.conf);
  const w = new Writer(1 + 8 + 8 + conf.length);
  w.u8(TAG_SNAPSHOT_META_V2).u64(meta.index).u64(meta.term).bytes(conf);
  return w.finish();
}

export function decodeSnapshotMeta(value: Uint8Array): SnapshotMeta {
  if (value[0] === TAG_SNAPSHOT_META_V2) {
    const r = Reader.open(value, TAG_SNAPSHOT_META_V2, 'snapshot meta');
    const index = r.u64();
    const term = r.u64();
    try {
      return { index, term, conf: decodeConf(r.rest()) };
    } catch (err) {
      throw new CorruptRecordError(`snapshot meta record: ${(err as Error).message}`);
    }
  }
  const r = Reader.open(value, TAG_SNAPSHOT_META, 'snapshot meta');
  const index = r.u64();
  const term = r.u64();
  const count = r.u16();
  const voters: string[] = [];
  for (let i = 0; i < count; i++) {
    const v = r.str();
    if (v === null) throw new CorruptRecordError('snapshot meta record has a null voter');
    voters.push(v);
  }
  r.end();
  return { index, term, conf: { ...emptyConf(), voters } };
}

/** Snapshot data carries its snapshot index, so data and meta from different snapshots never pair up. */
export function encodeSnapshotData(index: number, data: Uint8Array): Uint8Array {
  const w = new Writer(1 + 8 + data.length);
  w.u8(TAG_SNAPSHOT_DATA).u64(index).bytes(data);
  return w.finish();
}

export function decodeSnapshotData(value: Uint8Array): { index: number; data: Uint8Array } {
  const r = Reader.open(value, TAG_SNAPSHOT_DATA, 'snapshot data');
  const index = r.u64();
  return { index, data: r.rest() };
}

/**
 * The WAL store keeps a snapshot's data raw under its own key, with no tag, index or CRC around it: wrapping
 * 30-45 MB (a million held locks) in a record cost one more copy of it per save. Its header record carries
 * the meta, the data's length and CRC instead, so data from another snapshot or cut short is still caught.
 */
export function encodeSnapshotHeader(meta: SnapshotMeta, data: Uint8Array): Uint8Array {
  const conf = encodeConf(meta.conf);
  const w = new Writer(1 + 8 + 8 + 8 + 8 + conf.length);
  w.u8(TAG_SNAPSHOT_HEADER).u64(meta.index).u64(meta.term).u64(data.length).u64(crc32(data)).bytes(conf);
  return w.finish();
}

export function decodeSnapshotHeader(value: Uint8Array): { meta: SnapshotMeta; dataBytes: number; dataCrc: number } {
  const r = Reader.open(value, TAG_SNAPSHOT_HEADER, 'snapshot header');
  const index = r.u64();
  const term = r.u64();
  const dataBytes = r.u64();
  const dataCrc = r.u64();
  try {
    return { meta: { index, term, conf: decodeConf(r.rest()) }, dataBytes, dataCrc };
  } catch (err) {
    throw new CorruptRecordError(`snapshot header record: ${(err as Error).message}`);
  }
}

// ---- Fixed-width helpers ----

/** u64 as two u32 halves: indexes and terms are safe integers (< 2^53), never bigint here. */
export function writeU64(view: DataView, offset: number, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a non-negative safe integer: ${n}`);
  view.setUint32(offset, Math.floor(n / TWO_POW_32));
  view.setUint32(offset + 4, n >>> 0);
}

export function readU64(view: DataView, offset: number): number {
  const n = view.getUint32(offset) * TWO_POW_32 + view.getUint32(offset + 4);
  if (!Number.isSafeInteger(n)) throw new CorruptRecordError(`u64 value beyond 2^53 at byte ${offset}`);
  return n;
}

class Writer {
  private readonly buf: Uint8Array;
  private readonly view: DataView;
  private pos = 0;

  constructor(payloadLength: number) {
    this.buf = new Uint8Array(payloadLength + CRC_BYTES);
    this.view = new DataView(this.buf.buffer);
  }
  u8(n: number): this {
    this.view.setUint8(this.pos, n);
    this.pos += 1;
    return this;
  }
  u16(n: number): this {
    this.view.setUint16(this.pos, n);
    this.pos += 2;
    return this;
  }
  u64(n: number): this {
    writeU64(this.view, this.pos, n);
    this.pos += 8;
    return this;
  }
  bytes(b: Uint8Array): this {
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }
  /** u16 length + UTF-8 bytes; length 0xffff encodes null. */
  str(b: Uint8Array | null): this {
    if (b === null) return this.u16(NULL_STRING);
    if (b.length >= NULL_STRING) throw new RangeError('string longer than 65534 bytes');
    return this.u16(b.length).bytes(b);
  }
  finish(): Uint8Array {
    this.view.setUint32(this.pos, crc32(this.buf, 0, this.pos));
    return this.buf;
  }
}

class Reader {
  private pos = 1; // after the tag

  private constructor(
    private readonly buf: Uint8Array,
    private readonly view: DataView,
    private readonly end_: number,
    private readonly what: string,
  ) {}

  /** Checks length, CRC and tag before any field is read. */
  static open(value: Uint8Array, tag: number, what: string): Reader {
    if (value.length < 1 + CRC_BYTES) throw new CorruptRecordError(`${what} record is truncated (${value.length} bytes)`);
    const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
    const end = value.length - CRC_BYTES;
    const stored = view.getUint32(end);
    const actual = crc32(value, 0, end);
    if (stored !== actual) {
      throw new CorruptRecordError(`${what} record fails its CRC32 check (stored ${hex(stored)}, computed ${hex(actual)})`);
    }
    if (value[0] !== tag) throw new CorruptRecordError(`${what} record has tag ${hex(value[0]!)}, expected ${hex(tag)}`);
    return new Reader(value, view, end, what);
  }
  private need(n: number): void {
    if (this.pos + n > this.end_) throw new CorruptRecordError(`${this.what} record is shorter than its fields`);
  }
  u8(): number {
    this.need(1);
    return this.view.getUint8(this.pos++);
  }
  u16(): number {
    this.need(2);
    const n = this.view.getUint16(this.pos);
    this.pos += 2;
    return n;
  }
  u64(): number {
    this.need(8);
    const n = readU64(this.view, this.pos);
    this.pos += 8;
    return n;
  }
  str(): string | null {
    const len = this.u16();
    if (len === NULL_STRING) return null;
    this.need(len);
    const bytes = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new CorruptRecordError(`${this.what} record holds a string that is not valid UTF-8`);
    }
  }
  /** The remaining payload, copied into a plain Uint8Array: LevelDB hands out Buffers, whose slice() aliases. */
  rest(): Uint8Array {
    const out = new Uint8Array(this.buf.subarray(this.pos, this.end_));
    this.pos = this.end_;
    return out;
  }
  end(): void {
    if (this.pos !== this.end_) throw new CorruptRecordError(`${this.what} record has ${this.end_ - this.pos} trailing bytes`);
  }
}

function hex(n: number): string {
  return '0x' + n.toString(16).padStart(n > 0xff ? 8 : 2, '0');
}
