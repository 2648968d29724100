// Byte-level building blocks shared by the command codec and the snapshot codec.
//
// Why a hand-written LEB128 format instead of JSON: every replica decodes the same bytes, so the decoder
// must be strict and total (every input either decodes to one value or throws), and entries/snapshots
// should be small. Varints keep times (~2^41 ms), indexes and tokens to 1..8 bytes; strings are
// length-prefixed UTF-8. Decoding is canonical: an over-long varint is rejected, so one value has
// exactly one encoding and "same command" <=> "same bytes".

/** 2^64 - 1: the largest fencing token the wire format (uint64) can carry. */
export const MAX_UINT64 = (1n << 64n) - 1n;

// fatal: invalid UTF-8 throws instead of silently becoming U+FFFD, so a corrupt entry is *detected*;
// ignoreBOM: a key that starts with U+FEFF must round-trip exactly.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * UTF-8 encode into `target` at `offset` (which must have room for text.length * 3 bytes); returns the new
 * offset. Hand-written because TextEncoder allocates a fresh array per call, which dominated snapshotting
 * a million short keys. A lone surrogate (never present: inputs are validated) becomes U+FFFD, as in
 * TextEncoder.
 */
export function writeUtf8(target: Uint8Array, offset: number, text: string): number {
  let at = offset;
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      target[at++] = code;
      continue;
    }
    if (code < 0x800) {
      target[at++] = 0xc0 | (code >> 6);
      target[at++] = 0x80 | (code & 0x3f);
      continue;
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (next - 0xdc00);
        i++;
        target[at++] = 0xf0 | (code >> 18);
        target[at++] = 0x80 | ((code >> 12) & 0x3f);
        target[at++] = 0x80 | ((code >> 6) & 0x3f);
        target[at++] = 0x80 | (code & 0x3f);
        continue;
      }
      code = 0xfffd;
    }
    target[at++] = 0xe0 | (code >> 12);
    target[at++] = 0x80 | ((code >> 6) & 0x3f);
    target[at++] = 0x80 | (code & 0x3f);
  }
  return at;
}

export function encodeUtf8(text: string): Uint8Array {
  const out = new Uint8Array(text.length * 3);
  return out.subarray(0, writeUtf8(out, 0, text));
}

/** Strict UTF-8 decode; null when the bytes are not valid UTF-8. ASCII (the common case) skips TextDecoder,
 *  whose per-call overhead dominated restoring a million short keys. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  if (bytes.length <= 64) {
    let ascii = true;
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    // apply() takes the typed array as the argument list directly (a spread would go through the iterator).
    if (ascii) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  }
  try {
    return utf8Decoder.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * UTF-8 byte length of a JS string, or -1 when it holds a lone surrogate (not valid Unicode: it could not
 * round-trip through UTF-8, so two spellings would map to one key). Counts without allocating.
 */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (next < 0xdc00 || next > 0xdfff) return -1;
      bytes += 4;
      i++;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) return -1;
    else bytes += 3;
  }
  return bytes;
}

/** Appends to a growable buffer. Callers are trusted: they pass safe non-negative integers where asked. */
export class ByteWriter {
  private buffer: Uint8Array;
  private length = 0;

  constructor(initialCapacity = 64) {
    this.buffer = new Uint8Array(initialCapacity);
  }

  /** Room for `extra` more bytes, allocated to the byte: for a caller that knows the size (a doubling
   *  growth could leave up to half of a large buffer unused). */
  reserveExact(extra: number): void {
    if (this.length + extra > this.buffer.length) this.resize(this.length + extra);
  }

  private reserve(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    this.resize(capacity);
  }

  private resize(capacity: number): void {
    const grown = new Uint8Array(capacity);
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  byte(value: number): void {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  /** Unsigned LEB128 of a safe non-negative integer (arithmetic, not bit ops: values exceed 2^32). */
  uint(value: number): void {
    this.reserve(8);
    let rest = value;
    while (rest >= 0x80) {
      this.buffer[this.length++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.buffer[this.length++] = rest;
  }

  /** ZigZag + LEB128 for a safe integer of either sign with |value| < 2^52 (deltas around "now"). */
  sint(value: number): void {
    this.uint(value >= 0 ? value * 2 : -value * 2 - 1);
  }

  /** Unsigned LEB128 of a bigint in [0, 2^64-1]. */
  bigUint(value: bigint): void {
    this.reserve(10);
    let rest = value;
    while (rest >= 0x80n) {
      this.buffer[this.length++] = Number(rest & 0x7fn) | 0x80;
      rest >>= 7n;
    }
    this.buffer[this.length++] = Number(rest);
  }

  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  /** Length-prefixed bytes. */
  lengthPrefixed(bytes: Uint8Array): void {
    this.uint(bytes.length);
    this.raw(bytes);
  }

  /** Length-prefixed UTF-8, encoded straight into the buffer. */
  string(text: string): void {
    if (text.length < 0x80) {
      // Reserve the worst case, write a 1-byte length placeholder, then fix it (or shift for a longer one).
      this.reserve(1 + text.length * 3);
      const start = this.length + 1;
      const end = writeUtf8(this.buffer, start, text);
      const byteLength = end - start;
      if (byteLength < 0x80) {
        this.buffer[this.length] = byteLength;
        this.length = end;
        return;
      }
    }
    this.lengthPrefixed(encodeUtf8(text));
  }

  finish(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }

  get size(): number {
    return this.length;
  }

  /** Start over, keeping the buffer (a reused scratch writer). */
  clear(): void {
    this.length = 0;
  }

  /** Forget the first `count` bytes (moving the rest to the front). */
  dropPrefix(count: number): void {
    this.buffer.copyWithin(0, count, this.length);
    this.length -= count;
  }

  /** bytes[start, end) appended with a plain loop: no subarray object per call (short records, many). */
  rawRange(bytes: Uint8Array, start: number, end: number): void {
    this.reserve(end - start);
    const buffer = this.buffer;
    let at = this.length;
    for (let i = start; i < end; i++) buffer[at++] = bytes[i]!;
    this.length = at;
  }

  /** The bytes written so far, without a copy when they fill most of the buffer, else copied to their
   *  size: for a result kept long (a snapshot lives on in the Raft log until the next one), so the slack of
   *  a buffer grown by doubling — up to half of it — is not kept alive with it. */
  tight(): Uint8Array {
    return this.length * 8 >= this.buffer.length * 7 ? this.view() : this.finish();
  }

  /** The whole underlying buffer (the bytes written are [0, size)), without making a view; valid until
   *  the next write, which may replace it. For hot read loops. */
  get backing(): Uint8Array {
    return this.buffer;
  }

  /** The bytes written so far, without a copy (a view of the buffer: write nothing more after this). */
  view(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }
}

/**
 * Strict reader: every problem (truncation, over-long or oversized varint, bad UTF-8, trailing bytes)
 * throws the error made by `makeError`, so each codec reports its own typed error with the byte offset.
 */
export class ByteReader {
  private offset = 0;

  constructor(
    private bytes: Uint8Array,
    private readonly makeError: (message: string, offset: number) => Error,
  ) {}

  /** Reads `bytes` from their start: a restore reads a million records with one reader, not a reader each. */
  restart(bytes: Uint8Array): void {
    this.bytes = bytes;
    this.offset = 0;
  }

  get position(): number {
    return this.offset;
  }

  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  fail(message: string): never {
    throw this.makeError(message, this.offset);
  }

  byte(): number {
    if (this.offset >= this.bytes.length) this.fail('unexpected end of data');
    return this.bytes[this.offset++]!;
  }

  /** A canonical unsigned LEB128 that must fit a safe integer (<= 2^53 - 1). */
  uint(): number {
    let value = 0;
    let scale = 1;
    for (let count = 0; ; count++) {
      const b = this.byte();
      if (count > 0 && b === 0) this.fail('over-long varint');
      value += (b & 0x7f) * scale;
      if (value > Number.MAX_SAFE_INTEGER) this.fail('varint exceeds 2^53 - 1');
      if ((b & 0x80) === 0) return value;
      scale *= 0x80;
      if (count >= 7) this.fail('varint exceeds 2^53 - 1');
    }
  }

  sint(): number {
    const zigzag = this.uint();
    return zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2;
  }

  /** A canonical unsigned LEB128 in [0, 2^64 - 1]. */
  bigUint(): bigint {
    let value = 0n;
    let shift = 0n;
    for (let count = 0; ; count++) {
      const b = this.byte();
      if (count > 0 && b === 0) this.fail('over-long varint');
      value |= BigInt(b & 0x7f) << shift;
      if (value > MAX_UINT64) this.fail('integer exceeds 2^64 - 1');
      if ((b & 0x80) === 0) return value;
      shift += 7n;
      if (count >= 9) this.fail('integer exceeds 2^64 - 1');
    }
  }

  raw(length: number): Uint8Array {
    if (length > this.remaining) this.fail(`length ${length} runs past the end of data`);
    const out = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  /** Length-prefixed bytes of at most `maxBytes`. */
  lengthPrefixed(maxBytes: number): Uint8Array {
    const length = this.uint();
    if (length > maxBytes) this.fail(`field of ${length} bytes exceeds the limit of ${maxBytes}`);
    return this.raw(length);
  }

  /** Length-prefixed bytes of at most `maxBytes`, passed over: returns where they start (they end at
   *  `position`). A restore reading a million records checks fields in place instead of making a view of
   *  each (a Buffer's subarray is a Buffer, made by its species constructor: slow). */
  skipLengthPrefixed(maxBytes: number): number {
    const length = this.uint();
    if (length > maxBytes) this.fail(`field of ${length} bytes exceeds the limit of ${maxBytes}`);
    if (length > this.remaining) this.fail(`length ${length} runs past the end of data`);
    const start = this.offset;
    this.offset += length;
    return start;
  }

  /** Whether bytes [start, end) read so far equal `other`. */
  rangeEquals(start: number, end: number, other: Uint8Array): boolean {
    if (end - start !== other.length) return false;
    for (let i = 0; i < other.length; i++) if (this.bytes[start + i] !== other[i]) return false;
    return true;
  }

  /** A view of bytes [start, end) read so far: a plain Uint8Array whatever the input's class. */
  view(start: number, end: number): Uint8Array {
    return new Uint8Array(this.bytes.buffer, this.bytes.byteOffset + start, end - start);
  }

  /** A copy of bytes [start, end) read so far, its own memory. */
  copy(start: number, end: number): Uint8Array {
    const out = new Uint8Array(end - start);
    out.set(this.view(start, end));
    return out;
  }

  /** Length-prefixed UTF-8 of at most `maxBytes` bytes. */
  string(maxBytes: number): string {
    return this.decodeUtf8(this.lengthPrefixed(maxBytes));
  }

  /** Checks what string() would read, without making the string (a restore copies the bytes as they are). */
  skipString(maxBytes: number): void {
    // Checked in place: a view of each (~90 bytes) was most of the garbage a restore's remembered requests made.
    const start = this.skipLengthPrefixed(maxBytes);
    const end = this.offset;
    const bytes = this.bytes;
    for (let i = start; i < end; i++) {
      if (bytes[i]! >= 0x80) {
        this.decodeUtf8(this.view(start, end)); // the rare non-ASCII string: the decoder is the validator
        return;
      }
    }
  }

  /** Checks what bigUint() would read, with the same errors, without making a bigint: the tenth byte of
   *  a value <= 2^64 - 1 carries bit 63 only. */
  skipBigUint(): void {
    for (let count = 0; ; count++) {
      const b = this.byte();
      if (count > 0 && b === 0) this.fail('over-long varint');
      if (count === 9 && b > 1) this.fail('integer exceeds 2^64 - 1');
      if ((b & 0x80) === 0) return;
    }
  }

  decodeUtf8(bytes: Uint8Array): string {
    return decodeUtf8(bytes) ?? this.fail('invalid UTF-8');
  }

  /** Every byte must be consumed: trailing garbage means the writer and reader disagree on the format. */
  end(): void {
    if (this.remaining !== 0) this.fail(`${this.remaining} trailing bytes`);
  }
}
