// The answer a client call gets from the log: from the entry of its own proposal, or from the entry that
// decided its place in a wait line. A grant and a "not acquired" are only ever read off an applied result
// here, never made up from the leader's memory (leader.ts). Pure: the leader sends what these return.
import type { LockResult, WaiterDecision } from '../types.js';
import { unavailable } from './failures.js';
import type { CallFailure, ClientAnswer } from './types.js';

const WAIT_CANCELLED = 'the wait was cancelled before it was decided; retry with the same request_id to queue again';

export type CallAnswer = { kind: 'answer'; result: ClientAnswer } | { kind: 'fail'; failure: CallFailure };

/** What a call whose proposal applied with `result` is told; `inLine` when the entry put (or found) its
 *  acquire in `waitKey`'s line: the answer comes with the entry that decides it. Any acquire may come back
 *  in line: a blocking one that the log queued, and also a retry of a waiting request whose remaining
 *  wait_ms ran down to 0 on the client (it re-attaches, wait or not: its place keeps its first deadline).
 *  Answering that as a refusal would tell a waiter "not acquired" while the log may still grant it. */
export function proposalAnswer(
  result: LockResult | null,
  waitKey: string | undefined,
): CallAnswer | { kind: 'inLine'; key: string; ticket: number } {
  if (result?.type === 'acquire' && result.waitTicket !== undefined && waitKey !== undefined)
    return { kind: 'inLine', key: waitKey, ticket: result.waitTicket };
  return resultAnswer(result);
}

/** What the callers of a `renews` entry are told: the i-th renew's answer the i-th caller's. An entry
 *  refused as a whole (or without a result) answers every caller with that. */
export function renewsAnswers(result: LockResult | null, callers: number): CallAnswer[] {
  if (result?.type !== 'renews') return Array.from({ length: callers }, () => resultAnswer(result));
  if (result.renews.length !== callers)
    return Array.from({ length: callers }, () => ({
      kind: 'fail' as const,
      failure: internal(`a renews entry of ${callers} renews answered ${result.renews.length}`),
    }));
  return result.renews.map(resultAnswer);
}

function resultAnswer(result: LockResult | null): CallAnswer {
  if (result === null) return { kind: 'fail', failure: internal('a lock command applied without a result') };
  if (result.type === 'error') return { kind: 'fail', failure: { kind: 'rejected', message: result.message, leaderId: null } };
  return { kind: 'answer', result: result as ClientAnswer };
}

/** What a call waiting for a waiter is told when entry `index` decided it. A cancelled waiter's outcome is
 *  no answer (nothing was decided about the request; nothing is remembered): a call of the same request
 *  that attached meanwhile retries and queues again. */
export function decisionAnswer(index: number, d: WaiterDecision): CallAnswer {
  if (d.cancelled) return { kind: 'fail', failure: unavailable(WAIT_CANCELLED) };
  return { kind: 'answer', result: { type: 'acquire', index, replayed: false, ...d.outcome } };
}

function internal(message: string): CallFailure {
  return { kind: 'internal', message: `internal: ${message}`, leaderId: null };
}
