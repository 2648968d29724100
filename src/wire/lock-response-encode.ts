// The hot lock calls' responses (AcquireResponse, RenewResponse, ReleaseResponse, GetResponse) as their bytes,
// written by hand: the one encoder of a unary reply, of a Lock/Stream answer's response and of the leader's
// ForwardedAnswer (server/client-api/call-bodies.ts encodeResponseBody). protobufjs converted every 64-bit
// field through a Long (and the answer was built of decimal strings for it first); here a field takes a
// number, a bigint or a decimal string, and a token is never put through a double: a number must be an
// exact (safe) integer, anything larger comes as a bigint or a string and is written from it exactly.
//
// Canonical proto3: fields in number order, a field at its default (0, '', false, empty bytes, UNSPECIFIED)
// left off the wire. protobufjs writes every field the object has, defaults too, so the bytes differ from
// the previous build's by those fields only; every proto3 decoder reads an absent field as its default, so
// what a client decodes is the same. test/unit/wire/lock-response-encode.test.ts checks both: protobufjs
// decodes our bytes to what it decodes its own to, and our bytes equal protobufjs's for the same response
// with its default fields left out.
//
// A value that cannot be written (a fractional or unsafe number, a string that is no integer, a value out
// of its field's range, an unknown reason) throws a CodecError naming the field: a bug on our side, refused
// rather than written wrong.
import { ProtoWriter, utf8Size, varintSize, wideVarintFieldSize } from './proto-writer.js';
import { WIRE_LEN, within } from './proto-reader.js';
import { CodecError, describe } from './scalars.js';
import type { LockCallName } from './lock.js';

/** A 64-bit field as the encoder takes it: a decimal string (as protobufjs decodes one, longs: String), an
 *  exact integer, or a bigint. */
export type Int64Input = string | number | bigint;

/** leasehold.v1.Reason by name (lock.proto, in number order) or by number. */
export type ReasonInput = string | number;

export interface AcquireResponseInput {
  acquired?: boolean;
  token?: Int64Input;
  ttl_ms?: Int64Input;
  expires_at_ms?: Int64Input;
  holder_owner?: string;
  holder_ttl_ms?: Int64Input;
  delay_ms_left?: Int64Input;
}

export interface RenewResponseInput {
  renewed?: boolean;
  ttl_ms?: Int64Input;
  expires_at_ms?: Int64Input;
  reason?: ReasonInput;
}

export interface ReleaseResponseInput {
  released?: boolean;
  reason?: ReasonInput;
}

export interface HolderInput {
  owner?: string;
  token?: Int64Input;
  ttl_ms?: Int64Input;
  expires_at_ms?: Int64Input;
  shared?: boolean;
  session_id?: Int64Input;
  value?: Uint8Array | null;
}

export interface GetResponseInput {
  held?: boolean;
  owner?: string;
  token?: Int64Input;
  ttl_ms?: Int64Input;
  expires_at_ms?: Int64Input;
  last_token?: Int64Input;
  waiters?: number;
  holders?: readonly HolderInput[];
  index?: Int64Input;
  limit?: number;
}

/** lock.proto's Reason values in number order (test/unit/wire/lock-response-encode.test.ts checks them
 *  against the loaded enum). */
export const REASON_NAMES: readonly string[] = ['UNSPECIFIED', 'NOT_HELD', 'WRONG_OWNER', 'WRONG_TOKEN', 'EXPIRED'];

const TWO_64 = 2n ** 64n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);
const UINT32_MAX = 0xffffffff;

/** Whether `s` is at most 15 decimal digits: then Number(s) is exact (below 10^15 < 2^53). */
function shortDigits(s: string): boolean {
  if (s.length === 0 || s.length > 15) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/**
 * A 64-bit field's value as the unsigned varint it travels as: a number when below 2^53, else a bigint
 * (an int64 below zero is its two's complement, ten bytes). Absent is 0.
 */
function varint64(v: Int64Input | undefined, signed: boolean, field: string): number | bigint {
  if (v === undefined) return 0;
  if (typeof v === 'number') {
    if (v >= 0 && Number.isSafeInteger(v)) return v;
    if (!Number.isSafeInteger(v)) throw new CodecError(field, `${describe(v)} is not an exact integer: pass a bigint or a decimal string`);
    if (!signed) throw new CodecError(field, `${describe(v)} is below zero in a uint64 field`);
    return TWO_64 + BigInt(v);
  }
  let big: bigint;
  if (typeof v === 'string') {
    if (shortDigits(v)) return Number(v);
    if (!/^-?\d+$/.test(v)) throw new CodecError(field, `${describe(v)} is not a decimal integer`);
    big = BigInt(v);
  } else if (typeof v === 'bigint') {
    big = v;
  } else {
    throw new CodecError(field, `${describe(v)} is not an integer`);
  }
  if (signed ? big < INT64_MIN || big > INT64_MAX : big < 0n || big >= TWO_64)
    throw new CodecError(field, `${describe(v)} is out of range for a ${signed ? 'int64' : 'uint64'} field`);
  if (big < 0n) big += TWO_64;
  return big <= MAX_SAFE_BIG ? Number(big) : big;
}

const i64 = (v: Int64Input | undefined, field: string) => varint64(v, true, field);
const u64 = (v: Int64Input | undefined, field: string) => varint64(v, false, field);

function uint32(v: number | undefined, field: string): number {
  if (v === undefined) return 0;
  if (!Number.isInteger(v) || v < 0 || v > UINT32_MAX) throw new CodecError(field, `${describe(v)} is not a uint32`);
  return v;
}

function reason(v: ReasonInput | undefined, field: string): number {
  if (v === undefined) return 0;
  const n = typeof v === 'number' ? v : REASON_NAMES.indexOf(v);
  if (!Number.isInteger(n) || n < 0 || n >= REASON_NAMES.length) throw new CodecError(field, `${describe(v)} is not a Reason`);
  return n;
}

const boolSize = (v: boolean | undefined): number => (v === true ? 2 : 0);
const stringSize = (size: number): number => (size === 0 ? 0 : 1 + varintSize(size) + size);
const bytesSize = (b: Uint8Array | null | undefined): number => (b == null || b.length === 0 ? 0 : 1 + varintSize(b.length) + b.length);

export function encodeAcquireResponse(r: AcquireResponseInput): Buffer {
  const token = u64(r.token, 'token');
  const ttl = i64(r.ttl_ms, 'ttl_ms');
  const expires = i64(r.expires_at_ms, 'expires_at_ms');
  const holderOwner = r.holder_owner ?? '';
  const holderOwnerSize = utf8Size(holderOwner);
  const holderTtl = i64(r.holder_ttl_ms, 'holder_ttl_ms');
  const delay = i64(r.delay_ms_left, 'delay_ms_left');
  const w = new ProtoWriter(
    boolSize(r.acquired) +
      wideVarintFieldSize(token) +
      wideVarintFieldSize(ttl) +
      wideVarintFieldSize(expires) +
      stringSize(holderOwnerSize) +
      wideVarintFieldSize(holderTtl) +
      wideVarintFieldSize(delay),
  );
  w.boolField(1, r.acquired === true);
  w.wideVarintField(2, token);
  w.wideVarintField(3, ttl);
  w.wideVarintField(4, expires);
  w.stringField(5, holderOwner, holderOwnerSize);
  w.wideVarintField(6, holderTtl);
  w.wideVarintField(7, delay);
  return w.buf;
}

export function encodeRenewResponse(r: RenewResponseInput): Buffer {
  const ttl = i64(r.ttl_ms, 'ttl_ms');
  const expires = i64(r.expires_at_ms, 'expires_at_ms');
  const why = reason(r.reason, 'reason');
  const w = new ProtoWriter(boolSize(r.renewed) + wideVarintFieldSize(ttl) + wideVarintFieldSize(expires) + wideVarintFieldSize(why));
  w.boolField(1, r.renewed === true);
  w.wideVarintField(2, ttl);
  w.wideVarintField(3, expires);
  w.varintField(4, why);
  return w.buf;
}

export function encodeReleaseResponse(r: ReleaseResponseInput): Buffer {
  const why = reason(r.reason, 'reason');
  const w = new ProtoWriter(boolSize(r.released) + wideVarintFieldSize(why));
  w.boolField(1, r.released === true);
  w.varintField(2, why);
  return w.buf;
}

/** A Holder's bytes without its tag and length prefix, measured (w = null) or written; a refused value
 *  names the field below `holders[i]`. */
function holder(h: HolderInput, i: number, w: ProtoWriter | null): number {
  try {
    return holderFields(h, w);
  } catch (err) {
    throw within(`holders[${i}]`, err);
  }
}

function holderFields(h: HolderInput, w: ProtoWriter | null): number {
  const owner = h.owner ?? '';
  const ownerSize = utf8Size(owner);
  const token = u64(h.token, 'token');
  const ttl = i64(h.ttl_ms, 'ttl_ms');
  const expires = i64(h.expires_at_ms, 'expires_at_ms');
  const session = u64(h.session_id, 'session_id');
  if (w !== null) {
    w.stringField(1, owner, ownerSize);
    w.wideVarintField(2, token);
    w.wideVarintField(3, ttl);
    w.wideVarintField(4, expires);
    w.boolField(5, h.shared === true);
    w.wideVarintField(6, session);
    if (h.value != null) w.bytesField(7, h.value);
  }
  return (
    stringSize(ownerSize) +
    wideVarintFieldSize(token) +
    wideVarintFieldSize(ttl) +
    wideVarintFieldSize(expires) +
    boolSize(h.shared) +
    wideVarintFieldSize(session) +
    bytesSize(h.value)
  );
}

const NO_HOLDERS: readonly HolderInput[] = [];

export function encodeGetResponse(r: GetResponseInput): Buffer {
  const owner = r.owner ?? '';
  const ownerSize = utf8Size(owner);
  const token = u64(r.token, 'token');
  const ttl = i64(r.ttl_ms, 'ttl_ms');
  const expires = i64(r.expires_at_ms, 'expires_at_ms');
  const lastToken = u64(r.last_token, 'last_token');
  const waiters = uint32(r.waiters, 'waiters');
  const index = u64(r.index, 'index');
  const limit = uint32(r.limit, 'limit');
  const holders = r.holders ?? NO_HOLDERS;
  // Each holder is measured once for the total and its length prefix (an empty one is still written: a
  // repeated message's element is there even when all its fields are defaults).
  const holderSizes = holders.length === 0 ? null : new Array<number>(holders.length);
  let holdersSize = 0;
  for (let i = 0; i < holders.length; i++) {
    const size = holder(holders[i]!, i, null);
    holderSizes![i] = size;
    holdersSize += 1 + varintSize(size) + size;
  }
  const w = new ProtoWriter(
    boolSize(r.held) +
      stringSize(ownerSize) +
      wideVarintFieldSize(token) +
      wideVarintFieldSize(ttl) +
      wideVarintFieldSize(expires) +
      wideVarintFieldSize(lastToken) +
      wideVarintFieldSize(waiters) +
      holdersSize +
      wideVarintFieldSize(index) +
      wideVarintFieldSize(limit),
  );
  w.boolField(1, r.held === true);
  w.stringField(2, owner, ownerSize);
  w.wideVarintField(3, token);
  w.wideVarintField(4, ttl);
  w.wideVarintField(5, expires);
  w.wideVarintField(6, lastToken);
  w.varintField(7, waiters);
  for (let i = 0; i < holders.length; i++) {
    w.buf[w.pos++] = (8 << 3) | WIRE_LEN;
    w.varint(holderSizes![i]!);
    holder(holders[i]!, i, w);
  }
  w.wideVarintField(9, index);
  w.varintField(10, limit);
  return w.buf;
}

/** Whether `name`'s response is encoded here (the others by protobufjs). */
export function encodesByHand(name: LockCallName): name is 'acquire' | 'renew' | 'release' | 'get' {
  return name === 'acquire' || name === 'renew' || name === 'release' || name === 'get';
}

/** The response of hot call `name` (encodesByHand) as its bytes. */
export function encodeLockResponse(name: 'acquire' | 'renew' | 'release' | 'get', response: unknown): Buffer {
  switch (name) {
    case 'acquire':
      return encodeAcquireResponse(response as AcquireResponseInput);
    case 'renew':
      return encodeRenewResponse(response as RenewResponseInput);
    case 'release':
      return encodeReleaseResponse(response as ReleaseResponseInput);
    case 'get':
      return encodeGetResponse(response as GetResponseInput);
  }
}
