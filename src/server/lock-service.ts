// The lock service on one node: proposes validated commands through Raft, answers from the applied lock
// machine, and does the leader's duties — the term-start entry, proactive expiry, idle checkpoints, and the
// FIFO wait queues. Transport-agnostic: the gRPC layer (grpc-server.ts) maps calls and errors onto it.
import { encodeCommand, type LockCommand } from '../lock/commands.js';
import type { LockMachine } from '../lock/machine.js';
import type { LockFsm } from './lock-fsm.js';
import type { AcquireResult, ExpireResult, LockResult, LockView, ReleaseResult, RenewResult } from '../lock/types.js';
import type { ValidAcquire, ValidRelease, ValidRenew } from '../lock/validate.js';
import type { RaftNode } from '../raft/node.js';
import type { NodeLogger } from '../raft/logger.js';
import { NodeStoppedError, NotLeaderError, ProposalDroppedError, ProposalTimeoutError, ReadTimeoutError } from '../raft/errors.js';
import type { Entry, SoftState } from '../raft/core/types.js';
import { RecentRefusals, WaitQueues, type Waiter } from './wait-queue.js';

/** Maps to gRPC UNAVAILABLE: the caller should retry (same request_id), possibly on another node. */
export class UnavailableError extends Error {
  constructor(
    message: string,
    readonly leaderId: string | null = null,
  ) {
    super(message);
    this.name = 'UnavailableError';
  }
}

export interface LockServiceOptions {
  /** Leader's clock for stamping commands. Injected so tests can skew it. */
  clock: () => number;
  /** How often the leader looks for expired leases and idle time (ms). */
  housekeepingMs: number;
  /** Propose a checkpoint when leases exist and nothing was proposed for this long (ms). */
  checkpointIdleMs: number;
  /** Default deadline for a write/read when the caller gives none (ms). */
  defaultTimeoutMs: number;
  logger: NodeLogger;
}

export type LockNode = RaftNode<LockResult | null>;

export class LockService {
  private readonly waits = new WaitQueues();
  private lastProposalAt = 0;
  private housekeeping: NodeJS.Timeout;
  private expiring = new Set<string>();
  private checkpointInFlight = false;
  private readonly answeredRefusals = new RecentRefusals(100_000, 10 * 60_000);
  /** Term for which our termStart entry has been applied: only then may this leader stamp commands. */
  private readyTerm = -1;
  private termStart: { term: number; applied: Promise<boolean> } | null = null;

  constructor(
    readonly node: LockNode,
    private readonly fsm: LockFsm,
    private readonly opts: LockServiceOptions,
  ) {
    node.on('softState', (ss: SoftState, prev: SoftState) => this.onSoftState(ss, prev));
    node.on('applied', (_entry: Entry, result: LockResult | null | undefined) => {
      if (result && (result.type === 'release' || result.type === 'expire')) this.onApplied(result);
    });
    this.housekeeping = setInterval(() => this.leaderHousekeeping(), opts.housekeepingMs);
    this.housekeeping.unref?.();
  }

  /** The applied lock state (replaced wholesale when a snapshot is installed). */
  get machine(): LockMachine {
    return this.fsm.machine;
  }

  close(): void {
    clearInterval(this.housekeeping);
    this.waits.failAll(new UnavailableError('the node is shutting down; retry on another node'));
  }

  // ------------------------------------------------------------------ client operations (leader only)

  async acquire(req: ValidAcquire, timeoutMs: number, signal?: AbortSignal): Promise<AcquireResult> {
    await this.ensureLeaderReady(timeoutMs);
    // A retry (or late duplicate) of a request that was already decided gets that decision back — before
    // any fast path below, or a granted waiter's retry would be told "not acquired".
    const remembered = this.machine.rememberedAcquire(req.owner, req.requestId, req.key);
    if (remembered?.acquired) return { type: 'acquire', index: 0, replayed: true, ...remembered };
    const answered = this.answeredRefusals.get(req.owner, req.requestId);
    if (answered) return answered;
    // Fairness: while others wait for this key, a newcomer queues behind them (or, with wait_ms 0, is
    // refused) instead of barging in when the lock frees.
    if (this.waits.has(req.key)) {
      if (req.waitMs <= 0) return this.answerRefused(req);
      return this.enqueue(req, signal);
    }
    const result = await this.proposeAs<AcquireResult>({ type: 'acquire', timeMs: 0, key: req.key, owner: req.owner, ttlMs: req.ttlMs, requestId: req.requestId }, timeoutMs);
    if (result.acquired || req.waitMs <= 0) return result;
    return this.enqueue(req, signal);
  }

  async renew(req: ValidRenew, timeoutMs: number): Promise<RenewResult> {
    await this.ensureLeaderReady(timeoutMs);
    return this.proposeAs<RenewResult>({ type: 'renew', timeMs: 0, key: req.key, owner: req.owner, token: req.token, ttlMs: req.ttlMs, requestId: req.requestId }, timeoutMs);
  }

  async release(req: ValidRelease, timeoutMs: number): Promise<ReleaseResult> {
    await this.ensureLeaderReady(timeoutMs);
    return this.proposeAs<ReleaseResult>({ type: 'release', timeMs: 0, key: req.key, owner: req.owner, token: req.token, requestId: req.requestId }, timeoutMs);
  }

  /** Linearizable: a ReadIndex barrier, then the applied state judged at the leader's now. */
  async get(key: string, timeoutMs: number): Promise<LockView> {
    await this.ensureLeaderReady(timeoutMs);
    try {
      await this.node.readBarrier(timeoutMs);
    } catch (err) {
      throw this.toUnavailable(err);
    }
    return this.viewAt(key, this.leaderNow());
  }

  /** The leader's now for judging leases: its clock, but never behind the log's time. */
  private leaderNow(): number {
    return Math.max(this.machine.nowMs, this.opts.clock());
  }

  private viewAt(key: string, nowMs: number): LockView {
    const v = this.machine.get(key);
    if (!v.held) return v;
    if (v.expiresAtMs <= nowMs) {
      // Past its deadline by the leader's clock: the expire entry is on its way; report it free.
      return { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken };
    }
    return { ...v, ttlMs: v.expiresAtMs - nowMs };
  }

  // ------------------------------------------------------------------ proposing

  private async proposeAs<T extends LockResult>(cmd: LockCommand, timeoutMs: number): Promise<T> {
    const stamped = { ...cmd, timeMs: this.opts.clock() } as LockCommand;
    this.lastProposalAt = stamped.timeMs;
    let applied;
    try {
      applied = await this.node.propose(encodeCommand(stamped), timeoutMs);
    } catch (err) {
      throw this.toUnavailable(err);
    }
    const result = applied.result;
    if (result === null || result === undefined) throw new Error('internal: a lock command applied without a result');
    if (result.type === 'error') throw new RequestRejectedError(result.message);
    return result as T;
  }

  private toUnavailable(err: unknown): Error {
    if (err instanceof NotLeaderError) return notLeader(err.leaderId);
    if (err instanceof ProposalTimeoutError) {
      return new UnavailableError(`${err.message} (is a quorum of nodes reachable?)`);
    }
    if (err instanceof ReadTimeoutError) return new UnavailableError(err.message);
    if (err instanceof ProposalDroppedError) return new UnavailableError(err.message);
    if (err instanceof NodeStoppedError) return new UnavailableError('the node is shutting down; retry on another node');
    return err instanceof Error ? err : new Error(String(err));
  }

  /** Leader whose termStart entry has applied. Before that, stamps could precede the lease extension. */
  private async ensureLeaderReady(timeoutMs: number): Promise<void> {
    const st = this.node.status();
    if (st.role !== 'leader') throw notLeader(st.leaderId);
    if (this.readyTerm === st.term) return;
    const started = await withTimeout(this.proposeTermStart(st.term), Math.min(timeoutMs, 2000));
    if (!started) throw new UnavailableError('the new leader is still starting its term; retry');
    if (this.readyTerm !== this.node.term || !this.node.isLeader()) throw notLeader(this.node.leaderId);
  }

  /** The term-start entry of `term`, proposed once; resolves true once it applied in that term. */
  private proposeTermStart(term: number): Promise<boolean> {
    if (this.termStart?.term === term) return this.termStart.applied;
    const cmd: LockCommand = { type: 'termStart', timeMs: this.opts.clock() };
    const applied = this.node.propose(encodeCommand(cmd), 5000).then(
      (r) => {
        if (r.result?.type !== 'termStart') return false;
        this.readyTerm = term;
        this.opts.logger.info({ nodeId: this.node.id, term, extended: r.result.leasesExtended, ended: r.result.leasesEnded }, 'term started: leases carried over');
        return true;
      },
      () => {
        if (this.termStart?.term === term) this.termStart = null; // let the next caller propose again
        return false;
      },
    );
    this.termStart = { term, applied };
    return applied;
  }

  private onSoftState(ss: SoftState, prev: SoftState): void {
    if (ss.role === 'leader' && (prev.role !== 'leader' || prev.term !== ss.term)) {
      this.proposeTermStart(ss.term);
    }
    if (prev.role === 'leader' && (ss.role !== 'leader' || ss.term !== prev.term)) {
      // Waiters live on the leader only. They fail with UNAVAILABLE so the client retries against the
      // new leader (with the same request_id, so a grant that did commit is not lost).
      this.waits.failAll(new UnavailableError('leadership changed while waiting for the lock; retry'));
      this.expiring.clear();
    }
  }

  // ------------------------------------------------------------------ waiting (FIFO per key)

  private enqueue(req: ValidAcquire, signal?: AbortSignal): Promise<AcquireResult> {
    return new Promise<AcquireResult>((resolve, reject) => {
      const waiter: Waiter = {
        req,
        resolve,
        reject,
        granting: false,
        timer: null,
      };
      waiter.timer = setTimeout(() => this.onWaitDeadline(waiter), req.waitMs);
      waiter.timer.unref?.();
      signal?.addEventListener('abort', () => {
        if (this.waits.remove(waiter)) reject(new UnavailableError('the caller went away'));
      });
      this.waits.push(waiter);
      // The lock may have freed between the refusal and now.
      this.tryGrantHead(req.key);
    });
  }

  private onWaitDeadline(w: Waiter): void {
    if (w.granting) {
      w.expired = true; // the grant in flight decides; see tryGrantHead
      return;
    }
    if (!this.waits.remove(w)) return;
    w.resolve(this.answerRefused(w.req));
    this.tryGrantHead(w.req.key);
  }

  /** A refusal decided here on the leader (not by a log entry): remember it, so a late duplicate of the
   *  same request is not queued or granted after its caller was told "not acquired". Leader-local and
   *  bounded; across a leader change the replicated dedup table still covers refusals that went through
   *  the log. */
  private answerRefused(req: ValidAcquire): AcquireResult {
    const refusal = this.refusedNow(req);
    this.answeredRefusals.set(req.owner, req.requestId, refusal);
    return refusal;
  }

  private refusedNow(req: ValidAcquire): AcquireResult {
    const v = this.viewAt(req.key, this.leaderNow());
    return {
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
  }

  /** Grant the head waiter of `key` if the lock looks free. Exactly one proposal per key at a time. */
  private tryGrantHead(key: string): void {
    const head = this.waits.head(key);
    if (!head || head.granting || !this.node.isLeader()) return;
    const view = this.viewAt(key, this.leaderNow());
    if (view.held && view.owner !== head.req.owner) return;
    head.granting = true;
    const r = head.req;
    // `queued`: the one kind of acquire that may turn this request's remembered refusal into a grant.
    this.proposeAs<AcquireResult>({ type: 'acquire', timeMs: 0, key: r.key, owner: r.owner, ttlMs: r.ttlMs, requestId: r.requestId, queued: true }, this.opts.defaultTimeoutMs).then(
      (result) => {
        head.granting = false;
        if (result.acquired) {
          this.waits.remove(head); // also clears its deadline timer
          head.resolve(result); // granted even if its deadline passed meanwhile: the grant is real
          this.tryGrantHead(key);
        } else if (head.expired) {
          this.waits.remove(head);
          this.answeredRefusals.set(r.owner, r.requestId, result);
          head.resolve(result);
          this.tryGrantHead(key);
        }
        // else: still held by someone else; the next release/expire wakes us again.
      },
      (err) => {
        head.granting = false;
        if (this.waits.remove(head)) {
          head.reject(err instanceof Error ? err : new Error(String(err)));
        }
        this.tryGrantHead(key);
      },
    );
  }

  /** A release or expire applied: the key may be free for the head waiter. */
  private onApplied(result: ReleaseResult | ExpireResult): void {
    if (result.type === 'expire') this.expiring.delete(`${result.key}#${result.token}`);
    if (result.type === 'release' ? result.released : result.expired) this.tryGrantHead(result.key);
  }


  // ------------------------------------------------------------------ leader housekeeping

  private leaderHousekeeping(): void {
    if (!this.node.isLeader() || this.readyTerm !== this.node.term) return;
    const now = this.opts.clock();
    // Proactive expiry: waiters proceed without polling and dead locks do not pile up.
    for (const due of this.machine.expiredLeases(now, 256)) {
      const id = `${due.key}#${due.token}`;
      if (this.expiring.has(id)) continue;
      this.expiring.add(id);
      this.proposeAs({ type: 'expire', timeMs: 0, key: due.key, token: due.token }, this.opts.defaultTimeoutMs).catch(() => {
        this.expiring.delete(id);
      });
    }
    // Idle checkpoint: records elapsed log time so a chain of short terms cannot freeze a dead lease.
    // At most one in flight: a leader that cannot commit (slow or lost quorum) must not pile them up in
    // its log (found by the lock simulation, seed 439).
    if (!this.checkpointInFlight && this.machine.hasLiveLeases() && now - this.lastProposalAt >= this.opts.checkpointIdleMs) {
      this.checkpointInFlight = true;
      this.proposeAs({ type: 'checkpoint', timeMs: 0 }, this.opts.defaultTimeoutMs)
        .catch(() => {})
        .finally(() => {
          this.checkpointInFlight = false;
        });
    }
  }
}

/** The state machine refused the command as a whole (e.g. a request_id reused for another operation). */
export class RequestRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RequestRejectedError';
  }
}

function notLeader(leaderId: string | null): UnavailableError {
  return new UnavailableError(
    leaderId ? `not the leader (leader is ${leaderId}); retry there` : 'no leader is elected right now (election in progress or no quorum); retry',
    leaderId,
  );
}

/** `promise`'s value, or false if it has not settled within `ms`. */
function withTimeout(promise: Promise<boolean>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    promise.then((v) => {
      clearTimeout(timer);
      resolve(v);
    });
  });
}
