// Typed errors of the client. Each message says what happened AND what the caller can do about it, because
// the caller is usually a person reading a log line at 3 a.m.
import * as grpc from '@grpc/grpc-js';
import { RpcError, isRetryable } from './rpc.js';

/** Base class: `err instanceof LeaseholdError` catches everything the client throws on purpose. */
export class LeaseholdError extends Error {
  override name = 'LeaseholdError';
}

/** The lock is held by someone else (and waitMs, if any, ran out first). Nothing changed on the server. */
export class LockNotAcquiredError extends LeaseholdError {
  override name = 'LockNotAcquiredError';
  constructor(
    readonly key: string,
    /** The owner holding the lock when the server answered ('' if it was free by then but FIFO waiters were ahead). */
    readonly holder: string,
    /** What was left of the holder's lease, by the server's clock, when it answered. */
    readonly holderTtlMs: number,
    readonly waitedMs: number,
  ) {
    super(
      holder
        ? `lock "${key}" is held by ${JSON.stringify(holder)} for up to another ${holderTtlMs} ms` +
            (waitedMs > 0 ? ` (waited ${waitedMs} ms)` : '') +
            '; retry later, or pass a larger waitMs to queue for it'
        : `lock "${key}" was not granted: other waiters are queued ahead` +
            (waitedMs > 0 ? ` (waited ${waitedMs} ms)` : '') +
            '; retry, or pass a larger waitMs to queue for it',
    );
  }
}

/** Why a held lock stopped being ours. */
export type LostReason =
  /** The server refused a renew: someone else holds it, a newer acquire superseded it, or it expired. */
  | 'NOT_HELD'
  | 'WRONG_OWNER'
  | 'WRONG_TOKEN'
  | 'EXPIRED'
  /** No renew was confirmed before the client's conservative local deadline. */
  | 'DEADLINE'
  /** The server rejected the renew outright (bad request) — a bug, but the lock is not safe to use. */
  | 'RENEW_FAILED'
  /** LockClient.close() was called while the lock was held. */
  | 'CLIENT_CLOSED'
  /** The session the lock was held under ended (not renewed in time, refused, or closed). */
  | 'SESSION_LOST'
  /** This client sent another acquire of the key under the same owner (and session): the server's answer
   *  to it supersedes this hold with a new token — known or not, so the hold is LOST from the send. */
  | 'SUPERSEDED';

/** The lock was held and is no longer: stop writing; continuing needs a new acquire (and a new token). */
export class LockLostError extends LeaseholdError {
  override name = 'LockLostError';
  constructor(
    readonly key: string,
    readonly token: bigint,
    readonly reason: LostReason,
    /** What happened, without the advice. */
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(`lock "${key}" (token ${token}) is LOST: ${detail}; stop writing with this token and acquire the lock again`, options);
  }
}

/** No node of the cluster answered in time (no leader, no quorum, network down). The outcome may be unknown. */
export class UnavailableError extends LeaseholdError {
  override name = 'UnavailableError';
  constructor(message: string, cause?: RpcError) {
    super(message, cause ? { cause } : undefined);
  }
}

/** The handle was released by its user: it no longer allows writes. */
export class LockReleasedError extends LeaseholdError {
  override name = 'LockReleasedError';
  constructor(
    readonly key: string,
    readonly token: bigint,
  ) {
    super(`lock "${key}" (token ${token}) was released by this process; acquire it again to write`);
  }
}

/** The server refused the request as malformed (INVALID_ARGUMENT) or inconsistent (FAILED_PRECONDITION). */
export class InvalidRequestError extends LeaseholdError {
  override name = 'InvalidRequestError';
  constructor(
    message: string,
    readonly code: grpc.status,
  ) {
    super(message);
  }
}

/** A configured server limit (named in the message, e.g. `limits.maxHeld (1000)`) refused the request. Not
 *  retried: it is the cluster's decision, and only releasing locks (or waiting less) changes it. */
export class LimitExceededError extends LeaseholdError {
  override name = 'LimitExceededError';
}

/** The server refused the caller's identity (owner binding: the owner is not the certificate's CN). */
export class PermissionDeniedError extends LeaseholdError {
  override name = 'PermissionDeniedError';
  constructor(
    message: string,
    readonly code: grpc.status,
  ) {
    super(message);
  }
}

/** Maps an RPC failure onto the typed errors. `what` names the operation for the message. */
export function fromRpcError(err: unknown, what: string, endpoints: readonly string[], waitedMs: number): Error {
  if (!(err instanceof RpcError)) return err instanceof Error ? err : new Error(String(err));
  // Exactly the codes EndpointPool retried until the deadline ran out.
  if (isRetryable(err.code, err.details)) {
    return new UnavailableError(
      `${what}: no leasehold node answered within ${waitedMs} ms (tried ${endpoints.join(', ')}; last error ${err.message}). ` +
        'Check that a majority of the cluster is up and reachable; the outcome is unknown, so a lock it may have granted expires by itself after its ttl',
      err,
    );
  }
  switch (err.code) {
    case grpc.status.INVALID_ARGUMENT:
      return new InvalidRequestError(`${what} was refused as invalid: ${err.details}`, err.code);
    case grpc.status.FAILED_PRECONDITION:
      return new InvalidRequestError(`${what} was refused: ${err.details}`, err.code);
    case grpc.status.RESOURCE_EXHAUSTED:
      return new LimitExceededError(`${what} was refused: ${err.details}`);
    case grpc.status.PERMISSION_DENIED:
    case grpc.status.UNAUTHENTICATED:
      return new PermissionDeniedError(`${what} was refused: ${err.details}`, err.code);
    default:
      return new LeaseholdError(`${what} failed: ${err.message}`, { cause: err });
  }
}
