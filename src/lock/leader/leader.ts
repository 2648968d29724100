// The lock leader: every decision a leader makes beyond the state machine, as one pure step function.
// Events in (role changes, applied entries, ticks, client calls, proposal outcomes, cancels), commands
// out (propose, read barrier, answer, fail, wake me at). Deterministic: the same events give the same
// commands, so the simulator drives exactly what ships. What stays leader-local, each with a test in
// test/unit/lock/leader-*.test.ts:
// - term start before stamping (term-gate.ts);
// - admission against the limits (admission.ts);
// - proactive expiry of leases and of waiters past their wait deadline, idle checkpoints (housekeeping.ts);
// - which open calls wait for which waiter (waiting-calls.ts), and how long a waiter whose connection broke
//   keeps its place with nobody waiting for it (detached-waiters.ts);
// - what each proposal in flight is for (proposals.ts), and what is known of a request id (request-ids.ts);
// - the renews of one turn, proposed as one entry at the driver's turnEnd (renew-turn.ts, cluster level 7).
// Beside them, pure functions of the applied state: the acquire decision (acquire.ts), the entry each call
// proposes (call-commands.ts), the answer a call reads off an applied result (answers.ts), and the view a
// read answers (read-view.ts). This file is the step function that wires them.
// Everything else is decided by the log: a blocking acquire is proposed like any other and either decided
// at once or put in the key's replicated wait line (wait-line.ts); the entry that later grants or refuses
// it names it in `decided`, and that is the call's answer. No refusal or grant comes from this module's
// memory, so a leader that was deposed without knowing it cannot tell a client "not acquired" for a
// request the log granted.
import type { Role } from '../../raft/core/types.js';
import type { LockCommand } from '../commands.js';
import type { LockResult, WaiterDecision } from '../types.js';
import type { ValidAcquire, ValidRenew } from '../validate.js';
import { LEVEL_RENEWS_ENTRY } from '../versions.js';
import { acquireStep } from './acquire.js';
import { Admission } from './admission.js';
import { decisionAnswer, proposalAnswer, renewsAnswers, type CallAnswer } from './answers.js';
import { commandOf } from './call-commands.js';
import {
  CALLER_WENT_AWAY,
  CALL_DEADLINE_PASSED,
  LEADERSHIP_CHANGED,
  SHUTTING_DOWN,
  STILL_STARTING,
  notLeader,
  proposalFailure,
  unavailable,
} from './failures.js';
import { DetachedWaiters } from './detached-waiters.js';
import { Housekeeping } from './housekeeping.js';
import { ProposalTable, isHousekeeping, type Purpose } from './proposals.js';
import { viewAt } from './read-view.js';
import { hasPlaceInLine } from './request-ids.js';
import { RenewTurn } from './renew-turn.js';
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
} from './types.js';
import { WaitingCalls } from './waiting-calls.js';

export class LockLeader {
  private readonly cfg: LockLeaderConfig;
  private readonly gate = new TermGate();
  private readonly housekeeping: Housekeeping;
  private readonly admission: Admission;
  private readonly waiting = new WaitingCalls();
  private readonly detached = new DetachedWaiters();
  /** Open acquire calls -> their caller's deadline (the leader's clock): a call never waits in line past it. */
  private readonly callDeadlines = new Map<CallId, number>();
  private readonly proposals = new ProposalTable();
  /** Calls waiting on their read barrier, with the key they read. */
  private readonly reads = new Map<CallId, string>();
  /** The renews admitted this turn, not yet proposed (cluster level 7). */
  private readonly renewTurn = new RenewTurn();
  private clockMs = 0;
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
    this.clockMs = Math.max(this.clockMs, ev.clockMs);
    switch (ev.type) {
      case 'role':
        this.onRole(ev.role, ev.term, ev.leaderId);
        break;
      case 'applied':
        this.admission.applied(ev.index, this.state());
        this.housekeeping.applied(ev.index);
        this.onApplied(ev.term, ev.result);
        break;
      case 'tick':
        this.onTick();
        break;
      case 'request':
        this.onRequest(ev.callId, ev.request, ev.timeoutMs);
        break;
      case 'cancel':
        this.onCancel(ev.callId, ev.detached === true);
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
      case 'turnEnd':
        this.proposeRenews();
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

  /** Undefined while this node leads; else the leader it knows (null: none), which a client call made now
   *  would be refused as not-leader with (onRequest). The call layer forwards on it without entering here. */
  get notLeading(): string | null | undefined {
    return this.gate.isLeader ? undefined : this.gate.leaderId;
  }

  /** Calls on this node waiting for their place in a wait line to be decided. */
  get waitingCallCount(): number {
    return this.waiting.callCount;
  }

  /** Whether (owner, request_id) holds a place in `key`'s line, or is about to (its blocking acquire is in
   *  flight): a new call of it re-attaches there instead of queueing at the back. For the simulator. */
  hasPlaceInLine(key: string, owner: string, requestId: string): boolean {
    return hasPlaceInLine(this.state(), this.proposals, key, owner, requestId);
  }

  // ------------------------------------------------------------------ role and term

  private onRole(role: Role, term: number, leaderId: string | null): void {
    const wasLeader = this.gate.isLeader;
    const prevTerm = this.gate.term;
    this.gate.role = role;
    this.gate.term = term;
    this.gate.leaderId = leaderId;
    if (wasLeader && (!this.gate.isLeader || term !== prevTerm)) {
      // The waiters keep their places in the replicated line; only their calls here end. They fail
      // UNAVAILABLE so the client retries with the same request_id at the new leader, which re-attaches it.
      for (const id of this.waiting.takeAll()) this.fail(id, { ...unavailable(LEADERSHIP_CHANGED), leaderId });
      // Not proposed yet: nothing of them is in the log, so a retry (at the new leader) is a first try.
      for (const id of this.renewTurn.takeCalls()) this.fail(id, { ...unavailable(LEADERSHIP_CHANGED), leaderId });
      this.housekeeping.leadershipLost();
      this.admission.leadershipLost();
      this.detached.clear();
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
    this.detached.end(d.key, d.ticket);
    for (const callId of this.waiting.decided(index, d)) this.answerDecision(callId, index, d);
  }

  private answerDecision(callId: CallId, index: number, d: WaiterDecision): void {
    this.send(callId, decisionAnswer(index, d));
  }

  // ------------------------------------------------------------------ time

  private onTick(): void {
    for (const held of this.gate.takeDue(this.clockMs)) this.fail(held.callId, unavailable(STILL_STARTING));
    if (!this.gate.ready) return;
    // A waiting call whose caller's deadline passed ends here, as its caller's cancel: the caller gave up
    // (the client library cancels an attempt at its deadline too, which lies past the wait it asked for).
    // So no call is held at the leader after its caller's deadline — a forwarded one included, which the
    // follower may leave running when its client's stream broke.
    for (const callId of this.waiting.dueCalls(this.clockMs)) this.endCall(callId, false, CALL_DEADLINE_PASSED);
    for (const { key, ticket } of this.detached.takeDue(this.clockMs)) {
      if (!this.waiting.hasCalls(key, ticket) && this.state().isWaiting(key, ticket)) this.cancelWait(key, ticket);
    }
    this.housekeeping.run(this.state(), this.clockMs, (command, purpose) => this.propose(command, purpose, this.cfg.proposalTimeoutMs));
  }

  // ------------------------------------------------------------------ client calls

  private onRequest(callId: CallId, request: ClientRequest, timeoutMs: number): void {
    if (!this.gate.isLeader) {
      this.fail(callId, notLeader(this.gate.leaderId));
      return;
    }
    if (!this.gate.ready) {
      const deadlineMs = this.clockMs + Math.min(timeoutMs, this.cfg.termStartWaitMs);
      this.gate.hold({ callId, request, timeoutMs, deadlineMs });
      this.out.push({ type: 'wakeAt', atMs: deadlineMs });
      this.maybeProposeTermStart();
      return;
    }
    this.serve({ callId, request, timeoutMs, deadlineMs: this.clockMs });
  }

  /** A call on a ready leader, in arrival order. */
  private serve({ callId, request, timeoutMs }: HeldCall): void {
    switch (request.op) {
      case 'acquire':
        this.acquire(callId, request.req, timeoutMs);
        break;
      case 'get':
        this.reads.set(callId, request.key);
        this.out.push({ type: 'readBarrier', callId, timeoutMs });
        break;
      case 'renew':
        if (this.state().clusterLevel >= LEVEL_RENEWS_ENTRY) this.collectRenew(callId, request.req, timeoutMs);
        else this.proposeFor(callId, commandOf(request, this.state().clusterLevel), timeoutMs);
        break;
      case 'openSession': {
        const exhausted = this.admission.refuseOpenSession(this.state());
        if (exhausted !== null) {
          this.fail(callId, { kind: 'exhausted', message: exhausted, leaderId: null });
          break;
        }
        this.admission.proposedOpen(this.proposeFor(callId, commandOf(request, this.state().clusterLevel), timeoutMs));
        break;
      }
      default:
        this.proposeFor(callId, commandOf(request, this.state().clusterLevel), timeoutMs);
        break;
    }
  }

  private acquire(callId: CallId, req: ValidAcquire, timeoutMs: number): void {
    this.callDeadlines.set(callId, this.clockMs + timeoutMs);
    const step = acquireStep(this.state(), this.admission, req);
    switch (step.kind) {
      case 'reattach':
        this.attach(callId, step.key, step.ticket);
        break;
      case 'refuse':
        this.fail(callId, step.failure);
        break;
      case 'propose':
        // Its purpose carries the request: the entry may put it in line (answers.ts proposalAnswer).
        this.propose(step.command, { kind: 'client', callId, acquire: req }, Math.min(timeoutMs, this.cfg.proposalTimeoutMs));
        break;
    }
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
    this.detached.end(key, ticket);
    const deadlineMs = this.callDeadlines.get(callId) ?? Infinity;
    this.waiting.attach(callId, key, ticket, deadlineMs);
    if (deadlineMs < Infinity) this.out.push({ type: 'wakeAt', atMs: deadlineMs });
  }

  /** `detached`: the call's connection broke (LeaderEvent 'cancel'); else its caller cancelled it. */
  private onCancel(callId: CallId, detached: boolean): void {
    if (this.gate.drop(callId) || this.renewTurn.drop(callId)) {
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
      this.proposals.cancelInFlight(callId, detached);
      return;
    }
    this.leftLine(callId, left, detached, CALLER_WENT_AWAY);
  }

  /** A waiting call ends before its waiter is decided (`detached`: not by its caller's cancel). */
  private endCall(callId: CallId, detached: boolean, why: string): void {
    const left = this.waiting.detach(callId);
    if (left !== undefined) this.leftLine(callId, left, detached, why);
  }

  private leftLine(callId: CallId, left: { key: string; ticket: number; othersWait: boolean }, detached: boolean, why: string): void {
    this.fail(callId, unavailable(why));
    if (left.othersWait) return;
    if (detached) this.keepPlace(left.key, left.ticket);
    else this.cancelWait(left.key, left.ticket);
  }

  /** The last call waiting for (key, ticket) went with a broken connection: the waiter keeps its place — under
   *  a session while the session lives, without one for the grace (detached-waiters.ts). */
  private keepPlace(key: string, ticket: number): void {
    const sessionId = this.state().sessionOfWaiter(key, ticket);
    if (sessionId === undefined || sessionId > 0) return;
    const dueMs = this.clockMs + this.cfg.detachedWaiterGraceMs;
    this.detached.start(key, ticket, dueMs);
    this.out.push({ type: 'wakeAt', atMs: dueMs });
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
    this.answer(callId, viewAt(this.state(), this.clockMs, key));
  }

  private onClose(): void {
    for (const id of this.waiting.takeAll()) this.fail(id, unavailable(SHUTTING_DOWN));
    for (const id of this.renewTurn.takeCalls()) this.fail(id, unavailable(SHUTTING_DOWN));
    for (const held of this.gate.takeAll()) this.fail(held.callId, unavailable(SHUTTING_DOWN));
  }

  // ------------------------------------------------------------------ renews of one turn

  /** From cluster level 7 a renew waits for the turn's end and travels in one entry with the turn's others.
   *  Every renew takes this path, a turn's only one too: one way a renew reaches the log at level 7. */
  private collectRenew(callId: CallId, req: ValidRenew, timeoutMs: number): void {
    if (this.renewTurn.add({ callId, req, timeoutMs })) this.out.push({ type: 'collecting' });
  }

  /** The turn ended: its renews go into the log, in arrival order, `renewsPerEntry` to an entry. */
  private proposeRenews(): void {
    for (const batch of this.renewTurn.takeBatches(this.cfg.renewsPerEntry))
      this.propose({ type: 'renews', timeMs: 0, renews: batch.renews }, { kind: 'renews', callIds: batch.callIds }, batch.timeoutMs);
  }

  /** Each caller its own renew's answer: the i-th renew of the entry is the i-th caller's. */
  private renewsApplied(callIds: readonly CallId[], result: LockResult | null): void {
    const answers = renewsAnswers(result, callIds.length);
    for (let i = 0; i < callIds.length; i++) this.send(callIds[i]!, answers[i]!);
  }

  // ------------------------------------------------------------------ proposals

  private proposeFor(callId: CallId, command: LockCommand, timeoutMs: number): ProposalId {
    return this.propose(command, { kind: 'client', callId }, timeoutMs);
  }

  /** Stamp `command` with the leader's now and ask the adapter to propose it. */
  private propose(command: LockCommand, purpose: Purpose, timeoutMs: number): ProposalId {
    // A call on a key with a renew waiting for the turn's end goes into the log after it, as it arrived
    // after it: a renew and a release (or re-acquire) of one key keep their arrival order.
    if (purpose.kind === 'client' && 'key' in command && this.renewTurn.hasKey(command.key)) this.proposeRenews();
    const proposalId = this.proposals.add(purpose);
    const stamped = { ...command, timeMs: this.clockMs } as LockCommand;
    this.housekeeping.lastProposalAtMs = stamped.timeMs;
    if (stamped.type === 'acquire')
      this.admission.proposed(proposalId, this.state(), stamped, (stamped.waitMs ?? 0) > 0, stamped.sessionId ?? 0);
    this.out.push({ type: 'propose', proposalId, command: stamped, timeoutMs });
    return proposalId;
  }

  private onProposalApplied(id: ProposalId, result: LockResult | null): void {
    const purpose = this.proposals.take(id);
    if (!purpose) return;
    this.admission.settled(id);
    if (isHousekeeping(purpose)) {
      this.housekeeping.settled(id, purpose);
      return;
    }
    switch (purpose.kind) {
      case 'termStart':
        // Normally the applied event got here first; this covers a driver that reports only outcomes. A
        // proposal's outcome is reported only when it applied in the term it was proposed in.
        if (result?.type === 'termStart') this.onApplied(purpose.term, result);
        break;
      case 'client':
        this.clientApplied(purpose.callId, purpose.acquire?.key, result);
        break;
      case 'renews':
        this.renewsApplied(purpose.callIds, result);
        break;
      case 'cancelWait':
        break;
    }
  }

  private clientApplied(callId: CallId, waitKey: string | undefined, result: LockResult | null): void {
    const cancelled = this.proposals.takeCancelled(callId);
    if (cancelled !== undefined) this.callDeadlines.delete(callId); // nobody is answered
    const answer = proposalAnswer(result, waitKey);
    if (answer.kind === 'inLine') {
      // In line: the answer comes with the entry that decides it.
      if (cancelled === undefined) this.attach(callId, answer.key, answer.ticket);
      else if (!this.state().isWaiting(answer.key, answer.ticket) || this.waiting.hasCalls(answer.key, answer.ticket)) return;
      else if (cancelled.detached) this.keepPlace(answer.key, answer.ticket);
      else this.cancelWait(answer.key, answer.ticket);
    } else if (answer.kind === 'fail' || cancelled === undefined) {
      this.send(callId, answer);
    }
  }

  private onProposalFailed(id: ProposalId, error: ProposalError): void {
    const purpose = this.proposals.take(id);
    if (!purpose) return;
    // A timeout is no failure of the entry: it stays in our log and may commit, so while we lead, what it
    // may add stays counted until it applies (admission.ts), and housekeeping's entry stays in flight.
    const pendingAt =
      error.kind === 'timeout' && this.gate.isLeader && error.index !== undefined && error.index > this.state().appliedIndex
        ? error.index
        : undefined;
    if (pendingAt !== undefined) this.admission.timedOut(id, pendingAt);
    else this.admission.settled(id);
    if (isHousekeeping(purpose)) {
      if (pendingAt !== undefined) this.housekeeping.timedOut(id, purpose, pendingAt);
      else this.housekeeping.settled(id, purpose);
      return;
    }
    switch (purpose.kind) {
      case 'termStart':
        for (const held of this.gate.termStartFailed(id)) this.fail(held.callId, unavailable(STILL_STARTING));
        break;
      case 'client':
        this.proposals.takeCancelled(purpose.callId);
        this.fail(purpose.callId, proposalFailure(error));
        break;
      case 'renews':
        for (const callId of purpose.callIds) this.fail(callId, proposalFailure(error));
        break;
      case 'cancelWait':
        break;
    }
  }

  // ------------------------------------------------------------------ answers

  private answer(callId: CallId, result: ClientAnswer): void {
    this.callDeadlines.delete(callId);
    this.out.push({ type: 'answer', callId, result });
  }

  private fail(callId: CallId, error: CallFailure): void {
    this.callDeadlines.delete(callId);
    this.out.push({ type: 'fail', callId, error });
  }

  private send(callId: CallId, answer: CallAnswer): void {
    if (answer.kind === 'fail') this.fail(callId, answer.failure);
    else this.answer(callId, answer.result);
  }
}
