// The lock service on one node: a thin adapter between the Raft node, the client calls and the pure lock
// leader (src/lock/leader). It decides nothing itself: node events and client calls become LeaderEvents,
// LeaderCommands become proposals, read barriers, answers and wake-ups. Time and timers come only from
// the injected NodeEnv, so the simulator runs this adapter, the real leader module and a real RaftNode on
// virtual time. Transport-agnostic: the client API (src/server/client-api/lock-calls.ts) maps calls and
// errors onto it.
import { encodeCommand } from '../lock/commands.js';
import { notLeader, SHUTTING_DOWN } from '../lock/leader/failures.js';
import type { LockMachine } from '../lock/machine.js';
import {
  LockLeader,
  type AdmissionLimits,
  type CallFailure,
  type CallId,
  type ClientAnswer,
  type ClientRequest,
  type LeaderCommand,
  type LeaderEvent,
  type LockLeaderConfig,
  type LockStateView,
  type ProposalError,
} from '../lock/leader/index.js';
import type {
  AcquireResult,
  LockResult,
  LockView,
  OpenSessionResult,
  ReleaseResult,
  RenewResult,
  RenewSessionResult,
  RevokeResult,
  SessionEndResult,
} from '../lock/types.js';
import type { ValidAcquire, ValidOpenSession, ValidRelease, ValidRenew, ValidRevoke, ValidSessionCall } from '../lock/validate.js';
import type { Entry, NodeId, SoftState, Status } from '../raft/core/types.js';
import type { ProgressView } from '../raft/core/progress.js';
import type { NodeEnv, TimerHandle } from '../raft/env.js';
import { NodeStoppedError, NotLeaderError, ProposalDroppedError, ProposalTimeoutError, ReadTimeoutError } from '../raft/errors.js';
import type { NodeLogger } from '../raft/logger.js';
import { isDetached, type CallSignal } from '../transport/call-end.js';

/** The call found no leader here to serve it: this node is not the leader (`leaderId` names the one it
 *  knows), is still starting its term or shutting down, lost the leadership, or no quorum confirmed the
 *  entry in time (src/lock/leader/failures.ts). Maps to gRPC UNAVAILABLE: the caller should retry (same
 *  request_id), possibly on another node. The client's UnavailableError is what a caller sees of it. */
export class LeaderUnavailableError extends Error {
  constructor(
    message: string,
    readonly leaderId: string | null = null,
  ) {
    super(message);
    this.name = 'LeaderUnavailableError';
  }
}

/** The state machine refused the command as a whole (e.g. a request_id reused for another operation). */
export class RequestRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RequestRejectedError';
  }
}

/** The request contradicts the replicated state (an owner that is not its session's). Maps to gRPC
 *  INVALID_ARGUMENT (the client's InvalidRequestError). */
export class ConflictingRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConflictingRequestError';
  }
}

/** The leader's admission (src/lock/leader/admission.ts) refused the call under a configured limit, named
 *  in the message. Maps to gRPC RESOURCE_EXHAUSTED (the client's LimitExceededError). */
export class AdmissionLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdmissionLimitError';
  }
}

/** The part of RaftNode the lock service (and the gRPC layer, through `service.node`) uses. An interface,
 *  so a simulator can hand in a RaftNode running on virtual time, or a double. */
export interface LockNode {
  readonly id: NodeId;
  readonly term: number;
  readonly leaderId: NodeId | null;
  isLeader(): boolean;
  status(): Status;
  progress(): Map<NodeId, ProgressView>;
  propose(data: Uint8Array, timeoutMs: number): Promise<{ index: number; result: LockResult | null }>;
  readBarrier(timeoutMs: number): Promise<number>;
  on(event: 'softState', listener: (ss: SoftState, prev: SoftState) => void): unknown;
  on(event: 'applied', listener: (entry: Entry, result: LockResult | null | undefined) => void): unknown;
}

/** Where the applied lock state lives (LockFsm in production). Read through on every use: a snapshot
 *  restore replaces the machine object wholesale. */
export interface LockStateHolder {
  readonly machine: LockMachine;
}

export interface LockServiceOptions {
  /** Clock (stamps, deadlines) and timers; production passes the node's realEnv(). */
  env: NodeEnv;
  /** How often the leader looks for expired leases and idle time (ms). */
  housekeepingMs: number;
  /** Propose a checkpoint when leases exist and nothing was proposed for this long (ms). */
  checkpointIdleMs: number;
  /** Timeout of the leader's own proposals (expire, checkpoint, grants to waiters), and the most an
   *  acquire's entry may take to apply (LockLeaderConfig.proposalTimeoutMs) (ms). */
  proposalTimeoutMs: number;
  logger: NodeLogger;
  /** Admission limits of this node while it leads (default: none). */
  limits?: Readonly<AdmissionLimits>;
  /** Free keys freed longer ago than this (log time) are forgotten (default: never). */
  freeKeyRetentionMs?: number;
  /** The lowest cluster level every member reads, as this node knows it (versions.ts), or undefined while
   *  some member has not announced its build. Asked while leading; the leader raises the cluster's level to
   *  it. Without it the cluster stays at the level its log has (a node that cannot ask never raises it). */
  membersReadLevel?: () => number | undefined;
  /** The members known to have run (acknowledged entries of this log: the Raft leader's progress), asked
   *  while leading; the leader records them in the log (machine.ts `ran`). */
  membersRan?: () => readonly string[];
  /** Builds the lock leader (default: src/lock/leader's). The simulator hands in the one of a scratch copy of
   *  src/lock, so a bug planted in the leader runs under it as one planted in the machine does. */
  createLeader?: (state: () => LockStateView, config: Partial<LockLeaderConfig>) => LockLeader;
}

/** A client call waiting for the leader's answer: one object holding its promise's callbacks and its
 *  signal's listener, not a closure per step — it lives as long as the call, which under load is long
 *  enough for V8 to promote what it holds to old space, where it then dies. */
class OpenCall {
  onAbort: (() => void) | null = null;
  constructor(
    private readonly calls: Map<CallId, OpenCall>,
    private readonly callId: CallId,
    private readonly signal: CallSignal | undefined,
    private readonly settleOk: (answer: ClientAnswer) => void,
    private readonly settleFailed: (err: Error) => void,
  ) {}

  resolve(answer: ClientAnswer): void {
    this.done();
    this.settleOk(answer);
  }

  reject(err: Error): void {
    this.done();
    this.settleFailed(err);
  }

  private done(): void {
    if (this.onAbort !== null) this.signal?.removeEventListener('abort', this.onAbort);
    this.calls.delete(this.callId);
  }
}

export class LockService {
  private readonly leader: LockLeader;
  private readonly calls = new Map<CallId, OpenCall>();
  private nextCallId = 1;
  /** The housekeeping tick, armed only while this node leads. */
  private housekeeping: TimerHandle | null = null;
  /** One timer per distinct wake-up time the leader asked for. */
  private readonly wakeups = new Map<number, TimerHandle>();
  /** Events raised while a step runs (a command's synchronous side effect) wait for it to finish. */
  private backlog: LeaderEvent[] = [];
  private stepping = false;
  private closed = false;
  /** What the last `members` event gave the leader (to send one only on a change). */
  private membersReadLevel: number | undefined = undefined;
  private membersRanKey = '';

  constructor(
    readonly node: LockNode,
    private readonly fsm: LockStateHolder,
    private readonly opts: LockServiceOptions,
  ) {
    const config: Partial<LockLeaderConfig> = {
      checkpointIdleMs: opts.checkpointIdleMs,
      proposalTimeoutMs: opts.proposalTimeoutMs,
      ...(opts.limits ? { limits: opts.limits } : {}),
      ...(opts.freeKeyRetentionMs !== undefined ? { freeKeyRetentionMs: opts.freeKeyRetentionMs } : {}),
    };
    const state = () => this.fsm.machine;
    this.leader = opts.createLeader ? opts.createLeader(state, config) : new LockLeader(state, config);
    node.on('softState', (ss: SoftState) => {
      this.armHousekeeping(ss.role === 'leader');
      this.step({ type: 'role', role: ss.role, term: ss.term, leaderId: ss.leaderId, clockMs: this.now() });
    });
    node.on('applied', (entry: Entry, result: LockResult | null | undefined) => {
      this.step({ type: 'applied', index: entry.index, term: entry.term, result: result ?? null, clockMs: this.now() });
    });
    const st = node.status();
    this.armHousekeeping(st.role === 'leader');
    this.step({ type: 'role', role: st.role, term: st.term, leaderId: st.leaderId, clockMs: this.now() });
  }

  /** The applied lock state (replaced wholesale when a snapshot is installed). */
  get machine(): LockMachine {
    return this.fsm.machine;
  }

  /** Leader whose termStart entry has applied: it stamps and serves client commands now. */
  get isReadyLeader(): boolean {
    return this.leader.isReady;
  }

  /** Undefined while this node's lock leader leads; else the leader it knows (null: none) — what a call
   *  made now would be refused with (LockLeader.notLeading), so the call layer can forward at once instead
   *  of building a call, a promise and an error only to learn it. A closed service leads nothing. */
  get notLeading(): string | null | undefined {
    return this.closed ? null : this.leader.notLeading;
  }

  /** While `notLeading` is defined: the refusal a call made now would get, in the lock leader's words
   *  (failures.ts), built without entering it — for the call layer to answer a call it may not forward. */
  notLeadingError(): LeaderUnavailableError {
    if (this.closed) return new LeaderUnavailableError(SHUTTING_DOWN);
    const f = notLeader(this.leader.notLeading ?? null);
    return new LeaderUnavailableError(f.message, f.leaderId);
  }

  /** Acquires waiting in a wait line (wait_ms): replicated state, so every node reports the same. */
  get waiterCount(): number {
    return this.fsm.machine.waiterCount;
  }

  /** Calls open on this node that wait for their place in line to be decided (0 on a follower). */
  get waitingCallCount(): number {
    return this.leader.waitingCallCount;
  }

  /** Whether a call of this request now re-attaches to a place in `key`'s line (LockLeader.hasPlaceInLine;
   *  introspection for the simulator). */
  isQueued(key: string, owner: string, requestId: string): boolean {
    return this.leader.hasPlaceInLine(key, owner, requestId);
  }

  /** Whether the log has decided this request already (granted or refused), so a call of it gets that
   *  outcome replayed (introspection for the simulator's FIFO oracle: such a call is no waiter). */
  replaysOutcome(key: string, owner: string, requestId: string): boolean {
    return this.fsm.machine.rememberedAcquire(owner, requestId, key) !== null;
  }

  close(): void {
    if (this.closed) return;
    this.step({ type: 'close', clockMs: this.now() });
    this.closed = true;
    this.armHousekeeping(false);
    for (const t of this.wakeups.values()) t.cancel();
    this.wakeups.clear();
  }

  // ------------------------------------------------------------------ client operations (leader only)

  acquire(req: ValidAcquire, timeoutMs: number, signal?: CallSignal): Promise<AcquireResult> {
    return this.call({ op: 'acquire', req }, timeoutMs, signal) as Promise<AcquireResult>;
  }

  renew(req: ValidRenew, timeoutMs: number): Promise<RenewResult> {
    return this.call({ op: 'renew', req }, timeoutMs) as Promise<RenewResult>;
  }

  release(req: ValidRelease, timeoutMs: number): Promise<ReleaseResult> {
    return this.call({ op: 'release', req }, timeoutMs) as Promise<ReleaseResult>;
  }

  openSession(req: ValidOpenSession, timeoutMs: number): Promise<OpenSessionResult> {
    return this.call({ op: 'openSession', req }, timeoutMs) as Promise<OpenSessionResult>;
  }

  renewSession(req: ValidSessionCall, timeoutMs: number): Promise<RenewSessionResult> {
    return this.call({ op: 'renewSession', req }, timeoutMs) as Promise<RenewSessionResult>;
  }

  closeSession(req: ValidSessionCall, timeoutMs: number): Promise<SessionEndResult> {
    return this.call({ op: 'closeSession', req }, timeoutMs) as Promise<SessionEndResult>;
  }

  /** Ends a hold as an operator (SPEC "Revoke"); the caller's right to is checked by the gRPC layer. */
  revoke(req: ValidRevoke, timeoutMs: number): Promise<RevokeResult> {
    return this.call({ op: 'revoke', req }, timeoutMs) as Promise<RevokeResult>;
  }

  /** Linearizable: a ReadIndex barrier, then the applied state judged at the leader's now. */
  get(key: string, timeoutMs: number): Promise<LockView> {
    return this.call({ op: 'get', key }, timeoutMs) as Promise<LockView>;
  }

  private call(request: ClientRequest, timeoutMs: number, signal?: CallSignal): Promise<ClientAnswer> {
    if (this.closed) return Promise.reject(new LeaderUnavailableError(SHUTTING_DOWN));
    const callId = this.nextCallId++;
    return new Promise<ClientAnswer>((resolve, reject) => {
      const open = new OpenCall(this.calls, callId, signal, resolve, reject);
      if (signal !== undefined) {
        // A signal aborted with CallDetached: the caller's connection broke, not its will (call-end.ts).
        open.onAbort = (): void => this.step({ type: 'cancel', callId, detached: isDetached(signal), clockMs: this.now() });
        signal.addEventListener('abort', open.onAbort, { once: true });
      }
      this.calls.set(callId, open);
      this.step({ type: 'request', callId, request, timeoutMs, clockMs: this.now() });
    });
  }

  // ------------------------------------------------------------------ driving the leader module

  private now(): number {
    return this.opts.env.nowMs();
  }

  private step(ev: LeaderEvent): void {
    // Events still flow after close(): the node's stop() fails the proposals in flight, and their calls
    // must hear of it.
    this.backlog.push(ev);
    if (this.stepping) return;
    this.stepping = true;
    try {
      for (let next = this.backlog.shift(); next !== undefined; next = this.backlog.shift()) {
        for (const cmd of this.leader.step(next)) this.execute(cmd);
      }
    } finally {
      this.stepping = false;
    }
  }

  private execute(cmd: LeaderCommand): void {
    switch (cmd.type) {
      case 'propose': {
        const { proposalId } = cmd;
        let data: Uint8Array;
        try {
          data = encodeCommand(cmd.command);
        } catch (err) {
          this.step({ type: 'proposalFailed', proposalId, error: { kind: 'internal', message: String(err) }, clockMs: this.now() });
          return;
        }
        this.node.propose(data, cmd.timeoutMs).then(
          (r) => this.step({ type: 'proposalApplied', proposalId, index: r.index, result: r.result ?? null, clockMs: this.now() }),
          (err: unknown) => this.step({ type: 'proposalFailed', proposalId, error: proposalError(err), clockMs: this.now() }),
        );
        return;
      }
      case 'readBarrier': {
        const { callId } = cmd;
        this.node.readBarrier(cmd.timeoutMs).then(
          () => this.step({ type: 'readDone', callId, clockMs: this.now() }),
          (err: unknown) => this.step({ type: 'readFailed', callId, error: proposalError(err), clockMs: this.now() }),
        );
        return;
      }
      case 'answer':
        this.calls.get(cmd.callId)?.resolve(cmd.result);
        return;
      case 'fail':
        this.calls.get(cmd.callId)?.reject(callError(cmd.error));
        return;
      case 'wakeAt':
        this.wakeAt(cmd.atMs);
        return;
      case 'collecting':
        // The turn's end: setImmediate runs after the I/O callbacks of this pass of the event loop, so the
        // renews that arrived together (one stream's batch, many streams' frames) leave in one entry.
        this.opts.env.scheduler.soon(() => this.step({ type: 'turnEnd', clockMs: this.now() }));
        return;
      case 'termStarted':
        this.opts.logger.info(
          { nodeId: this.node.id, term: cmd.term, extended: cmd.leasesExtended, ended: cmd.leasesEnded },
          'term started: leases carried over',
        );
        return;
    }
  }

  /** Only a leader has deadlines to watch (held calls, waiters, leases to expire). A follower's timer would
   *  wake its event loop 40 times a second for nothing: at idle, timer wake-ups were a quarter of a
   *  follower's CPU (issue 37's idle goal). */
  private armHousekeeping(leading: boolean): void {
    if (leading && !this.closed) {
      this.housekeeping ??= this.opts.env.scheduler.every(this.opts.housekeepingMs, () => this.housekeepingTick());
    } else if (this.housekeeping !== null) {
      this.housekeeping.cancel();
      this.housekeeping = null;
    }
  }

  private housekeepingTick(): void {
    if (!this.node.isLeader()) return;
    const readLevel = this.opts.membersReadLevel?.();
    const ran = this.opts.membersRan?.() ?? [];
    const ranKey = ran.join(',');
    if (readLevel !== this.membersReadLevel || ranKey !== this.membersRanKey) {
      this.membersReadLevel = readLevel;
      this.membersRanKey = ranKey;
      this.step({ type: 'members', readLevel, ran, clockMs: this.now() });
    }
    this.step({ type: 'tick', clockMs: this.now() });
  }

  private wakeAt(atMs: number): void {
    if (this.closed || this.wakeups.has(atMs)) return;
    const delayMs = Math.max(0, atMs - this.now());
    this.wakeups.set(
      atMs,
      this.opts.env.scheduler.after(delayMs, () => {
        this.wakeups.delete(atMs);
        // Timers and the clock are different instruments: a timer may fire before this clock reaches atMs
        // (early by rounding, or by the clock running slow). Then wait the rest — never hand the leader a
        // time its clock has not reached: it stamps entries with it, and a stamp from the future makes
        // every lease look older than it is (found by the lock simulation with a 3% slow clock).
        const now = this.now();
        if (now < atMs) this.wakeAt(atMs);
        else this.step({ type: 'tick', clockMs: now });
      }),
    );
  }
}

function proposalError(err: unknown): ProposalError {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof NotLeaderError) return { kind: 'not-leader', message, leaderId: err.leaderId };
  if (err instanceof ProposalTimeoutError) return { kind: 'timeout', message, index: err.index };
  if (err instanceof ReadTimeoutError) return { kind: 'read-timeout', message };
  if (err instanceof ProposalDroppedError) return { kind: 'dropped', message };
  if (err instanceof NodeStoppedError) return { kind: 'stopped', message };
  return { kind: 'internal', message };
}

function callError(f: CallFailure): Error {
  switch (f.kind) {
    case 'unavailable':
      return new LeaderUnavailableError(f.message, f.leaderId);
    case 'rejected':
      return new RequestRejectedError(f.message);
    case 'exhausted':
      return new AdmissionLimitError(f.message);
    case 'invalid':
      return new ConflictingRequestError(f.message);
    case 'internal':
      return new Error(f.message);
  }
}
