// Term start before stamping. A new leader's first entry (termStart) extends every live lease to a full
// TTL from its own now (LEASES.md); a command stamped before that entry applied could be judged against
// leases the new term has not carried over yet. So the leader stamps client commands only once its
// termStart applied in its current term; calls arriving before then wait here, bounded, in arrival order
// (so the order the queues see is still the order the calls arrived in).
import type { Role } from '../../raft/core/types.js';
import type { CallId, ClientRequest, ProposalId } from './types.js';

export interface HeldCall {
  callId: CallId;
  request: ClientRequest;
  timeoutMs: number;
  /** When it gives up waiting for the term to start (injected time). */
  deadlineMs: number;
}

export class TermGate {
  role: Role = 'follower';
  term = 0;
  leaderId: string | null = null;
  /** Term whose termStart entry has applied here while we led it. */
  private readyTerm = -1;
  private termStart: { term: number; proposalId: ProposalId } | null = null;
  private held: HeldCall[] = [];

  get isLeader(): boolean {
    return this.role === 'leader';
  }

  /** Leader whose termStart applied in this term: it may stamp client commands. */
  get ready(): boolean {
    return this.isLeader && this.readyTerm === this.term;
  }

  /** A termStart for the current term should be proposed (none applied, none in flight). */
  get needsTermStart(): boolean {
    return this.isLeader && !this.ready && this.termStart?.term !== this.term;
  }

  termStartProposed(proposalId: ProposalId): void {
    this.termStart = { term: this.term, proposalId };
  }

  isTermStart(proposalId: ProposalId): boolean {
    return this.termStart?.proposalId === proposalId;
  }

  /** A termStart entry of `entryTerm` applied; true when that made this leader ready. */
  termStartApplied(entryTerm: number): boolean {
    if (!this.isLeader || entryTerm !== this.term || this.ready) return false;
    this.readyTerm = this.term;
    return true;
  }

  /** Our termStart proposal failed: the next call proposes again. Returns the calls to fail now. */
  termStartFailed(proposalId: ProposalId): HeldCall[] {
    if (!this.isTermStart(proposalId)) return [];
    this.termStart = null;
    if (this.ready) return [];
    return this.takeAll();
  }

  /** Holds `call` in arrival order — except that a call of a request already held (a retry or a late
   *  duplicate of the same owner and request_id) is placed with that request's earlier call: one request,
   *  one place in line, which it keeps if the earlier call is cancelled (as in the wait queues): a retry
   *  held behind a later arrival would be granted after it. */
  hold(call: HeldCall): void {
    const same = sameRequestAs(call);
    let at = -1;
    if (same !== null) for (let i = 0; i < this.held.length; i++) if (sameRequestAs(this.held[i]!) === same) at = i;
    if (at < 0) this.held.push(call);
    else this.held.splice(at + 1, 0, call);
  }

  /** Removes the held call `callId`; false when it is not held. */
  drop(callId: CallId): boolean {
    const i = this.held.findIndex((c) => c.callId === callId);
    if (i < 0) return false;
    this.held.splice(i, 1);
    return true;
  }

  /** Held calls whose wait is over, in arrival order. */
  takeDue(clockMs: number): HeldCall[] {
    if (!this.held.some((c) => c.deadlineMs <= clockMs)) return [];
    const due = this.held.filter((c) => c.deadlineMs <= clockMs);
    this.held = this.held.filter((c) => c.deadlineMs > clockMs);
    return due;
  }

  takeAll(): HeldCall[] {
    const all = this.held;
    this.held = [];
    return all;
  }
}

/** The (owner, request_id) an acquire call carries, or null (not an acquire, or no request_id). */
function sameRequestAs(call: HeldCall): string | null {
  const r = call.request;
  if (r.op !== 'acquire' || r.req.requestId === '') return null;
  return requestKey(r.req.owner, r.req.requestId);
}

/** One string for an (owner, request_id) pair; NUL cannot occur in either (validate.ts rejects it). */
export function requestKey(owner: string, requestId: string): string {
  return `${owner}\u0000${requestId}`;
}
