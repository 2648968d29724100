// A protobuf writer of the wire format's primitives (varints, tags, length-delimited fields) into one
// buffer of exactly the message's size, for the hand-written codecs (raft-encode.ts). Why by hand and not
// protobufjs: see there.
//
// The encoder computes each message's size first (the size functions here) and writes the length prefix
// of every sub-message before its bytes, as protobuf's canonical encoding does: one allocation per
// gRPC message, no growing buffer, no copying a written sub-message to make room for its prefix. Values
// are checked by the caller (non-negative safe integers); the writer trusts them.
import { WIRE_LEN, WIRE_VARINT } from './proto-reader.js';

/** Bytes a varint of `v` (a non-negative safe integer) takes. */
export function varintSize(v: number): number {
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x200000) return 3;
  if (v < 0x10000000) return 4;
  if (v < 2 ** 35) return 5;
  if (v < 2 ** 42) return 6;
  if (v < 2 ** 49) return 7;
  return 8; // below 2^53, so below 2^56
}

/** Bytes `s` takes in UTF-8. Node ids and contexts are ASCII: counted without Buffer.byteLength. */
export function utf8Size(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

/** Bytes of a field's tag: one below field number 16, two up to 2047. */
export function tagSize(field: number): number {
  return field < 16 ? 1 : 2;
}

/** Bytes of a varint field numbered below 16 (one-byte tag) holding `v`. */
export function varintFieldSize(v: number): number {
  return 1 + varintSize(v);
}

/** Bytes of a length-delimited field numbered below 16 of `length` bytes, tag and prefix included. */
export function lenFieldSize(length: number): number {
  return 1 + varintSize(length) + length;
}

/** Bytes a varint of the bigint `v` (0 <= v < 2^64) takes. */
export function bigVarintSize(v: bigint): number {
  let n = 1;
  while (v >= 0x80n) {
    v >>= 7n;
    n++;
  }
  return n;
}

/**
 * Bytes of a 64-bit varint field numbered below 16 holding `v`: a number (a safe integer; 0 is left off the
 * wire, proto3's default) or a bigint (a value past 2^53-1, so never 0). The form the hand encoders keep a
 * uint64/int64 in so that no id or token goes through a double.
 */
export function wideVarintFieldSize(v: number | bigint): number {
  if (typeof v === 'number') return v === 0 ? 0 : varintFieldSize(v);
  return 1 + bigVarintSize(v);
}

export class ProtoWriter {
  readonly buf: Buffer;
  pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  varint(v: number): void {
    const buf = this.buf;
    let pos = this.pos;
    while (v > 0x7fffffff) {
      buf[pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    while (v >= 0x80) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[pos++] = v;
    this.pos = pos;
  }

  /** A varint field; proto3 leaves a field at its default (0) off the wire. */
  varintField(field: number, v: number): void {
    if (v === 0) return;
    this.buf[this.pos++] = (field << 3) | WIRE_VARINT;
    this.varint(v);
  }

  /** A 64-bit varint field (see wideVarintFieldSize); a number 0 is left off. */
  wideVarintField(field: number, v: number | bigint): void {
    if (typeof v === 'number') return this.varintField(field, v);
    this.buf[this.pos++] = (field << 3) | WIRE_VARINT;
    while (v >= 0x80n) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }

  boolField(field: number, v: boolean): void {
    if (!v) return;
    this.buf[this.pos++] = (field << 3) | WIRE_VARINT;
    this.buf[this.pos++] = 1;
  }

  /** A length-delimited field's tag and length prefix; its `length` bytes follow. */
  lenPrefix(field: number, length: number): void {
    this.varint((field << 3) | WIRE_LEN);
    this.varint(length);
  }

  /** A string field, `size` its UTF-8 length (utf8Size); left off when empty. */
  stringField(field: number, s: string, size: number): void {
    if (size === 0) return;
    this.lenPrefix(field, size);
    if (size === s.length) {
      // ASCII (utf8Size said so): one byte per char, no encoder call.
      const buf = this.buf;
      let pos = this.pos;
      for (let i = 0; i < s.length; i++) buf[pos++] = s.charCodeAt(i);
      this.pos = pos;
    } else {
      this.pos += this.buf.write(s, this.pos, size, 'utf8');
    }
  }

  /** A bytes field; left off when empty. */
  bytesField(field: number, b: Uint8Array): void {
    if (b.length === 0) return;
    this.lenPrefix(field, b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
}
