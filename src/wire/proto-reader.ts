// A protobuf reader of the wire format's primitives (varints, tags, length-delimited fields) over one
// received buffer, for the hand-written codecs (raft-decode.ts). Why by hand and not protobufjs: see there.
//
// Everything it reads is untrusted (a peer, or a stray client on the peer port): it never reads past its
// window, refuses a length prefix larger than what is left before anything is allocated for it, refuses a
// varint that is longer than ten bytes or wider than 64 bits, and throws nothing but CodecError, whose
// path is the field it was reading. A varint is read as a number without BigInt: every integer field of
// the messages it serves is a count below 2^53 (a larger one is refused, never rounded), a uint32, a bool
// or an enum.
import { isUtf8 } from 'node:buffer';
import { CodecError } from './scalars.js';

/** Wire types (protobuf encoding spec). */
export const WIRE_VARINT = 0;
export const WIRE_LEN = 2;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const UINT32_MAX = 0xffffffff;

/** varint64End's answers for a varint that cannot be read. */
export const VARINT_TRUNCATED = -1;
export const VARINT_TOO_LONG = -2;

/**
 * Where the varint at `start` ends (the position after its last byte), or VARINT_TRUNCATED (the buffer ends
 * first) or VARINT_TOO_LONG (ten bytes and more to come). The tenth byte may be any value below 0x80: whether
 * it is wider than 64 bits is the caller's rule, as the two strict readers word it differently (the envelope
 * refuses it as such; a request's field by its range, as the strict walk does).
 */
export function varint64End(buf: Uint8Array, start: number, end: number): number {
  for (let pos = start; ;) {
    if (pos - start === 10) return VARINT_TOO_LONG;
    if (pos >= end) return VARINT_TRUNCATED;
    if (buf[pos++]! < 0x80) return pos;
  }
}

/**
 * The value of the varint in buf[start, stop) (stop from varint64End): a number when it has at most seven
 * bytes (below 2^49, exact), else a bigint — a 64-bit id or token must not be rounded through a double.
 */
export function varint64Value(buf: Uint8Array, start: number, stop: number): number | bigint {
  if (stop - start <= 7) {
    let v = 0;
    for (let i = stop - 1; i >= start; i--) v = v * 128 + (buf[i]! & 0x7f);
    return v;
  }
  let v = 0n;
  for (let i = stop - 1; i >= start; i--) v = (v << 7n) | BigInt(buf[i]! & 0x7f);
  return v;
}

export class ProtoReader {
  /** Next byte to read. */
  pos: number;
  /** End of the message being read (exclusive): a sub-message narrows it (enter) and leave() restores it. */
  end: number;

  constructor(readonly buf: Buffer) {
    this.pos = 0;
    this.end = buf.length;
  }

  /** Whether the message being read has more fields. */
  more(): boolean {
    return this.pos < this.end;
  }

  /**
   * A varint as an exact number. Refuses (naming `field`) a truncated one, one longer than ten bytes or
   * wider than 64 bits (what the strict decoder refuses as a uint64 overflow), and one above 2^53-1: no
   * field read this way may hold more, and a rounded index or term would be worse than a refused message.
   */
  varint(field: string): number {
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos;
    if (pos >= end) throw new CodecError(field, 'truncated varint');
    let b = buf[pos++]!;
    if (b < 0x80) {
      this.pos = pos;
      return b;
    }
    let value = b & 0x7f;
    let scale = 0x80;
    // Exact while the true value stays below 2^53 (every partial sum does); at or above it the float sum
    // is at least 2^53 too, so the range check below is sound without BigInt.
    for (let i = 1; i < 10; i++) {
      if (pos >= end) throw new CodecError(field, 'truncated varint');
      b = buf[pos++]!;
      if (i === 9 && b > 1) throw new CodecError(field, 'varint wider than 64 bits');
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        this.pos = pos;
        if (value > MAX_SAFE) throw new CodecError(field, `value exceeds ${MAX_SAFE} (2^53-1), the largest count this node can hold`);
        return value;
      }
      scale *= 0x80;
    }
    throw new CodecError(field, 'varint longer than 10 bytes');
  }

  /** A uint32 field (a wider value would be truncated by other decoders: refused). */
  uint32(field: string): number {
    const v = this.varint(field);
    if (v > UINT32_MAX) throw new CodecError(field, `varint ${v} overflows a uint32 field`);
    return v;
  }

  /** A bool field: 0 or 1, as the strict decoder wants. */
  bool(field: string): boolean {
    const v = this.varint(field);
    if (v > 1) throw new CodecError(field, `varint ${v} overflows a bool field`);
    return v === 1;
  }

  /** A field's tag: field number * 8 + wire type. `within` names the message for a malformed tag. */
  tag(within: string): number {
    const t = this.varint(within);
    if (t > UINT32_MAX) throw new CodecError(within, 'malformed field tag');
    return t;
  }

  /** The length of a length-delimited value, checked against what is left of the message before anyone
   *  allocates or reads for it; pos is then at its first byte. */
  length(field: string): number {
    const len = this.varint(field);
    const left = this.end - this.pos;
    if (len > left) throw new CodecError(field, `length ${len} runs past the end of its message (${left} bytes left)`);
    return len;
  }

  /** Narrows the reader to a length-delimited sub-message; returns the outer end for leave(). */
  enter(field: string): number {
    const len = this.length(field);
    const outer = this.end;
    this.end = this.pos + len;
    return outer;
  }

  /** Back to the outer message once the sub-message is read whole (its loop ran to its end). */
  leave(outer: number): void {
    this.end = outer;
  }

  /** A string field: valid UTF-8 only (a decoder that replaced bad bytes with U+FFFD would make two
   *  different ids one). */
  string(field: string): string {
    const len = this.length(field);
    const buf = this.buf;
    const start = this.pos;
    const stop = start + len;
    this.pos = stop;
    let ascii = true;
    for (let i = start; i < stop; i++) {
      if (buf[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return buf.toString('latin1', start, stop);
    if (!isUtf8(buf.subarray(start, stop))) throw new CodecError(field, 'not valid UTF-8');
    return buf.toString('utf8', start, stop);
  }

  /** A bytes field as a view into the received buffer (not copied: the caller copies what it keeps). */
  bytesView(field: string): Buffer {
    const len = this.length(field);
    const start = this.pos;
    this.pos = start + len;
    return this.buf.subarray(start, start + len);
  }
}

/**
 * The error for a tag no case of a message's decoder took: a field this build does not know (refused, as
 * the strict decoder refuses it: a build that skipped it would act on a message it half understood), or a
 * known field with the wrong wire type. `fields` is the message's field table (raft-fields.ts).
 */
export function refuseTag(tag: number, fields: Readonly<Record<string, number>>): CodecError {
  const n = Math.floor(tag / 8);
  for (const name in fields) if (fields[name] === n) return new CodecError(name, `wrong wire type ${tag & 7} for this field`);
  return new CodecError('', `unknown field number ${n}`);
}

/** `err` (from a sub-message at `prefix`) with its path below `prefix`; anything but a CodecError is
 *  passed on unchanged (a bug, never peer input). */
export function within(prefix: string, err: unknown): unknown {
  if (!(err instanceof CodecError)) return err;
  return new CodecError(err.path === '' ? prefix : `${prefix}.${err.path}`, err.detail);
}
