// Scalars on the wire: the decoded shape of a 64-bit integer (a decimal string, loader option longs:
// String) and of a message the serializer accepts, and the error every codec throws for a value that
// cannot cross the wire.
//
// Everything arriving from a peer or a client is untrusted: a codec that reads a value validates it and
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
