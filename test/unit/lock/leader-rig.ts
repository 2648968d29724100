// Test rig for the pure lock leader: a real LockMachine behind a hand-driven "log". Proposals wait in
// `pending` until a test commits (or fails) them; committing applies the entry to the machine at the next
// index and term, then reports it the way the driver does: the applied event first, the proposal's
// outcome after. Time moves only when a test says so.
import { encodeCommand, LockMachine, type LockCommand } from '../../../src/lock/index.js';
import {
  LockLeader,
  type CallFailure,
  type CallId,
  type ClientAnswer,
  type LeaderCommand,
  type LeaderEvent,
  type LockLeaderConfig,
  type ProposalErrorKind,
} from '../../../src/lock/leader/index.js';
import type { AcquireResult } from '../../../src/lock/types.js';

export interface Pending {
  proposalId: number;
  command: LockCommand;
  timeoutMs: number;
}

type NoTime<E> = E extends unknown ? Omit<E, 'clockMs'> : never;

export class LeaderRig {
  machine = new LockMachine();
  readonly leader: LockLeader;
  nowMs = 1000;
  term = 1;
  /** Proposed and not yet committed, in proposal order (= log order once committed). */
  pending: Pending[] = [];
  /** Every proposal ever made, in order. */
  proposed: Pending[] = [];
  readonly answers = new Map<CallId, ClientAnswer>();
  readonly failures = new Map<CallId, CallFailure>();
  /** Call ids in the order they were answered or failed. */
  readonly settled: CallId[] = [];
  readonly reads: CallId[] = [];
  readonly wakeups: number[] = [];
  /** How many times the leader asked for a turnEnd (`collecting`). */
  collecting = 0;
  private nextCallId = 1;

  constructor(config: Partial<LockLeaderConfig> = {}) {
    // No checkpoints unless a test asks for them: they would crowd every other test's proposals.
    this.leader = new LockLeader(() => this.machine, { checkpointIdleMs: 1e12, ...config });
  }

  step(ev: NoTime<LeaderEvent>): LeaderCommand[] {
    const cmds = this.leader.step({ ...ev, clockMs: this.nowMs } as LeaderEvent);
    for (const c of cmds) {
      if (c.type === 'propose') {
        const p = { proposalId: c.proposalId, command: c.command, timeoutMs: c.timeoutMs };
        this.pending.push(p);
        this.proposed.push(p);
      } else if (c.type === 'answer') {
        this.answers.set(c.callId, c.result);
        this.settled.push(c.callId);
      } else if (c.type === 'fail') {
        this.failures.set(c.callId, c.error);
        this.settled.push(c.callId);
      } else if (c.type === 'readBarrier') {
        this.reads.push(c.callId);
      } else if (c.type === 'wakeAt') {
        this.wakeups.push(c.atMs);
      } else if (c.type === 'collecting') {
        this.collecting++;
      }
    }
    return cmds;
  }

  /** This node wins the election of `term`. */
  elect(term = this.term + 1): this {
    this.term = term;
    this.step({ type: 'role', role: 'leader', term, leaderId: 'n1' });
    return this;
  }

  /** Elected, and its termStart committed: the leader stamps client commands. */
  ready(): this {
    this.elect();
    this.commitAll();
    if (!this.leader.isReady) throw new Error('rig: leader not ready after its termStart committed');
    return this;
  }

  stepDown(leaderId: string | null = 'n2', term = this.term + 1): this {
    this.term = term;
    this.step({ type: 'role', role: 'follower', term, leaderId });
    return this;
  }

  advance(ms: number): this {
    this.nowMs += ms;
    this.step({ type: 'tick' });
    return this;
  }

  /** Commit the pending proposal `proposalId` (default: the oldest). */
  commit(proposalId = this.pending[0]?.proposalId): void {
    const at = this.pending.findIndex((p) => p.proposalId === proposalId);
    if (at < 0) throw new Error(`rig: no pending proposal ${proposalId}`);
    const [p] = this.pending.splice(at, 1);
    const index = this.machine.appliedIndex + 1;
    const result = this.machine.apply(index, this.term, encodeCommand(p!.command));
    this.step({ type: 'applied', index, term: this.term, result });
    this.step({ type: 'proposalApplied', proposalId: p!.proposalId, index, result });
  }

  /** Commit the `count` oldest pending proposals as one batch, as the driver applies one Ready: every
   *  applied event first, then the proposals' outcomes (promise callbacks run after the apply loop). */
  commitBatch(count = this.pending.length): void {
    const batch = this.pending.splice(0, count);
    const outcomes = batch.map((p) => {
      const index = this.machine.appliedIndex + 1;
      const result = this.machine.apply(index, this.term, encodeCommand(p.command));
      this.step({ type: 'applied', index, term: this.term, result });
      return { proposalId: p.proposalId, index, result };
    });
    for (const o of outcomes) this.step({ type: 'proposalApplied', ...o });
  }

  /** Commit pending proposals in order, including those the commits cause, up to `limit`. */
  commitAll(limit = 1000): void {
    for (let i = 0; this.pending.length > 0; i++) {
      if (i >= limit) throw new Error('rig: commitAll did not settle');
      this.commit();
    }
  }

  failProposal(kind: ProposalErrorKind = 'timeout', proposalId = this.pending[0]?.proposalId, timedOutAt?: number): void {
    const at = this.pending.findIndex((p) => p.proposalId === proposalId);
    if (at < 0) throw new Error(`rig: no pending proposal ${proposalId}`);
    this.pending.splice(at, 1);
    // A timed-out entry stays in the log where it was appended (it may still commit): report its index.
    const index = kind === 'timeout' ? (timedOutAt ?? this.machine.appliedIndex + at + 1) : undefined;
    this.step({
      type: 'proposalFailed',
      proposalId: proposalId!,
      error: { kind, message: `planted ${kind}`, ...(index === undefined ? {} : { index }) },
    });
  }

  /** The driver gave up waiting for a proposal (timeout) while its entry stays in the log and may still
   *  commit: the outcome is reported as a timeout, yet the entry is committed later by commit()/commitAll(). */
  reportTimeout(proposalId: number): void {
    const at = this.pending.findIndex((p) => p.proposalId === proposalId);
    if (at < 0) throw new Error(`rig: no pending proposal ${proposalId}`);
    this.step({
      type: 'proposalFailed',
      proposalId,
      error: { kind: 'timeout', message: 'planted timeout', index: this.machine.appliedIndex + at + 1 },
    });
  }

  acquire(
    key: string,
    owner: string,
    opts: {
      waitMs?: number;
      requestId?: string;
      ttlMs?: number;
      timeoutMs?: number;
      lockDelayMs?: number;
      sessionId?: number;
      shared?: boolean;
    } = {},
  ): CallId {
    const callId = this.nextCallId++;
    const session = opts.sessionId ?? 0;
    const req = {
      key,
      owner,
      ttlMs: session > 0 ? 0 : (opts.ttlMs ?? 10_000),
      waitMs: opts.waitMs ?? 0,
      requestId: opts.requestId ?? `${owner}-${callId}`,
      lockDelayMs: opts.lockDelayMs ?? 0,
      sessionId: session,
      ...(opts.shared === true ? { shared: true } : {}),
    };
    this.step({ type: 'request', callId, request: { op: 'acquire', req }, timeoutMs: opts.timeoutMs ?? 5000 + req.waitMs });
    return callId;
  }

  renew(key: string, owner: string, token: bigint, opts: { ttlMs?: number; requestId?: string; timeoutMs?: number } = {}): CallId {
    const callId = this.nextCallId++;
    this.step({
      type: 'request',
      callId,
      request: { op: 'renew', req: { key, owner, token, ttlMs: opts.ttlMs ?? 10_000, requestId: opts.requestId ?? `ren-${callId}` } },
      timeoutMs: opts.timeoutMs ?? 5000,
    });
    return callId;
  }

  /** The driver's turn ended (the `soon` the leader asked for with `collecting`). */
  turnEnd(): LeaderCommand[] {
    return this.step({ type: 'turnEnd' });
  }

  release(key: string, owner: string, token: bigint): CallId {
    const callId = this.nextCallId++;
    this.step({
      type: 'request',
      callId,
      request: { op: 'release', req: { key, owner, token, requestId: `rel-${callId}` } },
      timeoutMs: 5000,
    });
    return callId;
  }

  /** A session call: open (owner, ttlMs), renew or close (sessionId). */
  session(
    request:
      { op: 'openSession'; owner: string; ttlMs: number } | { op: 'renewSession' | 'closeSession'; sessionId: number; owner?: string },
  ): CallId {
    const callId = this.nextCallId++;
    const req =
      request.op === 'openSession'
        ? ({ op: 'openSession', req: { owner: request.owner, ttlMs: request.ttlMs, requestId: `open-${callId}`, lockDelayMs: 0 } } as const)
        : ({ op: request.op, req: { sessionId: request.sessionId, requestId: `s-${callId}`, owner: request.owner ?? '' } } as const);
    this.step({ type: 'request', callId, request: req, timeoutMs: 5000 });
    return callId;
  }

  get(key: string): CallId {
    const callId = this.nextCallId++;
    this.step({ type: 'request', callId, request: { op: 'get', key }, timeoutMs: 5000 });
    return callId;
  }

  cancel(callId: CallId): void {
    this.step({ type: 'cancel', callId });
  }

  /** The call's connection broke (a reset stream, a dead follower): not a cancel. */
  detach(callId: CallId): void {
    this.step({ type: 'cancel', callId, detached: true });
  }

  /** The answer to acquire call `callId` (throws if it has none). */
  acquired(callId: CallId): AcquireResult {
    const a = this.answers.get(callId);
    if (!a || !('type' in a) || a.type !== 'acquire')
      throw new Error(`rig: call ${callId} has no acquire answer (failure: ${JSON.stringify(this.failures.get(callId))})`);
    return a;
  }

  /** `owner` holds `key` (acquired at once and committed). */
  hold(key: string, owner: string): AcquireResult {
    const id = this.acquire(key, owner);
    this.commitAll();
    const r = this.acquired(id);
    if (!r.acquired) throw new Error(`rig: ${owner} could not take ${key}`);
    return r;
  }

  /** Pending proposals of one command type. */
  pendingOf(type: LockCommand['type']): Pending[] {
    return this.pending.filter((p) => p.command.type === type);
  }
}
