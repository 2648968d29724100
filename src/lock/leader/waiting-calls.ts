// Client calls that wait for a waiter's decision. The wait line itself is replicated state (wait-line.ts):
// the log decides who is granted and who is refused, and in which order. What is leader-local is only which
// open calls want to hear about which waiter (by key and ticket), so an applied entry's `decided` list can
// be answered to them.
//
// A decision can apply before the call learns its ticket: the proposal's outcome reaches the leader a
// microtask after the entry applied, and a later entry in the same batch (a release handing the key over)
// applies in between. So decisions with nobody attached yet are kept a while (a bounded FIFO) for the
// attach that follows.
import type { WaiterDecision } from '../types.js';
import type { CallId } from './types.js';

/** Decisions kept for a late attach; far more than one batch of entries decides. */
const RECENT_DECISIONS = 4096;

export interface DecidedWaiter {
  /** The index of the entry that decided it (a grant's token). */
  index: number;
  decision: WaiterDecision;
}

export class WaitingCalls {
  /** `${key}\0${ticket}` -> open calls waiting for that waiter. */
  private readonly byWaiter = new Map<string, Set<CallId>>();
  private readonly waiterOfCall = new Map<CallId, string>();
  private readonly recent = new Map<string, DecidedWaiter>();
  /** Calls with a deadline (the caller's, on the leader's clock) -> it; and the earliest of them. */
  private readonly deadlines = new Map<CallId, number>();
  private nextDueMs = Infinity;

  get callCount(): number {
    return this.waiterOfCall.size;
  }

  /** `callId` waits for the waiter (key, ticket), until `deadlineMs` at most (its caller's deadline). */
  attach(callId: CallId, key: string, ticket: number, deadlineMs = Infinity): void {
    if (deadlineMs < Infinity) {
      this.deadlines.set(callId, deadlineMs);
      this.nextDueMs = Math.min(this.nextDueMs, deadlineMs);
    }
    const id = waiterId(key, ticket);
    let calls = this.byWaiter.get(id);
    if (calls === undefined) this.byWaiter.set(id, (calls = new Set()));
    calls.add(callId);
    this.waiterOfCall.set(callId, id);
  }

  /** Whether any open call waits for the waiter (key, ticket). */
  hasCalls(key: string, ticket: number): boolean {
    return this.byWaiter.has(waiterId(key, ticket));
  }

  /** The decision of (key, ticket) if it applied before anyone attached to it. */
  decidedEarlier(key: string, ticket: number): DecidedWaiter | undefined {
    return this.recent.get(waiterId(key, ticket));
  }

  /** Removes `callId`; returns the waiter it waited for and whether any call still waits for it. */
  detach(callId: CallId): { key: string; ticket: number; othersWait: boolean } | undefined {
    const id = this.waiterOfCall.get(callId);
    if (id === undefined) return undefined;
    this.waiterOfCall.delete(callId);
    this.deadlines.delete(callId);
    const calls = this.byWaiter.get(id)!;
    calls.delete(callId);
    if (calls.size === 0) this.byWaiter.delete(id);
    const at = id.lastIndexOf('\u0000');
    return { key: id.slice(0, at), ticket: Number(id.slice(at + 1)), othersWait: calls.size > 0 };
  }

  /** An entry decided the waiter: the calls waiting for it (now detached). Kept for a late attach too. */
  decided(index: number, decision: WaiterDecision): CallId[] {
    const id = waiterId(decision.key, decision.ticket);
    this.recent.set(id, { index, decision });
    if (this.recent.size > RECENT_DECISIONS) this.recent.delete(this.recent.keys().next().value!);
    const calls = this.byWaiter.get(id);
    if (calls === undefined) return [];
    this.byWaiter.delete(id);
    for (const callId of calls) {
      this.waiterOfCall.delete(callId);
      this.deadlines.delete(callId);
    }
    return [...calls];
  }

  /** The waiting calls whose caller's deadline has passed at `clockMs` (still attached: detach each). A
   *  scan only once the earliest deadline has come. */
  dueCalls(clockMs: number): CallId[] {
    if (clockMs < this.nextDueMs) return [];
    const due: CallId[] = [];
    let next = Infinity;
    for (const [callId, deadlineMs] of this.deadlines) {
      if (deadlineMs <= clockMs) due.push(callId);
      else next = Math.min(next, deadlineMs);
    }
    this.nextDueMs = next;
    return due;
  }

  /** Every waiting call, detached (leadership lost, the node closing). */
  takeAll(): CallId[] {
    const calls = [...this.waiterOfCall.keys()];
    this.byWaiter.clear();
    this.waiterOfCall.clear();
    this.deadlines.clear();
    this.nextDueMs = Infinity;
    return calls;
  }
}

function waiterId(key: string, ticket: number): string {
  return `${key}\u0000${ticket}`;
}
