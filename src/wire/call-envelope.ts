// The envelope of a lock call on a multiplexed stream — lock.proto's LockCall / LockAnswer (a client's
// Lock/Stream) and raft.proto's ForwardedCall / ForwardedAnswer (a follower's Forward stream) — apart from
// the call it carries. Both pairs carry the same oneof (fields 10..16, the same request and response
// messages), so a follower hands the bytes of a client's request to the leader, and the bytes of the
// leader's response to the client, as they came: it never decodes the leader's answer nor re-encodes the
// request (call-envelope-decode.ts, call-envelope-encode.ts). The field numbers must match the .proto:
// test/unit/wire/call-envelope.test.ts checks them against the loaded descriptors.
import type { LockCallName } from './lock.js';

/** Which pair of messages: a client's Lock/Stream, or a follower's Forward stream. */
export type EnvelopeKind = 'lock' | 'forward';

/** The oneof member (request or response) of each lock call: the same numbers in all four messages. */
export const CALL_FIELD: Readonly<Record<LockCallName, number>> = Object.freeze({
  acquire: 10,
  renew: 11,
  release: 12,
  get: 13,
  open_session: 14,
  renew_session: 15,
  close_session: 16,
});

/** The lock call carried in oneof field `n` (10..16), else undefined. */
export const CALL_NAME_BY_FIELD: readonly (LockCallName | undefined)[] = (() => {
  const out: (LockCallName | undefined)[] = [];
  for (const [name, n] of Object.entries(CALL_FIELD)) out[n] = name as LockCallName;
  return out;
})();

export const LOCK_CALL = { call_id: 1, timeout_ms: 2, cancel: 3, ...CALL_FIELD } as const;
export const FORWARDED_CALL = { call_id: 1, from: 2, cluster_id: 3, timeout_ms: 4, cancel: 5, ...CALL_FIELD } as const;
export const LOCK_ANSWER = { call_id: 1, code: 2, details: 3, leader: 4, ...CALL_FIELD } as const;
export const FORWARDED_ANSWER = { call_id: 1, code: 2, details: 3, ...CALL_FIELD } as const;

/** A decoded LockCall or ForwardedCall: the header, and the request's bytes as they came. */
export interface CallEnvelope {
  /** uint64 as a decimal string (as the loader option longs: String gave it). */
  callId: string;
  timeoutMs: number;
  cancel: boolean;
  /** ForwardedCall only ('' in a LockCall). */
  from: string;
  clusterId: string;
  /** The oneof member set, or undefined (a cancel, or a call without a request). */
  name: LockCallName | undefined;
  /** The request's bytes: a view into the received buffer, not copied. */
  body: Buffer | undefined;
}

/** A LockAnswer or ForwardedAnswer: the header, and the response's bytes as they came. */
export interface AnswerEnvelope {
  callId: string;
  code: number;
  details: string;
  /** LockAnswer only (not written in a ForwardedAnswer). */
  leader: string;
  name: LockCallName | undefined;
  body: Uint8Array | undefined;
}
