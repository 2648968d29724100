// The bytes of a LockCall, ForwardedCall, LockAnswer or ForwardedAnswer to its envelope (call-envelope.ts),
// the request or response inside left as bytes: a view into the received buffer, decoded (or passed on) by
// whoever needs it. Why by hand: protobufjs decoded the whole call on the follower, which re-encoded it for
// the leader, and the same again for the answer — four codec passes per forwarded call on the follower.
//
// As strict as the strict request decoder (server/client-api/strict-decode.ts) was for these messages:
// an unknown field, a wrong wire type, a varint wider than its field (call_id past 2^64, timeout_ms past
// 2^32, a bool of 2, an int32 code out of range), invalid UTF-8, a length past the end of the buffer —
// each throws a CodecError naming the field; the inner message is walked by its reader. It reads every
// valid encoding: fields in any order, defaults present or left off, a scalar repeated (the last wins), a
// oneof member set twice (the last wins; the same member twice is merged, as protobuf merges a repeated
// sub-message: its bytes concatenated).
import type { AnswerEnvelope, CallEnvelope, EnvelopeKind } from './call-envelope.js';
import { CALL_NAME_BY_FIELD, FORWARDED_ANSWER, FORWARDED_CALL, LOCK_ANSWER, LOCK_CALL } from './call-envelope.js';
import { ProtoReader, refuseTag, VARINT_TOO_LONG, VARINT_TRUNCATED, varint64End, varint64Value, WIRE_LEN } from './proto-reader.js';
import { CodecError } from './scalars.js';

const TWO_64 = 2n ** 64n;
const INT32_MAX = 2 ** 31 - 1;
const INT32_NEG_MIN = TWO_64 - 2n ** 31n;

/**
 * A varint of up to 64 bits: a number when it has at most seven bytes (below 2^49, exact), else a bigint.
 * Refuses a truncated one, one longer than ten bytes and one wider than 64 bits, naming `field`.
 */
function varint64(r: ProtoReader, field: string): number | bigint {
  const start = r.pos;
  const stop = varint64End(r.buf, start, r.end);
  if (stop === VARINT_TRUNCATED) throw new CodecError(field, 'truncated varint');
  if (stop === VARINT_TOO_LONG) throw new CodecError(field, 'varint longer than 10 bytes');
  if (stop - start === 10 && r.buf[stop - 1]! > 1) throw new CodecError(field, 'varint wider than 64 bits');
  r.pos = stop;
  return varint64Value(r.buf, start, stop);
}

/** A uint64 as the decimal string the rest of the code keys calls by. */
function uint64String(r: ProtoReader, field: string): string {
  return String(varint64(r, field));
}

/** An int32 (a negative one travels sign-extended to ten bytes). */
function int32(r: ProtoReader, field: string): number {
  const v = varint64(r, field);
  if (typeof v === 'number' && v <= INT32_MAX) return v;
  if (typeof v === 'bigint' && v >= INT32_NEG_MIN) return Number(v - TWO_64);
  throw new CodecError(field, `varint ${v} overflows a int32 field`);
}

/**
 * The oneof member a tag outside the envelope's own fields starts (the request or response), into `out`:
 * its bytes merged with an earlier one of the same member (protobuf merges a repeated sub-message), the last
 * member set winning. Any other tag is refused under the envelope's message name.
 */
function readMember(
  r: ProtoReader,
  tag: number,
  fields: Readonly<Record<string, number>>,
  message: string,
  out: { name: string | undefined; body: Buffer | undefined },
): void {
  const name = (tag & 7) === WIRE_LEN ? CALL_NAME_BY_FIELD[Math.floor(tag / 8)] : undefined;
  if (name === undefined) throw refused(tag, fields, message);
  const body = r.bytesView(name);
  out.body = out.name === name && out.body !== undefined ? Buffer.concat([out.body, body]) : body;
  out.name = name;
}

/** The message name an unknown field is reported under (as the strict decoder named it). */
function refused(tag: number, fields: Readonly<Record<string, number>>, message: string): CodecError {
  const err = refuseTag(tag, fields);
  return err.path === '' ? new CodecError(message, err.detail) : err;
}

export function decodeCallEnvelope(bytes: Buffer, kind: EnvelopeKind): CallEnvelope {
  const fields = kind === 'lock' ? LOCK_CALL : FORWARDED_CALL;
  const message = kind === 'lock' ? 'LockCall' : 'ForwardedCall';
  const timeoutTag = fields.timeout_ms * 8;
  const cancelTag = fields.cancel * 8;
  const fromTag = kind === 'forward' ? FORWARDED_CALL.from * 8 + WIRE_LEN : -1;
  const clusterTag = kind === 'forward' ? FORWARDED_CALL.cluster_id * 8 + WIRE_LEN : -1;
  const r = new ProtoReader(bytes);
  const out: CallEnvelope = { callId: '0', timeoutMs: 0, cancel: false, from: '', clusterId: '', name: undefined, body: undefined };
  while (r.more()) {
    const tag = r.tag(message);
    if (tag === 8) out.callId = uint64String(r, 'call_id');
    else if (tag === timeoutTag) out.timeoutMs = r.uint32('timeout_ms');
    else if (tag === cancelTag) out.cancel = r.bool('cancel');
    else if (tag === fromTag) out.from = r.string('from');
    else if (tag === clusterTag) out.clusterId = r.string('cluster_id');
    else readMember(r, tag, fields, message, out);
  }
  return out;
}

export function decodeAnswerEnvelope(bytes: Buffer, kind: EnvelopeKind): AnswerEnvelope {
  const fields = kind === 'lock' ? LOCK_ANSWER : FORWARDED_ANSWER;
  const message = kind === 'lock' ? 'LockAnswer' : 'ForwardedAnswer';
  const leaderTag = kind === 'lock' ? LOCK_ANSWER.leader * 8 + WIRE_LEN : -1;
  const r = new ProtoReader(bytes);
  const out = {
    callId: '0',
    code: 0,
    details: '',
    leader: '',
    name: undefined as string | undefined,
    body: undefined as Buffer | undefined,
  };
  while (r.more()) {
    const tag = r.tag(message);
    if (tag === 8) out.callId = uint64String(r, 'call_id');
    else if (tag === 16) out.code = int32(r, 'code');
    else if (tag === 26) out.details = r.string('details');
    else if (tag === leaderTag) out.leader = r.string('leader');
    else readMember(r, tag, fields, message, out);
  }
  return out as AnswerEnvelope;
}
