// What the leader knows about a request (owner, request_id). Every answer about it comes from the log:
// - in line: the replicated wait line (wait-line.ts) says where it waits; a new call of it re-attaches to
//   that place instead of queueing again at the back;
// - in flight: a blocking acquire of it is proposed and not yet applied (the proposal table), so it is
//   about to have a place;
// - decided: the entry that decided it named it (`decided`); waiting-calls.ts keeps recent decisions for a
//   call that attaches late, and after that the machine's dedup table remembers the outcome, which a
//   retry's entry answers (replayed).
// A request without an id ('') is none of these: every call of it is a new request.
import type { ProposalTable } from './proposals.js';
import type { LockStateView } from './types.js';

/** Where the request waits in `key`'s line, if it does (a place in another key's line, or from level 6 one
 *  asked with other terms, is not this request's: its entry is refused REQUEST_ID_REUSED by the machine). */
export function placeInLine(
  state: LockStateView,
  req: { key: string; owner: string; requestId: string; sessionId?: number; limit?: number; shared?: boolean },
): { key: string; ticket: number } | undefined {
  if (req.requestId === '') return undefined;
  const inLine = state.waiterFor(req.owner, req.requestId);
  if (inLine === undefined || inLine.key !== req.key) return undefined;
  // From level 6 a place asked under other terms (another session or mode) is another request's: re-attached,
  // this call would get that request's grant. Its entry is refused REQUEST_ID_REUSED by the machine.
  return state.waitsWithOtherTerms(req) ? undefined : inLine;
}

/** Whether (owner, request_id) holds a place in `key`'s line, or is about to (its blocking acquire is in
 *  flight). */
export function hasPlaceInLine(state: LockStateView, proposals: ProposalTable, key: string, owner: string, requestId: string): boolean {
  if (requestId === '') return false;
  return state.waiterFor(owner, requestId)?.key === key || proposals.acquireInFlight(key, owner, requestId);
}
