// The lock commands as the machine applies them, one per Raft entry (commands.ts encodes and decodes them).
//
// Every command carries `timeMs`, stamped by the leader from its own clock when it proposed the entry.
// Replicas never read a clock: log time is made of the stamps (machine.ts `time`, LEASES.md "Time"). At the
// first entry of a term it becomes max(previous log time, timeMs); within a term, at cluster level 1,
// max(previous log time, timeMs), and from level 2 previous log time + max(0, timeMs - the term's highest
// stamp so far): the stamps' progress on the one leader's clock.
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

/** One renew of a `renews` entry: what a lone renew carries but its request id (none is remembered). */
export interface RenewItem {
  key: string;
  owner: string;
  token: bigint;
  ttlMs: number;
}

/** The lock renews a leader admitted in one turn, in one entry (tag 24, cluster level 7): each applied in
 *  order as a lone renew without a request id would be at the entry's log time, each with its own answer,
 *  none remembered in the dedup table (a renew is idempotent by token; LEASES.md). */
export interface RenewsCommand {
  type: 'renews';
  timeMs: number;
  renews: RenewItem[];
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
  | RenewsCommand
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

/** An acquire of one of a key's many holds (a semaphore's, or a shared one): what only tag 21 carries. */
export function isGroupAcquire(command: AcquireCommand): boolean {
  return (command.limit ?? 1) > 1 || command.shared === true;
}
