// Lock commands' binary encoding: one command per Raft entry (command-types.ts says what each does).
//
// Wire format (one entry = one command):
//   tag:u8  timeMs:uvarint  fields...
//   1 acquire    key:str owner:str ttlMs:uvarint requestId:str
//   2 renew      key:str owner:str token:uvarint64 ttlMs:uvarint requestId:str
//   3 release    key:str owner:str token:uvarint64 requestId:str
//   4 expire     key:str token:uvarint64
//   5 termStart
//   6 checkpoint
//   7 acquire (queued; same layout as 1)
//   8 forget     upToMs:uvarint
//   9 acquire that waits in line: as 1, then waitMs:uvarint (>= 1)
//  10 dequeue    key:str ticket:uvarint cause:u8 (1 deadline passed, 2 call cancelled)
//  11 acquire with hold options: as 1, then waitMs:uvarint lockDelayMs:uvarint value:bytes (each may be 0 /
//     empty; used when a lock-delay or a value is set)
//  12 undelay    key:str
//  13 openSession  owner:str ttlMs:uvarint requestId:str lockDelayMs:uvarint
//  14 renewSession sessionId:uvarint owner:str ('' = not checked)
//  15 closeSession sessionId:uvarint owner:str ('' = not checked)
//  16 expireSession sessionId:uvarint
//  17 acquire under a session: key:str owner:str requestId:str waitMs:uvarint lockDelayMs:uvarint value:bytes
//     sessionId:uvarint (no ttlMs: the hold lives as long as the session)
//  18 revoke     key:str token:uvarint64 (0 = every hold)
//  19 clusterLevel level:uvarint (>= 2; level 2, see versions.ts)
//  20 memberRan  memberId:str (level 2): the Raft member has run (it persisted entries of this log)
//  21 acquire of one of many holds (level 3; holds.ts): key:str owner:str ttlMs:uvarint requestId:str
//     waitMs:uvarint lockDelayMs:uvarint value:bytes sessionId:uvarint (0 = none; then ttlMs 0)
//     limit:uvarint (1 = one exclusive hold or many shared ones, 2..1000 = a semaphore) shared:u8 (0/1)
//  22 handOff    key:str (level 3): grant the next head of a key with many holds that fits (holds.ts)
//  23 revoke that is deduplicated (level 5): key:str token:uvarint64 (0 = every hold) owner:str (who revokes:
//     its request ids' namespace, '' = the one every caller without an identity shares) requestId:str
//     ('' = none: not deduplicated)
//  24 renews     count:uvarint (1..1024), then count times key:str owner:str token:uvarint64 ttlMs:uvarint
//     (level 7): the renews of one leader turn, each applied as a lone renew without a request id
// str = uvarint byte length + UTF-8. The tag doubles as the format version: a changed layout gets a new
// tag, so old entries in the log keep decoding exactly as they did when they were first applied.
import { ByteReader, ByteWriter } from './bytes.js';
import type { AcquireCommand, LockCommand, RenewItem } from './command-types.js';
import { isGroupAcquire } from './command-types.js';
import { DEQUEUE_CAUSES, MAX_CLUSTER_LEVEL, MAX_MEMBER_ID_BYTES, WIRE_LIMITS, wireLimitViolation } from './command-limits.js';
import {
  KNOWN_TAGS,
  TAGS,
  TAG_GROUP_ACQUIRE,
  TAG_LEVELS,
  TAG_OPTIONS_ACQUIRE,
  TAG_QUEUED_ACQUIRE,
  TAG_REVOKE_ONCE,
  TAG_SESSION_ACQUIRE,
  TAG_WAITING_ACQUIRE,
  UnknownCommandError,
  hasHoldOptions,
  tagOf,
} from './command-tags.js';
import { BASE_LEVEL, BUILD_LEVEL } from './versions.js';

export type * from './command-types.js';
export { isGroupAcquire } from './command-types.js';
export { WIRE_LIMITS, wireLimitViolation } from './command-limits.js';
export { NEWEST_COMMAND_TAG, UnknownCommandError } from './command-tags.js';

/** The entry bytes are not a valid command. The applier turns this into a no-op `error` result. */
export class CommandDecodeError extends Error {
  override readonly name = 'CommandDecodeError';
  constructor(
    message: string,
    /** Byte offset where decoding failed. */
    readonly offset: number,
  ) {
    super(`malformed lock command at byte ${offset}: ${message}`);
  }
}

/** A command object breaks the wire limits; thrown by encodeCommand so a bad proposal never reaches the log. */
export class CommandEncodeError extends Error {
  override readonly name = 'CommandEncodeError';
}

export function encodeCommand(command: LockCommand): Uint8Array {
  const violation = wireLimitViolation(command);
  if (violation !== null) throw new CommandEncodeError(`cannot encode ${command.type}: ${violation}`);
  const out = new ByteWriter(32 + ('key' in command ? command.key.length * 3 : command.type === 'renews' ? command.renews.length * 48 : 0));
  out.byte(tagOf(command));
  out.uint(command.timeMs);
  switch (command.type) {
    case 'acquire':
      out.string(command.key);
      out.string(command.owner);
      if (isGroupAcquire(command)) {
        out.uint(command.ttlMs);
        out.string(command.requestId);
        out.uint(command.waitMs ?? 0);
        out.uint(command.lockDelayMs ?? 0);
        out.lengthPrefixed(command.value ?? EMPTY);
        out.uint(command.sessionId ?? 0);
        out.uint(command.limit ?? 1);
        out.byte(command.shared === true ? 1 : 0);
        break;
      }
      if ((command.sessionId ?? 0) > 0) {
        out.string(command.requestId);
        out.uint(command.waitMs ?? 0);
        out.uint(command.lockDelayMs ?? 0);
        out.lengthPrefixed(command.value ?? EMPTY);
        out.uint(command.sessionId!);
        break;
      }
      out.uint(command.ttlMs);
      out.string(command.requestId);
      if (hasHoldOptions(command)) {
        out.uint(command.waitMs ?? 0);
        out.uint(command.lockDelayMs ?? 0);
        out.lengthPrefixed(command.value ?? EMPTY);
      } else if ((command.waitMs ?? 0) > 0) {
        out.uint(command.waitMs!);
      }
      break;
    case 'undelay':
    case 'handOff':
      out.string(command.key);
      break;
    case 'openSession':
      out.string(command.owner);
      out.uint(command.ttlMs);
      out.string(command.requestId);
      out.uint(command.lockDelayMs);
      break;
    case 'renewSession':
    case 'closeSession':
      out.uint(command.sessionId);
      out.string(command.owner);
      break;
    case 'expireSession':
      out.uint(command.sessionId);
      break;
    case 'dequeue':
      out.string(command.key);
      out.uint(command.ticket);
      out.byte(DEQUEUE_CAUSES.indexOf(command.cause) + 1);
      break;
    case 'renew':
      out.string(command.key);
      out.string(command.owner);
      out.bigUint(command.token);
      out.uint(command.ttlMs);
      out.string(command.requestId);
      break;
    case 'renews':
      out.uint(command.renews.length);
      for (const r of command.renews) {
        out.string(r.key);
        out.string(r.owner);
        out.bigUint(r.token);
        out.uint(r.ttlMs);
      }
      break;
    case 'release':
      out.string(command.key);
      out.string(command.owner);
      out.bigUint(command.token);
      out.string(command.requestId);
      break;
    case 'expire':
      out.string(command.key);
      out.bigUint(command.token);
      break;
    case 'revoke':
      out.string(command.key);
      out.bigUint(command.token);
      if (command.requestId !== undefined) {
        out.string(command.owner ?? '');
        out.string(command.requestId);
      }
      break;
    case 'forget':
      out.uint(command.upToMs);
      break;
    case 'clusterLevel':
      out.uint(command.level);
      break;
    case 'memberRan':
      out.string(command.memberId);
      break;
    case 'termStart':
    case 'checkpoint':
      break;
  }
  return out.finish();
}

/** Decodes one entry. Total: returns a command that satisfies WIRE_LIMITS, or throws CommandDecodeError
 *  (malformed) or UnknownCommandError (a tag this build does not read). `readLevel` plays an older build
 *  (versions.ts) in tests: a tag above it is unknown to it. */
export function decodeCommand(bytes: Uint8Array, readLevel = BUILD_LEVEL): LockCommand {
  const input = new ByteReader(bytes, (message, offset) => new CommandDecodeError(message, offset));
  const tag = input.byte();
  if (!KNOWN_TAGS.has(tag) || (TAG_LEVELS.get(tag) ?? BASE_LEVEL) > readLevel) throw new UnknownCommandError(tag, readLevel);
  const timeMs = input.uint();
  if (timeMs > WIRE_LIMITS.maxTimeMs) input.fail(`timeMs ${timeMs} is beyond 2^50`);
  let command: LockCommand;
  switch (tag) {
    case TAGS.acquire:
    case TAG_QUEUED_ACQUIRE:
    case TAG_WAITING_ACQUIRE:
    case TAG_OPTIONS_ACQUIRE: {
      const key = readKey(input);
      const owner = readOwner(input);
      const ttlMs = readTtl(input);
      command = { type: 'acquire', timeMs, key, owner, ttlMs, requestId: readRequestId(input) };
      if (tag === TAG_QUEUED_ACQUIRE) command.queued = true;
      if (tag === TAG_WAITING_ACQUIRE) {
        const waitMs = input.uint();
        if (waitMs < 1 || waitMs > WIRE_LIMITS.maxWaitMs) input.fail(`waitMs ${waitMs} is outside [1, 2^40]`);
        command.waitMs = waitMs;
      }
      if (tag === TAG_OPTIONS_ACQUIRE) readHoldOptions(input, command);
      break;
    }
    case TAGS.undelay:
      command = { type: 'undelay', timeMs, key: readKey(input) };
      break;
    case TAGS.handOff:
      command = { type: 'handOff', timeMs, key: readKey(input) };
      break;
    case TAG_SESSION_ACQUIRE: {
      const key = readKey(input);
      const owner = readOwner(input);
      command = { type: 'acquire', timeMs, key, owner, ttlMs: 0, requestId: readRequestId(input) };
      readHoldOptions(input, command);
      command.sessionId = readSessionId(input);
      break;
    }
    case TAG_GROUP_ACQUIRE: {
      const key = readKey(input);
      const owner = readOwner(input);
      const ttlMs = input.uint();
      if (ttlMs > WIRE_LIMITS.maxTtlMs) input.fail(`ttlMs ${ttlMs} is beyond 2^40`);
      command = { type: 'acquire', timeMs, key, owner, ttlMs, requestId: readRequestId(input) };
      readHoldOptions(input, command);
      const sessionId = input.uint();
      // A hold lives by its own TTL or by its session's, never both and never neither.
      if (sessionId > 0 === ttlMs > 0) input.fail(sessionId > 0 ? 'ttlMs must be 0 under a session' : 'ttlMs is 0 without a session');
      if (sessionId > 0) command.sessionId = sessionId;
      const limit = input.uint();
      if (limit < 1 || limit > WIRE_LIMITS.maxHoldLimit) input.fail(`limit ${limit} is outside [1, ${WIRE_LIMITS.maxHoldLimit}]`);
      const shared = input.byte();
      if (shared > 1) input.fail(`shared is ${shared}, not 0 or 1`);
      if (limit > 1) command.limit = limit;
      if (shared === 1) command.shared = true;
      // Encoded only for a semaphore or a shared hold: anything else has its own tag.
      if (!isGroupAcquire(command)) input.fail('limit 1 and not shared: not an acquire of many holds');
      break;
    }
    case TAGS.openSession: {
      const owner = readOwner(input);
      const ttlMs = readTtl(input);
      const requestId = readRequestId(input);
      const lockDelayMs = input.uint();
      if (lockDelayMs > WIRE_LIMITS.maxLockDelayMs) input.fail(`lockDelayMs ${lockDelayMs} is beyond 2^40`);
      command = { type: 'openSession', timeMs, owner, ttlMs, requestId, lockDelayMs };
      break;
    }
    case TAGS.renewSession:
    case TAGS.closeSession: {
      const sessionId = readSessionId(input);
      const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
      command = { type: tag === TAGS.renewSession ? 'renewSession' : 'closeSession', timeMs, sessionId, owner };
      break;
    }
    case TAGS.expireSession:
      command = { type: 'expireSession', timeMs, sessionId: readSessionId(input) };
      break;
    case TAGS.dequeue: {
      const key = readKey(input);
      const ticket = input.uint();
      if (ticket < 1) input.fail('ticket is 0');
      const cause = DEQUEUE_CAUSES[input.byte() - 1];
      if (cause === undefined) input.fail('unknown dequeue cause');
      command = { type: 'dequeue', timeMs, key, ticket, cause: cause! };
      break;
    }
    case TAGS.renew: {
      const key = readKey(input);
      const owner = readOwner(input);
      const token = readToken(input);
      const ttlMs = readTtl(input);
      command = { type: 'renew', timeMs, key, owner, token, ttlMs, requestId: readRequestId(input) };
      break;
    }
    case TAGS.renews: {
      const count = input.uint();
      if (count < 1 || count > WIRE_LIMITS.maxRenewsPerEntry)
        input.fail(`renews count ${count} is outside [1, ${WIRE_LIMITS.maxRenewsPerEntry}]`);
      const renews: RenewItem[] = [];
      for (let i = 0; i < count; i++) {
        const key = readKey(input);
        const owner = readOwner(input);
        const token = readToken(input);
        renews.push({ key, owner, token, ttlMs: readTtl(input) });
      }
      command = { type: 'renews', timeMs, renews };
      break;
    }
    case TAGS.release: {
      const key = readKey(input);
      const owner = readOwner(input);
      const token = readToken(input);
      command = { type: 'release', timeMs, key, owner, token, requestId: readRequestId(input) };
      break;
    }
    case TAGS.expire: {
      const key = readKey(input);
      command = { type: 'expire', timeMs, key, token: readToken(input) };
      break;
    }
    case TAGS.revoke:
    case TAG_REVOKE_ONCE: {
      const key = readKey(input);
      // 0 = whatever hold the key has.
      command = { type: 'revoke', timeMs, key, token: input.bigUint() };
      if (tag === TAG_REVOKE_ONCE) {
        command.owner = input.string(WIRE_LIMITS.maxOwnerBytes);
        command.requestId = readRequestId(input);
      }
      break;
    }
    case TAGS.termStart:
      command = { type: 'termStart', timeMs };
      break;
    case TAGS.clusterLevel: {
      const level = input.uint();
      if (level <= BASE_LEVEL || level > MAX_CLUSTER_LEVEL) input.fail(`cluster level ${level} is outside [2, 2^16]`);
      command = { type: 'clusterLevel', timeMs, level };
      break;
    }
    case TAGS.memberRan: {
      const memberId = input.string(MAX_MEMBER_ID_BYTES);
      if (memberId.length === 0) input.fail('memberId is empty');
      command = { type: 'memberRan', timeMs, memberId };
      break;
    }
    case TAGS.checkpoint:
      command = { type: 'checkpoint', timeMs };
      break;
    case TAGS.forget: {
      const upToMs = input.uint();
      if (upToMs > WIRE_LIMITS.maxTimeMs) input.fail(`upToMs ${upToMs} is beyond 2^50`);
      command = { type: 'forget', timeMs, upToMs };
      break;
    }
    default:
      // Offset 0: the tag byte itself is what is wrong.
      throw new CommandDecodeError(`unknown command tag ${tag}`, 0);
  }
  input.end();
  return command;
}

/** waitMs, lockDelayMs and value, as tags 11 and 17 carry them. */
function readHoldOptions(input: ByteReader, command: AcquireCommand): void {
  const waitMs = input.uint();
  if (waitMs > WIRE_LIMITS.maxWaitMs) input.fail(`waitMs ${waitMs} is beyond 2^40`);
  if (waitMs > 0) command.waitMs = waitMs;
  const lockDelayMs = input.uint();
  if (lockDelayMs > WIRE_LIMITS.maxLockDelayMs) input.fail(`lockDelayMs ${lockDelayMs} is beyond 2^40`);
  if (lockDelayMs > 0) command.lockDelayMs = lockDelayMs;
  // A copy: a view would keep the whole entry (or the batch it arrived in) alive with the hold.
  const value = input.lengthPrefixed(WIRE_LIMITS.maxValueBytes).slice();
  if (value.length > 0) command.value = value;
}

function readSessionId(input: ByteReader): number {
  const sessionId = input.uint();
  if (sessionId < 1) input.fail('sessionId is 0');
  return sessionId;
}

const EMPTY = new Uint8Array(0);

function readKey(input: ByteReader): string {
  const key = input.string(WIRE_LIMITS.maxKeyBytes);
  if (key.length === 0) input.fail('key is empty');
  return key;
}

function readOwner(input: ByteReader): string {
  const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
  if (owner.length === 0) input.fail('owner is empty');
  return owner;
}

function readRequestId(input: ByteReader): string {
  return input.string(WIRE_LIMITS.maxRequestIdBytes);
}

function readTtl(input: ByteReader): number {
  const ttlMs = input.uint();
  if (ttlMs < 1 || ttlMs > WIRE_LIMITS.maxTtlMs) input.fail(`ttlMs ${ttlMs} is outside [1, 2^40]`);
  return ttlMs;
}

function readToken(input: ByteReader): bigint {
  const token = input.bigUint();
  if (token === 0n) input.fail('token is 0');
  return token;
}
