// The lock leader's inputs and outputs. The module (leader.ts) is a pure, deterministic step function:
// events in, commands out. Time arrives only as `clockMs` on events (the adapter's clock; the machine's
// time is its `logNowMs`); nothing here owns a timer, a promise or a Raft node. The adapter
// (src/lock-on-raft/lock-service.ts) turns node events and client calls into events, and carries the commands
// out: proposals through Raft, answers to callers, wake-ups on its scheduler.
import type { Role } from '../../raft/core/types.js';
import type { LockCommand } from '../commands.js';
import type {
  AcquireOutcome,
  AcquireResult,
  DueLease,
  LockResult,
  LockView,
  OpenSessionResult,
  ReleaseResult,
  RenewResult,
  RenewSessionResult,
  RevokeResult,
  SessionEndResult,
} from '../types.js';
import type { ValidAcquire, ValidOpenSession, ValidRelease, ValidRenew, ValidRevoke, ValidSessionCall } from '../validate.js';
import type { DueSession } from '../session.js';
import type { DueWaiter } from '../wait-line.js';
import type { DueDelay } from '../key-delays.js';
import { NO_ADMISSION_LIMITS, type AdmissionLimits } from './admission-limits.js';

/** The adapter's handle for one client call (opaque to the module, unique while the call is open). */
export type CallId = number;
/** The module's handle for one proposal it asked for; the adapter reports its outcome under this id. */
export type ProposalId = number;

/** What the leader reads of the applied lock state. Passed as a getter: a snapshot restore replaces the
 *  machine object wholesale (`fsm.machine`), so a saved reference would go stale. */
export interface LockStateView {
  /** The machine's log time (max of every applied stamp). */
  readonly logNowMs: number;
  /** The last log index applied to this state. */
  readonly appliedIndex: number;
  /** The cluster level the log has reached (versions.ts). */
  readonly clusterLevel: number;
  /** Log time as this term's leader would stamp it at its clock reading `clockMs` (machine.ts). */
  projectedNowMs(clockMs: number): number;
  /** Whether the log records Raft member `id` as having run (machine.ts `ran`). */
  hasRun(id: string): boolean;
  get(key: string): LockView;
  /** Keys held or waited on, under `prefix`, after `afterKey`, in UTF-8 byte order; at most `limit`. */
  listKeys(prefix: string, afterKey: string, limit: number): string[];
  rememberedAcquire(owner: string, requestId: string, key: string): AcquireOutcome | null;
  expiredLeases(clockMs: number, limit: number): DueLease[];
  /** Waiters past their wait deadline at projectedNowMs(clockMs), earliest first (wait-line.ts). */
  dueWaiters(clockMs: number, limit: number): DueWaiter[];
  /** The value of `key`'s current hold, if it has one. */
  valueOf(key: string): Uint8Array | undefined;
  /** Keys with many holds whose line's head fits now (holds.ts): the leader proposes `handOff` for each. */
  grantableKeys(limit: number): string[];
  /** Keys whose lock-delay has passed at projectedNowMs(clockMs) (key-delays.ts). */
  dueDelays(clockMs: number, limit: number): DueDelay[];
  /** Where (owner, request_id) waits in line, if it does. */
  waiterFor(owner: string, requestId: string): { key: string; ticket: number } | undefined;
  /** Whether (owner, request_id) waits in line asking other terms (session, limit, mode) than `req` — from
   *  cluster level 6 that is another request: no place of this one (dedup.ts `acquireTerms`). */
  waitsWithOtherTerms(req: { owner: string; requestId: string; sessionId?: number; limit?: number; shared?: boolean }): boolean;
  isWaiting(key: string, ticket: number): boolean;
  /** The session the waiter (key, ticket) waits under (0: none); undefined when it is not in line. */
  sessionOfWaiter(key: string, ticket: number): number | undefined;
  /** Requests in every wait line, and in `key`'s. */
  readonly waiterCount: number;
  waiterCountOf(key: string): number;
  hasLiveLeases(): boolean;
  /** Open sessions; one of them as it is now; the ones past their deadline (session.ts). */
  readonly sessionCount: number;
  sessionInfo(id: number): { owner: string; holds: number; waiters: number; live: boolean } | undefined;
  dueSessions(clockMs: number, limit: number): DueSession[];
  /** Leases (live or awaiting expiry), and every key record (leases + free keys). */
  readonly leaseCount: number;
  readonly keyCount: number;
  readonly freeKeyCount: number;
  leaseCountOf(owner: string): number;
  /** `{ owner }` of the key's lease; null for a free key's record; undefined when there is no record. */
  recordOf(key: string): { owner: string } | null | undefined;
  /** Log time at which the n-th oldest free key was freed (1-based). */
  freedAtOfOldest(n: number): number | undefined;
}

export type ClientRequest =
  | { op: 'acquire'; req: ValidAcquire }
  | { op: 'renew'; req: ValidRenew }
  | { op: 'release'; req: ValidRelease }
  | { op: 'get'; key: string }
  | { op: 'revoke'; req: ValidRevoke }
  | { op: 'openSession'; req: ValidOpenSession }
  | { op: 'renewSession'; req: ValidSessionCall }
  | { op: 'closeSession'; req: ValidSessionCall };

export type ClientAnswer =
  AcquireResult | RenewResult | ReleaseResult | LockView | OpenSessionResult | RenewSessionResult | SessionEndResult | RevokeResult;

/** Why a proposal or read barrier did not produce a result (the driver's errors, by kind). */
export type ProposalErrorKind =
  /** This node is not (or no longer) the leader; `leaderId` names the new one when known. */
  | 'not-leader'
  /** No result within its timeout: the outcome is UNKNOWN (the entry may still commit). */
  | 'timeout'
  /** The entry was overwritten or covered by a snapshot: it never applied as proposed. */
  | 'dropped'
  /** A read barrier was not confirmed in time (a lost ReadIndex message, a dead leader). */
  | 'read-timeout'
  /** The node is stopping. */
  | 'stopped'
  /** Anything else (a bug). */
  | 'internal';

export interface ProposalError {
  kind: ProposalErrorKind;
  message: string;
  leaderId?: string | null;
  /** 'timeout': the entry's index in the log, where it may still commit. */
  index?: number;
}

/** What the caller is told when its call fails. `unavailable` maps to gRPC UNAVAILABLE (retry with the
 *  same request_id; with `leaderId`, a follower may forward there), `rejected` to FAILED_PRECONDITION
 *  (the state machine refused the command as a whole), `exhausted` to RESOURCE_EXHAUSTED (a configured
 *  limit, named in the message), `invalid` to INVALID_ARGUMENT (a request that contradicts the replicated
 *  state, e.g. an owner that is not its session's), `internal` to INTERNAL. */
export type FailureKind = 'unavailable' | 'rejected' | 'internal' | 'exhausted' | 'invalid';

export interface CallFailure {
  kind: FailureKind;
  message: string;
  leaderId: string | null;
}

interface At {
  /** The adapter's clock when the event happened (monotonic ms). The module's only source of time. */
  clockMs: number;
}

export type LeaderEvent =
  /** The node's soft state changed (or, once at start, what it is). */
  | ({ type: 'role'; role: Role; term: number; leaderId: string | null } & At)
  /** An entry applied on this node (every entry, ours or not), with the state machine's result. */
  | ({ type: 'applied'; index: number; term: number; result: LockResult | null } & At)
  /** Time passed: housekeeping, wait deadlines, term-start waits. */
  | ({ type: 'tick' } & At)
  /** A client call arrived. `timeoutMs` bounds the whole call (wait_ms included). */
  | ({ type: 'request'; callId: CallId; request: ClientRequest; timeoutMs: number } & At)
  /** The call ended on the caller's side. `detached` false: the caller cancelled it (a Lock/Stream cancel,
   *  a forwarded cancel): a waiter nobody else waits for leaves its line at once. `detached` true: the
   *  connection it came on broke (a reset stream, a dead follower): the waiter keeps its place — under a
   *  session while the session lives, without one for `detachedWaiterGraceMs` — so a retry of the same
   *  request re-attaches to it (detached-waiters.ts). */
  | ({ type: 'cancel'; callId: CallId; detached?: boolean } & At)
  /** A proposal the module asked for applied here, in the term it was proposed in. */
  | ({ type: 'proposalApplied'; proposalId: ProposalId; index: number; result: LockResult | null } & At)
  | ({ type: 'proposalFailed'; proposalId: ProposalId; error: ProposalError } & At)
  /** A read barrier the module asked for passed (this node has applied everything committed before it). */
  | ({ type: 'readDone'; callId: CallId } & At)
  | ({ type: 'readFailed'; callId: CallId; error: ProposalError } & At)
  /** What this node knows of its members changed: the lowest cluster level every member reads (its own
   *  build included; undefined while some member has not announced one: versions.ts), and the members known
   *  to have run — acknowledged entries of this log, as the Raft leader's progress shows (machine.ts `ran`). */
  | ({ type: 'members'; readLevel: number | undefined; ran: readonly string[] } & At)
  /** The turn the leader asked about (`collecting`) is over: every event of it has been stepped. */
  | ({ type: 'turnEnd' } & At)
  /** The node is shutting down: every open call fails. */
  | ({ type: 'close' } & At);

export type LeaderCommand =
  /** Propose `command` (already stamped with the leader's time) through Raft; report the outcome as
   *  proposalApplied / proposalFailed with the same id. */
  | { type: 'propose'; proposalId: ProposalId; command: LockCommand; timeoutMs: number }
  /** Run a linearizable read barrier (ReadIndex) for call `callId`; report readDone / readFailed. */
  | { type: 'readBarrier'; callId: CallId; timeoutMs: number }
  | { type: 'answer'; callId: CallId; result: ClientAnswer }
  | { type: 'fail'; callId: CallId; error: CallFailure }
  /** Send a tick no later than `atMs` (a wait deadline or term-start wait ends then). */
  | { type: 'wakeAt'; atMs: number }
  /** The leader holds renews for one entry (renew-turn.ts): send a `turnEnd` once the events that are ready
   *  now have been stepped — after the current pass of the event loop (the scheduler's `soon`). */
  | { type: 'collecting' }
  /** Our termStart entry applied: this leader now stamps client commands (for the adapter's log). */
  | { type: 'termStarted'; term: number; leasesExtended: number; leasesEnded: number };

export interface LockLeaderConfig {
  /** Propose a checkpoint when leases exist and nothing was proposed for this long (ms). */
  checkpointIdleMs: number;
  /** Timeout of the leader's own proposals (expire, dequeue, checkpoint), and the most an acquire's entry
   *  may take to apply (its call may wait longer, in line) (ms). */
  proposalTimeoutMs: number;
  /** Timeout of the termStart proposal (ms). */
  termStartTimeoutMs: number;
  /** How long a request arriving before the termStart applied waits for it at most (ms); it also never
   *  waits longer than its own timeout. Then it fails UNAVAILABLE. */
  termStartWaitMs: number;
  /** Expired leases (and waiters past their wait deadline) proposed for removal per tick at most. */
  expireBatch: number;
  /** Admission limits (admission.ts); node-local, so never consulted at apply time. */
  limits: Readonly<AdmissionLimits>;
  /** Free keys freed longer ago than this (log time) are forgotten by a `forget` entry (see machine.ts). */
  freeKeyRetentionMs: number;
  /** How long a waiter without a session keeps its place after its connection broke and no call waits
   *  for it any more (ms): the client's automatic retry re-attaches within it; after it the leader proposes
   *  the waiter's `dequeue` (cause cancel). Its wait deadline ends it sooner if it comes first. */
  detachedWaiterGraceMs: number;
  /** Renews in one `renews` entry at most (cluster level 7); a turn with more proposes several. */
  renewsPerEntry: number;
}

export const DEFAULT_LOCK_LEADER_CONFIG: Readonly<LockLeaderConfig> = Object.freeze({
  checkpointIdleMs: 1000,
  proposalTimeoutMs: 5000,
  termStartTimeoutMs: 5000,
  termStartWaitMs: 2000,
  expireBatch: 256,
  limits: NO_ADMISSION_LIMITS,
  freeKeyRetentionMs: Infinity,
  detachedWaiterGraceMs: 5000,
  renewsPerEntry: 256,
});
