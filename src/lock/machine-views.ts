// What the machine answers without changing: the reads of the lock leader (admission counts, due leases,
// waits, sessions and delays for its housekeeping, remembered outcomes), of Get and List, of the metrics and
// the dashboard. LockMachine (machine.ts) is these plus applying, snapshots and restore. A read may settle
// what it reads (term starts applied to a lease, machine-state.ts settle): the same state, physically up to
// date, never another answer.
import { acquireTerms } from './dedup.js';
import type { DueDelay } from './key-delays.js';
import { SmallestKeys, compareUtf8 } from './list-keys.js';
import { firstLiveOf, grantableKeys, groupView } from './machine-groups.js';
import { sessionOf } from './machine-sessions.js';
import { MachineState } from './machine-state.js';
import { waiterTerms } from './machine-wait-lines.js';
import type { DueSession } from './session.js';
import { DEFAULT_LOCK_MACHINE_OPTIONS } from './types.js';
import type { AcquireOutcome, DueLease, LockMachineOptions, LockView } from './types.js';
import type { DueWaiter } from './wait-line.js';
import { LEVEL_CLOCK_PROGRESS } from './versions.js';

/** How many leases expiredLeases() settles at most per call (see there). */
export const SETTLE_PER_CALL = 4096;

export abstract class LockMachineViews {
  readonly options: Readonly<LockMachineOptions>;
  /** Every lease, line, session and group, and the bookkeeping every change goes through (machine-state.ts). */
  protected readonly s: MachineState;

  constructor(options: Partial<LockMachineOptions> = {}) {
    this.options = Object.freeze({ ...DEFAULT_LOCK_MACHINE_OPTIONS, ...options });
    this.s = new MachineState(this.options);
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
    return this.s.clusterLevel;
  }

  /**
   * Log time as the current term's leader would stamp it now, from the leader's clock reading `clockMs`:
   * for the leader's housekeeping (which leases, waits, sessions, delays are due). At level 2 the term's log
   * time runs at the leader's clock from the last stamp, so a leader whose clock is behind log time still
   * finds leases due on time; at level 1 it is max(clock, log time), as log time itself is. Another node's
   * clock gives a wrong answer only in liveness: every expiry is judged again by the entry that applies it.
   */
  projectedNowMs(clockMs: number): number {
    if (this.s.clusterLevel >= LEVEL_CLOCK_PROGRESS) return this.s.logNowMs + Math.max(0, clockMs - this.s.termLastStampMs);
    return Math.max(clockMs, this.s.logNowMs);
  }

  /** Whether member `id` is recorded as having run (a memberRan entry applied; machine.ts `ran`). */
  hasRun(id: string): boolean {
    return this.s.ranMembers.has(id);
  }

  /** Raft term of the current lease epoch. A new leader whose term is higher must propose termStart. */
  get epochTerm(): number {
    return this.s.epochTerm;
  }

  /** Log time at which the current lease epoch started. */
  get epochStartMs(): number {
    return this.s.epochStartMs;
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
    // At most SETTLE_PER_CALL leases settled a call (the leader asks every housekeeping tick): after a stop longer
    // than the leases had left, every lease's stored deadline is past and all of them were settled, touched and
    // rewritten in one tick — 1M leases held a new leader's loop for seconds and cost it its term. Until the due
    // part is settled nothing is answered: an expiry may come a few ticks late, never early.
    if (!this.s.settleDue(atMs, this.s.deadlines, SETTLE_PER_CALL)) return [];
    return this.s.deadlines.due(atMs, limit).map((lease) => ({
      key: lease.key,
      token: BigInt(lease.fencingToken),
      expiresAtMs: lease.expiresAtMs,
    }));
  }
}
