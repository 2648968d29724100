// The hot lock calls' requests (AcquireRequest, RenewRequest, ReleaseRequest, GetRequest) from the bytes
// inside a Lock/Stream or Forward envelope, or from a unary call's body, straight to the object the rest of the server reads — the shape
// proto-loader's protobufjs decode gives with the loader options of load.ts (every field present, 64-bit
// integers as decimal strings, bytes as a Buffer view) — with no Long and no reflection: the profile of a
// forwarded call showed protobufjs's Long conversions and the strict decoder's walk as its largest parts.
//
// As strict as that walk (server/client-api/strict-decode.ts: at the depth of the oneof member inside an
// envelope, at the top for a unary call) and in its words, so a refusal reads the same whichever decoder
// made it: an unknown field, a wrong wire type, a
// varint wider than its field, invalid UTF-8, a length past the end — a reason naming the field
// (`acquire.ttl_ms: varint ... overflows a int64 field` in an envelope, `ttl_ms: ...` in a unary call).
// test/unit/wire/lock-request-decode.test.ts checks both, reason and object, against the walk and
// protobufjs on seeded random and corrupted requests, in both places.
import { isUtf8 } from 'node:buffer';
import type { LockCallName } from './lock.js';
import { VARINT_TOO_LONG, VARINT_TRUNCATED, varint64End, varint64Value } from './proto-reader.js';

type FieldType = 'string' | 'int64' | 'uint64' | 'uint32' | 'bool' | 'bytes';

/** Each hot request's fields by number: its name and type (lock.proto). */
const FIELDS: Readonly<Partial<Record<LockCallName, readonly (readonly [string, FieldType] | undefined)[]>>> = {
  acquire: [
    undefined,
    ['key', 'string'],
    ['owner', 'string'],
    ['ttl_ms', 'int64'],
    ['wait_ms', 'int64'],
    ['request_id', 'string'],
    ['lock_delay_ms', 'int64'],
    ['value', 'bytes'],
    ['session_id', 'uint64'],
    ['limit', 'uint32'],
    ['shared', 'bool'],
  ],
  renew: [undefined, ['key', 'string'], ['owner', 'string'], ['token', 'uint64'], ['ttl_ms', 'int64'], ['request_id', 'string']],
  release: [undefined, ['key', 'string'], ['owner', 'string'], ['token', 'uint64'], ['request_id', 'string']],
  get: [undefined, ['key', 'string']],
};

/** Each hot request's message name: what the walk names a unary request by (`AcquireRequest: unknown field
 *  number 11`). */
const MESSAGE: Readonly<Partial<Record<LockCallName, string>>> = {
  acquire: 'AcquireRequest',
  renew: 'RenewRequest',
  release: 'ReleaseRequest',
  get: 'GetRequest',
};

/** Where the request was: the oneof member of a LockCall / ForwardedCall, or a unary call's whole body. */
export type RequestPlace = 'envelope' | 'unary';

const EMPTY = Buffer.alloc(0);

/** Each hot request with every field at its default, in field order: made by a literal, so every request of
 *  one call has one shape (a fast-mode object whose fields validation reads at fixed offsets), not one
 *  built key by key from the table. test/unit/wire/lock-request-decode.test.ts checks them against
 *  protobufjs's decoding of an empty message. */
const EMPTY_REQUEST: Readonly<Partial<Record<LockCallName, () => Record<string, unknown>>>> = {
  acquire: () => ({
    key: '',
    owner: '',
    ttl_ms: '0',
    wait_ms: '0',
    request_id: '',
    lock_delay_ms: '0',
    value: EMPTY,
    session_id: '0',
    limit: 0,
    shared: false,
  }),
  renew: () => ({ key: '', owner: '', token: '0', ttl_ms: '0', request_id: '' }),
  release: () => ({ key: '', owner: '', token: '0', request_id: '' }),
  get: () => ({ key: '' }),
};
const TWO_64 = 2n ** 64n;
const INT64_MAX = 2n ** 63n - 1n;
const UINT32_MAX = 0xffffffff;

/** Whether `name`'s request is decoded here (the others go through protobufjs). */
export function decodesByHand(name: LockCallName): boolean {
  return FIELDS[name] !== undefined;
}

class Refused extends Error {}

/**
 * A varint as the walk reads it: a number below 2^49 (at most seven bytes, exact) or a bigint; up to ten
 * bytes, the last of them any value below 0x80 (a value past 2^64 is refused by the caller's range check,
 * as the walk refuses it).
 */
function varint(buf: Buffer, at: { pos: number }, end: number): number | bigint {
  const start = at.pos;
  const stop = varint64End(buf, start, end);
  if (stop === VARINT_TOO_LONG) throw new Refused('varint longer than 10 bytes');
  if (stop === VARINT_TRUNCATED) throw new Refused('truncated varint');
  at.pos = stop;
  return varint64Value(buf, start, stop);
}

/** A field as the walk names it in a refusal (only on the way out: no string is made for a good field). */
function fieldPath(name: LockCallName, inEnvelope: boolean, fieldName: string): string {
  return inEnvelope ? `${name}.${fieldName}` : fieldName;
}

/** The request of call `name` (decodesByHand) from its bytes, or the walk's reason for refusing them,
 *  worded for where the bytes were (`place`). */
export function decodeLockRequest(
  name: LockCallName,
  body: Buffer,
  place: RequestPlace = 'envelope',
): { request: Record<string, unknown> } | { invalid: string } {
  const fields = FIELDS[name]!;
  // The walk's words: below the oneof member `acquire.ttl_ms`, `acquire: ...`; at the top of a unary call
  // the field alone, the message by its type name, and a malformed tag with its empty path (': ...').
  const inEnvelope = place === 'envelope';
  const message = inEnvelope ? name : MESSAGE[name]!;
  const out = EMPTY_REQUEST[name]!();
  const at = { pos: 0 };
  const end = body.length;
  try {
    while (at.pos < end) {
      const tag = varint(body, at, end);
      if (tag > 0xffffffff) return { invalid: `${inEnvelope ? name : ''}: malformed field tag` };
      const t = Number(tag);
      const number = Math.floor(t / 8);
      const wireType = t % 8;
      const field = fields[number];
      if (field === undefined) return { invalid: `${message}: unknown field number ${number}` };
      const [fieldName, type] = field;
      const lengthDelimited = type === 'string' || type === 'bytes';
      if (wireType !== (lengthDelimited ? 2 : 0))
        return { invalid: `${fieldPath(name, inEnvelope, fieldName)}: wrong wire type ${wireType} for a ${type} field` };
      const v = varint(body, at, end);
      if (lengthDelimited) {
        if (v > end - at.pos) return { invalid: `${fieldPath(name, inEnvelope, fieldName)}: truncated value` };
        const from = at.pos;
        const to = from + Number(v);
        at.pos = to;
        if (type === 'bytes') out[fieldName] = body.subarray(from, to);
        else {
          if (asciiOnly(body, from, to)) out[fieldName] = body.toString('latin1', from, to);
          else if (isUtf8(body.subarray(from, to))) out[fieldName] = body.toString('utf8', from, to);
          else return { invalid: `${fieldPath(name, inEnvelope, fieldName)}: not valid UTF-8` };
        }
        continue;
      }
      switch (type) {
        case 'uint32':
          if (v > UINT32_MAX) return { invalid: `${fieldPath(name, inEnvelope, fieldName)}: varint ${v} overflows a uint32 field` };
          out[fieldName] = Number(v);
          break;
        case 'bool':
          if (v > 1) return { invalid: `${fieldPath(name, inEnvelope, fieldName)}: varint ${v} overflows a bool field` };
          out[fieldName] = Number(v) === 1;
          break;
        default: {
          // int64 and uint64: any 64-bit value; an int64 at or past 2^63 is a negative one.
          if (typeof v === 'bigint' && v >= TWO_64)
            return { invalid: `${fieldPath(name, inEnvelope, fieldName)}: varint ${v} overflows a ${type} field` };
          out[fieldName] = type === 'int64' && typeof v === 'bigint' && v > INT64_MAX ? String(v - TWO_64) : String(v);
        }
      }
    }
  } catch (err) {
    if (err instanceof Refused) return { invalid: `${message}: malformed message (${err.message})` };
    throw err;
  }
  return { request: out };
}

/** Whether body[from, to) is ASCII: then it is valid UTF-8 and reads as latin1, with no view made for it. */
function asciiOnly(body: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (body[i]! >= 0x80) return false;
  return true;
}
