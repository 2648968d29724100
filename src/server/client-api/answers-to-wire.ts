// A lock call's result as its wire message: the domain results of src/lock (bigint tokens, number times)
// turned into the Lock service's response messages (decimal strings), one converter per method. The
// payload every transport of a lock call carries: unary replies, Lock/Stream answers, Forward answers.
import type {
  AcquireResult,
  LockView,
  OpenSessionResult,
  ReleaseResult,
  RenewResult,
  RenewSessionResult,
  SessionEndResult,
} from '../../lock/types.js';
import type { WireInput } from '../../wire/scalars.js';
import type {
  AcquireResponse,
  CloseSessionResponse,
  GetResponse,
  OpenSessionResponse,
  ReleaseResponse,
  RenewResponse,
  RenewSessionResponse,
} from '../../wire/lock.js';
import { holderToWire, holdersOf } from './holders-view.js';
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

function acquireToWire(r: AcquireResult): WireInput<AcquireResponse> {
  return {
    acquired: r.acquired,
    token: r.token.toString(),
    ttl_ms: String(r.ttlMs),
    expires_at_ms: String(r.expiresAtMs),
    holder_owner: r.holderOwner,
    holder_ttl_ms: String(r.holderTtlMs),
    delay_ms_left: String(r.delayMsLeft ?? 0),
  };
}

function renewToWire(r: RenewResult): WireInput<RenewResponse> {
  return { renewed: r.renewed, ttl_ms: String(r.ttlMs), expires_at_ms: String(r.expiresAtMs), reason: r.reason };
}

function releaseToWire(r: ReleaseResult): WireInput<ReleaseResponse> {
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

const EMPTY_VALUE = new Uint8Array(0);

function viewToWire(v: LockView): WireInput<GetResponse> {
  return {
    held: v.held,
    owner: v.owner,
    token: v.token.toString(),
    ttl_ms: String(v.ttlMs),
    expires_at_ms: String(v.expiresAtMs),
    last_token: v.lastToken.toString(),
    waiters: v.waiters ?? 0,
    index: String(v.index ?? 0),
    holders: holdersOf(v, v.value).map(holderToWire),
    limit: v.limit ?? 1,
  };
}
