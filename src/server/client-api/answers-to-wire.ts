// A lock call's result as its wire message: the domain results of src/lock (bigint tokens, number times)
// turned into the Lock service's response messages, one converter per method. The payload every transport
// of a lock call carries: unary replies, Lock/Stream answers, Forward answers. The hot calls' responses
// (acquire, renew, release, get) keep their tokens as bigints and their times as numbers: only the
// hand-written encoder (wire/lock-response-encode.ts) writes them, and it takes them so, with no decimal
// string made and parsed back per field; the others stay decimal strings for protobufjs.
import type {
  AcquireResult,
  LockView,
  OpenSessionResult,
  ReleaseResult,
  RenewResult,
  RenewSessionResult,
  SessionEndResult,
} from '../../lock/types.js';
import type { HolderView } from '../../lock/types.js';
import type { WireInput } from '../../wire/scalars.js';
import type { CloseSessionResponse, OpenSessionResponse, RenewSessionResponse } from '../../wire/lock.js';
import type {
  AcquireResponseInput,
  GetResponseInput,
  HolderInput,
  ReleaseResponseInput,
  RenewResponseInput,
} from '../../wire/lock-response-encode.js';
import { holdersOf } from './holders-view.js';
import type { AnswerEncoder } from './lock-calls.js';

/** A lock call's answer as a wire message (the payload every transport carries). */
export type WireAnswer = WireInput<unknown>;

export const WIRE_ANSWERS: AnswerEncoder<WireAnswer> = {
  Acquire: acquireToWire,
  Renew: renewToWire,
  Release: releaseToWire,
  Get: viewToWire,
  OpenSession: openSessionToWire,
  RenewSession: renewSessionToWire,
  CloseSession: closeSessionToWire,
  Revoke: (r) => ({ revoked: r.revoked.map(String) }),
};

function acquireToWire(r: AcquireResult): AcquireResponseInput {
  return {
    acquired: r.acquired,
    token: r.token,
    ttl_ms: r.ttlMs,
    expires_at_ms: r.expiresAtMs,
    holder_owner: r.holderOwner,
    holder_ttl_ms: r.holderTtlMs,
    delay_ms_left: r.delayMsLeft ?? 0,
  };
}

function renewToWire(r: RenewResult): RenewResponseInput {
  return { renewed: r.renewed, ttl_ms: r.ttlMs, expires_at_ms: r.expiresAtMs, reason: r.reason };
}

function releaseToWire(r: ReleaseResult): ReleaseResponseInput {
  return { released: r.released, reason: r.reason };
}

function openSessionToWire(r: OpenSessionResult): WireInput<OpenSessionResponse> {
  return { session_id: r.sessionId.toString(), ttl_ms: String(r.ttlMs), expires_at_ms: String(r.expiresAtMs) };
}

function renewSessionToWire(r: RenewSessionResult): WireInput<RenewSessionResponse> {
  return { renewed: r.renewed, ttl_ms: String(r.ttlMs), expires_at_ms: String(r.expiresAtMs), reason: r.reason };
}

function closeSessionToWire(r: SessionEndResult): WireInput<CloseSessionResponse> {
  return { closed: r.ended, released: r.released, reason: r.reason };
}

function viewToWire(v: LockView): GetResponseInput {
  return {
    held: v.held,
    owner: v.owner,
    token: v.token,
    ttl_ms: v.ttlMs,
    expires_at_ms: v.expiresAtMs,
    last_token: v.lastToken,
    waiters: v.waiters ?? 0,
    index: v.index ?? 0,
    holders: holdersOf(v, v.value).map(holderInput),
    limit: v.limit ?? 1,
  };
}

/** One hold as GetResponse.holders carries it (holders-view.ts holderToWire: the same, as strings for List). */
function holderInput(h: HolderView): HolderInput {
  return {
    owner: h.owner,
    token: h.token,
    ttl_ms: h.ttlMs,
    expires_at_ms: h.expiresAtMs,
    shared: h.shared,
    session_id: h.sessionId,
    value: h.value,
  };
}
