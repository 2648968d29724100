// Lock commands as they travel through the Raft log, and their binary encoding.
//
// Every command carries `timeMs`, stamped by the leader from its own clock when it proposed the entry.
// Replicas never read a clock: log time is made of the stamps (machine.ts `time`, LEASES.md "Time"). At the
// first entry of a term it becomes max(previous log time, timeMs); within a term, at cluster level 1,
// max(previous log time, timeMs), and from level 2 previous log time + max(0, timeMs - the term's highest
// stamp so far): the stamps' progress on the one leader's clock.
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
// str = uvarint byte length + UTF-8. The tag doubles as the format version: a changed layout gets a new
// tag, so old entries in the log keep decoding exactly as they did when they were first applied.
import { ByteReader, ByteWriter, MAX_UINT64, utf8ByteLength } from './bytes.js';
import { BASE_LEVEL, BUILD_LEVEL, LEVEL_CLOCK_PROGRESS, LEVEL_MANY_HOLDERS, LEVEL_REVOKE_ONCE } from './versions.js';

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
});

export interface AcquireCommand {
  type: 'acquire';
  timeMs: number;
  key: string;
  owner: string;
  ttlMs: number;
  /** '' = no request id (no dedup). */
  requestId: string;
  /** Proposed by the leader for the head of a FIFO wait queue: the request was refused when it arrived
   *  (that refusal is remembered) and is now offered the lock. Only such an acquire may turn a remembered
   *  refusal into a grant; a plain retry or a late duplicate gets the refusal replayed. Encoded as tag 7.
   *  This build never proposes it (the wait line is the machine's: wait-line.ts); it is decoded and applied
   *  as written, so a log that holds it replays the same. */
  queued?: boolean;
  /** > 0: if the key cannot be granted now, join its wait line (wait-line.ts) for this long (log time) at
   *  most; the entry that ends the hold ahead of it hands it the key. Encoded as tag 9. */
  waitMs?: number;
  /** > 0: when this hold EXPIRES (not when it is released), the key grants nobody for this long after
   *  the lease's end (log time; Chubby's and Consul's lock-delay). Encoded as tag 11. */
  lockDelayMs?: number;
  /** Stored with the hold and returned by Get (a leader's address, a job id). Encoded as tag 11. */
  value?: Uint8Array;
  /** > 0: the hold lives under this session (session.ts) and `ttlMs` is 0. Encoded as tag 17. */
  sessionId?: number;
  /** >= 2: a counting semaphore of this many holds (holds.ts). Encoded as tag 21 (level 3). */
  limit?: number;
  /** A shared (read) hold: any number together, or one exclusive hold (holds.ts). Encoded as tag 21. */
  shared?: boolean;
}

/** Opens a session (session.ts); its id is the entry's index. */
export interface OpenSessionCommand {
  type: 'openSession';
  timeMs: number;
  owner: string;
  ttlMs: number;
  requestId: string;
  /** The lock-delay of the session's holds that set none of their own (0 = none). */
  lockDelayMs: number;
}

/** Renews a live session for its TTL from this entry's log time. `owner` '' = not checked. */
export interface RenewSessionCommand {
  type: 'renewSession';
  timeMs: number;
  sessionId: number;
  owner: string;
}

/** Ends a session at its owner's request: its holds are released (no lock-delay while it lives; from
 *  cluster level 5 a session that ran out ends as its expiry would, into its holds' delays), its waiters
 *  leave. */
export interface CloseSessionCommand {
  type: 'closeSession';
  timeMs: number;
  sessionId: number;
  owner: string;
}

/** Proposed by the leader when it sees a session's deadline pass; applied only if still true in log time. */
export interface ExpireSessionCommand {
  type: 'expireSession';
  timeMs: number;
  sessionId: number;
}

export interface RenewCommand {
  type: 'renew';
  timeMs: number;
  key: string;
  owner: string;
  token: bigint;
  ttlMs: number;
  requestId: string;
}

export interface ReleaseCommand {
  type: 'release';
  timeMs: number;
  key: string;
  owner: string;
  token: bigint;
  requestId: string;
}

/** Proposed by the leader when it sees a lease deadline pass; applied only if still true in log time. */
export interface ExpireCommand {
  type: 'expire';
  timeMs: number;
  key: string;
  token: bigint;
}

/** Ends `key`'s hold as if it ran out, but with no lock-delay unless it had (SPEC "Revoke"; an operator's
 *  call): the hold with `token`, or whatever hold the key has when `token` is 0. Encoded as tag 18; with a
 *  `requestId` (even '') as tag 23 (cluster level 5), whose first outcome the machine remembers by
 *  (owner, requestId) like any mutation's, so a retry answers it and ends nothing new. */
export interface RevokeCommand {
  type: 'revoke';
  timeMs: number;
  key: string;
  token: bigint;
  /** Tag 23: who revokes (the caller's certificate CN under owner binding): the namespace of its request
   *  ids in the dedup table. '' = none (every such caller shares one; no owner of a hold is ''). */
  owner?: string;
  /** Tag 23: the request id ('' = none: not remembered). Absent: tag 18, never deduplicated. */
  requestId?: string;
}

/** Why a waiter leaves its line without a grant. */
export type DequeueCause = 'deadline' | 'cancel';

/**
 * Proposed by the leader for a waiter (by key and ticket, wait-line.ts): `deadline` — its wait deadline has
 * passed, applied only if still true in log time, and the refusal is remembered like any other; `cancel` —
 * its call went away before an answer, applied always, and nothing is remembered (nobody was told anything,
 * so a retry may queue afresh).
 */
export interface DequeueCommand {
  type: 'dequeue';
  timeMs: number;
  key: string;
  ticket: number;
  cause: DequeueCause;
}

/** Proposed by the leader when a key's lock-delay has passed (machine.ts `delay`): applied only if it has
 *  in log time; the key may then be handed to its line. */
export interface UndelayCommand {
  type: 'undelay';
  timeMs: number;
  key: string;
}

/** Proposed by the leader for a key with many holds whose line's head fits but was not granted by the entry
 *  that made room (one grant per key per entry: each grant's token is its entry's index; holds.ts).
 *  Applied by the machine's rule, whoever proposed it: it grants the head only if it fits then. Tag 22. */
export interface HandOffCommand {
  type: 'handOff';
  timeMs: number;
  key: string;
}

/** The new leader's first command in its term: starts a lease epoch (see LEASES.md). */
export interface TermStartCommand {
  type: 'termStart';
  timeMs: number;
}

/** Proposed by the leader once every member reads `level` (versions.ts): from this entry on the cluster
 *  uses what that level brings. Never lowers the level. */
export interface ClusterLevelCommand {
  type: 'clusterLevel';
  timeMs: number;
  level: number;
}

/** Proposed by the leader once member `memberId` has acknowledged entries of this log: it has run, and
 *  from then on a start of it with an empty data dir in bootstrap mode is refused by every peer that
 *  applied this entry — also peers restarted since it last ran (identity.ts). */
export interface MemberRanCommand {
  type: 'memberRan';
  timeMs: number;
  memberId: string;
}

/** Only advances log time, so an idle term still records how much time it observed (see LEASES.md). */
export interface CheckpointCommand {
  type: 'checkpoint';
  timeMs: number;
}

/**
 * Proposed by the leader to bound the machine's memory: forget every free key (no lease) that was freed at
 * or before log time `upToMs`. Its last token is folded into the machine's watermark, which Get reports as
 * the last token of any key the machine has no record of — never below the real value (see machine.ts).
 * The cut-off travels in the entry, so every replica forgets exactly the same keys whatever its own config.
 */
export interface ForgetCommand {
  type: 'forget';
  timeMs: number;
  upToMs: number;
}

export type LockCommand =
  | AcquireCommand
  | RenewCommand
  | ReleaseCommand
  | ExpireCommand
  | TermStartCommand
  | CheckpointCommand
  | ForgetCommand
  | DequeueCommand
  | UndelayCommand
  | OpenSessionCommand
  | RenewSessionCommand
  | CloseSessionCommand
  | ExpireSessionCommand
  | RevokeCommand
  | ClusterLevelCommand
  | MemberRanCommand
  | HandOffCommand;

export type LockCommandType = LockCommand['type'];

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

const TAGS: Record<LockCommandType, number> = {
  acquire: 1,
  renew: 2,
  release: 3,
  expire: 4,
  termStart: 5,
  checkpoint: 6,
  forget: 8,
  dequeue: 10,
  undelay: 12,
  openSession: 13,
  renewSession: 14,
  closeSession: 15,
  expireSession: 16,
  revoke: 18,
  clusterLevel: 19,
  memberRan: 20,
  handOff: 22,
};
/** The level (versions.ts) a build must read to read each tag; tags not listed are level 1. */
const TAG_LEVELS: ReadonlyMap<number, number> = new Map([
  [19, LEVEL_CLOCK_PROGRESS],
  [20, LEVEL_CLOCK_PROGRESS],
  [21, LEVEL_MANY_HOLDERS],
  [22, LEVEL_MANY_HOLDERS],
  [23, LEVEL_REVOKE_ONCE],
]);
/** A node id (src/config/node-id.ts: a DNS label of 1-63 characters; the codec checks the length only). */
const MAX_MEMBER_ID_BYTES = 63;
/** The highest cluster level a clusterLevel entry may carry (a sanity bound of the codec, not a plan). */
const MAX_CLUSTER_LEVEL = 1 << 16;
/** An acquire proposed for the head of a wait queue (same layout as tag 1; see AcquireCommand.queued). */
const TAG_QUEUED_ACQUIRE = 7;
/** An acquire that waits in line when it cannot be granted (tag 1's layout, then waitMs). */
const TAG_WAITING_ACQUIRE = 9;
/** An acquire whose hold carries options (tag 1's layout, then waitMs, lockDelayMs and value). */
const TAG_OPTIONS_ACQUIRE = 11;
/** An acquire whose hold lives under a session (see the header). */
const TAG_SESSION_ACQUIRE = 17;
/** An acquire of one of many holds: a semaphore's or a shared one (see the header). */
const TAG_GROUP_ACQUIRE = 21;
/** A revoke with who revokes and its request id: deduplicated (see the header). */
const TAG_REVOKE_ONCE = 23;
const DEQUEUE_CAUSES: readonly DequeueCause[] = ['deadline', 'cancel'];

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
    case 'release':
      return lockIdentityViolation(command) ?? tokenViolation(command.token) ?? requestIdViolation(command.requestId);
    default:
      return `unknown command type ${String((command as { type: unknown }).type)}`;
  }
}

export function encodeCommand(command: LockCommand): Uint8Array {
  const violation = wireLimitViolation(command);
  if (violation !== null) throw new CommandEncodeError(`cannot encode ${command.type}: ${violation}`);
  const out = new ByteWriter(32 + ('key' in command ? command.key.length * 3 : 0));
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

/** Every tag this build reads. */
const KNOWN_TAGS: ReadonlySet<number> = new Set([
  ...Object.values(TAGS),
  TAG_QUEUED_ACQUIRE,
  TAG_WAITING_ACQUIRE,
  TAG_OPTIONS_ACQUIRE,
  TAG_SESSION_ACQUIRE,
  TAG_GROUP_ACQUIRE,
  TAG_REVOKE_ONCE,
]);
/** The newest tag this build reads (the tag is the format version: a newer build adds higher ones). */
export const NEWEST_COMMAND_TAG = Math.max(...KNOWN_TAGS);

/**
 * An entry whose tag this build does not know: most likely a command of a newer build (SPEC "Versions").
 * Unlike a malformed entry (a no-op error result, the same on every replica) it is not skipped — a
 * replica that skipped it would diverge from those that apply it — so the node stops, naming what it
 * reads and what it met, and an upgraded build takes over.
 */
export class UnknownCommandError extends Error {
  override readonly name = 'UnknownCommandError';
  constructor(
    readonly tag: number,
    readLevel = BUILD_LEVEL,
    what = `lock command tag ${tag}`,
  ) {
    super(
      `${what} is newer than this build reads (cluster level ${readLevel}, command tags up to ${newestTagOf(readLevel)}): it comes from a newer leasehold; upgrade this node — it stops rather than skip or misapply the entry`,
    );
  }
}

function newestTagOf(readLevel: number): number {
  return Math.max(...[...KNOWN_TAGS].filter((tag) => (TAG_LEVELS.get(tag) ?? BASE_LEVEL) <= readLevel));
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

function sessionIdViolation(sessionId: unknown): string | null {
  return isIntegerIn(sessionId, 1, Number.MAX_SAFE_INTEGER) ? null : `sessionId must be a positive integer, got ${String(sessionId)}`;
}

function tagOf(command: LockCommand): number {
  if (command.type === 'revoke') return command.requestId === undefined ? TAGS.revoke : TAG_REVOKE_ONCE;
  if (command.type !== 'acquire') return TAGS[command.type];
  if (isGroupAcquire(command)) return TAG_GROUP_ACQUIRE;
  if ((command.sessionId ?? 0) > 0) return TAG_SESSION_ACQUIRE;
  if (command.queued === true) return TAG_QUEUED_ACQUIRE;
  if (hasHoldOptions(command)) return TAG_OPTIONS_ACQUIRE;
  return (command.waitMs ?? 0) > 0 ? TAG_WAITING_ACQUIRE : TAGS.acquire;
}

const EMPTY = new Uint8Array(0);

/** An acquire of one of a key's many holds (a semaphore's, or a shared one): what only tag 21 carries. */
export function isGroupAcquire(command: AcquireCommand): boolean {
  return (command.limit ?? 1) > 1 || command.shared === true;
}

/** A lock-delay or a value: what only tag 11 carries. */
function hasHoldOptions(command: AcquireCommand): boolean {
  return (command.lockDelayMs ?? 0) > 0 || (command.value !== undefined && command.value.length > 0);
}

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

function isIntegerIn(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

function stringViolation(field: string, value: unknown, minBytes: number, maxBytes: number): string | null {
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
