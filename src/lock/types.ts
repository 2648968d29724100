// Results and views of the lock state machine. Plain objects with bigint fencing tokens (uint64 on the
// wire; never a lossy number), so the server can map them field-for-field onto the proto responses.
import { BUILD_LEVEL } from './versions.js';

/** Why a renew or release was refused. UNSPECIFIED = the operation succeeded. The one list of these values:
 *  the wire's `Reason` (src/wire/lock.ts) is this type, in the order of the proto enum leasehold.v1.Reason
 *  (index = enum number; test/unit/wire/proto.test.ts checks it), and the dedup codec stores the index. */
export const REFUSAL_REASONS = ['UNSPECIFIED', 'NOT_HELD', 'WRONG_OWNER', 'WRONG_TOKEN', 'EXPIRED'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** The outcome of an acquire, without the entry bookkeeping (this is what the dedup table remembers). */
export interface AcquireOutcome {
  acquired: boolean;
  /** The new fencing token (= raft index of the acquire entry); 0n when refused. */
  token: bigint;
  /** The granted TTL; 0 when refused. */
  ttlMs: number;
  /** The lease deadline in log time; 0 when refused. */
  expiresAtMs: number;
  /** When refused: who holds the live lease; '' when acquired. */
  holderOwner: string;
  /** When refused: the holder's remaining lease time at this entry's log time; 0 when acquired. */
  holderTtlMs: number;
}

export interface RenewOutcome {
  renewed: boolean;
  /** The new TTL; 0 when refused. */
  ttlMs: number;
  /** The new deadline in log time; 0 when refused. */
  expiresAtMs: number;
  reason: RefusalReason;
}

export interface ReleaseOutcome {
  released: boolean;
  reason: RefusalReason;
}

/** What a revoke answers, and what the dedup table keeps of a deduplicated one (tag 23). */
export interface RevokeOutcome {
  /** The tokens of the holds it ended (none: the key had no such hold). */
  revoked: bigint[];
}

/**
 * A waiter that left its line in this entry (wait-line.ts): granted by a hand-off, refused at its wait
 * deadline, or cancelled. Whoever holds the waiter's call answers it with `outcome` — on any node, from any
 * entry (a release, an expire, a dequeue, another acquire), because the log decided it.
 */
export interface WaiterDecision {
  key: string;
  ticket: number;
  owner: string;
  requestId: string;
  outcome: AcquireOutcome;
  /** Left because its call was cancelled: nobody is waiting for the outcome, and none is remembered. */
  cancelled: boolean;
}

interface ResultBase {
  /** Raft index of the entry that produced this result (so the proposer can match its proposal). */
  index: number;
  /** Waiters this entry took out of their lines (absent = none). */
  decided?: WaiterDecision[];
}

interface ReplayableResult extends ResultBase {
  /** true when this is the remembered outcome of an earlier entry with the same (owner, request_id). */
  replayed: boolean;
}

export interface AcquireResult extends ReplayableResult, AcquireOutcome {
  type: 'acquire';
  /** Set when the request is (still) in the key's wait line: its ticket. Not an answer: the caller waits
   *  for the entry whose `decided` names this ticket. */
  waitTicket?: number;
  /** Refused (or queued) because the key is in lock-delay: the log time left in it. Not remembered: a
   *  replay of the refusal answers without it. */
  delayMsLeft?: number;
}

export interface RenewResult extends ReplayableResult, RenewOutcome {
  type: 'renew';
}

/** A `renews` entry's answers, one per renew in the entry's order: what a lone renew without a request id
 *  would have answered at that point (a renew of a hold under a session: RENEW_THE_SESSION), each with
 *  the entry's index. */
export interface RenewsResult extends ResultBase {
  type: 'renews';
  renews: (RenewResult | ErrorResult)[];
}

export interface ReleaseResult extends ReplayableResult, ReleaseOutcome {
  type: 'release';
  /** The key the release named (so the leader can wake that key's waiters without decoding the entry). */
  key: string;
}

export interface ExpireResult extends ResultBase {
  type: 'expire';
  /** false when the lease was already gone, had a newer token, or was renewed in the meantime. */
  expired: boolean;
  key: string;
  token: bigint;
}

export interface RevokeResult extends ReplayableResult, RevokeOutcome {
  type: 'revoke';
  key: string;
  /** The waiter the key was handed to (or refused on the way), as for a release. */
  decided?: WaiterDecision[];
}

export interface TermStartResult extends ResultBase {
  type: 'termStart';
  /** Leases given at least a full TTL from the new leader's now at this entry (see LEASES.md). */
  leasesExtended: number;
  /** Leases that provably outlived their TTL across earlier terms and were ended instead. */
  leasesEnded: number;
}

export interface DequeueResult extends ResultBase {
  type: 'dequeue';
  /** false when the waiter was gone already (granted, cancelled) or, for a deadline, not yet due. */
  dequeued: boolean;
  key: string;
  ticket: number;
}

export interface UndelayResult extends ResultBase {
  type: 'undelay';
  /** false when the key was not in lock-delay, or its delay has not passed yet in log time. */
  undelayed: boolean;
  key: string;
}

export interface HandOffResult extends ResultBase {
  type: 'handOff';
  key: string;
  /** Whether the entry granted the key's next head. */
  granted: boolean;
}

export interface OpenSessionResult extends ResultBase {
  type: 'openSession';
  /** The session's id (its entry's index; or the earlier session a retry of the same request_id opened). */
  sessionId: bigint;
  ttlMs: number;
  expiresAtMs: number;
  /** true when a retry of the same (owner, request_id) found the session it opened earlier. */
  replayed: boolean;
}

export interface RenewSessionResult extends ResultBase {
  type: 'renewSession';
  renewed: boolean;
  ttlMs: number;
  expiresAtMs: number;
  /** Why not renewed: NOT_HELD (no such session: closed, expired and removed, never opened), WRONG_OWNER,
   *  EXPIRED (it ran out in log time; it cannot come back). */
  reason: RefusalReason;
}

/** A session ended by close or expiry: its holds (the keys) and its waiters went in this entry. */
interface SessionEnd extends ResultBase {
  sessionId: bigint;
  /** false: no such session (or, for an expiry, not due yet in log time; for a close, another owner's). */
  ended: boolean;
  /** For a close refused: why (NOT_HELD, WRONG_OWNER). */
  reason: RefusalReason;
  /** The keys its holds released, in key order. */
  released: string[];
}

export interface CloseSessionResult extends SessionEnd {
  type: 'closeSession';
}

export interface ExpireSessionResult extends SessionEnd {
  type: 'expireSession';
}

export type SessionEndResult = CloseSessionResult | ExpireSessionResult;

export interface CheckpointResult extends ResultBase {
  type: 'checkpoint';
}

export interface MemberRanResult extends ResultBase {
  type: 'memberRan';
  memberId: string;
  /** False when it was recorded already, or the cluster is below level 2 (the entry then changes nothing). */
  recorded: boolean;
}

export interface ClusterLevelResult extends ResultBase {
  type: 'clusterLevel';
  /** The cluster level after this entry (it never goes down). */
  level: number;
}

export interface ForgetResult extends ResultBase {
  type: 'forget';
  /** Free keys dropped by this entry. */
  forgotten: number;
  /** The machine's last_token watermark after it. */
  watermark: bigint;
}

/**
 * MALFORMED_COMMAND: the entry's bytes did not decode (or a command object broke the wire limits); the
 * entry was a no-op on every replica. REQUEST_ID_REUSED: the (owner, request_id) pair was first used for a
 * different operation (type, key or token), so its remembered outcome would be a lie; nothing changed.
 * SESSION_NOT_OPEN: an acquire named a session that is not open (closed, ran out, never opened).
 * SESSION_OWNER_MISMATCH: an acquire's owner is not its session's owner. RENEW_THE_SESSION: a renew of a
 * hold that lives under a session (renew the session instead). LIMIT_MISMATCH: an acquire named another limit
 * than the key has while it has holds or waiters (holds.ts). HOLD_MODE_MISMATCH: an owner that holds the key
 * shared asked for it exclusive, or the other way (release first). CLUSTER_LEVEL: a semaphore or shared
 * acquire before the cluster is at level 3, or a `renews` entry before level 7 (versions.ts). None of them
 * changed anything.
 */
export type LockErrorCode =
  | 'MALFORMED_COMMAND'
  | 'REQUEST_ID_REUSED'
  | 'SESSION_NOT_OPEN'
  | 'SESSION_OWNER_MISMATCH'
  | 'RENEW_THE_SESSION'
  | 'LIMIT_MISMATCH'
  | 'HOLD_MODE_MISMATCH'
  | 'CLUSTER_LEVEL';

export interface ErrorResult extends ResultBase {
  type: 'error';
  code: LockErrorCode;
  message: string;
}

export type LockResult =
  | AcquireResult
  | RenewResult
  | RenewsResult
  | ReleaseResult
  | ExpireResult
  | RevokeResult
  | TermStartResult
  | CheckpointResult
  | ClusterLevelResult
  | MemberRanResult
  | ForgetResult
  | DequeueResult
  | UndelayResult
  | HandOffResult
  | OpenSessionResult
  | RenewSessionResult
  | SessionEndResult
  | ErrorResult;

/** What `get` reports, judged at the machine's current log time (proto GetResponse). */
export interface LockView {
  held: boolean;
  /** '' when not held. */
  owner: string;
  /** The live lease's fencing token; 0n when not held. */
  token: bigint;
  /** Remaining lease time at the current log time; 0 when not held. */
  ttlMs: number;
  /** The lease deadline in log time; 0 when not held. */
  expiresAtMs: number;
  /** Highest token ever issued for the key (0n if never); survives release and expiry. */
  lastToken: bigint;
  /** Requests in the key's wait line. Set by the lock leader's Get answer (waiterCountOf); the machine's
   *  own get() leaves it out. */
  waiters?: number;
  /** The hold's value, when held and it has one. Set like `waiters`. */
  value?: Uint8Array;
  /** The session the hold lives under; absent = none (or not held). */
  sessionId?: bigint;
  /** The applied index the answer was read at (set like `waiters`): Watch after_index resumes from it. */
  index?: number;
  /** A key with many holds (holds.ts): every live hold in token order (the fields above describe the first),
   *  and the key's limit. Absent for a mutex key. */
  holders?: HolderView[];
  limit?: number;
}

/** One live hold of a key with many holds, as Get reports it. */
export interface HolderView {
  owner: string;
  token: bigint;
  ttlMs: number;
  expiresAtMs: number;
  shared: boolean;
  sessionId: bigint;
  value: Uint8Array | null;
}

/** A lease whose deadline has passed, for the leader to propose `expire {key, token}`. */
export interface DueLease {
  key: string;
  token: bigint;
  expiresAtMs: number;
}

/**
 * Tunables of the replicated state machine. They change what apply() does, so every replica must use the
 * same values (cluster-wide config, not per-node), or replicas diverge.
 */
export interface LockMachineOptions {
  /** How long (log time) an (owner, request_id) outcome is remembered at least; from cluster level 6 an
   *  acquire's also for as long as its owner holds the key (versions.ts). Default 10 minutes. */
  dedupWindowMs: number;
  /**
   * Hard cap on remembered outcomes; the oldest are forgotten first beyond it. A record costs ~400 bytes of
   * heap (measured), so the default 250,000 bounds the table at ~100 MB. Forgetting early degrades: a late
   * retried release gets a refusal, and a late copy of an acquire whose owner still holds the key is a new
   * re-acquire that supersedes the hold (what cluster level 6 keeps such records for, up to this cap).
   */
  dedupMaxEntries: number;
  /** The highest cluster level this build reads (versions.ts). Not a setting: tests lower it to play an
   *  older build, which stops at the first entry or snapshot of a higher level. */
  readLevel: number;
}

export const DEFAULT_LOCK_MACHINE_OPTIONS: Readonly<LockMachineOptions> = Object.freeze({
  dedupWindowMs: 10 * 60 * 1000,
  dedupMaxEntries: 250_000,
  readLevel: BUILD_LEVEL,
});
