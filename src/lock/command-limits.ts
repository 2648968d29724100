// The limits a command must keep to be encoded, proposed or applied: fixed in code (not config) so every
// replica judges alike; the server's configurable limits (validate.ts) are at least as strict. The decoder
// (commands.ts) enforces the same bounds as it reads, so a decoded command always keeps them.
import type { DequeueCause, LockCommand } from './command-types.js';
import { MAX_UINT64, utf8ByteLength } from './bytes.js';
import { isGroupAcquire } from './command-types.js';
import { hasHoldOptions } from './command-tags.js';
import { BASE_LEVEL } from './versions.js';

/** Limits enforced by the codec itself. Fixed in code (not config) so every replica judges alike;
 *  the server's configurable limits (validate.ts) are at least as strict. */
export const WIRE_LIMITS = Object.freeze({
  maxKeyBytes: 512,
  maxOwnerBytes: 256,
  maxRequestIdBytes: 128,
  /** ~34 years; keeps timeMs + ttlMs far below 2^53. */
  maxTtlMs: 2 ** 40,
  /** ~35,000 years after the epoch. */
  maxTimeMs: 2 ** 50,
  /** Same bound as ttlMs: a wait deadline stays far below 2^53. */
  maxWaitMs: 2 ** 40,
  /** Same bound again: a lock-delay's end stays far below 2^53. */
  maxLockDelayMs: 2 ** 40,
  /** A hold's value (the server's lock.maxValueBytes is at most this). */
  maxValueBytes: 64 * 1024,
  /** A semaphore's limit (AcquireRequest.limit): every op on the key walks its holds, so they stay few. */
  maxHoldLimit: 1000,
  /** Renews in one `renews` entry (tag 24): at the key and owner bounds ~800 KB, within a Raft entry; the
   *  leader puts at most LockLeaderConfig.renewsPerEntry (fewer) in one. */
  maxRenewsPerEntry: 1024,
});

/** A node id (src/config/node-id.ts: a DNS label of 1-63 characters; the codec checks the length only). */
export const MAX_MEMBER_ID_BYTES = 63;

/** The highest cluster level a clusterLevel entry may carry (a sanity bound of the codec, not a plan). */
export const MAX_CLUSTER_LEVEL = 1 << 16;

export const DEQUEUE_CAUSES: readonly DequeueCause[] = ['deadline', 'cancel'];

/** Why `command` breaks the wire limits, or null when it is encodable. Shared by encode and applyCommand. */
export function wireLimitViolation(command: LockCommand): string | null {
  if (!isIntegerIn(command.timeMs, 0, WIRE_LIMITS.maxTimeMs)) return `timeMs must be an integer in [0, 2^50], got ${command.timeMs}`;
  switch (command.type) {
    case 'termStart':
    case 'checkpoint':
      return null;
    case 'clusterLevel':
      return isIntegerIn(command.level, BASE_LEVEL + 1, MAX_CLUSTER_LEVEL)
        ? null
        : `level must be an integer in [2, 2^16], got ${String(command.level)}`;
    case 'memberRan':
      return stringViolation('memberId', command.memberId, 1, MAX_MEMBER_ID_BYTES);
    case 'forget':
      return isIntegerIn(command.upToMs, 0, WIRE_LIMITS.maxTimeMs)
        ? null
        : `upToMs must be an integer in [0, 2^50], got ${String(command.upToMs)}`;
    case 'expire':
      return stringViolation('key', command.key, 1, WIRE_LIMITS.maxKeyBytes) ?? tokenViolation(command.token);
    case 'revoke':
      return (
        stringViolation('key', command.key, 1, WIRE_LIMITS.maxKeyBytes) ??
        (command.token === 0n ? null : tokenViolation(command.token)) ??
        (command.requestId === undefined
          ? command.owner === undefined
            ? null
            : 'owner needs a requestId (tag 23)'
          : (stringViolation('owner', command.owner ?? '', 0, WIRE_LIMITS.maxOwnerBytes) ?? requestIdViolation(command.requestId)))
      );
    case 'acquire':
      return (
        lockIdentityViolation(command) ??
        ((command.sessionId ?? 0) > 0
          ? command.ttlMs === 0
            ? (sessionIdViolation(command.sessionId) ?? (command.queued === true ? 'a queued acquire cannot be under a session' : null))
            : `ttlMs must be 0 for a hold under a session, got ${String(command.ttlMs)}`
          : command.sessionId === undefined || command.sessionId === 0
            ? ttlViolation(command.ttlMs)
            : sessionIdViolation(command.sessionId)) ??
        requestIdViolation(command.requestId) ??
        (command.waitMs === undefined || isIntegerIn(command.waitMs, 0, WIRE_LIMITS.maxWaitMs)
          ? null
          : `waitMs must be an integer in [0, 2^40], got ${String(command.waitMs)}`) ??
        (command.lockDelayMs === undefined || isIntegerIn(command.lockDelayMs, 0, WIRE_LIMITS.maxLockDelayMs)
          ? null
          : `lockDelayMs must be an integer in [0, 2^40], got ${String(command.lockDelayMs)}`) ??
        (command.value === undefined || (command.value instanceof Uint8Array && command.value.length <= WIRE_LIMITS.maxValueBytes)
          ? null
          : `value must be at most ${WIRE_LIMITS.maxValueBytes} bytes`) ??
        (command.queued === true && ((command.waitMs ?? 0) > 0 || hasHoldOptions(command))
          ? 'a queued acquire cannot also wait or carry hold options'
          : null) ??
        (command.limit === undefined || isIntegerIn(command.limit, 1, WIRE_LIMITS.maxHoldLimit)
          ? null
          : `limit must be an integer in [1, ${WIRE_LIMITS.maxHoldLimit}], got ${String(command.limit)}`) ??
        (command.shared === undefined || typeof command.shared === 'boolean' ? null : 'shared must be a boolean') ??
        (command.queued === true && isGroupAcquire(command) ? 'a queued acquire cannot be of a semaphore or shared' : null)
      );
    case 'undelay':
    case 'handOff':
      return stringViolation('key', command.key, 1, WIRE_LIMITS.maxKeyBytes);
    case 'openSession':
      return (
        stringViolation('owner', command.owner, 1, WIRE_LIMITS.maxOwnerBytes) ??
        ttlViolation(command.ttlMs) ??
        requestIdViolation(command.requestId) ??
        (isIntegerIn(command.lockDelayMs, 0, WIRE_LIMITS.maxLockDelayMs)
          ? null
          : `lockDelayMs must be an integer in [0, 2^40], got ${String(command.lockDelayMs)}`)
      );
    case 'renewSession':
    case 'closeSession':
      return sessionIdViolation(command.sessionId) ?? stringViolation('owner', command.owner, 0, WIRE_LIMITS.maxOwnerBytes);
    case 'expireSession':
      return sessionIdViolation(command.sessionId);
    case 'dequeue':
      return (
        stringViolation('key', command.key, 1, WIRE_LIMITS.maxKeyBytes) ??
        (isIntegerIn(command.ticket, 1, Number.MAX_SAFE_INTEGER)
          ? null
          : `ticket must be a positive integer, got ${String(command.ticket)}`) ??
        (DEQUEUE_CAUSES.includes(command.cause) ? null : `cause must be deadline or cancel, got ${String(command.cause)}`)
      );
    case 'renew':
      return (
        lockIdentityViolation(command) ??
        tokenViolation(command.token) ??
        ttlViolation(command.ttlMs) ??
        requestIdViolation(command.requestId)
      );
    case 'renews':
      return renewsViolation(command.renews);
    case 'release':
      return lockIdentityViolation(command) ?? tokenViolation(command.token) ?? requestIdViolation(command.requestId);
    default:
      return `unknown command type ${String((command as { type: unknown }).type)}`;
  }
}

function renewsViolation(renews: unknown): string | null {
  if (!Array.isArray(renews)) return 'renews must be an array';
  if (renews.length < 1 || renews.length > WIRE_LIMITS.maxRenewsPerEntry)
    return `renews must hold 1..${WIRE_LIMITS.maxRenewsPerEntry} renews, got ${renews.length}`;
  for (let i = 0; i < renews.length; i++) {
    const r = renews[i] as { key: unknown; owner: unknown; token: unknown; ttlMs: unknown };
    const violation = lockIdentityViolation(r) ?? tokenViolation(r.token) ?? ttlViolation(r.ttlMs);
    if (violation !== null) return `renews[${i}]: ${violation}`;
  }
  return null;
}

export function sessionIdViolation(sessionId: unknown): string | null {
  return isIntegerIn(sessionId, 1, Number.MAX_SAFE_INTEGER) ? null : `sessionId must be a positive integer, got ${String(sessionId)}`;
}

export function isIntegerIn(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

export function stringViolation(field: string, value: unknown, minBytes: number, maxBytes: number): string | null {
  if (typeof value !== 'string') return `${field} must be a string`;
  const bytes = utf8ByteLength(value);
  if (bytes < 0) return `${field} is not well-formed Unicode (lone surrogate)`;
  if (bytes < minBytes || bytes > maxBytes) return `${field} must be ${minBytes}..${maxBytes} bytes, got ${bytes}`;
  return null;
}

function lockIdentityViolation(command: { key: unknown; owner: unknown }): string | null {
  return (
    stringViolation('key', command.key, 1, WIRE_LIMITS.maxKeyBytes) ?? stringViolation('owner', command.owner, 1, WIRE_LIMITS.maxOwnerBytes)
  );
}

function requestIdViolation(requestId: unknown): string | null {
  return stringViolation('requestId', requestId, 0, WIRE_LIMITS.maxRequestIdBytes);
}

function ttlViolation(ttlMs: unknown): string | null {
  return isIntegerIn(ttlMs, 1, WIRE_LIMITS.maxTtlMs) ? null : `ttlMs must be an integer in [1, 2^40], got ${String(ttlMs)}`;
}

function tokenViolation(token: unknown): string | null {
  if (typeof token !== 'bigint') return 'token must be a bigint';
  return token >= 1n && token <= MAX_UINT64 ? null : `token must be in [1, 2^64-1], got ${token}`;
}
