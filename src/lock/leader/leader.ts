// The lock leader: every decision a leader makes beyond the state machine, as one pure step function.
// Events in (role changes, applied entries, ticks, client calls, proposal outcomes, cancels), commands
// out (propose, read barrier, answer, fail, wake me at). Deterministic: the same events give the same
// commands, so the simulator drives exactly what ships. Rules, each with a test in
// test/unit/lock/leader-*.test.ts:
// - term start before stamping (term-gate.ts);
// - proactive expiry and idle checkpoints (housekeeping.ts);
// - FIFO waiters per key (wait-queues.ts): a waiter joins its key's queue when its call is handled —
//   before its first acquire is decided — so arrival order is grant order; the head alone is offered the
//   lock, with a `queued` acquire, the one kind that may turn its remembered refusal into a grant;
// - dedup first: a decided request gets its decision back before any queue fast path, and refusals the
//   leader decides itself are remembered (recent-refusals.ts).
import type { AcquireCommand, LockCommand } from '../commands.js';
import type { AcquireResult, LockResult, LockView } from '../types.js';
import type { ValidAcquire } from '../validate.js';
import { CALLER_WENT_AWAY, LEADERSHIP_CHANGED, SHUTTING_DOWN, STILL_STARTING, notLeader, proposalFailure, unavailable, OUTCOME_UNKNOWN } from './failures.js';
import { Admission } from './admission.js';
import { Housekeeping, type HousekeepingProposal } from './housekeeping.js';
import { RecentRefusals, requestKey } from './recent-refusals.js';
import { TermGate, type HeldCall } from './term-gate.js';
import {
  DEFAULT_LOCK_LEADER_CONFIG,
  type CallFailure,
  type CallId,
  type ClientAnswer,
  type ClientRequest,
  type LeaderCommand,
  type LeaderEvent,
  type LockLeaderConfig,
  type LockStateView,
  type ProposalError,
  type ProposalId,
  type RaftRole,
} from './types.js';
import { WaitQueues, type ParkedRefusal, type Waiter } from './wait-queues.js';

/** Why a proposal was made, so its outcome reaches the right place. */
type Purpose =
  | { kind: 'termStart'; term: number }
  | { kind: 'client'; callId: CallId; also?: CallId[]; acquireReq?: ValidAcquire }
  | { kind: 'grant'; waiter: Waiter }
  | HousekeepingProposal;

export class LockLeader {
  private readonly cfg: LockLeaderConfig;
  private readonly gate = new TermGate();
  private readonly queues = new WaitQueues();
  private readonly housekeeping: Housekeeping;
  private readonly refusals: RecentRefusals;
  private readonly admission: Admission;
  private readonly proposals = new Map<ProposalId, Purpose>();
  /** Plain (wait_ms 0) acquires in flight, by request: a duplicate call of the same request waits for that
   *  one's outcome instead of being judged again while it is undecided. */
  private readonly acquiresInFlight = new Map<string, Extract<Purpose, { kind: 'client' }>>();
  /** Requests whose acquire timed out (outcome unknown) at this log index: until the log has applied that
   *  far, the entry may still commit and grant the request, so this leader must not answer it "not
   *  acquired" on its own (found by the lock simulation, seed 100183: a term-1 acquire that had timed out
   *  committed under the term-8 leader, after its retry had been refused at its wait deadline). */
  private readonly unknownOutcome = new Map<string, number>();
  /** Calls waiting on their read barrier, with the key they read. */
  private readonly reads = new Map<CallId, string>();
  /** Refusals decided here, answered only once a read barrier confirms this node still leads and the log
   *  has not granted the request meanwhile (confirmRefusal). */
  private readonly confirming = new Map<CallId, { req: ValidAcquire; refusal: AcquireResult }>();
  private nextProposalId = 1;
  private nowMs = 0;
  /** No waiter's deadline is before this: ticks in between skip the scan of every queue. */
  private nextWaitDeadlineMs = Infinity;
  private out: LeaderCommand[] = [];

  /** `state` returns the applied lock machine (read-only); it is called anew each time, because a
   *  snapshot restore replaces the machine object. */
  constructor(
    private readonly state: () => LockStateView,
    config: Partial<LockLeaderConfig> = {},
  ) {
    this.cfg = { ...DEFAULT_LOCK_LEADER_CONFIG, ...config };
    this.housekeeping = new Housekeeping(this.cfg.checkpointIdleMs, this.cfg.expireBatch, this.cfg.freeKeyRetentionMs);
    this.admission = new Admission(this.cfg.limits);
    this.refusals = new RecentRefusals(this.cfg.refusalMemoryEntries, this.cfg.refusalMemoryMs);
  }

  /** Handle one event; returns the commands to carry out, in order. */
  step(ev: LeaderEvent): LeaderCommand[] {
    this.nowMs = Math.max(this.nowMs, ev.nowMs);
    switch (ev.type) {
      case 'role':
        this.onRole(ev.role, ev.term, ev.leaderId);
        break;
      case 'applied':
        this.onApplied(ev.term, ev.result);
        break;
      case 'tick':
        this.onTick();
        break;
      case 'request':
        this.onRequest(ev.callId, ev.request, ev.timeoutMs);
        break;
      case 'cancel':
        this.onCancel(ev.callId);
        break;
      case 'proposalApplied':
        this.onProposalApplied(ev.proposalId, ev.result);
        break;
      case 'proposalFailed':
        this.onProposalFailed(ev.proposalId, ev.error);
        break;
      case 'readDone':
        this.onReadDone(ev.callId);
        break;
      case 'readFailed':
        if (this.reads.delete(ev.callId) || this.confirming.delete(ev.callId)) this.fail(ev.callId, proposalFailure(ev.error));
        break;
      case 'close':
        this.onClose();
        break;
    }
    const out = this.out;
    this.out = [];
    return out;
  }

  // ------------------------------------------------------------------ introspection (tests, simulator)

  get isReady(): boolean {
    return this.gate.ready;
  }

  get waiterCount(): number {
    return this.queues.size;
  }

  /** Whether (owner, request_id) already holds a place in line for `key`: a waiter in its queue (also a
   *  cancelled head whose acquire is still in flight), or a plain acquire in flight — a new call of the same
   *  request joins it rather than queueing afresh. For tests and the simulator. */
  isQueued(key: string, owner: string, requestId: string): boolean {
    if (this.queues.waiterFor(key, owner, requestId) !== undefined) return true;
    const inFlight = requestId === '' ? undefined : this.acquiresInFlight.get(requestKey(owner, requestId));
    return inFlight?.acquireReq?.key === key;
  }

  /** Whether a call of this request arriving now would get back a refusal this leader remembers
   *  (replayDecided: answered after a read barrier) instead of being judged afresh or queued. For the
   *  simulator's FIFO oracle: such a call is a replay, not a waiter. */
  replaysRefusal(key: string, owner: string, requestId: string): boolean {
    if (this.state().rememberedAcquire(owner, requestId, key)?.acquired === true) return false;
    return this.refusals.get(owner, requestId, this.nowMs) !== undefined;
  }

  get proposalsInFlight(): number {
    return this.proposals.size;
  }

  // ------------------------------------------------------------------ role and term

  private onRole(role: RaftRole, term: number, leaderId: string | null): void {
    const wasLeader = this.gate.isLeader;
    const prevTerm = this.gate.term;
    this.gate.role = role;
    this.gate.term = term;
    this.gate.leaderId = leaderId;
    if (wasLeader && (!this.gate.isLeader || term !== prevTerm)) {
      // Waiters live on the leader only. They fail with UNAVAILABLE so the client retries against the
      // new leader (with the same request_id, so a grant that did commit is not lost).
      for (const id of this.queues.clear()) this.fail(id, unavailable(LEADERSHIP_CHANGED));
      this.housekeeping.leadershipLost();
    }
    if (!this.gate.isLeader) {
      for (const held of this.gate.takeAll()) this.fail(held.callId, notLeader(leaderId));
      return;
    }
    this.maybeProposeTermStart();
  }

  private maybeProposeTermStart(): void {
    if (!this.gate.needsTermStart) return;
    const id = this.propose({ type: 'termStart', timeMs: 0 }, { kind: 'termStart', term: this.gate.term }, this.cfg.termStartTimeoutMs);
    this.gate.termStartProposed(id);
  }

  private onApplied(entryTerm: number, result: LockResult | null): void {
    if (!result) return;
    switch (result.type) {
      case 'termStart':
        if (this.gate.termStartApplied(entryTerm)) {
          this.out.push({ type: 'termStarted', term: entryTerm, leasesExtended: result.leasesExtended, leasesEnded: result.leasesEnded });
          for (const held of this.gate.takeAll()) this.serve(held);
        }
        break;
      case 'release':
        if (result.released) this.offerHead(result.key);
        break;
      case 'expire':
        this.housekeeping.expireApplied(result);
        if (result.expired) this.offerHead(result.key);
        break;
      default:
        break;
    }
  }

  // ------------------------------------------------------------------ time

  private onTick(): void {
    for (const held of this.gate.takeDue(this.nowMs)) this.fail(held.callId, unavailable(STILL_STARTING));
    if (this.nowMs >= this.nextWaitDeadlineMs) this.waitDeadlines();
    if (!this.gate.ready) return;
    this.housekeeping.run(this.state(), this.nowMs, (command, purpose) => this.propose(command, purpose, this.cfg.proposalTimeoutMs));
  }

  private waitDeadlines(): void {
    this.nextWaitDeadlineMs = Infinity;
    for (const w of this.queues.waiters()) {
      if (!w.queued || w.expired) continue;
      if (w.deadlineMs > this.nowMs) {
        this.nextWaitDeadlineMs = Math.min(this.nextWaitDeadlineMs, w.deadlineMs);
        continue;
      }
      if (w.granting) {
        w.expired = true; // the acquire in flight decides: a grant is real even past the deadline
        continue;
      }
      this.queues.remove(w);
      this.refuseHere(w.calls, w.req);
      this.afterHeadChange(w.req.key);
    }
  }

  // ------------------------------------------------------------------ client calls

  private onRequest(callId: CallId, request: ClientRequest, timeoutMs: number): void {
    if (!this.gate.isLeader) {
      this.fail(callId, notLeader(this.gate.leaderId));
      return;
    }
    if (!this.gate.ready) {
      const deadlineMs = this.nowMs + Math.min(timeoutMs, this.cfg.termStartWaitMs);
      this.gate.hold({ callId, request, timeoutMs, deadlineMs });
      this.out.push({ type: 'wakeAt', atMs: deadlineMs });
      this.maybeProposeTermStart();
      return;
    }
    this.serve({ callId, request, timeoutMs, deadlineMs: this.nowMs });
  }

  /** A call on a ready leader, in arrival order. */
  private serve({ callId, request, timeoutMs }: HeldCall): void {
    switch (request.op) {
      case 'acquire':
        this.acquire(callId, request.req, timeoutMs);
        break;
      case 'renew': {
        const r = request.req;
        this.proposeFor(callId, { type: 'renew', timeMs: 0, key: r.key, owner: r.owner, token: r.token, ttlMs: r.ttlMs, requestId: r.requestId }, timeoutMs);
        break;
      }
      case 'release': {
        const r = request.req;
        this.proposeFor(callId, { type: 'release', timeMs: 0, key: r.key, owner: r.owner, token: r.token, requestId: r.requestId }, timeoutMs);
        this.offerHeadBehindRelease(r.key, r.owner, r.token);
        break;
      }
      case 'get':
        this.reads.set(callId, request.key);
        this.out.push({ type: 'readBarrier', callId, timeoutMs });
        break;
    }
  }

  private acquire(callId: CallId, req: ValidAcquire, timeoutMs: number): void {
    // A retry (or late duplicate) of a request that was already decided gets that decision back — before
    // any queue fast path below, or a granted waiter's retry would be told "not acquired".
    const remembered = this.remembered(req); // one dedup lookup serves both checks below
    if (this.replayDecided(callId, req, remembered)) return;
    // The same request's plain acquire is in flight (a retry after a lost answer, a late duplicate): this call
    // gets its outcome. Judged again now, it could be refused while that acquire then grants it — a grant
    // its caller was told it did not get (found by the lock simulation, seed 102359).
    const inFlight = req.requestId === '' ? undefined : this.acquiresInFlight.get(requestKey(req.owner, req.requestId));
    if (inFlight) {
      (inFlight.also ??= []).push(callId);
      return;
    }
    // The same request is already waiting (a retry after a lost answer or a cancel that did not arrive, a
    // late duplicate): it joins that waiter — one place in the queue, one answer for all its calls. A
    // second waiter would be granted after the first was refused: an orphan lock nobody was told about.
    const same = this.queues.waiterFor(req.key, req.owner, req.requestId);
    if (same) {
      this.queues.attach(same, callId);
      same.cancelled = false;
      return;
    }
    // The log already refused this request (an earlier attempt, here or at an earlier leader) and it is
    // neither waiting here nor in flight: that refusal is its answer — the one a plain acquire would replay.
    // Queued behind others instead, it would later be offered the lock with a `queued` acquire, the one kind
    // that overrides a remembered refusal: a grant to a client already told "not acquired" (an orphan lock;
    // lock simulation seed 763 — a late duplicate reached a new leader while others waited for the key).
    // Not while an acquire of it that timed out here may still commit: that one may yet grant it.
    if (remembered && !remembered.acquired && !this.outcomeUnknown(req)) {
      this.refusals.set(req.owner, req.requestId, remembered, this.nowMs);
      this.answer(callId, remembered);
      return;
    }
    // Limits (admission.ts): a new waiter must fit the queues; an acquire proposed now must fit the leases
    // and key records. A waiter queued behind others is judged again when it is offered the lock.
    const head = this.queues.head(req.key);
    const exhausted =
      (req.waitMs > 0 ? this.admission.refuseWaiter(this.queues.countFor(req.key), this.queues.size) : null) ??
      (head ? null : this.admission.refuseAcquire(this.state(), req));
    if (exhausted !== null) {
      this.fail(callId, { kind: 'exhausted', message: exhausted, leaderId: null });
      return;
    }
    if (head) {
      // Fairness: while others wait for this key, a newcomer queues behind them (or, with wait_ms 0, is
      // refused) instead of barging in when the lock frees.
      if (req.waitMs > 0) this.enqueue(callId, req, false);
      else if (head.granting) this.queues.park({ callId, req, timeoutMs });
      else this.refuseHere([callId], req);
      return;
    }
    if (req.waitMs <= 0) {
      const purpose: Extract<Purpose, { kind: 'client' }> = { kind: 'client', callId, acquireReq: req };
      if (req.requestId !== '') this.acquiresInFlight.set(requestKey(req.owner, req.requestId), purpose);
      this.propose(acquireCommand(req, false), purpose, timeoutMs);
      return;
    }
    // The first waiter joins the queue now, as its head, with its acquire in flight: anyone arriving
    // meanwhile queues behind it (before, they queued directly and overtook it).
    const w = this.enqueue(callId, req, true);
    this.proposeGrant(w, acquireCommand(req, false), Math.min(timeoutMs, this.cfg.proposalTimeoutMs));
  }

  private enqueue(callId: CallId, req: ValidAcquire, granting: boolean): Waiter {
    const w: Waiter = { callId, calls: [callId], req, deadlineMs: this.nowMs + req.waitMs, granting, expired: false, cancelled: false, queued: false };
    this.queues.push(w);
    this.nextWaitDeadlineMs = Math.min(this.nextWaitDeadlineMs, w.deadlineMs);
    this.out.push({ type: 'wakeAt', atMs: w.deadlineMs });
    return w;
  }

  private onCancel(callId: CallId): void {
    if (this.gate.drop(callId)) {
      this.fail(callId, unavailable(CALLER_WENT_AWAY));
      return;
    }
    const item = this.queues.call(callId);
    if (!item) return; // an answer is already on its way, or a proposal that cannot be taken back
    if (isWaiter(item)) {
      if (item.cancelled) return;
      this.queues.detach(item, callId);
      if (item.calls.length > 0) {
        this.fail(callId, unavailable(CALLER_WENT_AWAY)); // others still wait on the same request
        return;
      }
      if (item.granting) {
        item.cancelled = true; // stays head until its acquire decides: one acquire per key in flight
      } else {
        this.queues.remove(item);
        this.afterHeadChange(item.req.key);
      }
    } else {
      this.queues.remove(item);
    }
    this.fail(callId, unavailable(CALLER_WENT_AWAY));
  }

  private onReadDone(callId: CallId): void {
    const refusal = this.confirming.get(callId);
    if (refusal !== undefined) {
      this.confirming.delete(callId);
      this.answer(callId, this.rememberedGrant(refusal.req) ?? refusal.refusal);
      return;
    }
    const key = this.reads.get(callId);
    if (key === undefined) return;
    this.reads.delete(callId);
    this.answer(callId, this.viewAt(key));
  }

  private onClose(): void {
    for (const id of this.queues.clear()) this.fail(id, unavailable(SHUTTING_DOWN));
    for (const held of this.gate.takeAll()) this.fail(held.callId, unavailable(SHUTTING_DOWN));
  }

  // ------------------------------------------------------------------ the grant protocol

  /** Offer the lock to the head waiter of `key` if it looks free. One acquire per key in flight. */
  private offerHead(key: string): void {
    const head = this.queues.head(key);
    if (!head || head.granting || !this.gate.ready) return;
    const view = this.viewAt(key);
    if (view.held && view.owner !== head.req.owner) return;
    const exhausted = this.admission.refuseAcquire(this.state(), head.req);
    if (exhausted !== null) {
      // Its turn came but a lease for it would break a limit: it leaves the queue with the reason, and the
      // next waiter is judged in turn (it may be an owner below its own limit).
      this.queues.remove(head);
      for (const id of head.calls) this.fail(id, { kind: 'exhausted', message: exhausted, leaderId: null });
      this.afterHeadChange(key);
      return;
    }
    // `queued`: the one kind of acquire that may turn this request's remembered refusal into a grant.
    this.proposeGrant(head, acquireCommand(head.req, true), this.cfg.proposalTimeoutMs);
  }

  /**
   * Hand-off in one commit: a release by the holder with its current token was just proposed, so the head
   * waiter's acquire goes right behind it, in the same batch, instead of after the release has committed
   * and applied (two commits per hand-off, issue 8). The log decides as always: if the release frees the
   * key the acquire finds it free; if not (its lease ended first, say), the acquire is refused afresh and
   * the waiter stays head, as when a grant races any other change. Nothing is speculated when the release
   * does not match the holder the leader sees: then the normal path (offerHead on apply) runs.
   */
  private offerHeadBehindRelease(key: string, owner: string, token: bigint): void {
    const head = this.queues.head(key);
    if (!head || head.granting || !this.gate.ready) return;
    const view = this.viewAt(key);
    if (!view.held || view.owner !== owner || view.token !== token) return;
    if (this.admission.refuseAcquire(this.state(), head.req) !== null) return; // judged after the release applies
    this.proposeGrant(head, acquireCommand(head.req, true), this.cfg.proposalTimeoutMs);
  }

  private proposeGrant(w: Waiter, command: AcquireCommand, timeoutMs: number): void {
    w.granting = true;
    this.propose(command, { kind: 'grant', waiter: w }, timeoutMs);
  }

  private grantDecided(w: Waiter, result: LockResult | null): void {
    if (!w.queued) return; // gone: leadership changed or the node is closing
    w.granting = false;
    const answer = (a: ClientAnswer | CallFailure): void => {
      this.queues.remove(w);
      for (const id of w.calls) {
        if ('kind' in a) this.fail(id, a);
        else this.answer(id, a);
      }
    };
    if (result === null || result.type !== 'acquire') {
      answer(result?.type === 'error' ? { kind: 'rejected', message: result.message, leaderId: null } : internal('an acquire applied without an acquire result'));
    } else if (result.acquired) {
      answer(result); // granted even if its deadline passed meanwhile: the grant is real
    } else if (result.replayed || w.cancelled || w.expired || w.deadlineMs <= this.nowMs) {
      // Decided by the log, answered by us: remembered here too, so a late duplicate replays it.
      // `replayed`: the log had refused this request before this waiter asked (a late duplicate or retry of
      // a call already answered "not acquired" — by this leader or an earlier one). That refusal is the
      // request's answer: keeping the waiter would offer it the lock with a `queued` acquire, the one kind
      // that overrides a remembered refusal — a grant its client was told it did not get (found by the lock
      // simulation, seeds 1492 and 2711). Only a refusal decided while the request waits in this queue
      // (`replayed: false`) keeps it in line.
      if (!w.cancelled) this.refusals.set(w.req.owner, w.req.requestId, result, this.nowMs);
      answer(result);
    }
    // else: refused afresh, still held by someone else; it stays head and the next release/expire wakes it.
    this.afterHeadChange(w.req.key);
  }

  private grantFailed(w: Waiter, error: ProposalError): void {
    this.noteTimeout(w.req, error);
    if (!w.queued) return;
    w.granting = false;
    this.queues.remove(w);
    for (const id of w.calls) this.fail(id, proposalFailure(error));
    this.afterHeadChange(w.req.key);
  }

  /** The head of `key` was decided, left, or may now be offered the lock: first answer the wait_ms 0
   *  calls parked behind the decision, then offer the lock to whoever is head now. The re-check also
   *  catches a release that applied while the head's acquire was in flight. */
  private afterHeadChange(key: string): void {
    // Only once the head's acquire has decided (a waiter behind it leaving changes nothing for them).
    if (!this.queues.head(key)?.granting) for (const p of this.queues.takeParked(key)) this.decideParked(p);
    this.offerHead(key);
  }

  private settleClient(purpose: Extract<Purpose, { kind: 'client' }>): void {
    const req = purpose.acquireReq;
    if (req === undefined || req.requestId === '') return;
    const k = requestKey(req.owner, req.requestId);
    if (this.acquiresInFlight.get(k) === purpose) this.acquiresInFlight.delete(k);
  }

  /** Answers `callId` with the decision already taken for its request, if any: a grant the log remembers,
   *  or a refusal this leader answered. */
  private replayDecided(callId: CallId, req: ValidAcquire, remembered = this.remembered(req)): boolean {
    if (remembered?.acquired) {
      this.answer(callId, remembered);
      return true;
    }
    const answered = this.refusals.get(req.owner, req.requestId, this.nowMs);
    if (answered) {
      this.confirmRefusal([callId], req, answered);
      return true;
    }
    return false;
  }

  /**
   * Answer a refusal decided by this leader's memory (a wait deadline, no barging), not by the log, only
   * after a read barrier: a leader that was deposed without knowing it (cut off from the others) must not
   * tell a client "not acquired" for a request a newer leader granted — the barrier fails there, and the
   * client retries where the grant is known. Past the barrier the applied state holds everything committed
   * before it, so a grant of this very request is found and answered instead (lock simulation seeds 424,
   * 3746, 5348: a stale leader's wait deadline refused a request granted by the new leader).
   */
  private confirmRefusal(callIds: CallId[], req: ValidAcquire, refusal: AcquireResult): void {
    for (const callId of callIds) {
      this.confirming.set(callId, { req, refusal });
      this.out.push({ type: 'readBarrier', callId, timeoutMs: this.cfg.proposalTimeoutMs });
    }
  }

  /** The outcome (grant or refusal) the replicated dedup table remembers for this request, as a replayed
   *  answer; or null. */
  private remembered(req: ValidAcquire): AcquireResult | null {
    const outcome = this.state().rememberedAcquire(req.owner, req.requestId, req.key);
    return outcome ? { type: 'acquire', index: 0, replayed: true, ...outcome } : null;
  }

  /** The grant the replicated dedup table remembers for this request, as a replayed answer; or null. */
  private rememberedGrant(req: ValidAcquire): AcquireResult | null {
    const remembered = this.remembered(req);
    return remembered?.acquired ? remembered : null;
  }

  private decideParked(p: ParkedRefusal): void {
    // The same request may have been decided while this call was parked (its own earlier call's acquire
    // applied): that decision is its answer (found by the lock simulation, seed 377: a retry parked behind
    // a waiter was refused "held by owner-1" — by its own grant).
    if (this.replayDecided(p.callId, p.req)) return;
    if (this.queues.has(p.req.key)) this.refuseHere([p.callId], p.req);
    else this.acquire(p.callId, p.req, p.timeoutMs); // the queue emptied: judged like any newcomer
  }

  // ------------------------------------------------------------------ proposals

  private proposeFor(callId: CallId, command: LockCommand, timeoutMs: number): void {
    this.propose(command, { kind: 'client', callId }, timeoutMs);
  }

  /** Stamp `command` with the leader's now and ask the adapter to propose it. */
  private propose(command: LockCommand, purpose: Purpose, timeoutMs: number): ProposalId {
    const proposalId = this.nextProposalId++;
    const stamped = { ...command, timeMs: this.nowMs } as LockCommand;
    this.housekeeping.lastProposalAtMs = stamped.timeMs;
    this.proposals.set(proposalId, purpose);
    if (stamped.type === 'acquire') this.admission.proposed(proposalId, this.state(), stamped);
    this.out.push({ type: 'propose', proposalId, command: stamped, timeoutMs });
    return proposalId;
  }

  private onProposalApplied(id: ProposalId, result: LockResult | null): void {
    const purpose = this.proposals.get(id);
    if (!purpose) return;
    this.proposals.delete(id);
    this.admission.settled(id);
    switch (purpose.kind) {
      case 'termStart':
        // Normally the applied event got here first; this covers a driver that reports only outcomes. A
        // proposal's outcome is reported only when it applied in the term it was proposed in.
        if (result?.type === 'termStart') this.onApplied(purpose.term, result);
        break;
      case 'client':
        this.settleClient(purpose);
        for (const callId of [purpose.callId, ...(purpose.also ?? [])]) {
          if (result === null) this.fail(callId, internal('a lock command applied without a result'));
          else if (result.type === 'error') this.fail(callId, { kind: 'rejected', message: result.message, leaderId: null });
          else this.answer(callId, result as ClientAnswer);
        }
        break;
      case 'grant':
        this.grantDecided(purpose.waiter, result);
        break;
      case 'expire':
      case 'checkpoint':
      case 'forget':
        this.housekeeping.settled(id, purpose);
        break;
    }
  }

  private onProposalFailed(id: ProposalId, error: ProposalError): void {
    const purpose = this.proposals.get(id);
    if (!purpose) return;
    this.proposals.delete(id);
    this.admission.settled(id);
    switch (purpose.kind) {
      case 'termStart':
        for (const held of this.gate.termStartFailed(id)) this.fail(held.callId, unavailable(STILL_STARTING));
        break;
      case 'client':
        this.settleClient(purpose);
        if (purpose.acquireReq) this.noteTimeout(purpose.acquireReq, error);
        for (const callId of [purpose.callId, ...(purpose.also ?? [])]) this.fail(callId, proposalFailure(error));
        break;
      case 'grant':
        this.grantFailed(purpose.waiter, error);
        break;
      case 'expire':
      case 'checkpoint':
      case 'forget':
        this.housekeeping.settled(id, purpose);
        break;
    }
  }

  // ------------------------------------------------------------------ answers

  private answer(callId: CallId, result: ClientAnswer): void {
    this.out.push({ type: 'answer', callId, result });
  }

  private fail(callId: CallId, error: CallFailure): void {
    this.out.push({ type: 'fail', callId, error });
  }

  /** A refusal decided here on the leader (not by a log entry): remembered, so a late duplicate of the
   *  same request is not queued or granted after its caller was told "not acquired". Leader-local and
   *  bounded; across a leader change the replicated dedup table still covers refusals that went through
   *  the log. */
  private refuseHere(callIds: CallId[], req: ValidAcquire): void {
    // The log may have decided this request meanwhile (an acquire of it that timed out here committed after
    // all — found by the lock simulation, seed 100116): then that decision is the answer.
    const granted = this.rememberedGrant(req);
    if (granted) {
      for (const id of callIds) this.answer(id, granted);
      return;
    }
    if (this.outcomeUnknown(req)) {
      for (const id of callIds) this.fail(id, unavailable(OUTCOME_UNKNOWN));
      return;
    }
    const v = this.viewAt(req.key);
    const refusal: AcquireResult = {
      type: 'acquire',
      index: 0,
      replayed: false,
      acquired: false,
      token: 0n,
      ttlMs: 0,
      expiresAtMs: 0,
      holderOwner: v.held ? v.owner : '',
      holderTtlMs: v.held ? v.ttlMs : 0,
    };
    this.refusals.set(req.owner, req.requestId, refusal, this.nowMs);
    this.confirmRefusal(callIds, req, refusal);
  }

  /** An earlier acquire of this request timed out and may still commit (the log has not applied its index). */
  private outcomeUnknown(req: ValidAcquire): boolean {
    if (req.requestId === '') return false;
    const k = requestKey(req.owner, req.requestId);
    const index = this.unknownOutcome.get(k);
    if (index === undefined) return false;
    if (this.state().appliedIndex >= index) {
      this.unknownOutcome.delete(k); // decided: the log (and the machine's dedup) now knows the outcome
      return false;
    }
    return true;
  }

  private noteTimeout(req: ValidAcquire, error: ProposalError): void {
    if (error.kind === 'timeout' && error.index !== undefined && error.index > 0 && req.requestId !== '') this.unknownOutcome.set(requestKey(req.owner, req.requestId), error.index);
  }

  /** The lock state of `key` judged at the leader's now: its clock, but never behind the log's time. A
   *  lease past its deadline is reported free (its expire entry is on its way). */
  private viewAt(key: string): LockView {
    const state = this.state();
    const nowMs = Math.max(state.nowMs, this.nowMs);
    const v = state.get(key);
    if (!v.held) return v;
    if (v.expiresAtMs <= nowMs) return { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken };
    return { ...v, ttlMs: v.expiresAtMs - nowMs };
  }
}

function acquireCommand(req: ValidAcquire, queued: boolean): AcquireCommand {
  const cmd: AcquireCommand = { type: 'acquire', timeMs: 0, key: req.key, owner: req.owner, ttlMs: req.ttlMs, requestId: req.requestId };
  if (queued) cmd.queued = true;
  return cmd;
}

function isWaiter(item: Waiter | ParkedRefusal): item is Waiter {
  return 'deadlineMs' in item;
}

function internal(message: string): CallFailure {
  return { kind: 'internal', message: `internal: ${message}`, leaderId: null };
}
