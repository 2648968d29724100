// An envelope (call-envelope.ts) around a request's or response's bytes, as the bytes of one LockCall,
// ForwardedCall, LockAnswer or ForwardedAnswer: measured, then written into one buffer of exactly its size.
// The inner bytes are copied in as they are — a follower passes on what the client or the leader sent.
// Plain proto3 (defaults left off, fields in number order), so a build that reads these messages with
// protobufjs reads them; test/unit/wire/call-envelope.test.ts checks that both ways.
import type { EnvelopeKind } from './call-envelope.js';
import type { LockCallName } from './lock.js';
import { CALL_FIELD, FORWARDED_CALL, LOCK_CALL } from './call-envelope.js';
import { ProtoWriter, tagSize, utf8Size, varintFieldSize, varintSize, wideVarintFieldSize } from './proto-writer.js';
import { CodecError, describe } from './scalars.js';

const TWO_64 = 2n ** 64n;
const UINT32_MAX = 0xffffffff;

/** A call_id (a decimal uint64) as a number when it is one exactly, else a bigint; refused otherwise. */
function uint64Of(callId: string): number | bigint {
  if (callId.length <= 15 && /^\d+$/.test(callId)) return Number(callId);
  if (!/^\d+$/.test(callId) || BigInt(callId) >= TWO_64) throw new CodecError('call_id', `${describe(callId)} is not a uint64`);
  const v = BigInt(callId);
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

function stringFieldSize(size: number): number {
  return size === 0 ? 0 : 1 + varintSize(size) + size;
}

function bodySize(name: keyof typeof CALL_FIELD | undefined, body: Uint8Array | undefined): number {
  if (name === undefined || body === undefined) return 0;
  return tagSize(CALL_FIELD[name]) + varintSize(body.length) + body.length;
}

function writeBody(w: ProtoWriter, name: keyof typeof CALL_FIELD | undefined, body: Uint8Array | undefined): void {
  if (name === undefined || body === undefined) return;
  // Written even when empty: an empty request is still the oneof member set (a Get of key '' is a Get).
  w.lenPrefix(CALL_FIELD[name], body.length);
  w.buf.set(body, w.pos);
  w.pos += body.length;
}

/** The fields of a call as encodeCallEnvelope takes them (ForwardedCall's from and cluster_id optional). */
export interface CallToEncode {
  callId: string;
  timeoutMs?: number | undefined;
  cancel?: boolean | undefined;
  from?: string | undefined;
  clusterId?: string | undefined;
  name?: LockCallName | undefined;
  body?: Uint8Array | undefined;
}

export function encodeCallEnvelope(c: CallToEncode, kind: EnvelopeKind): Buffer {
  const fields = kind === 'lock' ? LOCK_CALL : FORWARDED_CALL;
  const callId = uint64Of(c.callId);
  const timeoutMs = c.timeoutMs ?? 0;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > UINT32_MAX)
    throw new CodecError('timeout_ms', `${describe(timeoutMs)} is not a uint32`);
  const from = kind === 'forward' ? (c.from ?? '') : '';
  const clusterId = kind === 'forward' ? (c.clusterId ?? '') : '';
  const fromSize = utf8Size(from);
  const clusterSize = utf8Size(clusterId);
  const size =
    wideVarintFieldSize(callId) +
    stringFieldSize(fromSize) +
    stringFieldSize(clusterSize) +
    (timeoutMs === 0 ? 0 : varintFieldSize(timeoutMs)) +
    (c.cancel === true ? 2 : 0) +
    bodySize(c.name, c.body);
  const w = new ProtoWriter(size);
  w.wideVarintField(fields.call_id, callId);
  if (kind === 'lock') {
    w.varintField(LOCK_CALL.timeout_ms, timeoutMs);
    w.boolField(LOCK_CALL.cancel, c.cancel === true);
  } else {
    w.stringField(FORWARDED_CALL.from, from, fromSize);
    w.stringField(FORWARDED_CALL.cluster_id, clusterId, clusterSize);
    w.varintField(FORWARDED_CALL.timeout_ms, timeoutMs);
    w.boolField(FORWARDED_CALL.cancel, c.cancel === true);
  }
  writeBody(w, c.name, c.body);
  return w.buf;
}

/** The fields of an answer as encodeAnswerEnvelope takes them (a ForwardedAnswer has no leader). */
export interface AnswerToEncode {
  callId: string;
  code: number;
  details?: string | undefined;
  leader?: string | undefined;
  name?: LockCallName | undefined;
  body?: Uint8Array | undefined;
}

export function encodeAnswerEnvelope(a: AnswerToEncode, kind: EnvelopeKind): Buffer {
  const callId = uint64Of(a.callId);
  if (!Number.isInteger(a.code) || a.code < -(2 ** 31) || a.code > 2 ** 31 - 1)
    throw new CodecError('code', `${describe(a.code)} is not an int32`);
  // A negative int32 travels sign-extended to 64 bits (ten bytes).
  const code: number | bigint = a.code < 0 ? TWO_64 + BigInt(a.code) : a.code;
  const details = a.details ?? '';
  const leader = kind === 'lock' ? (a.leader ?? '') : '';
  const detailsSize = utf8Size(details);
  const leaderSize = utf8Size(leader);
  const size =
    wideVarintFieldSize(callId) +
    wideVarintFieldSize(code) +
    stringFieldSize(detailsSize) +
    stringFieldSize(leaderSize) +
    bodySize(a.name, a.body);
  const w = new ProtoWriter(size);
  w.wideVarintField(1, callId);
  w.wideVarintField(2, code);
  w.stringField(3, details, detailsSize);
  if (kind === 'lock') w.stringField(4, leader, leaderSize);
  writeBody(w, a.name, a.body);
  return w.buf;
}
