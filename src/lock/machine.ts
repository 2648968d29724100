// The deterministic lock state machine, applied from committed Raft entries in log order.
//
// Determinism is the whole contract: every replica that applies the same entries reaches the same state
// (byte-identical snapshot) and returns the same results. So nothing here reads a clock, a random source
// or the environment. Time is *log time*, made of the leaders' stamps on the entries (see `time` below); it
// never goes back, even when a new leader's clock is behind the old one's.
//
// Rules (SPEC "Guarantees"), judged at the log time of the entry:
//   acquire  wins when the key is free, its lease deadline has passed, or the live lease is the same
//            owner's; every win issues a NEW fencing token = the entry's raft index (so tokens only grow,
//            per key and globally, and are never reused — also across restarts and failovers, because the
//            index is). A same-owner re-acquire supersedes the old token — from cluster level 4 only
//            under the same session (or both under none); under another it is blocked like anyone's
//            (machine-leases.ts `supersedes`).
//   renew    needs a lease with the same owner and token, not yet expired. Refusal reasons are checked in
//            this order: NOT_HELD (no lease at all) > WRONG_OWNER > WRONG_TOKEN > EXPIRED.
//   release  needs the same owner and token. An expired lease that no `expire` entry has removed yet can
//            still be released by its owner+token: it lets a slow client clean up, and from cluster level 5
//            it ends the lease exactly as expire would — into its lock-delay (see `delay`). Reasons:
//            NOT_HELD > WRONG_OWNER > WRONG_TOKEN (never EXPIRED).
//   expire   removes the lease only if it still has that token and its deadline has passed.
//   revoke   an operator's call: ends the key's hold with that token (0: every hold), a live one with no
//            lock-delay (see `delay`), and hands the key to its line in that entry. From cluster level 5 the
//            entry (tag 23) carries who revokes and its request id, and its first outcome is remembered in
//            the dedup table like every mutation's: a retry answers it (replayed) and ends nothing — not a
//            hold granted since. A tag-23 revoke below level 5 is refused (CLUSTER_LEVEL).
//   first entry of a higher raft term starts a lease epoch: see epoch.ts and LEASES.md.
//   time     at the first entry of a term, log time becomes max(log time, stamp). Within a term, at cluster
//            level 1 it is max(log time, stamp); from level 2 (versions.ts) it advances by how far the stamp
//            passed the term's last stamp. The difference: after a leader whose clock ran ahead, a leader on a
//            true clock stamps below log time, and under max() log time stood still until its clock caught
//            up — a 1 s lease was still held 4 s later (issue 22). Progress keeps log time moving at the
//            leader's rate from wherever it is. Both keep LEASES.md's premise: within a term, a difference of
//            log times is at most the difference of one leader's stamps.
//   level    `clusterLevel` raises the cluster level (never lowers it); an entry of a level this build does
//            not read stops the node (UnknownCommandError) rather than being skipped or misapplied.
//   ran      `memberRan` records that a Raft member has run (from level 2; below it, it changes nothing): the
//            first-boot check refuses a bootstrap start of such a member with an empty data dir (identity.ts),
//            on every peer that applied it, restarted or not. Ids are never reused, so the set only grows,
//            bounded by the members ever added.
//   forget   drops every free key freed at or before the entry's `upToMs`; their last tokens are folded into
//            one watermark. Get answers last_token = the watermark for a key the machine has no record of.
//   wait     an acquire with waitMs > 0 that cannot be granted joins the key's wait line (wait-line.ts); a
//            retry of the same (owner, request_id) keeps its place. Every entry that ends a hold (release,
//            expire, and an acquire that finds the hold past its deadline while others wait) hands the key
//            to the head of the line in that same entry (handOff): the grant's token is the entry's index,
//            as for any grant. Waiters whose wait deadline (log time) has passed are skipped and refused.
//            `dequeue` takes a waiter out (deadline passed, or call cancelled). Whoever holds a waiter's call
//            learns the decision from the entry's result (`decided`), so no leader's memory decides a grant
//            or a refusal of a waiter.
//   session  one lease for many holds (session.ts): holds and waiters under a session live exactly as long
//            as it does; its end (close, expiry) drops them all in that one entry and hands each freed key
//            to its line. Sessions ride the same epochs as leases (they are Leases, without a key).
//   delay    a hold acquired with lockDelayMs > 0 that EXPIRES (its lease ran out: an expire entry, or an
//            acquire finding it run out) puts its key in lock-delay until the lease's end + lockDelayMs (log
//            time): nobody is granted the key until then — not a newcomer, not the line, not its own owner.
//            From cluster level 5 a hold that ran out by log time ends as expired whichever entry ends it: a
//            release, a closeSession of its run-out session or a revoke that comes before the expiry entry
//            applies the same delay (machine-leases.ts `endsExpired`, the one rule every path uses). A live
//            hold released, closed or revoked starts no delay. Waiters stay in line; `undelay` (proposed by
//            the leader once the delay has passed) ends it and hands the key to the line.
//   many     (level 3; holds.ts) a key acquired with limit >= 2 (a semaphore) or shared becomes a KeyGroup:
//            many holds, each with its own token, admitted by holds.ts's rule; the line hands off to as many
//            heads as fit, one per entry (a grant's token is its entry's index), the leader proposing a
//            `handOff {key}` for the next one (grantableKeys). A mutex key is unchanged by all of this: it
//            keeps its one Lease in `leases`, and becomes a group only if a shared request reaches the head
//            of its line.
//            The rule keeps SPEC's guarantees: last_token is never below the real value (the watermark is
//            at least every forgotten key's last token, and 0 stays 0 until something is forgotten), and
//            tokens only grow, because a token is the raft index of its acquire entry, which is above every
//            index before it — forgotten keys included. What it gives up is exactness: a forgotten key (or
//            one never used) may report a last_token higher than its own.
//
// Where: this file dispatches each entry and keeps the rules above for a mutex key's acquire, renew, release,
// expire and revoke, log time, epochs, levels, forget, snapshots and restore. The parts it dispatches to are
// functions of the machine's state (machine-state.ts, which also keeps the bookkeeping every change goes
// through), each file's header stating its rules: a mutex key's lease, granted and ended
// (machine-leases.ts); the wait lines — joining, hand-off, dequeue, undelay (machine-wait-lines.ts);
// sessions (machine-sessions.ts); keys with many holds (machine-groups.ts).
import { CommandDecodeError, decodeCommand, isGroupAcquire, wireLimitViolation } from './commands.js';
import { GroupHold } from './holds.js';
import { UnknownCommandError } from './commands.js';
import type {
  AcquireCommand,
  ClusterLevelCommand,
  MemberRanCommand,
  ExpireCommand,
  ForgetCommand,
  LockCommand,
  ReleaseCommand,
  RenewCommand,
  RevokeCommand,
} from './commands.js';
import type { Session, DueSession } from './session.js';
import type { DueDelay } from './key-delays.js';
import type { DueWaiter } from './wait-line.js';
import type { EndByHeap } from './deadline-heap.js';
import { carryLease, endByMs } from './epoch.js';
import type { LeaseCarryOver, LeaseEpoch, LeaseTimes } from './epoch.js';
import { acquireTerms, describeAcquireTerms, sameRequest } from './dedup.js';
import type { DedupOperation, DedupRecord } from './dedup.js';
import { fingerprint64 } from './digest.js';
import { SmallestKeys, compareUtf8 } from './list-keys.js';
import type { Lease } from './lease.js';
import type { LockEventSink } from './events.js';
import { MachineState } from './machine-state.js';
import { endsExpired, grantedOutcome, hold, refusalBy, removeLease, supersedes } from './machine-leases.js';
import { dequeue, handOff, joinLine, queue, reusedInLine, undelay, waiterTerms } from './machine-wait-lines.js';
import { endSession, openSession, renewSession, requestKeyOf, sessionEnd, sessionError, sessionOf } from './machine-sessions.js';
import {
  acquireOfMany,
  expireInGroup,
  firstLiveOf,
  grantableKeys,
  groupView,
  handOffEntry,
  handOffMany,
  holdOf,
  markGrantable,
  refusalIn,
  removeHold,
  revokeInGroup,
} from './machine-groups.js';
import { SnapshotDecodeError, decodeState, type DecodedState, type DedupRecordSink } from './snapshot.js';
import { KeyBuckets } from './key-buckets.js';
import { FreeKeys } from './free-keys.js';
import { DedupTable } from './dedup.js';
import { SNAPSHOT_SLICE_ITEMS, SnapshotWriter } from './snapshot-writer.js';
import { DEFAULT_LOCK_MACHINE_OPTIONS } from './types.js';
import {
  BASE_LEVEL,
  LEVEL_ACQUIRE_KEPT_WHILE_HELD,
  LEVEL_CLOCK_PROGRESS,
  LEVEL_LATE_END_EXPIRES,
  LEVEL_MANY_HOLDERS,
  LEVEL_REVOKE_ONCE,
  LEVEL_SUPERSEDE_SAME_SESSION,
  LEVEL_DELAY_CARRIED,
} from './versions.js';
import type {
  AcquireOutcome,
  AcquireResult,
  DueLease,
  ErrorResult,
  ClusterLevelResult,
  MemberRanResult,
  ExpireResult,
  ForgetResult,
  LockMachineOptions,
  LockResult,
  LockView,
  RefusalReason,
  ReleaseResult,
  RevokeResult,
  RenewOutcome,
  RenewResult,
  WaiterDecision,
} from './types.js';

/** A snapshot being written in slices (LockMachine.beginSnapshot). */
export interface LockSnapshotJob {
  /** The index whose state the snapshot holds. */
  readonly appliedIndex: number;
  /** One slice of work; true when the snapshot is complete. */
  step(): boolean;
  /** The snapshot bytes, once step() returned true. */
  finish(): Uint8Array;
  /** Abandon it. */
  cancel(): void;
}

/** The driver applied entries out of order (a gap or a repeat): a bug in the caller, not a bad entry. */
export class LockApplyOrderError extends Error {
  override readonly name = 'LockApplyOrderError';
}

export class LockMachine {
  readonly options: Readonly<LockMachineOptions>;
  private epochTermValue = 0;
  private epochStartMsValue = 0;
  /** The cluster level (versions.ts): what the entries may use. Only a clusterLevel entry raises it. */
  private clusterLevelValue = BASE_LEVEL;
  /** From level 2: the highest stamp applied in the current term; log time advances by a stamp's progress
   *  past it (see the header's `time`). */
  private termLastStampMs = 0;
  /** Raft members recorded as having run (see the header's `ran`). */
  private readonly ranMembers = new Set<string>();
  /** Bytes per item (snapshotItems) of the last sliced snapshot: the next one's buffer is sized by it. */
  private snapshotBytesPerItem = 0;
  /** Every lease, line, session and group, and the bookkeeping every change goes through (machine-state.ts). */
  private readonly s: MachineState;

  constructor(options: Partial<LockMachineOptions> = {}) {
    this.options = Object.freeze({ ...DEFAULT_LOCK_MACHINE_OPTIONS, ...options });
    this.s = new MachineState(this.options);
  }

  /** Where the changes go as entries apply (events.ts, Watch); null = nobody listens, nothing is built. */
  get eventSink(): LockEventSink | null {
    return this.s.eventSink;
  }

  set eventSink(sink: LockEventSink | null) {
    this.s.eventSink = sink;
  }

  /** Index of the last entry applied or skipped. */
  get appliedIndex(): number {
    return this.s.appliedIndex;
  }

  /** Current log time (ms): the latest leader stamp applied, never decreasing. */
  get logNowMs(): number {
    return this.s.logNowMs;
  }

  /** The cluster level: the entry kinds and rules the cluster uses (versions.ts). */
  get clusterLevel(): number {
    return this.clusterLevelValue;
  }

  /** The cluster level, and the rules the state's parts read from it (set together, on apply and restore). */
  private useClusterLevel(level: number): void {
    this.clusterLevelValue = level;
    this.s.supersedeSameSessionOnly = level >= LEVEL_SUPERSEDE_SAME_SESSION;
    this.s.lateEndExpires = level >= LEVEL_LATE_END_EXPIRES;
    this.s.keepAcquiresWhileHeld = level >= LEVEL_ACQUIRE_KEPT_WHILE_HELD;
    this.s.acquireTermsKept = level >= LEVEL_ACQUIRE_KEPT_WHILE_HELD;
  }

  /**
   * Log time as the current term's leader would stamp it now, from the leader's clock reading `clockMs`:
   * for the leader's housekeeping (which leases, waits, sessions, delays are due). At level 2 the term's log
   * time runs at the leader's clock from the last stamp, so a leader whose clock is behind log time still
   * finds leases due on time; at level 1 it is max(clock, log time), as log time itself is. Another node's
   * clock gives a wrong answer only in liveness: every expiry is judged again by the entry that applies it.
   */
  projectedNowMs(clockMs: number): number {
    if (this.clusterLevelValue >= LEVEL_CLOCK_PROGRESS) return this.s.logNowMs + Math.max(0, clockMs - this.termLastStampMs);
    return Math.max(clockMs, this.s.logNowMs);
  }

  /** Whether member `id` is recorded as having run (a memberRan entry applied; see the header's `ran`). */
  hasRun(id: string): boolean {
    return this.ranMembers.has(id);
  }

  /** Raft term of the current lease epoch. A new leader whose term is higher must propose termStart. */
  get epochTerm(): number {
    return this.epochTermValue;
  }

  /** Log time at which the current lease epoch started. */
  get epochStartMs(): number {
    return this.epochStartMsValue;
  }

  get leaseCount(): number {
    return this.s.leases.size + this.s.groupHoldCount;
  }

  get dedupSize(): number {
    return this.s.dedup.size;
  }

  /** Every key record the machine keeps: leases and free keys (limits.maxKeys counts these). */
  get keyCount(): number {
    return this.s.leases.size + this.s.groups.size + this.s.freeKeyLastTokens.size;
  }

  get freeKeyCount(): number {
    return this.s.freeKeyLastTokens.size;
  }

  /** See `forgottenWatermark`. */
  get lastTokenWatermark(): bigint {
    return BigInt(this.s.forgottenWatermark);
  }

  /** How many owners have a lease (live or awaiting its expire entry): one record each, none kept for an
   *  owner whose last lease ended (a stream of one-off owners must not grow the machine). */
  get ownersWithLeases(): number {
    return this.s.leasesByOwner.size;
  }

  /** Leases (live or awaiting their expire entry) whose owner is `owner`. */
  leaseCountOf(owner: string): number {
    return this.s.leasesByOwner.get(owner)?.leases ?? 0;
  }

  /** Open sessions (including run-out ones whose ending entry has not applied yet). */
  get sessionCount(): number {
    return this.s.sessions.size;
  }

  /** The session `id` as it is now (owner, holds, whether live by log time), or undefined. */
  sessionInfo(
    id: number,
  ): { owner: string; holds: number; waiters: number; live: boolean; ttlMs: number; expiresAtMs: number } | undefined {
    const session = sessionOf(this.s, id);
    if (session === undefined) return undefined;
    return {
      owner: session.owner,
      holds: session.holds.size + session.groupHolds.size,
      waiters: session.waiters.size,
      live: session.isLiveAt(this.s.logNowMs),
      ttlMs: session.ttlMs,
      expiresAtMs: session.expiresAtMs,
    };
  }

  /** Every open session (and run-out ones awaiting their end), by id: an inspection for operators (List)
   *  and for the simulator's oracle. O(sessions). */
  sessionList(): { id: number; owner: string; live: boolean; ttlMs: number; expiresAtMs: number; holds: number }[] {
    return [...this.s.sessions.keys()].sort((a, b) => a - b).map((id) => ({ id, ...this.sessionInfo(id)! }));
  }

  /** Up to `limit` sessions that have expired by projectedNowMs(clockMs), earliest first, for the leader
   *  to propose `expireSession {sessionId}`. Each stays in the answer until that entry applies. */
  dueSessions(clockMs: number, limit: number): DueSession[] {
    const atMs = this.projectedNowMs(clockMs);
    this.s.settleDue(atMs, this.s.sessionDeadlines);
    return this.s.sessionDeadlines
      .due(atMs, limit)
      .map((session) => ({ sessionId: BigInt(session.fencingToken), expiresAtMs: session.expiresAtMs }));
  }

  /** Requests in every wait line. */
  get waiterCount(): number {
    return this.s.lines.size;
  }

  /** Requests in `key`'s wait line. */
  waiterCountOf(key: string): number {
    return this.s.lines.countFor(key);
  }

  /** Where (owner, request_id) waits, if it does: its key and ticket. */
  waiterFor(owner: string, requestId: string): { key: string; ticket: number } | undefined {
    const w = this.s.lines.byRequestOf(owner, requestId);
    return w === undefined ? undefined : { key: w.key, ticket: w.ticket };
  }

  /** Whether (owner, request_id) waits in line asking other terms than `req` (cluster level 6; below it
   *  terms are not part of a request's identity). */
  waitsWithOtherTerms(req: { owner: string; requestId: string; sessionId?: number; limit?: number; shared?: boolean }): boolean {
    if (!this.s.acquireTermsKept) return false;
    const w = this.s.lines.byRequestOf(req.owner, req.requestId);
    return w !== undefined && waiterTerms(w) !== acquireTerms(req.sessionId ?? 0, req.limit ?? 1, req.shared === true);
  }

  /** Whether the waiter with this ticket is still in `key`'s line. */
  isWaiting(key: string, ticket: number): boolean {
    return this.s.lines.get(key, ticket) !== undefined;
  }

  /** The session the waiter with this ticket waits under (0: none), or undefined when it is not in line. */
  sessionOfWaiter(key: string, ticket: number): number | undefined {
    return this.s.lines.get(key, ticket)?.sessionId;
  }

  /** The value of `key`'s current hold, if it has one. */
  valueOf(key: string): Uint8Array | undefined {
    const group = this.s.groups.get(key);
    if (group !== undefined) return firstLiveOf(this.s, group)?.value ?? undefined;
    return this.s.holdValues.get(key);
  }

  /** Up to `limit` keys with many holds whose line's head fits at log time (the entry that made room could
   *  grant only one head), for the leader to propose `handOff` (machine-groups.ts). */
  grantableKeys(limit: number): string[] {
    return grantableKeys(this.s, limit);
  }

  /** Log time left in `key`'s lock-delay (0 = none). */
  delayLeftMs(key: string): number {
    return this.s.delays.leftMs(key, this.s.logNowMs);
  }

  /** Up to `limit` keys whose lock-delay has passed by projectedNowMs(clockMs), for the leader to propose
   *  `undelay {key}`. Each stays in the answer until that entry applies. */
  dueDelays(clockMs: number, limit: number): DueDelay[] {
    return this.s.delays.due(this.projectedNowMs(clockMs), limit);
  }

  /** Up to `limit` waiters whose wait deadline is <= projectedNowMs(clockMs), earliest first, for the leader
   *  to propose `dequeue {key, ticket, deadline}`. Each stays in the answer until that entry applies. */
  dueWaiters(clockMs: number, limit: number): DueWaiter[] {
    return this.s.lines.due(this.projectedNowMs(clockMs), limit);
  }

  /** The owner of `key`'s lease if it has one (live or awaiting its expire entry); null when it has a free
   *  record; undefined when the machine keeps no record of it. */
  recordOf(key: string): { owner: string } | null | undefined {
    // A key with many holds: each acquire may add a hold (admission counts it as a new lease).
    if (this.s.groups.has(key)) return null;
    const lease = this.s.leases.get(key);
    if (lease !== undefined) return { owner: lease.owner };
    return this.s.freeKeyLastTokens.has(key) ? null : undefined;
  }

  /** When the `n`-th oldest free key (1-based) was freed, in log time; undefined with fewer free keys. */
  freedAtOfOldest(n: number): number | undefined {
    return this.s.freeKeyLastTokens.freedAtOfOldest(n);
  }

  /**
   * Any lease present — live, or past its deadline and awaiting its `expire` entry. The leader proposes
   * checkpoints while this is true and the log is idle, so every term records how long it observed them.
   */
  hasLiveLeases(): boolean {
    return this.s.leases.size > 0 || this.s.sessions.size > 0 || this.s.groups.size > 0;
  }

  /** Apply one committed 'normal' entry. Malformed bytes become a no-op `error` result on every replica. */
  apply(index: number, term: number, data: Uint8Array): LockResult {
    this.checkNextIndex(index);
    let command: LockCommand;
    try {
      command = decodeCommand(data, this.options.readLevel);
    } catch (error) {
      if (!(error instanceof CommandDecodeError)) throw error;
      this.s.appliedIndex = index;
      return malformed(index, error.message);
    }
    return this.execute(index, term, command);
  }

  /** Apply an already-decoded command (simulator, tests). Checked against the same wire limits as decode. */
  applyCommand(index: number, term: number, command: LockCommand): LockResult {
    this.checkNextIndex(index);
    const violation = wireLimitViolation(command);
    if (violation !== null) {
      this.s.appliedIndex = index;
      return malformed(index, `invalid ${String(command.type)} command: ${violation}`);
    }
    return this.execute(index, term, command);
  }

  /**
   * The remembered outcome of an acquire by (owner, requestId) for `key`, or null (none, or the id was used
   * for something else — proposing then yields REQUEST_ID_REUSED). Lets the leader answer a retry of an
   * already-decided request without proposing it (e.g. a retry arriving while others wait for the key).
   */
  rememberedAcquire(owner: string, requestId: string, key: string): AcquireOutcome | null {
    if (requestId === '') return null;
    const record = this.s.dedup.find(owner, requestId);
    if (record === undefined || record.type !== 'acquire' || record.key !== key) return null;
    return record.outcome;
  }

  /** Account for a committed entry that carries no lock command (raft 'noop' / 'config'). */
  skip(index: number): void {
    this.checkNextIndex(index);
    this.s.appliedIndex = index;
  }

  /** The lock state of `key` at the current log time (serve after a ReadIndex: appliedIndex >= readIndex). */
  get(key: string): LockView {
    const group = this.s.groups.get(key);
    if (group !== undefined) return groupView(this.s, group);
    const lease = this.s.leaseOf(key);
    if (lease !== undefined && lease.isLiveAt(this.s.logNowMs)) {
      const token = BigInt(lease.fencingToken);
      const view: LockView = {
        held: true,
        owner: lease.owner,
        token,
        ttlMs: lease.effectiveExpiresAtMs - this.s.logNowMs,
        expiresAtMs: lease.effectiveExpiresAtMs,
        lastToken: token,
      };
      if (lease.session !== null) view.sessionId = BigInt(lease.session.fencingToken);
      return view;
    }
    const lastToken =
      lease !== undefined ? lease.fencingToken : (this.s.freeKeyLastTokens.get(key)?.lastToken ?? this.s.forgottenWatermark);
    return { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: BigInt(lastToken) };
  }

  /**
   * Up to `limit` keys that are held or waited on, starting with `prefix` and after `afterKey` in UTF-8
   * byte order, in that order (List; SPEC "List"). One pass over the held keys and the lines, keeping the
   * smallest `limit` (a page of a million keys costs one scan, not a sort of them all).
   */
  listKeys(prefix: string, afterKey: string, limit: number): string[] {
    const page = new SmallestKeys(limit);
    const consider = (key: string) => {
      if (key.startsWith(prefix) && (afterKey === '' || compareUtf8(key, afterKey) > 0)) page.offer(key);
    };
    for (const key of this.s.leases.keys()) {
      // leaseOf settles the lease (term starts carried over) before it is judged.
      if (this.s.leaseOf(key)!.isLiveAt(this.s.logNowMs) || this.s.lines.countFor(key) > 0) consider(key);
    }
    for (const [key, group] of this.s.groups) if (firstLiveOf(this.s, group) !== undefined || this.s.lines.countFor(key) > 0) consider(key);
    for (const key of this.s.lines.keys()) if (!this.s.leases.has(key) && !this.s.groups.has(key)) consider(key);
    return page.sorted();
  }

  /**
   * Up to `limit` leases that have expired by projectedNowMs(clockMs), earliest first, for the leader to
   * propose `expire {key, token}` (stamped with its clock). O(k log k) via the deadline heap. A lease stays
   * in the answer until its expire entry applies, so the leader should remember what it has in flight.
   */
  expiredLeases(clockMs: number, limit: number): DueLease[] {
    const atMs = this.projectedNowMs(clockMs);
    this.s.settleDue(atMs, this.s.deadlines);
    return this.s.deadlines.due(atMs, limit).map((lease) => ({
      key: lease.key,
      token: BigInt(lease.fencingToken),
      expiresAtMs: lease.expiresAtMs,
    }));
  }

  /** Canonical, compact encoding of the whole state (see snapshot.ts). Same state => same bytes. */
  snapshot(): Uint8Array {
    const writer = this.openWriter(0);
    while (!writer.step(Number.MAX_SAFE_INTEGER));
    return writer.finish();
  }

  /**
   * Start writing snapshot() of the state as it is now, in slices: call step() (each does a bounded amount
   * of work) until it returns true, applying entries in between as usual, then finish() returns exactly the
   * bytes snapshot() would have returned now. One at a time: beginning another cancels this one.
   * `sizeHint` (the previous snapshot's size) saves the buffer from growing by copies; `sliceItems` is
   * how many keys or dedup records one step handles (tests make it tiny to force many slices).
   */
  beginSnapshot(sizeHint = 0, sliceItems = SNAPSHOT_SLICE_ITEMS): LockSnapshotJob {
    this.s.writer?.close();
    // A state that grew since the last snapshot (a fill) outgrew a hint of the last size: the buffer then
    // doubled by copying 40 MB and the result was copied again to its size (issue 19 profiles: 300-400 ms
    // of a node's stalls). The last snapshot's bytes per item, times the items now, sizes it well.
    const items = this.snapshotItems();
    const writer = this.openWriter(Math.max(sizeHint, Math.ceil(this.snapshotBytesPerItem * items)));
    this.s.writer = writer;
    const release = () => {
      writer.close();
      if (this.s.writer === writer) this.s.writer = null;
    };
    return {
      appliedIndex: this.s.appliedIndex,
      step: () => writer.step(sliceItems),
      finish: () => {
        release();
        const bytes = writer.finish();
        if (items > 0) this.snapshotBytesPerItem = bytes.length / items;
        return bytes;
      },
      cancel: release,
    };
  }

  /** What a snapshot's size grows with: keys held or remembered free, and dedup records. */
  private snapshotItems(): number {
    return this.s.leases.size + this.s.groupHoldCount + this.s.freeKeyLastTokens.size + this.s.dedup.size;
  }

  private openWriter(sizeHint: number, withKeys = true): SnapshotWriter {
    const header = {
      appliedIndex: this.s.appliedIndex,
      nowMs: this.s.logNowMs,
      epochTerm: this.epochTermValue,
      epochStartMs: this.epochStartMsValue,
      forgottenWatermark: this.s.forgottenWatermark,
      clusterLevel: this.clusterLevelValue,
      termLastStampMs: this.clusterLevelValue >= LEVEL_CLOCK_PROGRESS ? this.termLastStampMs : 0,
      ranMembers: [...this.ranMembers].sort(),
    };
    return new SnapshotWriter(
      {
        header,
        leases: withKeys ? this.s.leases : new KeyBuckets<Lease>(),
        freeKeys: withKeys ? this.s.freeKeyLastTokens : new FreeKeys(),
        dedup: withKeys ? this.s.dedup : new DedupTable(this.options.dedupWindowMs, this.options.dedupMaxEntries),
        timesOf: this.timesAsOfNow(),
        waiters: this.s.lines,
        delays: this.s.delays,
        values: this.s.holdValues,
        sessions: this.s.sessions,
        // Without the keys: the applied store's rest record, which keeps none of what has records of its own.
        restRecord: !withKeys,
        groups: this.s.groups,
      },
      sizeHint,
    );
  }

  /**
   * A lease's times as of now, for a snapshot opened now: its unseen epochs applied to a copy, the lease
   * untouched (a read must not change what a snapshot in progress has yet to copy). Epochs added later are
   * not applied: settle() copies a lease's section (beforeKeyWrite) before it applies one.
   */
  private timesAsOfNow(): (lease: Lease) => LeaseTimes {
    const epochs = this.s.epochs;
    const upTo = epochs.length;
    return (lease) => {
      if (lease.epochsSeen === upTo) return lease;
      if (lease.epochsSeen > upTo) throw new Error(`lease ${JSON.stringify(lease.key)} has seen epochs the snapshot has not`);
      const times: LeaseTimes = {
        ttlMs: lease.ttlMs,
        expiresAtMs: lease.expiresAtMs,
        observedMs: lease.observedMs,
        observeFromMs: lease.observeFromMs,
      };
      for (let i = lease.epochsSeen; i < upTo; i++) carryLease(times, epochs[i]!);
      return times;
    };
  }

  /** 64-bit hex fingerprint of snapshot(): replicas in the same state have the same digest. */
  digest(): string {
    return fingerprint64(this.snapshot());
  }

  /**
   * Rebuild a machine from snapshot() bytes. Zero bytes = the empty machine at index 0 (the Raft bootstrap
   * snapshot carries no application data). Throws SnapshotDecodeError on corrupt input. `options` must be
   * the cluster-wide ones (they are not part of the snapshot).
   */
  static restore(bytes: Uint8Array, options: Partial<LockMachineOptions> = {}): LockMachine {
    const machine = new LockMachine(options);
    if (bytes.length === 0) return machine;
    machine.load(decodeState(bytes, machine.s.dedup.restoreSink(), machine.options.readLevel), bytes.length);
    return machine;
  }

  /**
   * A machine from a decoded state (store-records.ts builds one from the applied store's records):
   * `decode` gets the new machine's dedup sink, feeds it the remembered requests oldest first, and returns
   * the rest of the state. The same checks as restore(); `at` names where a failure is reported.
   */
  static fromDecoded(
    options: Partial<LockMachineOptions>,
    decode: (dedupSink: DedupRecordSink, readLevel: number) => DecodedState,
    at = 0,
  ): LockMachine {
    const machine = new LockMachine(options);
    machine.load(decode(machine.s.dedup.restoreSink(), machine.options.readLevel), at);
    return machine;
  }

  /** @internal The state's parts, for store-records.ts (which reads them the way the snapshot writer does). */
  get parts(): MachineState {
    return this.s;
  }

  /** The state but its keys and remembered requests: the snapshot format with neither (store-records.ts keeps
   *  those one record each) — the header, lines, delays, values, sessions, levels and groups. */
  restSnapshot(): Uint8Array {
    const writer = this.openWriter(0, false);
    while (!writer.step(Number.MAX_SAFE_INTEGER));
    return writer.finish();
  }

  private load(state: DecodedState, at: number): void {
    this.s.appliedIndex = state.appliedIndex;
    this.useClusterLevel(state.clusterLevel);
    this.termLastStampMs = state.termLastStampMs;
    for (const id of state.ranMembers) this.ranMembers.add(id);
    this.s.logNowMs = state.nowMs;
    this.epochTermValue = state.epochTerm;
    this.epochStartMsValue = state.epochStartMs;
    this.s.forgottenWatermark = state.forgottenWatermark;
    for (const session of state.sessions) {
      this.s.sessions.set(session.id, session);
      if (session.requestId !== '') this.s.sessionsByRequest.set(requestKeyOf(session.owner, session.requestId), session);
      session.endByKey = endByMs(session);
    }
    this.s.sessionDeadlines.pushAll(state.sessions);
    this.s.sessionEndBy.pushAll(state.sessions);
    for (const lease of state.leases) {
      this.s.leases.set(lease.key, lease);
      lease.owner = this.s.countOwner(lease.owner, 1);
      // A hold the decoder attached to its session already (the applied store's key records name it;
      // store-records.ts checked the session and its owner): one lookup less per hold of a million.
      if (lease.session !== null) this.s.sessionHoldCount++;
    }
    for (const [key, sessionId] of state.sessionHolds) {
      const lease = this.s.leases.get(key);
      const session = this.s.sessions.get(sessionId);
      if (lease === undefined || session === undefined || lease.owner !== session.owner) {
        throw new SnapshotDecodeError(`key ${JSON.stringify(key)} is held under session ${sessionId}, which it cannot be`, at);
      }
      lease.session = session;
      session.holds.add(lease);
      this.s.sessionHoldCount++;
    }
    const ownTimes = state.leases.filter((lease) => lease.session === null);
    this.s.deadlines.pushAll(ownTimes);
    for (const lease of ownTimes) lease.endByKey = endByMs(lease);
    this.s.endBy.pushAll(ownTimes);
    // In freeing-time order (ties by key), the order forget() walks; see freeKeyLastTokens.
    const free = state.freeKeys.sort((a, b) => a.freedAtMs - b.freedAtMs || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { key, lastToken, freedAtMs } of free) {
      if (this.s.leases.has(key)) {
        throw new SnapshotDecodeError(`key ${JSON.stringify(key)} is both held and free`, at);
      }
      this.s.freeKeyLastTokens.free(key, lastToken, freedAtMs);
    }
    for (const [key, lockDelayMs] of state.holdDelays) {
      if (!this.s.leases.has(key)) throw new SnapshotDecodeError(`key ${JSON.stringify(key)} has a hold's lock-delay but no lease`, at);
      this.s.delays.setHoldDelay(key, lockDelayMs);
    }
    for (const [key, untilMs] of state.keyDelays) this.s.delays.delayKey(key, untilMs);
    for (const [key, value] of state.holdValues) {
      if (!this.s.leases.has(key)) throw new SnapshotDecodeError(`key ${JSON.stringify(key)} has a hold's value but no lease`, at);
      this.s.holdValues.set(key, value);
    }
    for (const group of state.groups) {
      if (this.s.leases.has(group.key) || this.s.freeKeyLastTokens.has(group.key)) {
        throw new SnapshotDecodeError(`key ${JSON.stringify(group.key)} has many holds and another record`, at);
      }
      this.s.groups.set(group.key, group);
      for (const hold of group.holds) {
        hold.owner = this.s.countOwner(hold.owner, 1);
        this.s.groupHoldCount++;
        const sessionId = state.groupHoldSessions.get(hold) ?? 0;
        if (sessionId > 0) {
          const session = this.s.sessions.get(sessionId);
          if (session === undefined || session.owner !== hold.owner)
            throw new SnapshotDecodeError(`a hold of ${JSON.stringify(group.key)} is under session ${sessionId}, which it cannot be`, at);
          hold.session = session;
          session.groupHolds.add(hold);
          this.s.groupSessionHoldCount++;
        } else {
          this.s.deadlines.push(hold);
          hold.endByKey = endByMs(hold);
          this.s.endBy.push(hold);
        }
      }
    }
    for (const w of state.waiters) {
      // The machine's invariant: a key has waiters only while it has a lease, many holds, or is in lock-delay.
      if (!this.s.leases.has(w.key) && !this.s.groups.has(w.key) && this.s.delays.untilMs(w.key) === undefined) {
        throw new SnapshotDecodeError(`key ${JSON.stringify(w.key)} has waiters but neither a lease nor a lock-delay`, at);
      }
      if (this.s.lines.byRequestOf(w.owner, w.requestId) !== undefined) {
        throw new SnapshotDecodeError(`request ${JSON.stringify(w.requestId)} of ${JSON.stringify(w.owner)} waits twice`, at);
      }
      if (w.sessionId > 0 && this.s.sessions.get(w.sessionId)?.owner !== w.owner) {
        throw new SnapshotDecodeError(`a waiter for key ${JSON.stringify(w.key)} is under session ${w.sessionId}, which it cannot be`, at);
      }
      joinLine(this.s, w);
    }
    for (const group of this.s.groups.values()) markGrantable(this.s, group);
  }

  // ---- applying ----

  private checkNextIndex(index: number): void {
    if (index !== this.s.appliedIndex + 1) {
      throw new LockApplyOrderError(
        `expected entry ${this.s.appliedIndex + 1}, got ${index}: entries must be applied (or skipped) in order, once`,
      );
    }
  }

  private execute(index: number, term: number, command: LockCommand): LockResult {
    this.s.appliedIndex = index;
    const epoch = term > this.epochTermValue ? this.startLeaseEpoch(term, command.timeMs) : null;
    if (epoch === null) this.advanceLogTime(command.timeMs);
    this.s.dedup.prune(this.s.logNowMs, this.s.keepAcquiresWhileHeld ? this.keepAcquireRecord : undefined);
    switch (command.type) {
      case 'acquire':
        return this.acquire(index, command);
      case 'renew':
        return this.renew(index, command);
      case 'release':
        return this.release(index, command);
      case 'expire':
        return this.expire(index, command);
      case 'termStart':
        return { type: 'termStart', index, leasesExtended: epoch?.extended ?? 0, leasesEnded: epoch?.ended ?? 0 };
      case 'checkpoint':
        return { type: 'checkpoint', index };
      case 'clusterLevel':
        return this.raiseClusterLevel(index, command);
      case 'memberRan':
        return this.memberRan(index, command);
      case 'forget':
        return this.forget(index, command);
      case 'dequeue':
        return dequeue(this.s, index, command);
      case 'undelay':
        return undelay(this.s, index, command);
      case 'handOff':
        return handOffEntry(this.s, index, command);
      case 'openSession':
        return openSession(this.s, index, command);
      case 'renewSession':
        return renewSession(this.s, index, command);
      case 'closeSession':
      case 'expireSession':
        return sessionEnd(this.s, index, command);
      case 'revoke':
        return this.revoke(index, command);
    }
  }

  /** Log time after an entry of the current term stamped `stampMs` (see the header's `time`). */
  private advanceLogTime(stampMs: number): void {
    if (this.clusterLevelValue < LEVEL_CLOCK_PROGRESS) {
      this.s.logNowMs = Math.max(this.s.logNowMs, stampMs);
      return;
    }
    // max(0, …): a stamp below the term's last one (a clock that stepped back) adds nothing.
    this.s.logNowMs += Math.max(0, stampMs - this.termLastStampMs);
    this.termLastStampMs = Math.max(this.termLastStampMs, stampMs);
  }

  private raiseClusterLevel(index: number, command: ClusterLevelCommand): ClusterLevelResult {
    if (command.level > this.options.readLevel) {
      // The cluster moved to rules this build does not know: applying more entries could misapply them.
      throw new UnknownCommandError(19, this.options.readLevel, `cluster level ${command.level} (entry ${index})`);
    }
    if (command.level > this.clusterLevelValue) {
      this.useClusterLevel(command.level);
      // Progress is measured from this entry's stamp on: replicas that restored a level-1 snapshot never
      // knew the term's earlier stamps, and must agree with those that applied them.
      this.termLastStampMs = command.timeMs;
    }
    return { type: 'clusterLevel', index, level: this.clusterLevelValue };
  }

  private memberRan(index: number, command: MemberRanCommand): MemberRanResult {
    // Below level 2 a snapshot could not carry the record (versions up to 6 have no place for it), so a
    // replica restored from one would disagree with one that applied the entry: it changes nothing then.
    const recorded = this.clusterLevelValue >= LEVEL_CLOCK_PROGRESS && !this.ranMembers.has(command.memberId);
    if (recorded) this.ranMembers.add(command.memberId);
    return { type: 'memberRan', index, memberId: command.memberId, recorded };
  }

  /** Drops the free keys freed at or before `upToMs` (log time), oldest first; see the header. */
  private forget(index: number, command: ForgetCommand): ForgetResult {
    let forgotten = 0;
    this.s.freeKeyLastTokens.forgetUpTo(command.upToMs, (free) => {
      this.s.touch(free.key);
      if (free.lastToken > this.s.forgottenWatermark) this.s.forgottenWatermark = free.lastToken;
      forgotten++;
    });
    return { type: 'forget', index, forgotten, watermark: BigInt(this.s.forgottenWatermark) };
  }

  /**
   * The first entry of a higher raft term (normally the new leader's termStart) starts a lease epoch: live
   * leases are carried into the new term by the rule in epoch.ts (safety argument: LEASES.md). Keyed on the
   * entry's raft term rather than on the termStart command, so a driver that forgets to lead with termStart
   * still gets a correct epoch at its first entry. T = max(P, stamp) keeps log time monotone.
   */
  private startLeaseEpoch(term: number, stampedMs: number): LeaseCarryOver {
    const previousTermEndMs = this.s.logNowMs;
    const epochStartMs = Math.max(previousTermEndMs, stampedMs);
    const carried = this.startEpoch({ previousTermEndMs, epochStartMs });
    // Running lock-delays cross the jump as live leases do (key-delays.ts carryOver).
    if (this.clusterLevelValue >= LEVEL_DELAY_CARRIED) this.s.delays.carryOver(previousTermEndMs, epochStartMs);
    this.epochTermValue = term;
    this.epochStartMsValue = epochStartMs;
    this.s.logNowMs = epochStartMs;
    if (this.clusterLevelValue >= LEVEL_CLOCK_PROGRESS) this.termLastStampMs = stampedMs;
    return carried;
  }

  /**
   * Starts epoch (P, T) without walking the leases (see `epochs`): the leases it ends are popped from the
   * EndByHeap and settled at once; every other live lease is extended, lazily. Counts as the walk would.
   */
  private startEpoch(epoch: LeaseEpoch): LeaseCarryOver {
    const P = epoch.previousTermEndMs;
    // Leases past their deadline at P (awaiting their expire entry) are untouched by the epoch.
    this.s.settleDue(P, this.s.deadlines);
    const expiredAtP = this.s.deadlines.due(P, Number.MAX_SAFE_INTEGER).length;
    const ending = this.endingAt(P, this.s.endBy);
    const endingSessions = this.endingAt(P, this.s.sessionEndBy);
    this.s.epochs.push(epoch);
    this.s.epochShiftMs += epoch.epochStartMs - P;
    for (const lease of ending) this.s.settle(lease); // ends it: deadline min(deadline, T)
    for (const session of endingSessions) this.s.settle(session);
    const ownLeases = this.s.leases.size - this.s.sessionHoldCount + this.s.groupHoldCount - this.s.groupSessionHoldCount;
    return { extended: ownLeases - expiredAtP - ending.length, ended: ending.length };
  }

  /** The leases (or sessions) of `heap` that an epoch whose previous term ended at P ends: popped from it. */
  private endingAt(P: number, heap: EndByHeap): Lease[] {
    const ending: Lease[] = [];
    for (let top = heap.peek(); top !== undefined && top.endByKey + this.s.epochShiftMs <= P; top = heap.peek()) {
      heap.remove(top);
      this.s.settle(top); // the epochs before this one
      if (!top.isLiveAt(P)) continue; // already expired: no epoch touches it until a grant or renew re-adds it
      if (endByMs(top) <= P) ending.push(top);
      else this.s.granted(top); // cannot happen while the shift rule holds; re-filed with its true endBy
    }
    return ending;
  }

  private acquire(index: number, command: AcquireCommand): AcquireResult | ErrorResult {
    const terms = this.s.acquireTermsKept ? acquireTerms(command.sessionId ?? 0, command.limit ?? 1, command.shared === true) : 0n;
    const replay = this.replay(index, 'acquire', command.owner, command.requestId, command.key, terms);
    const waitingRefusal = command.queued === true && replay !== null && replay.type === 'acquire' && !replay.acquired;
    if (replay !== null && !waitingRefusal) return replay as AcquireResult | ErrorResult;
    const nowMs = this.s.logNowMs;
    // A retry of a request already in line keeps its place and its wait deadline (SPEC: it re-attaches).
    const inLine = this.s.lines.byRequestOf(command.owner, command.requestId);
    if (inLine !== undefined) {
      // From level 6 the same request: its terms too (a place under one session is no place under another).
      if (inLine.key !== command.key || (terms !== 0n && waiterTerms(inLine) !== terms))
        return reusedInLine(index, inLine, command.key, terms);
      return { type: 'acquire', index, replayed: true, ...refusalBy(this.s.leaseOf(command.key), nowMs), waitTicket: inLine.ticket };
    }
    let session: Session | null = null;
    if ((command.sessionId ?? 0) > 0) {
      const named = sessionOf(this.s, command.sessionId!);
      if (named === undefined || !named.isLiveAt(nowMs))
        return sessionError(
          index,
          'SESSION_NOT_OPEN',
          `session ${command.sessionId} is not open (closed, ran out, or never opened); open a new one`,
        );
      if (named.owner !== command.owner)
        return sessionError(
          index,
          'SESSION_OWNER_MISMATCH',
          `owner ${JSON.stringify(command.owner)} is not the owner of session ${command.sessionId}`,
        );
      session = named;
    }
    if (isGroupAcquire(command) && this.clusterLevelValue < LEVEL_MANY_HOLDERS) {
      // A snapshot below level 3 has no place for many holds: replicas restored from one would disagree.
      return {
        type: 'error',
        index,
        code: 'CLUSTER_LEVEL',
        message: `limit/shared: semaphores and shared holds need cluster level ${LEVEL_MANY_HOLDERS} (every member upgraded); the cluster is at ${this.clusterLevelValue}`,
      };
    }
    if (isGroupAcquire(command) || this.s.groups.has(command.key)) return acquireOfMany(this.s, index, command, session);
    const decided: WaiterDecision[] = [];
    let lease = this.s.leaseOf(command.key);
    const delayedUntilMs = this.s.delays.untilMs(command.key);
    if (delayedUntilMs !== undefined && delayedUntilMs <= nowMs) {
      // The key's lock-delay has passed but no undelay entry has ended it yet: this one does, and hands the
      // key to the line first (a newcomer overtook the line here: lock simulation seeds 5147, 5350, 5883).
      this.s.delays.undelay(command.key);
      if (lease === undefined) handOff(this.s, command.key, index, decided);
      lease = this.s.leaseOf(command.key);
    }
    if (lease !== undefined && lease.session !== null && !lease.isLiveAt(nowMs)) {
      // The hold ahead lives under a session that ran out, and no entry has ended it yet: this one ends the
      // whole session (each of its keys handed to its line), as its expireSession would.
      endSession(this.s, lease.session as Session, true, index, decided);
      lease = this.s.leaseOf(command.key);
    }
    if (
      lease !== undefined &&
      !lease.isLiveAt(nowMs) &&
      (this.s.lines.countFor(command.key) > 0 || this.s.delays.holdDelayOf(command.key) > 0)
    ) {
      // The hold ahead ran out and no entry has ended it yet: this one does — into its lock-delay if it
      // carries one, else handing the key to the line first, so a newcomer never overtakes a waiter.
      removeLease(this.s, lease, true);
      handOff(this.s, command.key, index, decided);
      lease = this.s.leaseOf(command.key);
    }
    // A hand-off above reached a shared head: the key has many holds now, and this request is judged as one
    // of them (a mutex lease beside the group would be a second record of the key).
    if (this.s.groups.has(command.key)) return acquireOfMany(this.s, index, command, session, decided);
    const delayLeftMs = this.s.delays.leftMs(command.key, nowMs);
    // In lock-delay, held by another, or handed to a waiter in this very entry (whose token is this index:
    // a same-owner supersede would reuse it).
    // From level 4 the owner's own hold under another session blocks too (machine-leases.ts `supersedes`).
    const blocked =
      delayLeftMs > 0 ||
      (lease !== undefined &&
        lease.isLiveAt(nowMs) &&
        (lease.owner !== command.owner || lease.fencingToken === index || !supersedes(this.s, lease, session?.id ?? 0)));
    let outcome: AcquireOutcome;
    let waitTicket: number | undefined;
    if (blocked) {
      outcome = refusalBy(lease, nowMs);
      if ((command.waitMs ?? 0) > 0) {
        // In line: not an answer yet, so nothing is remembered; the entry that decides it remembers that.
        queue(this.s, index, command, session);
        waitTicket = index;
      }
    } else {
      lease = hold(
        this.s,
        command.key,
        lease,
        command.owner,
        index,
        command.ttlMs,
        command.lockDelayMs ?? 0,
        command.value ?? null,
        session,
      );
      outcome = grantedOutcome(lease);
    }
    if (waitTicket === undefined) this.s.rememberAcquire(command, outcome);
    const result: AcquireResult = { type: 'acquire', index, replayed: false, ...outcome };
    if (waitTicket !== undefined) result.waitTicket = waitTicket;
    if (blocked && delayLeftMs > 0) result.delayMsLeft = delayLeftMs;
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  // ---- keys with many holds (holds.ts; the header's `many`) ----

  // ---- sessions (session.ts) ----

  private renew(index: number, command: RenewCommand): RenewResult | ErrorResult {
    const replay = this.replay(index, 'renew', command.owner, command.requestId, command.key, command.token);
    if (replay !== null) return replay as RenewResult | ErrorResult;
    const group = this.s.groups.get(command.key);
    const lease: Lease | undefined = group !== undefined ? holdOf(this.s, group, command.owner) : this.s.leaseOf(command.key);
    const reason =
      group !== undefined ? refusalIn(this.s, group, lease as GroupHold | undefined, command, true) : this.refusal(lease, command, true);
    if (lease !== undefined && lease.session !== null && reason === 'UNSPECIFIED') {
      return sessionError(
        index,
        'RENEW_THE_SESSION',
        `the hold on ${JSON.stringify(command.key)} lives under session ${lease.session.fencingToken}: renew the session, not the hold`,
      );
    }
    let outcome: RenewOutcome;
    if (lease === undefined || reason !== 'UNSPECIFIED') {
      outcome = { renewed: false, ttlMs: 0, expiresAtMs: 0, reason };
    } else {
      this.s.touch(command.key);
      lease.grant(lease.owner, lease.fencingToken, command.ttlMs, this.s.logNowMs);
      this.s.deadlines.update(lease);
      this.s.granted(lease);
      outcome = { renewed: true, ttlMs: command.ttlMs, expiresAtMs: lease.expiresAtMs, reason };
      if (this.s.eventSink !== null) {
        if (lease instanceof GroupHold) this.s.emit('RENEWED', command.key, lease.owner, command.token, 0, lease.value, lease.shared);
        else this.s.emit('RENEWED', command.key, lease.owner, command.token, 0, this.s.holdValues.get(command.key) ?? null);
      }
    }
    this.s.remember(command, { type: 'renew', outcome, token: command.token });
    return { type: 'renew', index, replayed: false, ...outcome };
  }

  private release(index: number, command: ReleaseCommand): ReleaseResult | ErrorResult {
    const replay = this.replay(index, 'release', command.owner, command.requestId, command.key, command.token);
    if (replay !== null) return replay as ReleaseResult | ErrorResult;
    const group = this.s.groups.get(command.key);
    const lease: Lease | undefined = group !== undefined ? holdOf(this.s, group, command.owner) : this.s.leaseOf(command.key);
    const reason =
      group !== undefined ? refusalIn(this.s, group, lease as GroupHold | undefined, command, false) : this.refusal(lease, command, false);
    const decided: WaiterDecision[] = [];
    // A live hold released starts no lock-delay; one that ran out ends as its expiry would (endsExpired).
    if (group !== undefined && lease instanceof GroupHold && reason === 'UNSPECIFIED') {
      removeHold(this.s, group, lease, endsExpired(this.s, lease, false));
      handOffMany(this.s, group, index, decided);
    } else if (lease !== undefined && reason === 'UNSPECIFIED') {
      removeLease(this.s, lease, endsExpired(this.s, lease, false));
      handOff(this.s, command.key, index, decided);
    }
    const outcome = { released: reason === 'UNSPECIFIED', reason };
    this.s.remember(command, { type: 'release', outcome, token: command.token });
    const result: ReleaseResult = { type: 'release', index, replayed: false, key: command.key, ...outcome };
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  private expire(index: number, command: ExpireCommand): ExpireResult {
    const group = this.s.groups.get(command.key);
    if (group !== undefined) return expireInGroup(this.s, index, command, group);
    const lease = this.s.leaseOf(command.key);
    const due =
      lease !== undefined && lease.session === null && BigInt(lease.fencingToken) === command.token && !lease.isLiveAt(this.s.logNowMs);
    const result: ExpireResult = { type: 'expire', index, expired: due, key: command.key, token: command.token };
    if (due) {
      removeLease(this.s, lease, true);
      const decided: WaiterDecision[] = [];
      handOff(this.s, command.key, index, decided);
      if (decided.length > 0) result.decided = decided;
    }
    return result;
  }

  /** An operator ends a hold (SPEC "Revoke"): as if it ran out, but with no lock-delay — the key goes to
   *  its line at once; the revoked holder's writes are refused by the resource once the next is granted. A
   *  hold that had run out already ends as its expiry would, into its lock-delay (endsExpired, level 5).
   *  A revoke with a request id (tag 23, level 5) is remembered like any mutation: a retry of it answers its
   *  first outcome and ends nothing, not even a hold granted since (the header's `revoke`). */
  private revoke(index: number, command: RevokeCommand): RevokeResult | ErrorResult {
    const owner = command.owner ?? '';
    if (command.requestId !== undefined) {
      if (this.clusterLevelValue < LEVEL_REVOKE_ONCE) {
        // A snapshot below level 5 has no place for a revoke's record: replicas restored from one would
        // disagree with those that applied it.
        return {
          type: 'error',
          index,
          code: 'CLUSTER_LEVEL',
          message: `a revoke with a request id needs cluster level ${LEVEL_REVOKE_ONCE} (every member upgraded); the cluster is at ${this.clusterLevelValue}`,
        };
      }
      const replay = this.replay(index, 'revoke', owner, command.requestId, command.key, command.token);
      if (replay !== null) return replay as RevokeResult | ErrorResult;
    }
    const group = this.s.groups.get(command.key);
    const result = group !== undefined ? revokeInGroup(this.s, index, command, group) : this.revokeMutex(index, command);
    if (command.requestId !== undefined)
      this.s.remember(
        { owner, requestId: command.requestId, key: command.key },
        { type: 'revoke', outcome: { revoked: result.revoked }, token: command.token },
      );
    return result;
  }

  private revokeMutex(index: number, command: RevokeCommand): RevokeResult {
    const lease = this.s.leaseOf(command.key);
    const result: RevokeResult = { type: 'revoke', index, replayed: false, key: command.key, revoked: [] };
    if (lease === undefined || (command.token !== 0n && BigInt(lease.fencingToken) !== command.token)) return result;
    result.revoked.push(BigInt(lease.fencingToken));
    removeLease(this.s, lease, endsExpired(this.s, lease, false), 'REVOKED');
    const decided: WaiterDecision[] = [];
    handOff(this.s, command.key, index, decided);
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  /** Why renew/release by (owner, token) is refused; 'UNSPECIFIED' when it may proceed. */
  private refusal(lease: Lease | undefined, request: { owner: string; token: bigint }, mustBeLive: boolean): RefusalReason {
    if (lease === undefined) return 'NOT_HELD';
    if (lease.owner !== request.owner) return 'WRONG_OWNER';
    if (BigInt(lease.fencingToken) !== request.token) return 'WRONG_TOKEN';
    if (mustBeLive && !lease.isLiveAt(this.s.logNowMs)) return 'EXPIRED';
    return 'UNSPECIFIED';
  }

  // ---- events (events.ts) ----

  // ---- request_id dedup ----

  /**
   * From cluster level 6: an acquire's record stays while its owner holds the key — the hold it granted, or
   * one that superseded it (an owner has one hold a key) — so a copy of it, however late, replays instead of
   * superseding a hold its client trusts (versions.ts, level 6). A record stays only while its hold does:
   * the records kept are bounded by the holds and by the requests each owner made while holding.
   */
  private readonly keepAcquireRecord = (record: DedupRecord): boolean => {
    if (record.type !== 'acquire') return false;
    const group = this.s.groups.get(record.key);
    if (group !== undefined) return group.holdOf(record.owner) !== undefined;
    return this.s.leases.get(record.key)?.owner === record.owner;
  };

  /** The remembered outcome for a retried request, an error if the request id was used for something else,
   *  or null when the request is new (or carries no request id). */
  private replay(index: number, type: DedupOperation, owner: string, requestId: string, key: string, token: bigint): LockResult | null {
    if (requestId === '') return null;
    const record = this.s.dedup.find(owner, requestId);
    if (record === undefined) return null;
    if (!sameRequest(record, type, key, token)) {
      return {
        type: 'error',
        index,
        code: 'REQUEST_ID_REUSED',
        message:
          `request_id ${JSON.stringify(requestId)} of owner ${JSON.stringify(owner)} was first used for ` +
          `${record.type} of key ${JSON.stringify(record.key)}${recordedTerms(record, type, key, token)}; ` +
          `use a new request_id for a different request`,
      };
    }
    switch (record.type) {
      case 'acquire':
        return { type: 'acquire', index, replayed: true, ...record.outcome };
      case 'renew':
        return { type: 'renew', index, replayed: true, ...record.outcome };
      case 'release':
        return { type: 'release', index, replayed: true, key, ...record.outcome };
      case 'revoke':
        return { type: 'revoke', index, replayed: true, key, revoked: record.outcome.revoked };
    }
  }
}

/** What the remembered request named besides its key, and (same type and key: other acquire terms) what
 *  this one asks, for REQUEST_ID_REUSED's message. */
function recordedTerms(record: DedupRecord, type: DedupOperation, key: string, token: bigint): string {
  if (record.type !== 'acquire') return ` token ${record.token}`;
  if (record.token === 0n) return '';
  const first = ` (${describeAcquireTerms(record.token)})`;
  return type === 'acquire' && record.key === key ? `${first}, this one asks ${describeAcquireTerms(token)}` : first;
}

function malformed(index: number, message: string): ErrorResult {
  return { type: 'error', index, code: 'MALFORMED_COMMAND', message };
}
