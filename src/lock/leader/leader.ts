// The lock leader: every decision a leader makes beyond the state machine, as one pure step function.
// Events in (role changes, applied entries, ticks, client calls, proposal outcomes, cancels), commands
// out (propose, read barrier, answer, fail, wake me at). Deterministic: the same events give the same
// commands, so the simulator drives exactly what ships. What stays leader-local, each with a test in
// test/unit/lock/leader-*.test.ts:
// - term start before stamping (term-gate.ts);
// - admission against the limits (admission.ts);
// - proactive expiry of leases and of waiters past their wait deadline, idle checkpoints (housekeeping.ts);
// - which open calls wait for which waiter (waiting-calls.ts).
// Everything else is decided by the log: a blocking acquire is proposed like any other and either decided
// at once or put in the key's replicated wait line (wait-line.ts); the entry that later grants or refuses
// it names it in `decided`, and that is the call's answer. No refusal or grant comes from this module's
// memory, so a leader that was deposed without knowing it cannot tell a client "not acquired" for a
// request the log granted (lock simulation seeds 424, 3746, 5348 found what that used to cost).
import type { LockCommand } from '../commands.js';
import type { LockResult, LockView, WaiterDecision } from '../types.js';
import type { ValidAcquire } from '../validate.js';
import { CALLER_WENT_AWAY, LEADERSHIP_CHANGED, SHUTTING_DOWN, STILL_STARTING, notLeader, proposalFailure, unavailable } from './failures.js';
import { LEVEL_MANY_HOLDERS } from '../versions.js';
import { Admission } from './admission.js';
import { Housekeeping, type HousekeepingProposal } from './housekeeping.js';
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
import { WaitingCalls } from './waiting-calls.js';

/** Why a proposal was made, so its outcome reaches the right place. */
type Purpose =
  | { kind: 'termStart'; term: number }
  | {
      kind: 'client';
      callId: CallId;
      /** An acquire's request: where its ticket is if the log puts it (or finds it) in line. */
      acquire?: ValidAcquire;
    }
  | { kind: 'cancelWait' }
  | HousekeepingProposal;

const WAIT_CANCELLED = 'the wait was cancelled before it was decided; retry with the same request_id to queue again';

export class LockLeader {
  private readonly cfg: LockLeaderConfig;
  private readonly gate = new TermGate();
  private readonly housekeeping: Housekeeping;
  private readonly admission: Admission;
  private readonly waiting = new WaitingCalls();
  private readonly proposals = new Map<ProposalId, Purpose>();
  /** Client calls cancelled while their proposal was in flight: if an acquire puts one in line, the line
   *  is told. */
  private readonly cancelledInFlight = new Set<CallId>();
  /** Calls waiting on their read barrier, with the key they read. */
  private readonly reads = new Map<CallId, string>();
  private nextProposalId = 1;
  private nowMs = 0;
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
        if (this.reads.delete(ev.callId)) this.fail(ev.callId, proposalFailure(ev.error));
        break;
      case 'members':
        this.housekeeping.membersReadLevel = ev.readLevel;
        this.housekeeping.membersRan = ev.ran;
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

  /** Calls on this node waiting for their place in a wait line to be decided. */
  get waitingCallCount(): number {
    return this.waiting.callCount;
  }

  /** Whether (owner, request_id) holds a place in `key`'s line, or is about to (its blocking acquire is in
   *  flight): a new call of it re-attaches there instead of queueing at the back. For the simulator. */
  hasPlaceInLine(key: string, owner: string, requestId: string): boolean {
    if (requestId === '') return false;
    if (this.state().waiterFor(owner, requestId)?.key === key) return true;
    // A scan of the proposals in flight: this is a question of the simulator's, not worth an index kept up
    // to date on every acquire.
    for (const purpose of this.proposals.values()) {
      const req = purpose.kind === 'client' ? purpose.acquire : undefined;
      if (req !== undefined && req.key === key && req.owner === owner && req.requestId === requestId) return true;
    }
    return false;
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
      // The waiters keep their places in the replicated line; only their calls here end. They fail
      // UNAVAILABLE so the client retries with the same request_id at the new leader, which re-attaches it.
      for (const id of this.waiting.takeAll()) this.fail(id, { ...unavailable(LEADERSHIP_CHANGED), leaderId });
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
    if (result.decided !== undefined) for (const d of result.decided) this.waiterDecided(result.index, d);
    switch (result.type) {
      case 'termStart':
        if (this.gate.termStartApplied(entryTerm)) {
          this.out.push({ type: 'termStarted', term: entryTerm, leasesExtended: result.leasesExtended, leasesEnded: result.leasesEnded });
          for (const held of this.gate.takeAll()) this.serve(held);
        }
        break;
      case 'expire':
        this.housekeeping.expireApplied(result);
        break;
      case 'dequeue':
        this.housekeeping.dequeueApplied(result);
        break;
      case 'undelay':
        this.housekeeping.undelayApplied(result);
        break;
      case 'handOff':
        this.housekeeping.handOffApplied(result);
        break;
      case 'expireSession':
      case 'closeSession':
        this.housekeeping.sessionEnded(result);
        break;
      default:
        break;
    }
  }

  /** The log took a waiter out of its line: its calls here get the decision. */
  private waiterDecided(index: number, d: WaiterDecision): void {
    for (const callId of this.waiting.decided(index, d)) this.answerDecision(callId, index, d);
  }

  private answerDecision(callId: CallId, index: number, d: WaiterDecision): void {
    // A cancelled waiter's outcome is no answer (nothing was decided about the request; nothing is
    // remembered): a call of the same request that attached meanwhile retries and queues again.
    if (d.cancelled) this.fail(callId, unavailable(WAIT_CANCELLED));
    else this.answer(callId, { type: 'acquire', index, replayed: false, ...d.outcome });
  }

  // ------------------------------------------------------------------ time

  private onTick(): void {
    for (const held of this.gate.takeDue(this.nowMs)) this.fail(held.callId, unavailable(STILL_STARTING));
    if (!this.gate.ready) return;
    this.housekeeping.run(this.state(), this.nowMs, (command, purpose) => this.propose(command, purpose, this.cfg.proposalTimeoutMs));
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
        break;
      }
      case 'revoke':
        this.proposeFor(callId, { type: 'revoke', timeMs: 0, key: request.req.key, token: request.req.token }, timeoutMs);
        break;
      case 'get':
        this.reads.set(callId, request.key);
        this.out.push({ type: 'readBarrier', callId, timeoutMs });
        break;
      case 'openSession': {
        const exhausted = this.admission.refuseOpenSession(this.state());
        if (exhausted !== null) {
          this.fail(callId, { kind: 'exhausted', message: exhausted, leaderId: null });
          break;
        }
        const r = request.req;
        const id = this.proposeFor(callId, { type: 'openSession', timeMs: 0, owner: r.owner, ttlMs: r.ttlMs, requestId: r.requestId, lockDelayMs: r.lockDelayMs }, timeoutMs);
        this.admission.proposedOpen(id);
        break;
      }
      case 'renewSession':
      case 'closeSession': {
        const r = request.req;
        this.proposeFor(callId, { type: request.op, timeMs: 0, sessionId: r.sessionId, owner: r.owner }, timeoutMs);
        break;
      }
    }
  }

  private acquire(callId: CallId, req: ValidAcquire, timeoutMs: number): void {
    // A retry of a request already in line (its call here was lost, or went to a leader that is gone): it
    // re-attaches to its place without a new entry. Its decision may be applied already: then that is the
    // answer (the dedup table remembers it).
    const inLine = req.requestId === '' ? undefined : this.state().waiterFor(req.owner, req.requestId);
    if (inLine !== undefined && inLine.key === req.key) {
      this.attach(callId, inLine.key, inLine.ticket);
      return;
    }
    const sessionId = req.sessionId ?? 0;
    let sessionHolds = 0;
    if (sessionId > 0) {
      // A session's owner never changes, so the applied state answers this for every later entry too (SPEC:
      // INVALID_ARGUMENT). A session this node has not seen yet is judged by the machine (SESSION_NOT_OPEN).
      const session = this.state().sessionInfo(sessionId);
      if (session !== undefined && session.owner !== req.owner) {
        this.fail(callId, { kind: 'invalid', message: `owner: ${JSON.stringify(req.owner)} is not the owner of session ${sessionId}`, leaderId: null });
        return;
      }
      sessionHolds = session?.holds ?? 0;
    }
    // Limits (admission.ts): a new waiter must fit the lines; a grant must fit the leases and key records.
    const exhausted =
      (sessionId > 0 ? this.admission.refuseSessionHold(sessionId, sessionHolds) : null) ??
      (req.waitMs > 0 ? this.admission.refuseWaiter(this.state(), req.key) : null) ??
      this.admission.refuseAcquire(this.state(), req);
    if (exhausted !== null) {
      this.fail(callId, { kind: 'exhausted', message: exhausted, leaderId: null });
      return;
    }
    const limit = req.limit ?? 1;
    const shared = req.shared === true;
    if ((limit > 1 || shared) && this.state().clusterLevel < LEVEL_MANY_HOLDERS) {
      // The entry would be refused by the machine anyway (CLUSTER_LEVEL); saying so here spares the log.
      this.fail(callId, { kind: 'rejected', message: `limit/shared: semaphores and shared holds need cluster level ${LEVEL_MANY_HOLDERS} (every member on a build that reads it); the cluster is at ${this.state().clusterLevel}`, leaderId: null });
      return;
    }
    const command: LockCommand = { type: 'acquire', timeMs: 0, key: req.key, owner: req.owner, ttlMs: req.ttlMs, requestId: req.requestId };
    if (limit > 1) command.limit = limit;
    if (shared) command.shared = true;
    if (req.waitMs > 0) command.waitMs = req.waitMs;
    if (req.lockDelayMs > 0) command.lockDelayMs = req.lockDelayMs;
    if (req.value !== undefined) command.value = req.value;
    if (sessionId > 0) command.sessionId = sessionId;
    // Any acquire may come back "in line": a blocking one that the log queued, and also a retry of a waiting
    // request whose remaining wait_ms has run down to 0 on the client (it re-attaches, wait or not: its
    // place keeps its first deadline). Answering that result as a refusal would tell a waiter "not
    // acquired" while the log may still grant it.
    const purpose: Purpose = { kind: 'client', callId, acquire: req };
    this.propose(command, purpose, Math.min(timeoutMs, this.cfg.proposalTimeoutMs));
  }

  /** `callId` waits for the waiter (key, ticket) to be decided. */
  private attach(callId: CallId, key: string, ticket: number): void {
    const early = this.waiting.decidedEarlier(key, ticket);
    if (early !== undefined) {
      this.answerDecision(callId, early.index, early.decision);
      return;
    }
    if (!this.state().isWaiting(key, ticket)) {
      // Decided in an entry this leader saw before it kept decisions (another leader's term, a snapshot):
      // the retry finds the remembered outcome through a new acquire entry.
      this.fail(callId, unavailable('the wait was decided meanwhile; retry with the same request_id to learn how'));
      return;
    }
    this.waiting.attach(callId, key, ticket);
  }

  private onCancel(callId: CallId): void {
    if (this.gate.drop(callId)) {
      this.fail(callId, unavailable(CALLER_WENT_AWAY));
      return;
    }
    if (this.reads.delete(callId)) {
      this.fail(callId, unavailable(CALLER_WENT_AWAY));
      return;
    }
    const left = this.waiting.detach(callId);
    if (left === undefined) {
      // A proposal in flight (its entry cannot be taken back): if an acquire puts the request in line, the
      // line is told then (clientApplied). Other proposals just finish; their answer goes nowhere.
      if (this.clientProposalOf(callId)) this.cancelledInFlight.add(callId);
      return;
    }
    this.fail(callId, unavailable(CALLER_WENT_AWAY));
    if (!left.othersWait) this.cancelWait(left.key, left.ticket);
  }

  /** Nobody waits for the waiter any more: its place is given up (a `dequeue` entry, cause cancel). */
  private cancelWait(key: string, ticket: number): void {
    if (!this.gate.ready) return; // its wait deadline will end it
    this.propose({ type: 'dequeue', timeMs: 0, key, ticket, cause: 'cancel' }, { kind: 'cancelWait' }, this.cfg.proposalTimeoutMs);
  }

  private onReadDone(callId: CallId): void {
    const key = this.reads.get(callId);
    if (key === undefined) return;
    this.reads.delete(callId);
    this.answer(callId, this.viewAt(key));
  }

  private onClose(): void {
    for (const id of this.waiting.takeAll()) this.fail(id, unavailable(SHUTTING_DOWN));
    for (const held of this.gate.takeAll()) this.fail(held.callId, unavailable(SHUTTING_DOWN));
  }

  // ------------------------------------------------------------------ proposals

  private proposeFor(callId: CallId, command: LockCommand, timeoutMs: number): ProposalId {
    return this.propose(command, { kind: 'client', callId }, timeoutMs);
  }

  /** Stamp `command` with the leader's now and ask the adapter to propose it. */
  private propose(command: LockCommand, purpose: Purpose, timeoutMs: number): ProposalId {
    const proposalId = this.nextProposalId++;
    const stamped = { ...command, timeMs: this.nowMs } as LockCommand;
    this.housekeeping.lastProposalAtMs = stamped.timeMs;
    this.proposals.set(proposalId, purpose);
    if (stamped.type === 'acquire') this.admission.proposed(proposalId, this.state(), stamped, (stamped.waitMs ?? 0) > 0, stamped.sessionId ?? 0);
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
        this.clientApplied(purpose.callId, purpose.acquire?.key, result);
        break;
      case 'cancelWait':
        break;
      case 'expire':
      case 'checkpoint':
      case 'forget':
      case 'dequeue':
      case 'undelay':
      case 'handOff':
      case 'expireSession':
      case 'clusterLevel':
      case 'memberRan':
        this.housekeeping.settled(id, purpose);
        break;
    }
  }

  /** Whether `callId` has a proposal in flight (a scan: only a cancel asks). */
  private clientProposalOf(callId: CallId): boolean {
    for (const purpose of this.proposals.values()) if (purpose.kind === 'client' && purpose.callId === callId) return true;
    return false;
  }

  private clientApplied(callId: CallId, waitKey: string | undefined, result: LockResult | null): void {
    const cancelled = this.cancelledInFlight.delete(callId);
    if (result === null) {
      this.fail(callId, internal('a lock command applied without a result'));
    } else if (result.type === 'error') {
      this.fail(callId, { kind: 'rejected', message: result.message, leaderId: null });
    } else if (result.type === 'acquire' && result.waitTicket !== undefined && waitKey !== undefined) {
      // In line: the answer comes with the entry that decides it.
      if (!cancelled) this.attach(callId, waitKey, result.waitTicket);
      else if (this.state().isWaiting(waitKey, result.waitTicket)) this.cancelWait(waitKey, result.waitTicket);
    } else if (!cancelled) {
      this.answer(callId, result as ClientAnswer);
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
        this.cancelledInFlight.delete(purpose.callId);
        this.fail(purpose.callId, proposalFailure(error));
        break;
      case 'cancelWait':
        break;
      case 'expire':
      case 'checkpoint':
      case 'forget':
      case 'dequeue':
      case 'undelay':
      case 'handOff':
      case 'expireSession':
      case 'clusterLevel':
      case 'memberRan':
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

  /** The lock state of `key` judged at the leader's now (log time projected to its clock, machine.ts). A
   *  lease past its deadline is reported free (its expire entry is on its way). */
  private viewAt(key: string): LockView {
    const state = this.state();
    const nowMs = state.projectedNowMs(this.nowMs);
    const v = state.get(key);
    const waiters = state.waiterCountOf(key);
    const index = state.appliedIndex; // the state read: a watch after it continues from exactly here
    if (v.holders !== undefined) return holdersAt(v, nowMs, waiters, index);
    if (!v.held) return { ...v, waiters, index };
    if (v.expiresAtMs <= nowMs) return { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken, waiters, index }; // (its session's too)
    const value = state.valueOf(key);
    return { ...v, ttlMs: v.expiresAtMs - nowMs, waiters, index, ...(value !== undefined ? { value } : {}) };
  }
}

/** A key with many holds judged at the leader's now: holds past their end are left out (their expire
 *  entries are on their way), the first live one fills the single-holder fields. */
function holdersAt(v: LockView, nowMs: number, waiters: number, index: number): LockView {
  const holders = v.holders!.filter((h) => h.expiresAtMs > nowMs).map((h) => ({ ...h, ttlMs: h.expiresAtMs - nowMs }));
  const first = holders[0];
  const base: LockView = first === undefined
    ? { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken }
    : { held: true, owner: first.owner, token: first.token, ttlMs: first.ttlMs, expiresAtMs: first.expiresAtMs, lastToken: v.lastToken };
  if (first !== undefined && first.sessionId > 0n) base.sessionId = first.sessionId;
  if (first?.value) base.value = first.value;
  return { ...base, holders, ...(v.limit !== undefined ? { limit: v.limit } : {}), waiters, index };
}

function internal(message: string): CallFailure {
  return { kind: 'internal', message: `internal: ${message}`, leaderId: null };
}
