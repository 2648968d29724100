// The lock machine's state: every lease, free key, wait line, lock-delay, session and group a snapshot holds
// (snapshot-writer.ts reads these very collections), the indexes derived from them (owner counts, the heaps,
// the groups in line), and the bookkeeping every change goes through, whichever part makes it:
// - term starts reach a lease lazily (settle): anything that reads or changes a lease settles it first, so
//   it sees the times every epoch since its last grant gave it (epoch.ts, LEASES.md);
// - a grant or renewal files the lease afresh in its end-by heap (granted);
// - owners' names are shared and their leases counted (countOwner), for the leader's admission;
// - every first outcome of a request id is remembered (remember), refusals included;
// - every change is reported to the event sink, if one listens (emit).
// The parts that change it are functions of it (machine.ts lists them). Nothing here reads a clock: log time
// is `logNowMs`, moved only by machine-time.ts as entries apply.
import { DeadlineHeap, EndByHeap } from './deadline-heap.js';
import type { DedupRecord } from './dedup-record.js';
import { DedupTable, acquireTerms } from './dedup.js';
import { carryLease } from './epoch.js';
import type { LeaseEpoch } from './epoch.js';
import type { LockEventKind, LockEventSink } from './events.js';
import { FreeKeys } from './free-keys.js';
import type { KeyGroup } from './holds.js';
import { KeyBuckets } from './key-buckets.js';
import { KeyDelays } from './key-delays.js';
import type { Lease } from './lease.js';
import { Session } from './session.js';
import type { SnapshotWriter } from './snapshot-writer.js';
import type { AcquireOutcome, LockMachineOptions } from './types.js';
import { BASE_LEVEL } from './versions.js';
import { WaitLines } from './wait-line.js';

/** An owner's lease count, and the copy of its name its leases share. */
interface OwnerLeases {
  readonly name: string;
  leases: number;
}

export class MachineState {
  /** Index of the last entry applied or skipped. */
  appliedIndex = 0;
  /** Log time (ms): see machine.ts `time`. Never decreases. */
  logNowMs = 0;
  /** Raft term of the current lease epoch, and the log time it started at (machine-time.ts). */
  epochTerm = 0;
  epochStartMs = 0;
  /** The cluster level (versions.ts): what the entries may use. Only a clusterLevel entry raises it. */
  clusterLevel = BASE_LEVEL;
  /** From level 2: the highest stamp applied in the current term; log time advances by a stamp's progress
   *  past it (machine.ts `time`). */
  termLastStampMs = 0;
  /** Raft members recorded as having run (machine.ts `ran`). */
  readonly ranMembers = new Set<string>();
  /** Bytes per item (machine-digest.ts snapshotItems) of the last sliced snapshot: the next one's buffer is
   *  sized by it. */
  snapshotBytesPerItem = 0;
  /** Keys with a lease (live, or past its deadline and awaiting an expire entry). */
  readonly leases = new KeyBuckets<Lease>();
  /**
   * Keys that had a lease once and have none now, with the highest token ever issued for them (GetResponse
   * .last_token survives release). A key is in exactly one of `leases` / `freeKeyLastTokens`, so a held
   * key keeps its last token in the lease itself. Memory: a held lease ~200 bytes
   * with its key (lease.ts' header); a hold under a session adds its slot in its session's holds array; a
   * free key costs its record (FreeKey: three fields, its time boxed), its key string and its slots in the
   * KeyBuckets table and the freeing-order FIFO (free-keys.ts). Kept until a `forget` entry drops them
   * (machine.ts `forget`).
   * Insertion order is freeing order, so freedAtMs never decreases along it (log time is monotone, and a key
   * is re-inserted, at the end, each time it is freed); forget() relies on that to stop at the first newer
   * key. After a restore the order is (freedAtMs, key): equal times may sit in another order than on a
   * replica that applied them, which is why forget() cuts by time only, never by a count. (FreeKeys keeps
   * that order in a FIFO beside its hash buckets.)
   */
  readonly freeKeyLastTokens = new FreeKeys();
  /** At least the last token of every key forgotten so far; the last_token of any key without a record. */
  forgottenWatermark = 0;
  /** Leases (live or awaiting their expire) per owner, for the leader's maxHeldPerOwner admission. Derived
   *  from `leases`, so not in the snapshot. */
  readonly leasesByOwner = new Map<string, OwnerLeases>();
  readonly deadlines = new DeadlineHeap();
  /**
   * Term starts are applied to leases lazily: walking a million leases at every term start holds every
   * node's event loop 0.6-2.3 s at once, long enough for the next election, whose term start does it
   * again. `epochs` lists every term start since the state was restored; a lease has seen the first
   * `lease.epochsSeen` of them and gets the rest when it is next read or changed (settle). What stays exact
   * without a walk:
   *  - the deadline heap: an epoch only moves a live lease's deadline later unless it ends it, so an unsettled
   *    lease's stored deadline is a lower bound and expiredLeases() settles what it finds due before answering
   *    (a bounded number a call: machine-views.ts SETTLE_PER_CALL);
   *  - the leases an epoch ENDS: those live at P whose endBy (epoch.ts endByMs) is <= P. Every epoch shifts the
   *    endBy of every lease it does not end by the same T - P, so the EndByHeap orders by endBy minus the sum
   *    of the shifts the lease has seen (deadline-heap.ts endByKeyOf) and a term start pops exactly the leases
   *    it ends — those whose key plus the shift of every epoch (epochShiftMs) is <= P —, and settles them.
   */
  readonly epochs: LeaseEpoch[] = [];
  /** The sum of T - P over every epoch. */
  epochShiftMs = 0;
  /** The sum of T - P over the first i epochs, for every i (so [0] = 0; the last = epochShiftMs). */
  readonly epochShiftsMs: number[] = [0];
  readonly endBy = new EndByHeap(this.epochShiftsMs);
  /** Every request's first outcome, by (owner, request_id) (dedup.ts; remember below). */
  readonly dedup: DedupTable;
  /** Who waits for which key, in log order (machine.ts `wait`; machine-wait-lines.ts). */
  readonly lines = new WaitLines();
  /** Lock-delays: of the current holds that carry one, and of keys in one (machine.ts `delay`). */
  readonly delays = new KeyDelays();
  /** The value of every current hold that has one (AcquireRequest.value; returned by Get). */
  readonly holdValues = new Map<string, Uint8Array>();
  /** Open sessions (and run-out ones awaiting the entry that ends them), by id. Bounded by the leader's
   *  admission (limits.maxSessions). Their own deadline and end-by heaps: a session's expiry is its own
   *  entry (expireSession), and a term start ends the ones it provably outlived, like leases. */
  readonly sessions = new Map<number, Session>(); // machine-sessions.ts
  readonly sessionsByRequest = new Map<string, Session>();
  readonly sessionDeadlines = new DeadlineHeap();
  readonly sessionEndBy = new EndByHeap(this.epochShiftsMs);
  /** Leases that live under a session (not in the lease heaps). */
  sessionHoldCount = 0;
  /** From cluster level 4 (versions.ts): an owner's acquire supersedes its own hold only under the same
   *  session (machine-leases.ts `supersedes`). Set from the machine's cluster level. */
  supersedeSameSessionOnly = false;
  /** From cluster level 5 (versions.ts): a hold that ran out by log time ends as expired whichever entry
   *  ends it (machine-leases.ts `endsExpired`). Set from the machine's cluster level. */
  lateEndExpires = false;
  /** From cluster level 6 (versions.ts): an acquire's dedup record outlives the window while its owner
   *  holds the key (machine-entries.ts `keepAcquireRecord`). Set from the machine's cluster level. */
  keepAcquiresWhileHeld = false;
  /** From cluster level 6: an acquire's dedup record keeps its terms (session, limit, mode), and a copy with
   *  other terms is refused (dedup.ts `acquireTerms`). Set from the machine's cluster level. */
  acquireTermsKept = false;
  /** Keys with many holds (holds.ts, machine-groups.ts). A key is in at most one of `leases`, `groups`
   *  and `freeKeyLastTokens`. */
  readonly groups = new Map<string, KeyGroup>();
  /** Holds of every group, and those of them under a session. */
  groupHoldCount = 0;
  groupSessionHoldCount = 0;
  /** Groups with someone in line: the candidates for a `handOff` (grantableKeys judges each when asked, at
   *  the asker's time, so what it answers depends on the state alone). Derived (rebuilt by restore), so not
   *  in the snapshot; bounded by the waiters. */
  readonly groupsInLine = new Set<string>();
  /** Where the changes go as entries apply (events.ts, Watch); null = nobody listens, nothing is built. */
  eventSink: LockEventSink | null = null;
  /** The sliced snapshot being written, if any: told before every change of a key or of every lease. */
  writer: SnapshotWriter | null = null;
  /** Keys whose lease or free record changed since the applied store last took them (store-records.ts);
   *  null while nothing persists the state record by record. */
  changedKeys: Set<string> | null = null;
  /** The same for sessions, by id (opened, renewed, ended). */
  changedSessions: Set<number> | null = null;

  constructor(readonly options: Readonly<LockMachineOptions>) {
    this.dedup = new DedupTable(options.dedupWindowMs, options.dedupMaxEntries);
  }

  /** Call before anything about `key`'s lease or free record changes: the sliced snapshot copies its section
   *  as it still is, and the store (if one tracks changes) rewrites the key's record at its next batch. */
  touch(key: string): void {
    this.writer?.beforeKeyWrite(key);
    this.changedKeys?.add(key);
  }

  /** Applies the epochs `lease` has not seen yet (see `epochs`). The same state, physically up to date. */
  settle(lease: Lease): void {
    if (lease.session !== null) {
      this.settle(lease.session); // a session hold's times are its session's
      return;
    }
    if (lease.epochsSeen === this.epochs.length) return;
    if (lease instanceof Session) {
      this.settleSession(lease);
      return;
    }
    this.touch(lease.key); // its section as it was, if the snapshot has not reached it; the store rewrites its record
    const before = lease.expiresAtMs;
    while (lease.epochsSeen < this.epochs.length) carryLease(lease, this.epochs[lease.epochsSeen++]!);
    if (lease.expiresAtMs !== before) this.deadlines.update(lease);
  }

  /** Call before anything about session `id` changes: the store rewrites its record at its next batch. */
  touchSession(id: number): void {
    this.changedSessions?.add(id);
  }

  /** settle() for a session: no section to copy (a snapshot copies the sessions when it opens). */
  settleSession(session: Session): void {
    // Not a change for the store: a session's record keeps the term starts it had seen, and a restore carries
    // it through the rest exactly as this does.
    const before = session.expiresAtMs;
    while (session.epochsSeen < this.epochs.length) carryLease(session, this.epochs[session.epochsSeen++]!);
    if (session.expiresAtMs !== before) this.sessionDeadlines.update(session);
  }

  /** Settles every lease whose stored deadline is <= `atMs`: then the deadline heap's due part is exact
   *  (a settled deadline only moves later, so what is still due afterwards is truly due). With a `budget`, at
   *  most that many are settled: false when it ran out first (the due part may still hold stale deadlines). */
  settleDue(atMs: number, heap: DeadlineHeap, budget = Number.MAX_SAFE_INTEGER): boolean {
    const unsettled = (lease: Lease) => lease.epochsSeen !== this.epochs.length;
    for (;;) {
      if (budget <= 0) return false;
      const stale = heap.due(atMs, budget, unsettled);
      if (stale.length === 0) return true;
      budget -= stale.length;
      for (const lease of stale) this.settle(lease);
    }
  }

  /** `lease` was just granted or renewed at log time now: it has seen every epoch, and its endBy starts over. */
  granted(lease: Lease): void {
    lease.epochsSeen = this.epochs.length;
    const endBy = lease instanceof Session ? this.sessionEndBy : this.endBy;
    if (lease.endByIndex >= 0) endBy.update(lease);
    else endBy.push(lease);
  }

  /** Counts a lease in (+1) or out (-1) of `owner`'s, and returns the one copy of the owner's name every
   *  lease of that owner shares: each acquire decodes its own copy of the string, and a million leases of a
   *  few owners kept a million copies (30-40 MB of a 1M fill; a restored state shared them already). */
  countOwner(owner: string, delta: 1 | -1): string {
    const counted = this.leasesByOwner.get(owner);
    if (counted === undefined) {
      if (delta > 0) this.leasesByOwner.set(owner, { name: owner, leases: 1 });
      return owner;
    }
    counted.leases += delta;
    if (counted.leases <= 0) this.leasesByOwner.delete(owner);
    return counted.name;
  }

  /** The shared copy of an owner's name when it has leases (see countOwner), else the name itself. */
  ownerName(owner: string): string {
    return this.leasesByOwner.get(owner)?.name ?? owner;
  }

  /** `key`'s lease with every term start applied (settle), or undefined. */
  leaseOf(key: string): Lease | undefined {
    const lease = this.leases.get(key);
    if (lease !== undefined) this.settle(lease);
    return lease;
  }

  /** An acquire's first outcome, with its terms from level 6 (dedup.ts `acquireTerms`): a copy under the
   *  same request id asking other terms is refused, not replayed. */
  rememberAcquire(
    request: { owner: string; requestId: string; key: string; sessionId?: number; limit?: number; shared?: boolean },
    outcome: AcquireOutcome,
  ): void {
    const token = this.acquireTermsKept ? acquireTerms(request.sessionId ?? 0, request.limit ?? 1, request.shared === true) : 0n;
    this.remember(request, { type: 'acquire', outcome, token });
  }

  /**
   * Every first outcome is remembered, refusals included (SPEC: a repeated request_id returns the first
   * outcome unchanged) — so a late duplicate of a refused acquire, delivered after the key freed, cannot
   * grant a lock to a client that was already told "not acquired". The one exception is a `queued` acquire
   * (the leader offering the lock to the head of a wait queue), which may turn a remembered refusal of the
   * same request into a grant; that grant then replaces the refusal.
   */
  remember(command: { owner: string; requestId: string; key: string }, result: Pick<DedupRecord, 'type' | 'outcome' | 'token'>): void {
    if (command.requestId === '') return;
    this.dedup.remember({
      owner: command.owner,
      requestId: command.requestId,
      recordedAtMs: this.logNowMs,
      key: command.key,
      ...result,
    } as DedupRecord);
  }

  emit(kind: LockEventKind, key: string, owner: string, token: bigint, sessionId: number, value: Uint8Array | null, shared = false): void {
    this.eventSink?.({ index: this.appliedIndex, key, kind, owner, token, sessionId, value, shared });
  }
}
