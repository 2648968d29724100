// Which tag a command is written with, which tags this build reads, and from which cluster level
// (versions.ts): a tag above the level a build reads is unknown to it, and a node that meets one stops
// (UnknownCommandError) rather than skip or misapply the entry. The tag doubles as the format version
// (commands.ts lists the layouts).
import type { AcquireCommand, LockCommand, LockCommandType } from './command-types.js';
import { isGroupAcquire } from './command-types.js';
import { BASE_LEVEL, BUILD_LEVEL, LEVEL_CLOCK_PROGRESS, LEVEL_MANY_HOLDERS, LEVEL_RENEWS_ENTRY, LEVEL_REVOKE_ONCE } from './versions.js';

export const TAGS: Record<LockCommandType, number> = {
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
  renews: 24,
};

/** The level (versions.ts) a build must read to read each tag; tags not listed are level 1. */
export const TAG_LEVELS: ReadonlyMap<number, number> = new Map([
  [19, LEVEL_CLOCK_PROGRESS],
  [20, LEVEL_CLOCK_PROGRESS],
  [21, LEVEL_MANY_HOLDERS],
  [22, LEVEL_MANY_HOLDERS],
  [23, LEVEL_REVOKE_ONCE],
  [24, LEVEL_RENEWS_ENTRY],
]);

/** An acquire proposed for the head of a wait queue (same layout as tag 1; see AcquireCommand.queued). */
export const TAG_QUEUED_ACQUIRE = 7;

/** An acquire that waits in line when it cannot be granted (tag 1's layout, then waitMs). */
export const TAG_WAITING_ACQUIRE = 9;

/** An acquire whose hold carries options (tag 1's layout, then waitMs, lockDelayMs and value). */
export const TAG_OPTIONS_ACQUIRE = 11;

/** An acquire whose hold lives under a session (see the header). */
export const TAG_SESSION_ACQUIRE = 17;

/** An acquire of one of many holds: a semaphore's or a shared one (see the header). */
export const TAG_GROUP_ACQUIRE = 21;

/** A revoke with who revokes and its request id: deduplicated (see the header). */
export const TAG_REVOKE_ONCE = 23;

/** Every tag this build reads. */
export const KNOWN_TAGS: ReadonlySet<number> = new Set([
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

export function tagOf(command: LockCommand): number {
  if (command.type === 'revoke') return command.requestId === undefined ? TAGS.revoke : TAG_REVOKE_ONCE;
  if (command.type !== 'acquire') return TAGS[command.type];
  if (isGroupAcquire(command)) return TAG_GROUP_ACQUIRE;
  if ((command.sessionId ?? 0) > 0) return TAG_SESSION_ACQUIRE;
  if (command.queued === true) return TAG_QUEUED_ACQUIRE;
  if (hasHoldOptions(command)) return TAG_OPTIONS_ACQUIRE;
  return (command.waitMs ?? 0) > 0 ? TAG_WAITING_ACQUIRE : TAGS.acquire;
}

/** A lock-delay or a value: what only tag 11 carries. */
export function hasHoldOptions(command: AcquireCommand): boolean {
  return (command.lockDelayMs ?? 0) > 0 || (command.value !== undefined && command.value.length > 0);
}
