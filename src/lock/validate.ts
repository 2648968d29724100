// Input validation the server runs BEFORE proposing a command, so bad input gets INVALID_ARGUMENT with a
// message naming the proto field, and never reaches the log. (The codec re-checks its own fixed wire limits;
// these configurable limits are the stricter, user-facing ones.)
//
// Inputs are `unknown`-typed because they come straight off the wire (proto-loader objects, camelCase).
// int64/uint64 fields are accepted as number (safe integers only), bigint, or a decimal string — load the
// protos with `longs: String` so no value is ever rounded through a double before it gets here.
import { MAX_UINT64, utf8ByteLength } from './bytes.js';
import { WIRE_LIMITS } from './commands.js';

export interface LockLimits {
  minTtlMs: number;
  maxTtlMs: number;
  /** Upper bound of AcquireRequest.wait_ms (0 = answer at once). */
  maxWaitMs: number;
  /** Upper bound of AcquireRequest.lock_delay_ms (SPEC: lock.maxLockDelayMs, default 60 s). */
  maxLockDelayMs: number;
  /** Upper bound of AcquireRequest.value in bytes (SPEC: lock.maxValueBytes, default 1 KiB). */
  maxValueBytes: number;
}

export const DEFAULT_LOCK_LIMITS: Readonly<LockLimits> = Object.freeze({
  minTtlMs: 100,
  maxTtlMs: 3_600_000,
  maxWaitMs: 300_000,
  maxLockDelayMs: 60_000,
  maxValueBytes: 1024,
});

/** Proto field names, as users see them in the API. */
export type LockFieldName =
  | 'key'
  | 'owner'
  | 'ttl_ms'
  | 'token'
  | 'request_id'
  | 'wait_ms'
  | 'lock_delay_ms'
  | 'value'
  | 'session_id'
  | 'prefix'
  | 'after_index'
  | 'limit'
  | 'page_token'
  | 'reason'
  | 'shared';

export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  constructor(
    readonly field: LockFieldName,
    message: string,
  ) {
    super(message);
  }
}

export type Validated<T> = { ok: true; value: T } | { ok: false; error: ValidationError };

export interface AcquireInput {
  key?: unknown;
  owner?: unknown;
  ttlMs?: unknown;
  waitMs?: unknown;
  requestId?: unknown;
  lockDelayMs?: unknown;
  value?: unknown;
  sessionId?: unknown;
  limit?: unknown;
  shared?: unknown;
}
export interface OpenSessionInput {
  owner?: unknown;
  ttlMs?: unknown;
  requestId?: unknown;
  lockDelayMs?: unknown;
}
/** RenewSession and CloseSession. */
export interface SessionCallInput {
  sessionId?: unknown;
  requestId?: unknown;
  owner?: unknown;
}
export interface RenewInput {
  key?: unknown;
  owner?: unknown;
  token?: unknown;
  ttlMs?: unknown;
  requestId?: unknown;
}
export interface ReleaseInput {
  key?: unknown;
  owner?: unknown;
  token?: unknown;
  requestId?: unknown;
}
export interface GetInput {
  key?: unknown;
}

export interface ValidAcquire {
  key: string;
  owner: string;
  ttlMs: number;
  waitMs: number;
  /** '' when absent. */
  requestId: string;
  /** 0 = none. */
  lockDelayMs: number;
  /** Absent when none (an empty value is none). */
  value?: Uint8Array;
  /** The session the hold lives under; 0 or absent = none (then ttlMs is the lease's; else ttlMs is 0). */
  sessionId?: number;
  /** 1 or absent = a mutex (or shared/exclusive holds); >= 2 = a counting semaphore of that many (holds.ts). */
  limit?: number;
  /** A shared (read) hold; absent = false. */
  shared?: boolean;
}
export interface ValidOpenSession {
  owner: string;
  ttlMs: number;
  requestId: string;
  lockDelayMs: number;
}
export interface ValidSessionCall {
  sessionId: number;
  requestId: string;
  /** '' = not checked (no owner binding, and the caller named none). */
  owner: string;
}
export interface ValidRenew {
  key: string;
  owner: string;
  token: bigint;
  ttlMs: number;
  requestId: string;
}
export interface ValidRelease {
  key: string;
  owner: string;
  token: bigint;
  requestId: string;
}
export interface ValidGet {
  key: string;
}

export function validateAcquire(input: AcquireInput, limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidAcquire> {
  return collect(() => {
    const key = checkKey(input.key);
    const owner = checkOwner(input.owner);
    // SPEC: under a session the hold's life is the session's, so ttl_ms must be 0 (checked once the session
    // id is known; the error still names ttl_ms, the field that is wrong).
    const sessionId = checkSessionId(input.sessionId, false);
    const ttlMs = sessionId > 0 ? checkNoTtl(input.ttlMs) : checkTtl(input.ttlMs, limits);
    return {
      key,
      owner,
      ttlMs,
      waitMs: checkWait(input.waitMs, limits),
      requestId: checkRequestId(input.requestId),
      lockDelayMs: checkLockDelay(input.lockDelayMs, limits),
      ...valueField(input.value, limits),
      sessionId,
      ...holdMode(input.limit, input.shared),
    };
  });
}

export function validateOpenSession(input: OpenSessionInput, limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidOpenSession> {
  return collect(() => ({
    owner: checkOwner(input.owner),
    ttlMs: checkTtl(input.ttlMs, limits),
    requestId: checkRequestId(input.requestId),
    lockDelayMs: checkLockDelay(input.lockDelayMs, limits),
  }));
}

export function validateSessionCall(input: SessionCallInput, _limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidSessionCall> {
  return collect(() => ({
    sessionId: checkSessionId(input.sessionId, true),
    requestId: checkRequestId(input.requestId),
    owner: checkText('owner', input.owner, 0, WIRE_LIMITS.maxOwnerBytes),
  }));
}

export function validateRenew(input: RenewInput, limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidRenew> {
  return collect(() => ({
    key: checkKey(input.key),
    owner: checkOwner(input.owner),
    token: checkToken(input.token),
    ttlMs: checkTtl(input.ttlMs, limits),
    requestId: checkRequestId(input.requestId),
  }));
}

export function validateRelease(input: ReleaseInput, _limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidRelease> {
  return collect(() => ({
    key: checkKey(input.key),
    owner: checkOwner(input.owner),
    token: checkToken(input.token),
    requestId: checkRequestId(input.requestId),
  }));
}

export function validateGet(input: GetInput, _limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidGet> {
  return collect(() => ({ key: checkKey(input.key) }));
}

export interface WatchInput {
  key: unknown;
  prefix: unknown;
  afterIndex: unknown;
  includeRenewals: unknown;
}

export interface ValidWatch {
  /** One key, or null: every key under `prefix`. */
  key: string | null;
  prefix: string;
  afterIndex: number;
  includeRenewals: boolean;
}

export function validateWatch(input: WatchInput, _limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidWatch> {
  return collect(() => {
    const keyGiven = typeof input.key === 'string' && input.key !== '';
    const key = keyGiven ? checkKey(input.key) : null;
    const prefix = checkText('prefix', input.prefix, 0, WIRE_LIMITS.maxKeyBytes);
    if (key !== null && prefix !== '')
      throw new ValidationError('prefix', 'prefix must be empty when key is set: watch one key or one prefix, not both');
    const afterIndex = toInteger('after_index', input.afterIndex ?? 0);
    if (afterIndex < 0n || afterIndex > BigInt(Number.MAX_SAFE_INTEGER))
      throw new ValidationError('after_index', `after_index must be a log index (0 = from now), got ${afterIndex}`);
    return { key, prefix, afterIndex: Number(afterIndex), includeRenewals: input.includeRenewals === true };
  });
}

export interface RevokeInput {
  key: unknown;
  token: unknown;
  reason: unknown;
  requestId: unknown;
  owner?: unknown;
}

export interface ValidRevoke {
  key: string;
  /** 0n = whatever hold the key has. */
  token: bigint;
  /** Why (logged by the node; for the audit trail). */
  reason: string;
  requestId: string;
  /** Who revokes: the namespace of `requestId` ('' = the one shared by callers that name none; under owner
   *  binding, the caller's certificate CN). */
  owner: string;
}

export function validateRevoke(input: RevokeInput, _limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidRevoke> {
  return collect(() => {
    const key = checkKey(input.key);
    const token = toInteger('token', input.token ?? 0);
    if (token < 0n || token > (1n << 64n) - 1n)
      throw new ValidationError('token', `token must be a fencing token, or 0 for whatever hold the key has; got ${token}`);
    return {
      key,
      token,
      reason: checkText('reason', input.reason, 0, 256),
      requestId: checkRequestId(input.requestId),
      owner: checkText('owner', input.owner, 0, WIRE_LIMITS.maxOwnerBytes),
    };
  });
}

export interface ListInput {
  prefix: unknown;
  limit: unknown;
  pageToken: unknown;
}

export interface ValidList {
  prefix: string;
  limit: number;
  /** The last key of the previous page ('' = first page). */
  afterKey: string;
}

/** List pages: at most this many locks each (SPEC "List"); 0 asks for the default. */
const MAX_LIST_LIMIT = 1000;
const DEFAULT_LIST_LIMIT = 100;

export function validateList(input: ListInput, _limits: LockLimits = DEFAULT_LOCK_LIMITS): Validated<ValidList> {
  return collect(() => {
    const prefix = checkText('prefix', input.prefix, 0, WIRE_LIMITS.maxKeyBytes);
    const limit = toInteger('limit', input.limit ?? 0);
    if (limit < 0n || limit > BigInt(MAX_LIST_LIMIT))
      throw new ValidationError(
        'limit',
        `limit must be between 0 (the default, ${DEFAULT_LIST_LIMIT}) and ${MAX_LIST_LIMIT}, got ${limit}`,
      );
    const afterKey = checkText('page_token', input.pageToken, 0, WIRE_LIMITS.maxKeyBytes);
    if (afterKey !== '' && !afterKey.startsWith(prefix))
      throw new ValidationError('page_token', 'page_token must be the next_page_token of a page of the same prefix');
    return { prefix, limit: limit === 0n ? DEFAULT_LIST_LIMIT : Number(limit), afterKey };
  });
}

// The checks throw ValidationError and `collect` turns the first one into a result: fields are checked in
// proto order, so the error always names the first bad field.
function collect<T>(build: () => T): Validated<T> {
  try {
    return { ok: true, value: build() };
  } catch (error) {
    if (error instanceof ValidationError) return { ok: false, error };
    throw error;
  }
}

const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

function checkText(field: LockFieldName, value: unknown, minBytes: number, maxBytes: number): string {
  if (value === undefined || value === null) value = '';
  if (typeof value !== 'string') throw new ValidationError(field, `${field} must be a string, got ${typeof value}`);
  const bytes = utf8ByteLength(value);
  if (bytes < 0) throw new ValidationError(field, `${field} must be valid Unicode (it contains a lone surrogate)`);
  // Control characters (C0, DEL, C1) make keys and owners print ambiguously in logs, the CLI and JSON
  // (`a\nb` vs two lines) and have no business in an identifier. Invalid UTF-8 is refused earlier, at
  // the wire (strict-decode.ts): by the time a string gets here it has already been decoded.
  const control = CONTROL_CHARACTER.exec(value);
  if (control !== null) {
    const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
    throw new ValidationError(field, `${field} must not contain control characters (U+${code} at position ${control.index})`);
  }
  if (bytes < minBytes || bytes > maxBytes) {
    const what = minBytes > 0 ? `${minBytes}..${maxBytes} bytes of UTF-8` : `at most ${maxBytes} bytes of UTF-8`;
    throw new ValidationError(field, `${field} must be ${what}, got ${bytes}`);
  }
  return value;
}

function checkKey(value: unknown): string {
  return checkText('key', value, 1, WIRE_LIMITS.maxKeyBytes);
}

function checkOwner(value: unknown): string {
  return checkText('owner', value, 1, WIRE_LIMITS.maxOwnerBytes);
}

function checkRequestId(value: unknown): string {
  return checkText('request_id', value, 0, WIRE_LIMITS.maxRequestIdBytes);
}

function checkTtl(value: unknown, limits: LockLimits): number {
  // Never let a configured limit exceed what the codec can carry.
  const maxTtlMs = Math.min(limits.maxTtlMs, WIRE_LIMITS.maxTtlMs);
  const ttlMs = toInteger('ttl_ms', value ?? 0);
  if (ttlMs < BigInt(limits.minTtlMs) || ttlMs > BigInt(maxTtlMs)) {
    throw new ValidationError('ttl_ms', `ttl_ms must be between ${limits.minTtlMs} and ${maxTtlMs}, got ${ttlMs}`);
  }
  return Number(ttlMs);
}

function checkNoTtl(value: unknown): number {
  const ttlMs = toInteger('ttl_ms', value ?? 0);
  if (ttlMs !== 0n)
    throw new ValidationError('ttl_ms', `ttl_ms must be 0 for a hold under a session (it lives as long as the session), got ${ttlMs}`);
  return 0;
}

function checkSessionId(value: unknown, required: boolean): number {
  const id = toInteger('session_id', value ?? 0);
  if (id === 0n && required) throw new ValidationError('session_id', 'session_id is required');
  if (id < 0n || id > BigInt(Number.MAX_SAFE_INTEGER))
    throw new ValidationError('session_id', `session_id must be a session id from OpenSession, got ${id}`);
  return Number(id);
}

/** AcquireRequest.limit: 0 and 1 both mean one exclusive hold (SPEC). */
function checkHoldLimit(value: unknown): number {
  const limit = toInteger('limit', value ?? 0);
  if (limit < 0n || limit > BigInt(WIRE_LIMITS.maxHoldLimit))
    throw new ValidationError('limit', `limit must be between 0 and ${WIRE_LIMITS.maxHoldLimit} (0 or 1 = a mutex), got ${limit}`);
  return limit < 1n ? 1 : Number(limit);
}

function holdMode(limitValue: unknown, sharedValue: unknown): { limit: number; shared: boolean } {
  const limit = checkHoldLimit(limitValue);
  const shared = checkShared(sharedValue);
  // A semaphore's holds are all alike; shared/exclusive is a key of limit 1.
  if (shared && limit > 1)
    throw new ValidationError('shared', `shared holds are of a key with limit 0 or 1, not a semaphore (limit ${limit})`);
  return { limit, shared };
}

function checkShared(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (value === true) return true;
  throw new ValidationError('shared', `shared must be a boolean, got ${typeof value === 'string' ? JSON.stringify(value) : typeof value}`);
}

function checkWait(value: unknown, limits: LockLimits): number {
  const waitMs = toInteger('wait_ms', value ?? 0);
  if (waitMs < 0n || waitMs > BigInt(limits.maxWaitMs)) {
    throw new ValidationError('wait_ms', `wait_ms must be between 0 and ${limits.maxWaitMs}, got ${waitMs}`);
  }
  return Number(waitMs);
}

function checkLockDelay(value: unknown, limits: LockLimits): number {
  const lockDelayMs = toInteger('lock_delay_ms', value ?? 0);
  if (lockDelayMs < 0n || lockDelayMs > BigInt(limits.maxLockDelayMs)) {
    throw new ValidationError(
      'lock_delay_ms',
      `lock_delay_ms must be between 0 and ${limits.maxLockDelayMs} (lock.maxLockDelayMs), got ${lockDelayMs}`,
    );
  }
  return Number(lockDelayMs);
}

function valueField(value: unknown, limits: LockLimits): { value?: Uint8Array } {
  if (value === undefined || value === null) return {};
  if (!(value instanceof Uint8Array)) throw new ValidationError('value', 'value must be bytes');
  if (value.length > limits.maxValueBytes)
    throw new ValidationError('value', `value must be at most ${limits.maxValueBytes} bytes (lock.maxValueBytes), got ${value.length}`);
  return value.length === 0 ? {} : { value };
}

function checkToken(value: unknown): bigint {
  if (value === undefined || value === null) throw new ValidationError('token', 'token is required');
  const token = toInteger('token', value);
  if (token < 1n) throw new ValidationError('token', `token must be a positive integer, got ${token}`);
  if (token > MAX_UINT64) throw new ValidationError('token', `token must be at most ${MAX_UINT64} (uint64), got ${token}`);
  return token;
}

/** Longest decimal we parse: bounds BigInt() work on hostile input; anything longer is out of range anyway. */
const MAX_DECIMAL_DIGITS = 40;

/** Exact integer from number | bigint | decimal string; anything else (fractions, 1e3, hex, NaN) is rejected. */
function toInteger(field: LockFieldName, value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new ValidationError(field, `${field} must be an integer, got ${value}`);
    // Above 2^53 a number may already have been rounded: we cannot know which integer the client meant.
    if (!Number.isSafeInteger(value)) {
      throw new ValidationError(field, `${field} ${value} is beyond 2^53 as a number; send it as a decimal string`);
    }
    return BigInt(value);
  }
  if (typeof value === 'string') {
    const text = value;
    if (!/^-?[0-9]+$/.test(text)) {
      throw new ValidationError(field, `${field} must be a decimal integer, got ${JSON.stringify(value.slice(0, 40))}`);
    }
    if (text.length > MAX_DECIMAL_DIGITS) throw new ValidationError(field, `${field} is out of range (${text.length} digits)`);
    return BigInt(text);
  }
  throw new ValidationError(field, `${field} must be an integer, got ${typeof value}`);
}
