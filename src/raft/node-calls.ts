// The driver's calls in flight: proposals waiting for their entry to apply, and ReadIndex reads waiting
// for their read index to apply, each with its deadline on the node's scheduler. A timed-out proposal's
// outcome is UNKNOWN (the entry may still commit): callers retry with the same request id and rely on
// dedup. An entry applied at a proposal's index with another term means the proposal was overwritten
// (ProposalDroppedError).
import type { Entry, NodeId } from './core/types.js';
import type { Scheduler, TimerHandle } from './env.js';
import { NotLeaderError, ProposalDroppedError, ProposalTimeoutError, ReadTimeoutError } from './errors.js';
import { mark } from '../trace/stages.js';

/** A proposal waiting for its entry: one object with its promise's callbacks and its timer, not closures
 *  around them — it lives as long as the proposal, long enough under load for V8 to promote what it holds. */
class PendingProposal<R> {
  timer: TimerHandle | null = null;
  constructor(
    readonly term: number,
    private readonly settleOk: (v: { index: number; result: R }) => void,
    private readonly settleFailed: (e: Error) => void,
  ) {}

  resolve(v: { index: number; result: R }): void {
    this.timer?.cancel();
    this.settleOk(v);
  }

  reject(e: Error): void {
    this.timer?.cancel();
    this.settleFailed(e);
  }
}

interface PendingRead {
  index: number | null;
  resolve(index: number): void;
  reject(e: Error): void;
}

export class NodeCalls<R> {
  private readonly proposals = new Map<number, PendingProposal<R>>();
  private readonly reads = new Map<string, PendingRead>();

  constructor(private readonly scheduler: Scheduler) {}

  /** The entry proposed at (index, term) applied here, or ProposalTimeoutError after `timeoutMs`. */
  awaitApplied(index: number, term: number, timeoutMs: number): Promise<{ index: number; result: R }> {
    // The same steps as withDeadline (the timer armed first, then the proposal registered), kept inline.
    return new Promise<{ index: number; result: R }>((resolve, reject) => {
      const pending = new PendingProposal<R>(term, resolve, reject);
      pending.timer = this.scheduler.after(timeoutMs, () => {
        const p = this.proposals.get(index);
        if (!p || p.term !== term) return;
        this.proposals.delete(index);
        reject(new ProposalTimeoutError(timeoutMs, index));
      });
      // An older proposal still waiting at this index (made in an earlier term, then overwritten by
      // another leader) can never apply: fail it now instead of leaving it to hang.
      this.proposals.get(index)?.reject(new ProposalDroppedError(index));
      this.proposals.set(index, pending);
    });
  }

  /** The read `ctx` (a ReadIndex asked of the core) released once its index applied, or ReadTimeoutError
   *  after `timeoutMs`. */
  awaitRead(ctx: string, timeoutMs: number): Promise<number> {
    return this.withDeadline<number>(
      timeoutMs,
      () => (this.reads.delete(ctx) ? new ReadTimeoutError(timeoutMs) : null),
      (settle) => this.reads.set(ctx, { index: null, ...settle }),
    );
  }

  /** `e` applied with `result`: the proposal at its index resolves, or fails if another term's entry took it. */
  applied(e: Entry, result: R): void {
    const p = this.proposals.get(e.index);
    if (p) {
      this.proposals.delete(e.index);
      if (p.term === e.term) p.resolve({ index: e.index, result });
      else p.reject(new ProposalDroppedError(e.index));
    }
  }

  /** A snapshot replaced the state up to `index`: proposals at or below it will never apply here. */
  dropProposalsUpTo(index: number): void {
    for (const [i, p] of this.proposals) {
      if (i <= index) {
        this.proposals.delete(i);
        p.reject(new ProposalDroppedError(i));
      }
    }
  }

  /** The core confirmed the read `ctx` at `index` (a ReadState). */
  readConfirmed(ctx: string, index: number): void {
    const r = this.reads.get(ctx);
    if (r) r.index = index;
  }

  /** The core could not confirm the read `ctx` (a ReadFailure). */
  readFailed(ctx: string, error: NotLeaderError): void {
    const r = this.reads.get(ctx);
    if (r) {
      this.reads.delete(ctx);
      r.reject(error);
    }
  }

  /** Reads whose index has applied resolve. */
  releaseReads(appliedIndex: number): void {
    for (const [ctx, r] of this.reads) {
      if (r.index !== null && r.index <= appliedIndex) {
        this.reads.delete(ctx);
        mark('read.done');
        r.resolve(r.index);
      }
    }
  }

  /** Reads queued on a deposed leader can no longer be confirmed. */
  leadershipLost(leaderId: NodeId | null): void {
    for (const [ctx, r] of this.reads) {
      if (r.index === null) {
        this.reads.delete(ctx);
        r.reject(new NotLeaderError(leaderId, 'leadership lost'));
      }
    }
  }

  /** The node stopped: every proposal, then every read, fails with `err`. */
  failAll(err: Error): void {
    for (const p of this.proposals.values()) p.reject(err);
    for (const r of this.reads.values()) r.reject(err);
    this.proposals.clear();
    this.reads.clear();
  }

  /** A promise settled through the callbacks `register` stores, or rejected by `onTimeout` after
   *  `timeoutMs` (which returns the error, or null when the entry was already settled). Settling
   *  cancels the timer. */
  private withDeadline<T>(
    timeoutMs: number,
    onTimeout: () => Error | null,
    register: (settle: { resolve(v: T): void; reject(e: Error): void }) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.scheduler.after(timeoutMs, () => {
        const err = onTimeout();
        if (err) reject(err);
      });
      register({
        resolve: (v) => {
          timer.cancel();
          resolve(v);
        },
        reject: (e) => {
          timer.cancel();
          reject(e);
        },
      });
    });
  }
}
