// Scalars on the wire: the decoded shape of a 64-bit integer (a decimal string, loader option longs:
// String) and of a message the serializer accepts, and the checked conversions every codec shares.
//
// Everything arriving from a peer or a client is untrusted: a helper that reads a value validates it and
// throws a CodecError naming the field (`append_entries.entries[2].index`), so a caller can drop the
// message instead of letting a NaN index, a negative term or a rounded token through.

/** A 64-bit integer as a decimal string (loader option longs: String). */
export type WireLong = string;

/**
 * What the serializer accepts for a message of decoded shape T: every field optional (proto3 default when
 * absent), sub-messages may be null, bytes may be any Uint8Array. Long fields stay decimal strings.
 */
export type WireInput<T> = T extends Buffer
  ? Uint8Array
  : T extends readonly (infer U)[]
    ? WireInput<U>[]
    : T extends object
      ? { [K in keyof T]?: WireInput<T[K]> }
      : T;

/** A message (or a value) that cannot cross the wire: malformed input from a peer, or an out-of-range
 *  value on the way out. `path` names the offending field, e.g. `append_entries.entries[2].index`. */
export class CodecError extends Error {
  override readonly name = 'CodecError';
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(path === '' ? detail : `${path}: ${detail}`);
  }
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const UINT64_MAX = (1n << 64n) - 1n;

/** A value as an error message shows it: short, and never the whole of a long string or a buffer. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return `${value.byteLength} bytes`;
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/**
 * A uint64 from the wire as a bigint (e.g. a fencing token). Accepts the decimal string proto-loader
 * produces, a safe non-negative integer number, or a bigint; anything else throws CodecError.
 */
export function uint64FromWire(value: unknown, path: string): bigint {
  let n: bigint;
  if (typeof value === 'string' && DECIMAL.test(value)) n = BigInt(value);
  else if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) n = BigInt(value);
  else if (typeof value === 'bigint') n = value;
  else throw new CodecError(path, `expected an unsigned 64-bit integer as a decimal string, got ${describe(value)}`);
  if (n < 0n || n > UINT64_MAX) throw new CodecError(path, `${n} is outside the unsigned 64-bit range`);
  return n;
}

/** A uint64 to the wire: a decimal string. Refuses negatives, fractions, NaN and unsafe numbers. */
export function uint64ToWire(value: number | bigint, path: string): WireLong {
  if (typeof value === 'number' && !(Number.isSafeInteger(value) && value >= 0)) {
    throw new CodecError(path, `expected a non-negative safe integer, got ${describe(value)}`);
  }
  if (typeof value === 'bigint' && (value < 0n || value > UINT64_MAX)) {
    throw new CodecError(path, `${value} is outside the unsigned 64-bit range`);
  }
  return String(value);
}

/**
 * A Raft index, term, offset or round from the wire as a number. These count log entries, elections and
 * bytes, and stay far below 2^53; a larger value can only be corruption, so it is refused rather than
 * rounded.
 */
export function countFromWire(value: unknown, path: string): number {
  // Fast paths (every Raft message carries several counts): a safe integer, or up to 15 decimal digits
  // (below 10^15 < 2^53), needs no bigint on the way.
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && value.length <= 15 && DECIMAL.test(value)) return Number(value);
  const n = uint64FromWire(value, path);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new CodecError(path, `${n} exceeds ${Number.MAX_SAFE_INTEGER} (2^53-1), the largest count this node can hold`);
  }
  return Number(n);
}

/** A count (index, term, offset, round) to the wire: a decimal string. */
export function countToWire(value: number, path: string): WireLong {
  return uint64ToWire(value, path);
}

export function requireObject(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    throw new CodecError(path, `expected a message, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

export function requireString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new CodecError(path, `expected a string, got ${describe(value)}`);
  return value;
}

export function requireNodeId(value: unknown, path: string): string {
  const id = requireString(value, path);
  if (id === '') throw new CodecError(path, 'expected a node id, got an empty string');
  return id;
}

export function requireBool(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') throw new CodecError(path, `expected a boolean, got ${describe(value)}`);
  return value;
}

/** Bytes from the wire, copied into a plain Uint8Array: the decoded Buffer is a view into the whole
 *  received message, and what it is kept in may live long (a snapshot chunk being written). Many values of
 *  one message are copied together instead (raft-decode.ts ownEntryData). */
export function bytesFromWire(value: unknown, path: string): Uint8Array {
  return new Uint8Array(requireBytes(value, path));
}

/** Bytes from the wire, not copied: still a view into the received message, for a caller that copies it. */
export function requireBytes(value: unknown, path: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new CodecError(path, `expected bytes, got ${describe(value)}`);
  return value;
}

/** Bytes to the wire: a Buffer view over the same memory (no copy; the serializer copies once). */
export function bytesToWire(value: Uint8Array, path: string): Buffer {
  if (!(value instanceof Uint8Array)) throw new CodecError(path, `expected a Uint8Array, got ${describe(value)}`);
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}
