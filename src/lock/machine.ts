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
//            index is). A same-owner re-acquire supersedes the old token.
//   renew    needs a lease with the same owner and token, not yet expired. Refusal reasons are checked in
//            this order: NOT_HELD (no lease at all) > WRONG_OWNER > WRONG_TOKEN > EXPIRED.
//   release  needs the same owner and token. An expired lease that no `expire` entry has removed yet can
//            still be released by its owner+token: removing it is what expire would do anyway, and it lets
//            a slow client clean up. Reasons: NOT_HELD > WRONG_OWNER > WRONG_TOKEN (never EXPIRED).
//   expire   removes the lease only if it still has that token and its deadline has passed.
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
//   ran      `memberRan` records that a Raft member has run (from level 2; before, it changes nothing): the
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
//            A release ends a hold without a delay. Waiters stay in line; `undelay` (proposed by the leader
//            once the delay has passed) ends it and hands the key to the line.
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
import { CommandDecodeError, decodeCommand, isGroupAcquire, wireLimitViolation } from './commands.js';
import { GroupHold, KeyGroup, limitOf } from './holds.js';
import { UnknownCommandError } from './commands.js';
import type { HandOffCommand, AcquireCommand, ClusterLevelCommand, MemberRanCommand, CloseSessionCommand, DequeueCommand, ExpireCommand, ExpireSessionCommand, ForgetCommand, LockCommand, OpenSessionCommand, ReleaseCommand, RenewCommand, RenewSessionCommand, RevokeCommand, UndelayCommand } from './commands.js';
import { Session, type DueSession } from './session.js';
import { KeyDelays, type DueDelay } from './key-delays.js';
import { WaitLines, Waiter, type DueWaiter } from './wait-line.js';
import { DeadlineHeap, EndByHeap } from './deadline-heap.js';
import { carryLease, endByMs } from './epoch.js';
import type { LeaseCarryOver, LeaseEpoch, LeaseTimes } from './epoch.js';
import { DedupTable, sameRequest } from './dedup.js';
import type { DedupOperation, DedupRecord } from './dedup.js';
import { fingerprint64 } from './digest.js';
import { FreeKeys } from './free-keys.js';
import { KeyBuckets } from './key-buckets.js';
import { Lease } from './lease.js';
import type { LockEventKind, LockEventSink } from './events.js';
import { SnapshotDecodeError, decodeState } from './snapshot.js';
import { SNAPSHOT_SLICE_ITEMS, SnapshotWriter } from './snapshot-writer.js';
import { DEFAULT_LOCK_MACHINE_OPTIONS } from './types.js';
import { BASE_LEVEL, LEVEL_CLOCK_PROGRESS, LEVEL_MANY_HOLDERS } from './versions.js';
import type {
  AcquireOutcome,
  AcquireResult,
  DequeueResult,
  DueLease,
  ErrorResult,
  HandOffResult,
  HolderView,
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
  OpenSessionResult,
  RenewSessionResult,
  SessionEndResult,
  UndelayResult,
  WaiterDecision,
} from './types.js';

/** A snapshot being written in slices (LockMachine.beginSnapshot). */
export interface SnapshotJob {
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

/** An owner's lease count, and the copy of its name its leases share. */
interface OwnerLeases {
  readonly name: string;
  leases: number;
}

export class LockMachine {
  readonly options: Readonly<LockMachineOptions>;
  private appliedIndexValue = 0;
  private logNowMs = 0;
  private epochTermValue = 0;
  private epochStartMsValue = 0;
  /** The cluster level (versions.ts): what the entries may use. Only a clusterLevel entry raises it. */
  private clusterLevelValue = BASE_LEVEL;
  /** From level 2: the highest stamp applied in the current term; log time advances by a stamp's progress
   *  past it (see the header's `time`). */
  private termLastStampMs = 0;
  /** Raft members recorded as having run (see the header's `ran`). */
  private readonly ranMembers = new Set<string>();
  /** Keys with a lease (live, or past its deadline and awaiting an expire entry). */
  private readonly leases = new KeyBuckets<Lease>();
  /**
   * Keys that had a lease once and have none now, with the highest token ever issued for them (GetResponse
   * .last_token survives release). A key is in exactly one of `leases` / `freeKeyLastTokens`, so a held
   * key keeps its last token in the lease itself. Memory, measured with 16-character keys on Node 20: a held
   * lease ~225 bytes (Lease object, key and owner strings, Map entry, heap slot); a free key ~72 bytes (Map
   * entry + key string, + ~32 for the record). Kept until a `forget` entry drops them (see the header).
   * Insertion order is freeing order, so freedAtMs never decreases along it (log time is monotone, and a key
   * is re-inserted, at the end, each time it is freed); forget() relies on that to stop at the first newer
   * key. After a restore the order is (freedAtMs, key): equal times may sit in another order than on a
   * replica that applied them, which is why forget() cuts by time only, never by a count. (FreeKeys keeps
   * that order in a FIFO beside its hash buckets.)
   */
  private readonly freeKeyLastTokens = new FreeKeys();
  /** At least the last token of every key forgotten so far; the last_token of any key without a record. */
  private forgottenWatermark = 0;
  /** Leases (live or awaiting their expire) per owner, for the leader's maxHeldPerOwner admission. Derived
   *  from `leases`, so not in the snapshot. */
  private readonly leasesByOwner = new Map<string, OwnerLeases>();
  private readonly deadlines = new DeadlineHeap();
  /**
   * Term starts are applied to leases lazily (issue 19: walking a million leases at every term start held
   * every node's event loop 0.6-2.3 s at once, long enough for the next election, whose term start did it
   * again). `epochs` lists every term start since the state was restored; a lease has seen the first
   * `lease.epochsSeen` of them and gets the rest when it is next read or changed (settle). What stays exact
   * without a walk:
   *  - the deadline heap: an epoch only moves a live lease's deadline later unless it ends it, so an unsettled
   *    lease's stored deadline is a lower bound and expiredLeases() settles what it finds due before answering;
   *  - the leases an epoch ENDS: those live at P whose endBy (epoch.ts endByMs) is <= P. Every epoch shifts the
   *    endBy of every lease it does not end by the same T - P, so the EndByHeap keeps endBy minus the sum of
   *    those shifts (epochShiftMs) and a term start pops exactly the leases it ends, and settles them at once.
   */
  private readonly epochs: LeaseEpoch[] = [];
  private epochShiftMs = 0;
  /** Bytes per item (snapshotItems) of the last sliced snapshot: the next one's buffer is sized by it. */
  private snapshotBytesPerItem = 0;
  private readonly endBy = new EndByHeap();
  private readonly dedup: DedupTable;
  /** Who waits for which key, in log order (see the header's `wait`). */
  private readonly lines = new WaitLines();
  /** Lock-delays: of the current holds that carry one, and of keys in one (see the header's `delay`). */
  private readonly delays = new KeyDelays();
  /** The value of every current hold that has one (AcquireRequest.value; returned by Get). */
  private readonly holdValues = new Map<string, Uint8Array>();
  /** Open sessions (and run-out ones awaiting the entry that ends them), by id. Bounded by the leader's
   *  admission (limits.maxSessions). Their own deadline and end-by heaps: a session's expiry is its own
   *  entry (expireSession), and a term start ends the ones it provably outlived, like leases. */
  private readonly sessions = new Map<number, Session>();
  private readonly sessionsByRequest = new Map<string, Session>();
  private readonly sessionDeadlines = new DeadlineHeap();
  private readonly sessionEndBy = new EndByHeap();
  /** Leases that live under a session (not in the lease heaps). */
  private sessionHoldCount = 0;
  /** Keys with many holds (holds.ts; the header's `many`). A key is in at most one of `leases`, `groups`
   *  and `freeKeyLastTokens`. */
  private readonly groups = new Map<string, KeyGroup>();
  /** Holds of every group, and those of them under a session. */
  private groupHoldCount = 0;
  private groupSessionHoldCount = 0;
  /** Groups with someone in line: the candidates for a `handOff` (grantableKeys judges each when asked, at
   *  the asker's time, so what it answers depends on the state alone). Derived (rebuilt by restore), so not
   *  in the snapshot; bounded by the waiters. */
  private readonly groupsInLine = new Set<string>();
  /** The sliced snapshot being written, if any: told before every change of a key or of every lease. */
  private writer: SnapshotWriter | null = null;
  /** Where the changes go as entries apply (events.ts, Watch); null = nobody listens, nothing is built. */
  eventSink: LockEventSink | null = null;

  constructor(options: Partial<LockMachineOptions> = {}) {
    this.options = Object.freeze({ ...DEFAULT_LOCK_MACHINE_OPTIONS, ...options });
    this.dedup = new DedupTable(this.options.dedupWindowMs, this.options.dedupMaxEntries);
  }

  /** Index of the last entry applied or skipped. */
  get appliedIndex(): number {
    return this.appliedIndexValue;
  }

  /** Current log time (ms): the latest leader stamp applied, never decreasing. */
  get nowMs(): number {
    return this.logNowMs;
  }

  /** The cluster level: the entry kinds and rules the cluster uses (versions.ts). */
  get clusterLevel(): number {
    return this.clusterLevelValue;
  }

  /**
   * Log time as the current term's leader would stamp it now, from the leader's clock reading `clockMs`:
   * for the leader's housekeeping (which leases, waits, sessions, delays are due). At level 2 the term's log
   * time runs at the leader's clock from the last stamp, so a leader whose clock is behind log time still
   * finds leases due on time; at level 1 it is max(clock, log time), as log time itself is. Another node's
   * clock gives a wrong answer only in liveness: every expiry is judged again by the entry that applies it.
   */
  projectedNowMs(clockMs: number): number {
    if (this.clusterLevelValue >= LEVEL_CLOCK_PROGRESS) return this.logNowMs + Math.max(0, clockMs - this.termLastStampMs);
    return Math.max(clockMs, this.logNowMs);
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
    return this.leases.size + this.groupHoldCount;
  }

  get dedupSize(): number {
    return this.dedup.size;
  }

  /** Every key record the machine keeps: leases and free keys (limits.maxKeys counts these). */
  get keyCount(): number {
    return this.leases.size + this.groups.size + this.freeKeyLastTokens.size;
  }

  get freeKeyCount(): number {
    return this.freeKeyLastTokens.size;
  }

  /** See `forgottenWatermark`. */
  get lastTokenWatermark(): bigint {
    return BigInt(this.forgottenWatermark);
  }

  /** How many owners have a lease (live or awaiting its expire entry): one record each, none kept for an
   *  owner whose last lease ended (a stream of one-off owners must not grow the machine). */
  get ownersWithLeases(): number {
    return this.leasesByOwner.size;
  }

  /** Leases (live or awaiting their expire entry) whose owner is `owner`. */
  leaseCountOf(owner: string): number {
    return this.leasesByOwner.get(owner)?.leases ?? 0;
  }

  /** Open sessions (including run-out ones whose ending entry has not applied yet). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** The session `id` as it is now (owner, holds, whether live by log time), or undefined. */
  sessionInfo(id: number): { owner: string; holds: number; waiters: number; live: boolean; ttlMs: number; expiresAtMs: number } | undefined {
    const session = this.sessionOf(id);
    if (session === undefined) return undefined;
    return { owner: session.owner, holds: session.holds.size + session.groupHolds.size, waiters: session.waiters.size, live: session.isLiveAt(this.logNowMs), ttlMs: session.ttlMs, expiresAtMs: session.leaseDeadlineMs };
  }

  /** Every open session (and run-out ones awaiting their end), by id: an inspection for operators (List)
   *  and for the simulator's oracle. O(sessions). */
  sessionList(): { id: number; owner: string; live: boolean; ttlMs: number; expiresAtMs: number; holds: number }[] {
    return [...this.sessions.keys()].sort((a, b) => a - b).map((id) => ({ id, ...this.sessionInfo(id)! }));
  }

  /** Up to `limit` sessions whose deadline is <= max(nowMs, log time), earliest first, for the leader to
   *  propose `expireSession {sessionId}`. Each stays in the answer until that entry applies. */
  dueSessions(nowMs: number, limit: number): DueSession[] {
    const atMs = this.projectedNowMs(nowMs);
    this.settleDue(atMs, this.sessionDeadlines);
    return this.sessionDeadlines.due(atMs, limit).map((session) => ({ sessionId: BigInt(session.fencingToken), deadlineMs: session.leaseDeadlineMs }));
  }

  /** Requests in every wait line. */
  get waiterCount(): number {
    return this.lines.size;
  }

  /** Requests in `key`'s wait line. */
  waiterCountOf(key: string): number {
    return this.lines.countFor(key);
  }

  /** Where (owner, request_id) waits, if it does: its key and ticket. */
  waiterFor(owner: string, requestId: string): { key: string; ticket: number } | undefined {
    const w = this.lines.byRequestOf(owner, requestId);
    return w === undefined ? undefined : { key: w.key, ticket: w.ticket };
  }

  /** Whether the waiter with this ticket is still in `key`'s line. */
  isWaiting(key: string, ticket: number): boolean {
    return this.lines.get(key, ticket) !== undefined;
  }

  /** The value of `key`'s current hold, if it has one. */
  valueOf(key: string): Uint8Array | undefined {
    const group = this.groups.get(key);
    if (group !== undefined) return this.firstLiveOf(group)?.value ?? undefined;
    return this.holdValues.get(key);
  }

  /** Up to `limit` keys with many holds whose line's head fits at log time (the entry that made room could
   *  grant only one head), for the leader to propose `handOff`. A read: holds are judged on settled copies
   *  of nothing — fits() reads each hold's deadline, and an unsettled deadline is a lower bound (a head may
   *  be offered early; the handOff entry judges it again). O(groups in line x their holds). */
  grantableKeys(limit: number): string[] {
    const keys: string[] = [];
    const nowMs = this.logNowMs;
    for (const key of this.groupsInLine) {
      if (keys.length >= limit) break;
      const group = this.groups.get(key);
      const head = this.lines.head(key);
      if (group === undefined || head === undefined || this.delays.leftMs(key, nowMs) > 0) continue;
      if (group.fits(head, nowMs, group.holdOf(head.owner))) keys.push(key);
    }
    return keys;
  }

  /** Log time left in `key`'s lock-delay (0 = none). */
  delayLeftMs(key: string): number {
    return this.delays.leftMs(key, this.logNowMs);
  }

  /** Up to `limit` keys whose lock-delay has passed by max(nowMs, log time), for the leader to propose
   *  `undelay {key}`. Each stays in the answer until that entry applies. */
  dueDelays(nowMs: number, limit: number): DueDelay[] {
    return this.delays.due(this.projectedNowMs(nowMs), limit);
  }

  /** Up to `limit` waiters whose wait deadline is <= max(nowMs, log time), earliest first, for the leader to
   *  propose `dequeue {key, ticket, deadline}`. Each stays in the answer until that entry applies. */
  dueWaiters(nowMs: number, limit: number): DueWaiter[] {
    return this.lines.due(this.projectedNowMs(nowMs), limit);
  }

  /** The owner of `key`'s lease if it has one (live or awaiting its expire entry); null when it has a free
   *  record; undefined when the machine keeps no record of it. */
  recordOf(key: string): { owner: string } | null | undefined {
    // A key with many holds: each acquire may add a hold (admission counts it as a new lease).
    if (this.groups.has(key)) return null;
    const lease = this.leases.get(key);
    if (lease !== undefined) return { owner: lease.owner };
    return this.freeKeyLastTokens.has(key) ? null : undefined;
  }

  /** When the `n`-th oldest free key (1-based) was freed, in log time; undefined with fewer free keys. */
  freedAtOfOldest(n: number): number | undefined {
    return this.freeKeyLastTokens.freedAtOfOldest(n);
  }

  /**
   * Any lease present — live, or past its deadline and awaiting its `expire` entry. The leader proposes
   * checkpoints while this is true and the log is idle, so every term records how long it observed them.
   */
  hasLiveLeases(): boolean {
    return this.leases.size > 0 || this.sessions.size > 0 || this.groups.size > 0;
  }

  /** Apply one committed 'normal' entry. Malformed bytes become a no-op `error` result on every replica. */
  apply(index: number, term: number, data: Uint8Array): LockResult {
    this.checkNextIndex(index);
    let command: LockCommand;
    try {
      command = decodeCommand(data, this.options.readLevel);
    } catch (error) {
      if (!(error instanceof CommandDecodeError)) throw error;
      this.appliedIndexValue = index;
      return malformed(index, error.message);
    }
    return this.execute(index, term, command);
  }

  /** Apply an already-decoded command (simulator, tests). Checked against the same wire limits as decode. */
  applyCommand(index: number, term: number, command: LockCommand): LockResult {
    this.checkNextIndex(index);
    const violation = wireLimitViolation(command);
    if (violation !== null) {
      this.appliedIndexValue = index;
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
    const record = this.dedup.find(owner, requestId);
    if (record === undefined || record.type !== 'acquire' || record.key !== key) return null;
    return record.outcome;
  }

  /** Account for a committed entry that carries no lock command (raft 'noop' / 'config'). */
  skip(index: number): void {
    this.checkNextIndex(index);
    this.appliedIndexValue = index;
  }

  /** The lock state of `key` at the current log time (serve after a ReadIndex: appliedIndex >= readIndex). */
  get(key: string): LockView {
    const group = this.groups.get(key);
    if (group !== undefined) return this.groupView(group);
    const lease = this.leaseOf(key);
    if (lease !== undefined && lease.isLiveAt(this.logNowMs)) {
      const token = BigInt(lease.fencingToken);
      const view: LockView = {
        held: true,
        owner: lease.owner,
        token,
        ttlMs: lease.endsAtMs - this.logNowMs,
        expiresAtMs: lease.endsAtMs,
        lastToken: token,
      };
      if (lease.session !== null) view.sessionId = BigInt(lease.session.fencingToken);
      return view;
    }
    const lastToken = lease !== undefined ? lease.fencingToken : (this.freeKeyLastTokens.get(key)?.lastToken ?? this.forgottenWatermark);
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
    for (const key of this.leases.keys()) {
      // leaseOf settles the lease (term starts carried over) before it is judged.
      if (this.leaseOf(key)!.isLiveAt(this.logNowMs) || this.lines.countFor(key) > 0) consider(key);
    }
    for (const [key, group] of this.groups) if (this.firstLiveOf(group) !== undefined || this.lines.countFor(key) > 0) consider(key);
    for (const key of this.lines.keys()) if (!this.leases.has(key) && !this.groups.has(key)) consider(key);
    return page.sorted();
  }

  /**
   * Up to `limit` leases whose deadline is <= max(nowMs, log time), earliest first, for the leader to
   * propose `expire {key, token}` (stamped with its clock). O(k log k) via the deadline heap. A lease stays
   * in the answer until its expire entry applies, so the leader should remember what it has in flight.
   */
  expiredLeases(nowMs: number, limit: number): DueLease[] {
    const atMs = this.projectedNowMs(nowMs);
    this.settleDue(atMs, this.deadlines);
    return this.deadlines.due(atMs, limit).map((lease) => ({
      key: lease.key,
      token: BigInt(lease.fencingToken),
      deadlineMs: lease.leaseDeadlineMs,
    }));
  }

  /** Settles every lease whose stored deadline is <= `atMs`: then the deadline heap's due part is exact
   *  (a settled deadline only moves later, so what is still due afterwards is truly due). */
  private settleDue(atMs: number, heap: DeadlineHeap): void {
    const unsettled = (lease: Lease) => lease.epochsSeen !== this.epochs.length;
    for (;;) {
      const stale = heap.due(atMs, Number.MAX_SAFE_INTEGER, unsettled);
      if (stale.length === 0) return;
      for (const lease of stale) this.settle(lease);
    }
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
  beginSnapshot(sizeHint = 0, sliceItems = SNAPSHOT_SLICE_ITEMS): SnapshotJob {
    this.writer?.close();
    // A state that grew since the last snapshot (a fill) outgrew a hint of the last size: the buffer then
    // doubled by copying 40 MB and the result was copied again to its size (issue 19 profiles: 300-400 ms
    // of a node's stalls). The last snapshot's bytes per item, times the items now, sizes it well.
    const items = this.snapshotItems();
    const writer = this.openWriter(Math.max(sizeHint, Math.ceil(this.snapshotBytesPerItem * items)));
    this.writer = writer;
    const release = () => {
      writer.close();
      if (this.writer === writer) this.writer = null;
    };
    return {
      appliedIndex: this.appliedIndexValue,
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
    return this.leases.size + this.groupHoldCount + this.freeKeyLastTokens.size + this.dedup.size;
  }

  private openWriter(sizeHint: number): SnapshotWriter {
    const header = {
      appliedIndex: this.appliedIndexValue,
      nowMs: this.logNowMs,
      epochTerm: this.epochTermValue,
      epochStartMs: this.epochStartMsValue,
      forgottenWatermark: this.forgottenWatermark,
      clusterLevel: this.clusterLevelValue,
      termLastStampMs: this.clusterLevelValue >= LEVEL_CLOCK_PROGRESS ? this.termLastStampMs : 0,
      ranMembers: [...this.ranMembers].sort(),
    };
    return new SnapshotWriter(
      { header, leases: this.leases, freeKeys: this.freeKeyLastTokens, dedup: this.dedup, timesOf: this.timesAsOfNow(), waiters: this.lines, delays: this.delays, values: this.holdValues, sessions: this.sessions, groups: this.groups },
      sizeHint,
    );
  }

  /**
   * A lease's times as of now, for a snapshot opened now: its unseen epochs applied to a copy, the lease
   * untouched (a read must not change what a snapshot in progress has yet to copy). Epochs added later are
   * not applied: settle() copies a lease's section (beforeKeyWrite) before it applies one.
   */
  private timesAsOfNow(): (lease: Lease) => LeaseTimes {
    const epochs = this.epochs;
    const upTo = epochs.length;
    return (lease) => {
      if (lease.epochsSeen === upTo) return lease;
      if (lease.epochsSeen > upTo) throw new Error(`lease ${JSON.stringify(lease.key)} has seen epochs the snapshot has not`);
      const times: LeaseTimes = { ttlMs: lease.ttlMs, leaseDeadlineMs: lease.leaseDeadlineMs, observedMs: lease.observedMs, observeFromMs: lease.observeFromMs };
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
    const state = decodeState(bytes, machine.dedup.restoreSink(), machine.options.readLevel);
    machine.appliedIndexValue = state.appliedIndex;
    machine.clusterLevelValue = state.clusterLevel;
    machine.termLastStampMs = state.termLastStampMs;
    for (const id of state.ranMembers) machine.ranMembers.add(id);
    machine.logNowMs = state.nowMs;
    machine.epochTermValue = state.epochTerm;
    machine.epochStartMsValue = state.epochStartMs;
    machine.forgottenWatermark = state.forgottenWatermark;
    for (const session of state.sessions) {
      machine.sessions.set(session.id, session);
      if (session.requestId !== '') machine.sessionsByRequest.set(requestKeyOf(session.owner, session.requestId), session);
      session.endByKey = endByMs(session);
    }
    machine.sessionDeadlines.pushAll(state.sessions);
    machine.sessionEndBy.pushAll(state.sessions);
    for (const lease of state.leases) {
      machine.leases.set(lease.key, lease);
      lease.owner = machine.countOwner(lease.owner, 1);
    }
    for (const [key, sessionId] of state.sessionHolds) {
      const lease = machine.leases.get(key);
      const session = machine.sessions.get(sessionId);
      if (lease === undefined || session === undefined || lease.owner !== session.owner) {
        throw new SnapshotDecodeError(`key ${JSON.stringify(key)} is held under session ${sessionId}, which it cannot be`, bytes.length);
      }
      lease.session = session;
      session.holds.add(key);
      machine.sessionHoldCount++;
    }
    const ownTimes = state.leases.filter((lease) => lease.session === null);
    machine.deadlines.pushAll(ownTimes);
    for (const lease of ownTimes) lease.endByKey = endByMs(lease);
    machine.endBy.pushAll(ownTimes);
    // In freeing-time order (ties by key), the order forget() walks; see freeKeyLastTokens.
    const free = state.freeKeys.sort((a, b) => a.freedAtMs - b.freedAtMs || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { key, lastToken, freedAtMs } of free) {
      if (machine.leases.has(key)) {
        throw new SnapshotDecodeError(`key ${JSON.stringify(key)} is both held and free`, bytes.length);
      }
      machine.freeKeyLastTokens.free(key, lastToken, freedAtMs);
    }
    for (const [key, lockDelayMs] of state.holdDelays) {
      if (!machine.leases.has(key)) throw new SnapshotDecodeError(`key ${JSON.stringify(key)} has a hold's lock-delay but no lease`, bytes.length);
      machine.delays.setHoldDelay(key, lockDelayMs);
    }
    for (const [key, untilMs] of state.keyDelays) machine.delays.delayKey(key, untilMs);
    for (const [key, value] of state.holdValues) {
      if (!machine.leases.has(key)) throw new SnapshotDecodeError(`key ${JSON.stringify(key)} has a hold's value but no lease`, bytes.length);
      machine.holdValues.set(key, value);
    }
    for (const group of state.groups) {
      if (machine.leases.has(group.key) || machine.freeKeyLastTokens.has(group.key)) {
        throw new SnapshotDecodeError(`key ${JSON.stringify(group.key)} has many holds and another record`, bytes.length);
      }
      machine.groups.set(group.key, group);
      for (const hold of group.holds) {
        hold.owner = machine.countOwner(hold.owner, 1);
        machine.groupHoldCount++;
        const sessionId = state.groupHoldSessions.get(hold) ?? 0;
        if (sessionId > 0) {
          const session = machine.sessions.get(sessionId);
          if (session === undefined || session.owner !== hold.owner) throw new SnapshotDecodeError(`a hold of ${JSON.stringify(group.key)} is under session ${sessionId}, which it cannot be`, bytes.length);
          hold.session = session;
          session.groupHolds.add(hold);
          machine.groupSessionHoldCount++;
        } else {
          machine.deadlines.push(hold);
          hold.endByKey = endByMs(hold);
          machine.endBy.push(hold);
        }
      }
    }
    for (const w of state.waiters) {
      // The machine's invariant: a key has waiters only while it has a lease, many holds, or is in lock-delay.
      if (!machine.leases.has(w.key) && !machine.groups.has(w.key) && machine.delays.untilMs(w.key) === undefined) {
        throw new SnapshotDecodeError(`key ${JSON.stringify(w.key)} has waiters but neither a lease nor a lock-delay`, bytes.length);
      }
      if (machine.lines.byRequestOf(w.owner, w.requestId) !== undefined) {
        throw new SnapshotDecodeError(`request ${JSON.stringify(w.requestId)} of ${JSON.stringify(w.owner)} waits twice`, bytes.length);
      }
      if (w.sessionId > 0 && machine.sessions.get(w.sessionId)?.owner !== w.owner) {
        throw new SnapshotDecodeError(`a waiter for key ${JSON.stringify(w.key)} is under session ${w.sessionId}, which it cannot be`, bytes.length);
      }
      machine.joinLine(w);
    }
    for (const group of machine.groups.values()) machine.markGrantable(group);
    return machine;
  }

  // ---- applying ----

  private checkNextIndex(index: number): void {
    if (index !== this.appliedIndexValue + 1) {
      throw new LockApplyOrderError(`expected entry ${this.appliedIndexValue + 1}, got ${index}: entries must be applied (or skipped) in order, once`);
    }
  }

  private execute(index: number, term: number, command: LockCommand): LockResult {
    this.appliedIndexValue = index;
    const epoch = term > this.epochTermValue ? this.startLeaseEpoch(term, command.timeMs) : null;
    if (epoch === null) this.advanceLogTime(command.timeMs);
    this.dedup.prune(this.logNowMs);
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
        return this.dequeue(index, command);
      case 'undelay':
        return this.undelay(index, command);
      case 'handOff':
        return this.handOffEntry(index, command);
      case 'openSession':
        return this.openSession(index, command);
      case 'renewSession':
        return this.renewSession(index, command);
      case 'closeSession':
      case 'expireSession':
        return this.sessionEnd(index, command);
      case 'revoke':
        return this.revoke(index, command);
    }
  }

  /** Log time after an entry of the current term stamped `stampMs` (see the header's `time`). */
  private advanceLogTime(stampMs: number): void {
    if (this.clusterLevelValue < LEVEL_CLOCK_PROGRESS) {
      this.logNowMs = Math.max(this.logNowMs, stampMs);
      return;
    }
    // max(0, …): a stamp below the term's last one (a clock that stepped back) adds nothing.
    this.logNowMs += Math.max(0, stampMs - this.termLastStampMs);
    this.termLastStampMs = Math.max(this.termLastStampMs, stampMs);
  }

  private raiseClusterLevel(index: number, command: ClusterLevelCommand): ClusterLevelResult {
    if (command.level > this.options.readLevel) {
      // The cluster moved to rules this build does not know: applying more entries could misapply them.
      throw new UnknownCommandError(19, this.options.readLevel, `cluster level ${command.level} (entry ${index})`);
    }
    if (command.level > this.clusterLevelValue) {
      this.clusterLevelValue = command.level;
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
    this.freeKeyLastTokens.forgetUpTo(command.upToMs, (free) => {
      this.writer?.beforeKeyWrite(free.key);
      if (free.lastToken > this.forgottenWatermark) this.forgottenWatermark = free.lastToken;
      forgotten++;
    });
    return { type: 'forget', index, forgotten, watermark: BigInt(this.forgottenWatermark) };
  }

  /** Counts a lease in (+1) or out (-1) of `owner`'s, and returns the one copy of the owner's name every
   *  lease of that owner shares: each acquire decodes its own copy of the string, and a million leases of a
   *  few owners kept a million copies (30-40 MB of a 1M fill; a restored state shared them already). */
  private countOwner(owner: string, delta: 1 | -1): string {
    const counted = this.leasesByOwner.get(owner);
    if (counted === undefined) {
      if (delta > 0) this.leasesByOwner.set(owner, { name: owner, leases: 1 });
      return owner;
    }
    counted.leases += delta;
    if (counted.leases <= 0) this.leasesByOwner.delete(owner);
    return counted.name;
  }

  /**
   * The first entry of a higher raft term (normally the new leader's termStart) starts a lease epoch: live
   * leases are carried into the new term by the rule in epoch.ts (safety argument: LEASES.md). Keyed on the
   * entry's raft term rather than on the termStart command, so a driver that forgets to lead with termStart
   * still gets a correct epoch at its first entry. T = max(P, stamp) keeps log time monotone.
   */
  private startLeaseEpoch(term: number, stampedMs: number): LeaseCarryOver {
    const previousTermEndMs = this.logNowMs;
    const epochStartMs = Math.max(previousTermEndMs, stampedMs);
    const carried = this.startEpoch({ previousTermEndMs, epochStartMs });
    this.epochTermValue = term;
    this.epochStartMsValue = epochStartMs;
    this.logNowMs = epochStartMs;
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
    this.settleDue(P, this.deadlines);
    const expiredAtP = this.deadlines.due(P, Number.MAX_SAFE_INTEGER).length;
    const ending = this.endingAt(P, this.endBy);
    const endingSessions = this.endingAt(P, this.sessionEndBy);
    this.epochs.push(epoch);
    this.epochShiftMs += epoch.epochStartMs - P;
    for (const lease of ending) this.settle(lease); // ends it: deadline min(deadline, T)
    for (const session of endingSessions) this.settle(session);
    const ownLeases = this.leases.size - this.sessionHoldCount + this.groupHoldCount - this.groupSessionHoldCount;
    return { extended: ownLeases - expiredAtP - ending.length, ended: ending.length };
  }

  /** The leases (or sessions) of `heap` that an epoch whose previous term ended at P ends: popped from it. */
  private endingAt(P: number, heap: EndByHeap): Lease[] {
    const ending: Lease[] = [];
    for (let top = heap.peek(); top !== undefined && top.endByKey + this.epochShiftMs <= P; top = heap.peek()) {
      heap.remove(top);
      this.settle(top); // the epochs before this one
      if (!top.isLiveAt(P)) continue; // already expired: no epoch touches it until a grant or renew re-adds it
      if (endByMs(top) <= P) ending.push(top);
      else this.granted(top); // cannot happen while the shift rule holds; re-filed with its true endBy
    }
    return ending;
  }

  private acquire(index: number, command: AcquireCommand): AcquireResult | ErrorResult {
    const replay = this.replay(index, 'acquire', command.owner, command.requestId, command.key, 0n);
    const waitingRefusal = command.queued === true && replay !== null && replay.type === 'acquire' && !replay.acquired;
    if (replay !== null && !waitingRefusal) return replay as AcquireResult | ErrorResult;
    const nowMs = this.logNowMs;
    // A retry of a request already in line keeps its place and its wait deadline (SPEC: it re-attaches).
    const inLine = this.lines.byRequestOf(command.owner, command.requestId);
    if (inLine !== undefined) {
      if (inLine.key !== command.key) return this.reusedInLine(index, inLine, command.key);
      return { type: 'acquire', index, replayed: true, ...this.refusalBy(this.leaseOf(command.key), nowMs), waitTicket: inLine.ticket };
    }
    let session: Session | null = null;
    if ((command.sessionId ?? 0) > 0) {
      const named = this.sessionOf(command.sessionId!);
      if (named === undefined || !named.isLiveAt(nowMs)) return sessionError(index, 'SESSION_NOT_OPEN', `session ${command.sessionId} is not open (closed, ran out, or never opened); open a new one`);
      if (named.owner !== command.owner) return sessionError(index, 'SESSION_OWNER_MISMATCH', `owner ${JSON.stringify(command.owner)} is not the owner of session ${command.sessionId}`);
      session = named;
    }
    if (isGroupAcquire(command) && this.clusterLevelValue < LEVEL_MANY_HOLDERS) {
      // A snapshot below level 3 has no place for many holds: replicas restored from one would disagree.
      return { type: 'error', index, code: 'CLUSTER_LEVEL', message: `limit/shared: semaphores and shared holds need cluster level ${LEVEL_MANY_HOLDERS} (every member upgraded); the cluster is at ${this.clusterLevelValue}` };
    }
    if (isGroupAcquire(command) || this.groups.has(command.key)) return this.acquireOfMany(index, command, session);
    const decided: WaiterDecision[] = [];
    let lease = this.leaseOf(command.key);
    const delayedUntilMs = this.delays.untilMs(command.key);
    if (delayedUntilMs !== undefined && delayedUntilMs <= nowMs) {
      // The key's lock-delay has passed but no undelay entry has ended it yet: this one does, and hands the
      // key to the line first (a newcomer overtook the line here: lock simulation seeds 5147, 5350, 5883).
      this.delays.undelay(command.key);
      if (lease === undefined) this.handOff(command.key, index, decided);
      lease = this.leaseOf(command.key);
    }
    if (lease !== undefined && lease.session !== null && !lease.isLiveAt(nowMs)) {
      // The hold ahead lives under a session that ran out, and no entry has ended it yet: this one ends the
      // whole session (each of its keys handed to its line), as its expireSession would.
      this.endSession(lease.session as Session, true, index, decided);
      lease = this.leaseOf(command.key);
    }
    if (lease !== undefined && !lease.isLiveAt(nowMs) && (this.lines.countFor(command.key) > 0 || this.delays.holdDelayOf(command.key) > 0)) {
      // The hold ahead ran out and no entry has ended it yet: this one does — into its lock-delay if it
      // carries one, else handing the key to the line first, so a newcomer never overtakes a waiter.
      this.removeLease(lease, true);
      this.handOff(command.key, index, decided);
      lease = this.leaseOf(command.key);
    }
    // A hand-off above reached a shared head: the key has many holds now, and this request is judged as one
    // of them (a mutex lease beside the group would be a second record of the key).
    if (this.groups.has(command.key)) return this.acquireOfMany(index, command, session, decided);
    const delayLeftMs = this.delays.leftMs(command.key, nowMs);
    // In lock-delay, held by another, or handed to a waiter in this very entry (whose token is this index:
    // a same-owner supersede would reuse it).
    const blocked = delayLeftMs > 0 || (lease !== undefined && lease.isLiveAt(nowMs) && (lease.owner !== command.owner || lease.fencingToken === index));
    let outcome: AcquireOutcome;
    let waitTicket: number | undefined;
    if (blocked) {
      outcome = this.refusalBy(lease, nowMs);
      if ((command.waitMs ?? 0) > 0) {
        // In line: not an answer yet, so nothing is remembered; the entry that decides it remembers that.
        const w = new Waiter(command.key, index, this.ownerName(command.owner), command.ttlMs, command.requestId, nowMs + command.waitMs!, command.lockDelayMs ?? 0, command.value ?? null, session?.id ?? 0);
        this.joinLine(w);
        if (this.eventSink !== null) this.emit('QUEUED', w.key, w.owner, 0n, w.sessionId, w.value, w.shared);
        waitTicket = index;
      }
    } else {
      lease = this.hold(command.key, lease, command.owner, index, command.ttlMs, command.lockDelayMs ?? 0, command.value ?? null, session);
      outcome = grantedOutcome(lease);
    }
    if (waitTicket === undefined) this.remember(command, { type: 'acquire', outcome, token: 0n });
    const result: AcquireResult = { type: 'acquire', index, replayed: false, ...outcome };
    if (waitTicket !== undefined) result.waitTicket = waitTicket;
    if (blocked && delayLeftMs > 0) result.delayMsLeft = delayLeftMs;
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  /** Grants `key` to `owner` with token `index` at log time now: a new lease, or `lease` re-granted; under
   *  `session` when given (then the hold keeps no times of its own and is in neither lease heap). */
  private hold(key: string, lease: Lease | undefined, ownerName: string, index: number, ttlMs: number, lockDelayMs: number, value: Uint8Array | null, session: Session | null = null): Lease {
    // A hold that ran out and is re-granted in place ends here (a live one superseded by its own owner
    // does not: the new ACQUIRED replaces it).
    if (this.eventSink !== null && lease !== undefined && !lease.isLiveAt(this.logNowMs)) {
      this.emit('EXPIRED', key, lease.owner, BigInt(lease.fencingToken), sessionIdOf(lease), this.holdValues.get(key) ?? null);
    }
    if (value !== null && value.length > 0) this.holdValues.set(key, value);
    else this.holdValues.delete(key);
    if (session !== null && lockDelayMs === 0) lockDelayMs = session.lockDelayMs;
    this.delays.setHoldDelay(key, lockDelayMs);
    const nowMs = this.logNowMs;
    this.writer?.beforeKeyWrite(key);
    if (lease === undefined) {
      this.freeKeyLastTokens.delete(key);
      const owner = this.countOwner(ownerName, 1);
      lease = new Lease(key, owner, index, ttlMs, nowMs + ttlMs, 0, nowMs);
      this.leases.set(key, lease);
      if (session === null) this.deadlines.push(lease);
    } else {
      let owner = lease.owner;
      if (owner !== ownerName) {
        this.countOwner(owner, -1);
        owner = this.countOwner(ownerName, 1);
      }
      this.detachFromSession(lease);
      lease.grant(owner, index, ttlMs, nowMs);
      if (session !== null) {
        this.deadlines.remove(lease);
        this.endBy.remove(lease);
      } else if (lease.heapIndex >= 0) {
        this.deadlines.update(lease);
      } else {
        this.deadlines.push(lease);
      }
    }
    if (session !== null) {
      lease.session = session;
      session.holds.add(key);
      this.sessionHoldCount++;
      lease.epochsSeen = this.epochs.length;
    } else {
      this.granted(lease);
    }
    if (this.eventSink !== null) this.emit('ACQUIRED', key, lease.owner, BigInt(index), session?.id ?? 0, value !== null && value.length > 0 ? value : null);
    return lease;
  }

  /** `lease` no longer lives under its session (released, superseded, or its session ended). */
  private detachFromSession(lease: Lease): void {
    const session = lease.session as Session | null;
    if (session === null) return;
    session.holds.delete(lease.key);
    lease.session = null;
    this.sessionHoldCount--;
  }

  /**
   * `key`'s hold just ended in entry `index`: the first waiter still within its wait deadline gets the key,
   * with token `index`; the ones before it whose deadline passed leave the line refused. Each decision is
   * remembered under its request id, as if its own entry had decided it. Nothing while the key is in
   * lock-delay: the line waits for the `undelay` entry.
   */
  private handOff(key: string, index: number, decided: WaiterDecision[]): void {
    if (this.delays.leftMs(key, this.logNowMs) > 0) return;
    const group = this.groups.get(key);
    if (group !== undefined) {
      this.handOffMany(group, index, decided);
      return;
    }
    for (let w = this.lines.head(key); w !== undefined; w = this.lines.head(key)) {
      if (w.shared && this.leases.get(key) === undefined) {
        // A shared request reached the head of a mutex key's line (first, or behind heads refused just
        // now): from here the key has many holds, and it gets a shared one.
        this.handOffMany(this.groupFor(key, 1), index, decided);
        return;
      }
      this.leaveLine(w);
      let outcome: AcquireOutcome;
      const session = w.sessionId > 0 ? (this.sessionOf(w.sessionId) ?? null) : null;
      if (w.deadlineMs <= this.logNowMs) {
        outcome = this.refusalBy(undefined, this.logNowMs);
      } else if (w.sessionId > 0 && (session === null || !session.isLiveAt(this.logNowMs))) {
        outcome = this.refusalBy(undefined, this.logNowMs); // its session ran out: it cannot hold anything
      } else {
        outcome = grantedOutcome(this.hold(key, this.leaseOf(key), w.owner, index, w.ttlMs, w.lockDelayMs, w.value, session));
      }
      this.remember(w, { type: 'acquire', outcome, token: 0n });
      decided.push({ key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled: false });
      if (outcome.acquired) return;
      this.dequeued(w);
    }
  }

  // ---- keys with many holds (holds.ts; the header's `many`) ----

  /** An acquire with limit >= 2 or shared, or any acquire of a key that has many holds. */
  private acquireOfMany(index: number, command: AcquireCommand, session: Session | null, decided: WaiterDecision[] = []): AcquireResult | ErrorResult {
    const key = command.key;
    const nowMs = this.logNowMs;
    const limit = limitOf(command.limit);
    const shared = command.shared === true;
    const delayedUntilMs = this.delays.untilMs(key);
    if (delayedUntilMs !== undefined && delayedUntilMs <= nowMs) {
      // As in the mutex path: a passed lock-delay ends here, the line served before the newcomer.
      this.delays.undelay(key);
      this.handOff(key, index, decided);
    }
    let group = this.groups.get(key);
    if (group === undefined) {
      // A mutex key, or a free one. A run-out hold ends here, as the mutex path ends it.
      let lease = this.leaseOf(key);
      if (lease !== undefined && lease.session !== null && !lease.isLiveAt(nowMs)) {
        this.endSession(lease.session as Session, true, index, decided);
        lease = this.leaseOf(key);
      }
      if (lease !== undefined && !lease.isLiveAt(nowMs)) {
        this.removeLease(lease, true);
        this.handOff(key, index, decided);
        lease = this.leaseOf(key);
      }
      group = this.groups.get(key); // the hand-off may have reached a shared head
      if (group === undefined && (lease !== undefined || this.lines.countFor(key) > 0)) {
        // In use as a mutex: limit 1, exclusive holds — a shared request waits its turn in the same line.
        if (limit !== 1) return withDecided(limitMismatch(index, key, 1, limit), decided);
        if (lease !== undefined && lease.owner === command.owner) return withDecided(modeMismatch(index, key, command.owner, false), decided);
        return this.blockedOfMany(index, command, session, this.refusalBy(lease, nowMs), limit, shared, decided);
      }
      if (group === undefined) {
        if (this.delays.leftMs(key, nowMs) > 0 && (command.waitMs ?? 0) === 0) {
          // Refused without a record of the key's mode: nothing holds or waits for it.
          return this.blockedOfMany(index, command, session, this.refusalBy(undefined, nowMs), limit, shared, decided);
        }
        group = this.groupFor(key, limit);
      }
    }
    if (group.limit !== limit) {
      this.tidy(group);
      return withDecided(limitMismatch(index, key, group.limit, limit), decided);
    }
    this.sweepRunOut(group, index, decided);
    // A run-out session ended by the sweep may have left the key with neither holds nor waiters, and so a
    // free key again (tidy): the request meets it as one (lock simulation seed 17: the grant went into the
    // dropped group, so Get showed the key free and its slots were granted again).
    if (this.groups.get(key) !== group) group = this.groupFor(key, limit);
    const own = group.holdOf(command.owner);
    if (own !== undefined && own.shared !== shared) return withDecided(modeMismatch(index, key, command.owner, own.shared), decided);
    const fits =
      this.delays.leftMs(key, nowMs) === 0 &&
      group.lastToken !== index && // one grant per key per entry: a grant's token is its entry's index
      (own !== undefined || this.lines.countFor(key) === 0) && // FIFO, but an owner's own hold is replaced in place
      group.fits({ owner: command.owner, limit, shared }, nowMs, own);
    if (!fits) {
      const first = group.firstLive(nowMs);
      const result = this.blockedOfMany(index, command, session, this.refusalBy(first, nowMs), limit, shared, decided);
      this.markGrantable(group);
      this.tidy(group);
      return result;
    }
    if (own !== undefined) this.removeHold(group, own, false, null); // superseded: its ACQUIRED successor says so
    const hold = this.grantHold(group, command.owner, index, command.ttlMs, command.lockDelayMs ?? 0, command.value ?? null, session, shared);
    const outcome = grantedOutcome(hold);
    this.remember(command, { type: 'acquire', outcome, token: 0n });
    this.markGrantable(group);
    const result: AcquireResult = { type: 'acquire', index, replayed: false, ...outcome };
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  /** Not granted now: in line when it may wait (its answer comes with the entry that decides it), else
   *  refused and remembered. */
  private blockedOfMany(index: number, command: AcquireCommand, session: Session | null, outcome: AcquireOutcome, limit: number, shared: boolean, decided: WaiterDecision[]): AcquireResult {
    const result: AcquireResult = { type: 'acquire', index, replayed: false, ...outcome };
    if ((command.waitMs ?? 0) > 0) {
      const w = new Waiter(command.key, index, this.ownerName(command.owner), command.ttlMs, command.requestId, this.logNowMs + command.waitMs!, command.lockDelayMs ?? 0, command.value ?? null, session?.id ?? 0, limit, shared);
      this.joinLine(w);
      if (this.eventSink !== null) this.emit('QUEUED', w.key, w.owner, 0n, w.sessionId, w.value, w.shared);
      result.waitTicket = index;
    } else {
      this.remember(command, { type: 'acquire', outcome, token: 0n });
    }
    const delayLeftMs = this.delays.leftMs(command.key, this.logNowMs);
    if (delayLeftMs > 0) result.delayMsLeft = delayLeftMs;
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  /** A new group for `key`, which has no lease: it takes over the key's free record (its last token). */
  private groupFor(key: string, limit: number): KeyGroup {
    this.writer?.beforeKeyWrite(key);
    const lastToken = this.freeKeyLastTokens.get(key)?.lastToken ?? this.forgottenWatermark;
    this.freeKeyLastTokens.delete(key);
    const group = new KeyGroup(key, limit, lastToken);
    this.groups.set(key, group);
    return group;
  }

  /** A group with neither holds nor waiters is a free key again, with its last token. */
  private tidy(group: KeyGroup): void {
    if (group.holds.length > 0 || this.lines.countFor(group.key) > 0 || this.groups.get(group.key) !== group) return;
    this.groups.delete(group.key);
    this.groupsInLine.delete(group.key);
    this.writer?.beforeKeyWrite(group.key);
    this.freeKeyLastTokens.free(group.key, group.lastToken, this.logNowMs);
  }

  /** The holds of `group` with every term start applied. */
  private settleGroup(group: KeyGroup): void {
    for (const hold of group.holds) this.settle(hold);
  }

  private firstLiveOf(group: KeyGroup): GroupHold | undefined {
    this.settleGroup(group);
    return group.firstLive(this.logNowMs);
  }

  /** Ends the holds of `group` that ran out (their lock-delays start from their ends), so what counts is
   *  exact; a hold under a run-out session ends with its whole session, as in the mutex path. */
  private sweepRunOut(group: KeyGroup, index: number, decided: WaiterDecision[]): void {
    for (;;) {
      this.settleGroup(group);
      const runOut = group.holds.find((hold) => !hold.isLiveAt(this.logNowMs));
      if (runOut === undefined) return;
      if (runOut.session !== null) this.endSession(runOut.session as Session, true, index, decided);
      else this.removeHold(group, runOut, true);
    }
  }

  private grantHold(group: KeyGroup, owner: string, index: number, ttlMs: number, lockDelayMs: number, value: Uint8Array | null, session: Session | null, shared: boolean): GroupHold {
    const nowMs = this.logNowMs;
    if (session !== null && lockDelayMs === 0) lockDelayMs = session.lockDelayMs;
    const ownTtlMs = session === null ? ttlMs : 0;
    const hold = new GroupHold(group.key, this.countOwner(owner, 1), index, ownTtlMs, nowMs + ownTtlMs, 0, nowMs, shared, lockDelayMs, value !== null && value.length > 0 ? value : null);
    group.add(hold);
    this.groupHoldCount++;
    if (session !== null) {
      hold.session = session;
      session.groupHolds.add(hold);
      this.groupSessionHoldCount++;
      hold.epochsSeen = this.epochs.length;
    } else {
      this.deadlines.push(hold);
      this.granted(hold);
    }
    if (this.eventSink !== null) this.emit('ACQUIRED', group.key, hold.owner, BigInt(index), session?.id ?? 0, hold.value, shared);
    return hold;
  }

  /** Ends `hold`; `expired`: it ran out, so its lock-delay (if any) starts from its end. `kind` null: no
   *  event (superseded by its owner's new hold). */
  private removeHold(group: KeyGroup, hold: GroupHold, expired: boolean, kind: LockEventKind | null = expired ? 'EXPIRED' : 'RELEASED'): void {
    if (kind !== null && this.eventSink !== null) this.emit(kind, group.key, hold.owner, BigInt(hold.fencingToken), sessionIdOf(hold), hold.value, hold.shared);
    if (expired && hold.lockDelayMs > 0) {
      const untilMs = hold.endsAtMs + hold.lockDelayMs;
      if (untilMs > (this.delays.untilMs(group.key) ?? -1)) this.delays.delayKey(group.key, untilMs);
    }
    const session = hold.session as Session | null;
    if (session !== null) {
      session.groupHolds.delete(hold);
      hold.session = null;
      this.groupSessionHoldCount--;
    }
    this.deadlines.remove(hold);
    this.endBy.remove(hold);
    this.countOwner(hold.owner, -1);
    group.remove(hold);
    this.groupHoldCount--;
  }

  /**
   * Hands `group`'s key to the first head of its line that fits (holds.ts), in entry `index`: heads whose
   * wait ran out, or whose session ended, leave refused on the way. At most one grant per key per entry;
   * if the next head fits too, the key is marked for the leader's `handOff` (grantableKeys).
   */
  private handOffMany(group: KeyGroup, index: number, decided: WaiterDecision[]): void {
    this.sweepRunOut(group, index, decided);
    const key = group.key;
    const nowMs = this.logNowMs;
    if (this.delays.leftMs(key, nowMs) === 0) {
      for (let w = this.lines.head(key); w !== undefined; w = this.lines.head(key)) {
        const session = w.sessionId > 0 ? (this.sessionOf(w.sessionId) ?? null) : null;
        if (w.deadlineMs <= nowMs || (w.sessionId > 0 && (session === null || !session.isLiveAt(nowMs)))) {
          this.leaveLine(w);
          const outcome = this.refusalBy(undefined, nowMs);
          this.remember(w, { type: 'acquire', outcome, token: 0n });
          decided.push({ key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled: false });
          this.dequeued(w);
          continue;
        }
        const own = group.holdOf(w.owner);
        if (group.lastToken === index || !group.fits(w, nowMs, own)) break;
        this.leaveLine(w);
        if (own !== undefined) this.removeHold(group, own, false, null);
        const outcome = grantedOutcome(this.grantHold(group, w.owner, index, w.ttlMs, w.lockDelayMs, w.value, session, w.shared));
        this.remember(w, { type: 'acquire', outcome, token: 0n });
        decided.push({ key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled: false });
        break;
      }
    }
    this.markGrantable(group);
    this.tidy(group);
  }

  /** Keeps `groupsInLine` true for `group` (see there). */
  private markGrantable(group: KeyGroup): void {
    if (this.groups.get(group.key) === group && this.lines.countFor(group.key) > 0) this.groupsInLine.add(group.key);
    else this.groupsInLine.delete(group.key);
  }

  private handOffEntry(index: number, command: HandOffCommand): HandOffResult {
    const group = this.groups.get(command.key);
    const result: HandOffResult = { type: 'handOff', index, key: command.key, granted: false };
    if (group === undefined) return result;
    const decided: WaiterDecision[] = [];
    this.handOffMany(group, index, decided);
    result.granted = group.lastToken === index;
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  /** `owner`'s hold of `group` (one per owner per key), settled. */
  private holdOf(group: KeyGroup, owner: string): GroupHold | undefined {
    this.settleGroup(group);
    return group.holdOf(owner);
  }

  /** refusal() for a key with many holds, where `hold` is the requester's own (by owner). */
  private refusalIn(group: KeyGroup, hold: GroupHold | undefined, request: { owner: string; token: bigint }, mustBeLive: boolean): RefusalReason {
    if (hold === undefined) return group.holds.length === 0 ? 'NOT_HELD' : 'WRONG_OWNER';
    if (BigInt(hold.fencingToken) !== request.token) return 'WRONG_TOKEN';
    if (mustBeLive && !hold.isLiveAt(this.logNowMs)) return 'EXPIRED';
    return 'UNSPECIFIED';
  }

  private expireInGroup(index: number, command: ExpireCommand, group: KeyGroup): ExpireResult {
    this.settleGroup(group);
    const hold = group.holds.find((h) => BigInt(h.fencingToken) === command.token);
    const due = hold !== undefined && hold.session === null && !hold.isLiveAt(this.logNowMs);
    const result: ExpireResult = { type: 'expire', index, expired: due, key: command.key, token: command.token };
    if (due) {
      this.removeHold(group, hold, true);
      const decided: WaiterDecision[] = [];
      this.handOffMany(group, index, decided);
      if (decided.length > 0) result.decided = decided;
    }
    return result;
  }

  private revokeInGroup(index: number, command: RevokeCommand, group: KeyGroup): RevokeResult {
    const result: RevokeResult = { type: 'revoke', index, key: command.key, revoked: [] };
    const ending = group.holds.filter((h) => command.token === 0n || BigInt(h.fencingToken) === command.token);
    if (ending.length === 0) return result;
    for (const hold of ending) {
      result.revoked.push(BigInt(hold.fencingToken));
      this.removeHold(group, hold, false, 'REVOKED');
    }
    const decided: WaiterDecision[] = [];
    this.handOffMany(group, index, decided);
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  /** Get for a key with many holds: its live holds in token order, the first in the single-holder fields. */
  private groupView(group: KeyGroup): LockView {
    this.settleGroup(group);
    const nowMs = this.logNowMs;
    const live = group.holds.filter((hold) => hold.isLiveAt(nowMs));
    const holders: HolderView[] = live.map((hold) => ({
      owner: hold.owner,
      token: BigInt(hold.fencingToken),
      ttlMs: hold.endsAtMs - nowMs,
      expiresAtMs: hold.endsAtMs,
      shared: hold.shared,
      sessionId: BigInt(sessionIdOf(hold)),
      value: hold.value,
    }));
    const first = live[0];
    const view: LockView =
      first === undefined
        ? { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: BigInt(group.lastToken) }
        : { held: true, owner: first.owner, token: BigInt(first.fencingToken), ttlMs: first.endsAtMs - nowMs, expiresAtMs: first.endsAtMs, lastToken: BigInt(group.lastToken) };
    if (first !== undefined && first.session !== null) view.sessionId = BigInt(first.session.fencingToken);
    view.holders = holders;
    view.limit = group.limit;
    return view;
  }

  // ---- sessions (session.ts) ----

  /** Session `id` with every term start applied (settle), or undefined. */
  private sessionOf(id: number): Session | undefined {
    const session = this.sessions.get(id);
    if (session !== undefined) this.settle(session);
    return session;
  }

  private joinLine(w: Waiter): void {
    this.lines.join(w);
    if (w.sessionId > 0) this.sessions.get(w.sessionId)?.waiters.add(w);
  }

  private leaveLine(w: Waiter): void {
    this.lines.leave(w);
    if (w.sessionId > 0) this.sessions.get(w.sessionId)?.waiters.delete(w);
  }

  private openSession(index: number, command: OpenSessionCommand): OpenSessionResult {
    const nowMs = this.logNowMs;
    if (command.requestId !== '') {
      // A retry of an open whose answer was lost: the session it opened, while that one lives.
      const earlier = this.sessionsByRequest.get(requestKeyOf(command.owner, command.requestId));
      if (earlier !== undefined) {
        this.settle(earlier);
        return { type: 'openSession', index, sessionId: BigInt(earlier.id), ttlMs: earlier.ttlMs, expiresAtMs: earlier.leaseDeadlineMs, replayed: true };
      }
    }
    const session = new Session(index, this.ownerName(command.owner), command.ttlMs, nowMs + command.ttlMs, 0, nowMs, command.lockDelayMs, command.requestId);
    this.sessions.set(index, session);
    if (command.requestId !== '') this.sessionsByRequest.set(requestKeyOf(command.owner, command.requestId), session);
    this.sessionDeadlines.push(session);
    this.granted(session);
    return { type: 'openSession', index, sessionId: BigInt(index), ttlMs: session.ttlMs, expiresAtMs: session.leaseDeadlineMs, replayed: false };
  }

  private renewSession(index: number, command: RenewSessionCommand): RenewSessionResult {
    const session = this.sessionOf(command.sessionId);
    const refused = (reason: RenewSessionResult['reason']): RenewSessionResult => ({ type: 'renewSession', index, renewed: false, ttlMs: 0, expiresAtMs: 0, reason });
    if (session === undefined) return refused('NOT_HELD');
    if (command.owner !== '' && command.owner !== session.owner) return refused('WRONG_OWNER');
    if (!session.isLiveAt(this.logNowMs)) return refused('EXPIRED');
    session.grant(session.owner, session.id, session.ttlMs, this.logNowMs);
    this.sessionDeadlines.update(session);
    this.granted(session);
    return { type: 'renewSession', index, renewed: true, ttlMs: session.ttlMs, expiresAtMs: session.leaseDeadlineMs, reason: 'UNSPECIFIED' };
  }

  /** closeSession (by its owner; no lock-delay) or expireSession (only once due in log time). */
  private sessionEnd(index: number, command: CloseSessionCommand | ExpireSessionCommand): SessionEndResult {
    const session = this.sessionOf(command.sessionId);
    const result: SessionEndResult = { type: command.type, index, sessionId: BigInt(command.sessionId), ended: false, reason: 'UNSPECIFIED', released: [] };
    if (session === undefined) {
      result.reason = 'NOT_HELD';
      return result;
    }
    if (command.type === 'closeSession' && command.owner !== '' && command.owner !== session.owner) {
      result.reason = 'WRONG_OWNER';
      return result;
    }
    if (command.type === 'expireSession' && session.isLiveAt(this.logNowMs)) return result;
    const decided: WaiterDecision[] = [];
    result.released = this.endSession(session, command.type === 'expireSession', index, decided);
    result.ended = true;
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  /**
   * Ends `session` in entry `index`: its waiters leave their lines refused, then its holds go (into their
   * lock-delays when `expired`) and each freed key is handed to its line. Keys in key order, so every
   * replica decides (and remembers) in the same order whatever order the holds were taken in. Returns the
   * keys released.
   */
  private endSession(session: Session, expired: boolean, index: number, decided: WaiterDecision[]): string[] {
    const waiters = [...session.waiters].sort((a, b) => a.ticket - b.ticket);
    for (const w of waiters) {
      this.leaveLine(w);
      const outcome = this.refusalBy(this.leaseOf(w.key), this.logNowMs);
      this.remember(w, { type: 'acquire', outcome, token: 0n });
      decided.push({ key: w.key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled: false });
      this.dequeued(w);
    }
    // In a key with many holds a waiter that left may have kept the ones behind it waiting (or was the last
    // one there): its line is served, and an emptied group goes back to a free key.
    for (const key of new Set(waiters.map((w) => w.key))) {
      const group = this.groups.get(key);
      if (group !== undefined) this.handOffMany(group, index, decided);
    }
    const keys = [...session.holds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const key of keys) {
      const lease = this.leases.get(key)!;
      this.removeLease(lease, expired);
      this.handOff(key, index, decided);
    }
    // One hold per owner per key, so (key) orders them; the keys join the released list after the mutexes.
    const groupHolds = [...session.groupHolds].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const hold of groupHolds) {
      const group = this.groups.get(hold.key)!;
      this.removeHold(group, hold, expired);
      this.handOffMany(group, index, decided);
      keys.push(hold.key);
    }
    this.sessions.delete(session.id);
    if (session.requestId !== '') this.sessionsByRequest.delete(requestKeyOf(session.owner, session.requestId));
    this.sessionDeadlines.remove(session);
    this.sessionEndBy.remove(session);
    return keys;
  }

  /** `key`'s lock-delay has passed in log time: it ends, and the line (if any) gets the key. */
  private undelay(index: number, command: UndelayCommand): UndelayResult {
    const result: UndelayResult = { type: 'undelay', index, undelayed: false, key: command.key };
    const untilMs = this.delays.untilMs(command.key);
    if (untilMs === undefined || untilMs > this.logNowMs) return result;
    this.delays.undelay(command.key);
    result.undelayed = true;
    if (this.groups.has(command.key) || this.leaseOf(command.key) === undefined) {
      const decided: WaiterDecision[] = [];
      this.handOff(command.key, index, decided);
      if (decided.length > 0) result.decided = decided;
    }
    return result;
  }

  private dequeue(index: number, command: DequeueCommand): DequeueResult {
    const w = this.lines.get(command.key, command.ticket);
    const result: DequeueResult = { type: 'dequeue', index, dequeued: false, key: command.key, ticket: command.ticket };
    if (w === undefined || (command.cause === 'deadline' && w.deadlineMs > this.logNowMs)) return result;
    this.leaveLine(w);
    this.dequeued(w);
    const outcome = this.refusalBy(this.leaseOf(command.key), this.logNowMs);
    const cancelled = command.cause === 'cancel';
    if (!cancelled) this.remember(w, { type: 'acquire', outcome, token: 0n });
    result.dequeued = true;
    result.decided = [{ key: w.key, ticket: w.ticket, owner: w.owner, requestId: w.requestId, outcome, cancelled }];
    const group = this.groups.get(command.key);
    if (group !== undefined) {
      // The one who left may have been what kept the next heads waiting (an exclusive request ahead of
      // shared ones): they may fit now.
      this.handOffMany(group, index, result.decided);
    }
    return result;
  }

  /** "Not acquired", naming the live holder (if any) and its time left at `nowMs`. */
  private refusalBy(lease: Lease | undefined, nowMs: number): AcquireOutcome {
    const live = lease !== undefined && lease.isLiveAt(nowMs);
    return {
      acquired: false,
      token: 0n,
      ttlMs: 0,
      expiresAtMs: 0,
      holderOwner: live ? lease.owner : '',
      holderTtlMs: live ? lease.endsAtMs - nowMs : 0,
    };
  }

  private reusedInLine(index: number, w: Waiter, key: string): ErrorResult {
    return {
      type: 'error',
      index,
      code: 'REQUEST_ID_REUSED',
      message:
        `request_id ${JSON.stringify(w.requestId)} of owner ${JSON.stringify(w.owner)} waits in line for key ` +
        `${JSON.stringify(w.key)}, not ${JSON.stringify(key)}; use a new request_id for a different request`,
    };
  }

  /** The shared copy of an owner's name when it has leases (see countOwner), else the name itself. */
  private ownerName(owner: string): string {
    return this.leasesByOwner.get(owner)?.name ?? owner;
  }

  private renew(index: number, command: RenewCommand): RenewResult | ErrorResult {
    const replay = this.replay(index, 'renew', command.owner, command.requestId, command.key, command.token);
    if (replay !== null) return replay as RenewResult | ErrorResult;
    const group = this.groups.get(command.key);
    const lease: Lease | undefined = group !== undefined ? this.holdOf(group, command.owner) : this.leaseOf(command.key);
    const reason = group !== undefined ? this.refusalIn(group, lease as GroupHold | undefined, command, true) : this.refusal(lease, command, true);
    if (lease !== undefined && lease.session !== null && reason === 'UNSPECIFIED') {
      return sessionError(index, 'RENEW_THE_SESSION', `the hold on ${JSON.stringify(command.key)} lives under session ${lease.session.fencingToken}: renew the session, not the hold`);
    }
    let outcome: RenewOutcome;
    if (lease === undefined || reason !== 'UNSPECIFIED') {
      outcome = { renewed: false, ttlMs: 0, expiresAtMs: 0, reason };
    } else {
      this.writer?.beforeKeyWrite(command.key);
      lease.grant(lease.owner, lease.fencingToken, command.ttlMs, this.logNowMs);
      this.deadlines.update(lease);
      this.granted(lease);
      outcome = { renewed: true, ttlMs: command.ttlMs, expiresAtMs: lease.leaseDeadlineMs, reason };
      if (this.eventSink !== null) {
        if (lease instanceof GroupHold) this.emit('RENEWED', command.key, lease.owner, command.token, 0, lease.value, lease.shared);
        else this.emit('RENEWED', command.key, lease.owner, command.token, 0, this.holdValues.get(command.key) ?? null);
      }
    }
    this.remember(command, { type: 'renew', outcome, token: command.token });
    return { type: 'renew', index, replayed: false, ...outcome };
  }

  private release(index: number, command: ReleaseCommand): ReleaseResult | ErrorResult {
    const replay = this.replay(index, 'release', command.owner, command.requestId, command.key, command.token);
    if (replay !== null) return replay as ReleaseResult | ErrorResult;
    const group = this.groups.get(command.key);
    const lease: Lease | undefined = group !== undefined ? this.holdOf(group, command.owner) : this.leaseOf(command.key);
    const reason = group !== undefined ? this.refusalIn(group, lease as GroupHold | undefined, command, false) : this.refusal(lease, command, false);
    const decided: WaiterDecision[] = [];
    if (group !== undefined && lease instanceof GroupHold && reason === 'UNSPECIFIED') {
      this.removeHold(group, lease, false);
      this.handOffMany(group, index, decided);
    } else if (lease !== undefined && reason === 'UNSPECIFIED') {
      this.removeLease(lease, false); // a release: no lock-delay
      this.handOff(command.key, index, decided);
    }
    const outcome = { released: reason === 'UNSPECIFIED', reason };
    this.remember(command, { type: 'release', outcome, token: command.token });
    const result: ReleaseResult = { type: 'release', index, replayed: false, key: command.key, ...outcome };
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  private expire(index: number, command: ExpireCommand): ExpireResult {
    const group = this.groups.get(command.key);
    if (group !== undefined) return this.expireInGroup(index, command, group);
    const lease = this.leaseOf(command.key);
    const due =
      lease !== undefined && lease.session === null && BigInt(lease.fencingToken) === command.token && !lease.isLiveAt(this.logNowMs);
    const result: ExpireResult = { type: 'expire', index, expired: due, key: command.key, token: command.token };
    if (due) {
      this.removeLease(lease, true);
      const decided: WaiterDecision[] = [];
      this.handOff(command.key, index, decided);
      if (decided.length > 0) result.decided = decided;
    }
    return result;
  }

  /** An operator ends a hold (SPEC "Revoke"): as if it ran out, but with no lock-delay — the key goes to
   *  its line at once; the revoked holder's writes are refused by the resource once the next is granted. */
  private revoke(index: number, command: RevokeCommand): RevokeResult {
    const group = this.groups.get(command.key);
    if (group !== undefined) return this.revokeInGroup(index, command, group);
    const lease = this.leaseOf(command.key);
    const result: RevokeResult = { type: 'revoke', index, key: command.key, revoked: [] };
    if (lease === undefined || (command.token !== 0n && BigInt(lease.fencingToken) !== command.token)) return result;
    result.revoked.push(BigInt(lease.fencingToken));
    this.removeLease(lease, false, 'REVOKED');
    const decided: WaiterDecision[] = [];
    this.handOff(command.key, index, decided);
    if (decided.length > 0) result.decided = decided;
    return result;
  }

  /** Why renew/release by (owner, token) is refused; 'UNSPECIFIED' when it may proceed. */
  private refusal(lease: Lease | undefined, request: { owner: string; token: bigint }, mustBeLive: boolean): RefusalReason {
    if (lease === undefined) return 'NOT_HELD';
    if (lease.owner !== request.owner) return 'WRONG_OWNER';
    if (BigInt(lease.fencingToken) !== request.token) return 'WRONG_TOKEN';
    if (mustBeLive && !lease.isLiveAt(this.logNowMs)) return 'EXPIRED';
    return 'UNSPECIFIED';
  }

  /** `key`'s lease with every term start applied (settle), or undefined. */
  private leaseOf(key: string): Lease | undefined {
    const lease = this.leases.get(key);
    if (lease !== undefined) this.settle(lease);
    return lease;
  }

  /** Applies the epochs `lease` has not seen yet (see `epochs`). The same state, physically up to date. */
  private settle(lease: Lease): void {
    if (lease.session !== null) {
      this.settle(lease.session); // a session hold's times are its session's
      return;
    }
    if (lease.epochsSeen === this.epochs.length) return;
    if (lease instanceof Session) {
      this.settleSession(lease);
      return;
    }
    this.writer?.beforeKeyWrite(lease.key); // its section as it was, if the snapshot has not reached it
    const before = lease.leaseDeadlineMs;
    while (lease.epochsSeen < this.epochs.length) carryLease(lease, this.epochs[lease.epochsSeen++]!);
    if (lease.leaseDeadlineMs !== before) this.deadlines.update(lease);
  }

  /** settle() for a session: no section to copy (a snapshot copies the sessions when it opens). */
  private settleSession(session: Session): void {
    const before = session.leaseDeadlineMs;
    while (session.epochsSeen < this.epochs.length) carryLease(session, this.epochs[session.epochsSeen++]!);
    if (session.leaseDeadlineMs !== before) this.sessionDeadlines.update(session);
  }

  /** `lease` was just granted or renewed at log time now: it has seen every epoch, and its endBy starts over. */
  private granted(lease: Lease): void {
    lease.epochsSeen = this.epochs.length;
    lease.endByKey = endByMs(lease) - this.epochShiftMs;
    const endBy = lease instanceof Session ? this.sessionEndBy : this.endBy;
    if (lease.endByIndex >= 0) endBy.update(lease);
    else endBy.push(lease);
  }

  /** Ends `lease`; `expired`: it ran out (rather than being released), so its lock-delay, if any, begins —
   *  measured from the lease's end, not from the entry that noticed it. */
  private removeLease(lease: Lease, expired: boolean, kind: LockEventKind = expired ? 'EXPIRED' : 'RELEASED'): void {
    if (this.eventSink !== null) {
      this.emit(kind, lease.key, lease.owner, BigInt(lease.fencingToken), sessionIdOf(lease), this.holdValues.get(lease.key) ?? null);
    }
    const lockDelayMs = this.delays.holdDelayOf(lease.key);
    this.delays.setHoldDelay(lease.key, 0);
    this.holdValues.delete(lease.key);
    if (expired && lockDelayMs > 0) this.delays.delayKey(lease.key, lease.endsAtMs + lockDelayMs);
    this.detachFromSession(lease);
    this.writer?.beforeKeyWrite(lease.key);
    this.leases.delete(lease.key);
    this.deadlines.remove(lease);
    this.endBy.remove(lease);
    this.countOwner(lease.owner, -1);
    this.freeKeyLastTokens.free(lease.key, lease.fencingToken, this.logNowMs);
  }

  // ---- events (events.ts) ----

  private emit(kind: LockEventKind, key: string, owner: string, token: bigint, sessionId: number, value: Uint8Array | null, shared = false): void {
    this.eventSink?.({ index: this.appliedIndexValue, key, kind, owner, token, sessionId, value, shared });
  }

  /** `w` left its line without the key (its wait ran out, its call was cancelled, its session ended). */
  private dequeued(w: Waiter): void {
    if (this.eventSink !== null) this.emit('DEQUEUED', w.key, w.owner, 0n, w.sessionId, w.value, w.shared);
  }

  // ---- request_id dedup ----

  /** The remembered outcome for a retried request, an error if the request id was used for something else,
   *  or null when the request is new (or carries no request id). */
  private replay(index: number, type: DedupOperation, owner: string, requestId: string, key: string, token: bigint): LockResult | null {
    if (requestId === '') return null;
    const record = this.dedup.find(owner, requestId);
    if (record === undefined) return null;
    if (!sameRequest(record, type, key, token)) {
      return {
        type: 'error',
        index,
        code: 'REQUEST_ID_REUSED',
        message:
          `request_id ${JSON.stringify(requestId)} of owner ${JSON.stringify(owner)} was first used for ` +
          `${record.type} of key ${JSON.stringify(record.key)}${record.type === 'acquire' ? '' : ` token ${record.token}`}; ` +
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
    }
  }

  /**
   * Every first outcome is remembered, refusals included (SPEC: a repeated request_id returns the first
   * outcome unchanged) — so a late duplicate of a refused acquire, delivered after the key freed, cannot
   * grant a lock to a client that was already told "not acquired". The one exception is a `queued` acquire
   * (the leader offering the lock to the head of a wait queue), which may turn a remembered refusal of the
   * same request into a grant; that grant then replaces the refusal.
   */
  private remember(
    command: { owner: string; requestId: string; key: string },
    result: Pick<DedupRecord, 'type' | 'outcome' | 'token'>,
  ): void {
    if (command.requestId === '') return;
    this.dedup.remember({
      owner: command.owner,
      requestId: command.requestId,
      recordedAtMs: this.logNowMs,
      key: command.key,
      ...result,
    } as DedupRecord);
  }
}

/** The id of the session `lease` is held under; 0 = none. */
function sessionIdOf(lease: Lease): number {
  return lease.session === null ? 0 : lease.session.fencingToken;
}

function grantedOutcome(lease: Lease): AcquireOutcome {
  return { acquired: true, token: BigInt(lease.fencingToken), ttlMs: lease.grantedTtlMs, expiresAtMs: lease.endsAtMs, holderOwner: '', holderTtlMs: 0 };
}

/** The error result `error` with the waiters `decided` before it was found (the entry changed them). */
function withDecided(error: ErrorResult, decided: WaiterDecision[]): ErrorResult {
  if (decided.length > 0) error.decided = decided;
  return error;
}

function limitMismatch(index: number, key: string, keyLimit: number, asked: number): ErrorResult {
  return {
    type: 'error',
    index,
    code: 'LIMIT_MISMATCH',
    message: `limit: key ${JSON.stringify(key)} has limit ${keyLimit} while it has holders or waiters, and this request names ${asked}; every request on a key must name its current limit`,
  };
}

function modeMismatch(index: number, key: string, owner: string, heldShared: boolean): ErrorResult {
  return {
    type: 'error',
    index,
    code: 'HOLD_MODE_MISMATCH',
    message: `shared: owner ${JSON.stringify(owner)} holds key ${JSON.stringify(key)} ${heldShared ? 'shared' : 'exclusive'}; release that hold before asking for it ${heldShared ? 'exclusive' : 'shared'}`,
  };
}

function sessionError(index: number, code: 'SESSION_NOT_OPEN' | 'SESSION_OWNER_MISMATCH' | 'RENEW_THE_SESSION', message: string): ErrorResult {
  return { type: 'error', index, code, message };
}

function requestKeyOf(owner: string, requestId: string): string {
  return `${owner}\u0000${requestId}`;
}

function malformed(index: number, message: string): ErrorResult {
  return { type: 'error', index, code: 'MALFORMED_COMMAND', message };
}

/** Orders strings by their UTF-8 bytes (code point order), which UTF-16 `<` gets wrong for a surrogate
 *  pair against U+E000..U+FFFF. */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Only when both are in U+D800..U+FFFF does UTF-16 order differ from code point order.
    if (x >= 0xd800 && y >= 0xd800) return (x >= 0xe000 ? x - 0x800 : x + 0x2000) - (y >= 0xe000 ? y - 0x800 : y + 0x2000);
    return x - y;
  }
  return a.length - b.length;
}

/** The `limit` smallest keys offered (compareUtf8), as a bounded max-heap. */
class SmallestKeys {
  private readonly heap: string[] = [];
  constructor(private readonly limit: number) {}

  offer(key: string): void {
    const h = this.heap;
    if (h.length < this.limit) {
      h.push(key);
      let i = h.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (compareUtf8(h[p]!, h[i]!) >= 0) break;
        [h[p], h[i]] = [h[i]!, h[p]!];
        i = p;
      }
    } else if (h.length > 0 && compareUtf8(key, h[0]!) < 0) {
      h[0] = key;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && compareUtf8(h[l]!, h[m]!) > 0) m = l;
        if (r < h.length && compareUtf8(h[r]!, h[m]!) > 0) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i]!, h[m]!];
        i = m;
      }
    }
  }

  sorted(): string[] {
    return [...this.heap].sort(compareUtf8);
  }
}
