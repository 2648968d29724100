// term-learned (Raft §5.1, "If a server receives a request or response with a higher term, it updates its
// term"): checked right after a node's core stepped a delivered message, so a node that handles a message of
// a higher term and keeps its own — a leader that returns on an AppendEntriesResponse or RequestVoteResponse
// of a higher term before stepping down, say — is caught on that very message. (Before this check only the
// end-of-run liveness phase saw that bug, in a few percent of seeds; issue 22, planted bug 2.)
//
// The messages a correct core may step without taking their term (src/raft/core/raft.ts step()):
//  - a pre-vote request, and a GRANTED pre-vote answer: they carry the term a pre-candidate would campaign
//    with, not one anybody is in (a refused pre-vote answer carries the voter's real term: not exempt);
//  - a vote request under leader stickiness (thesis §4.2.3): with CheckQuorum on, a node that hears from a
//    live leader ignores vote requests that are not a leadership transfer. Ignored means untouched, so the
//    node still names a leader after it: that is what is required here (the core's election-elapsed window
//    is narrower; this check accepts the wider condition rather than read the core's counters);
//  - anything from a sender whose removal the receiver knew committed before the delivery (the core drops
//    it: acceptsFrom).
import type { Message, NodeId, Status } from '../../src/raft/core/types.js';

export interface TermLearnedContext {
  /** The receiver's core status right after it stepped `msg`. */
  after: Status;
  checkQuorum: boolean;
  /** Senders whose removal the receiver knew committed before the delivery. */
  removedBefore: readonly NodeId[];
}

/** Why the receiver should have taken `msg`'s term and did not, or null. */
export function termNotLearned(msg: Message, ctx: TermLearnedContext): string | null {
  const { after } = ctx;
  if (after.term >= msg.term) return null;
  if (msg.type === 'RequestVote' && msg.preVote) return null;
  if (msg.type === 'RequestVoteResponse' && msg.preVote && msg.granted) return null;
  if (msg.type === 'RequestVote' && !msg.transfer && ctx.checkQuorum && after.leaderId !== null) return null;
  if (ctx.removedBefore.includes(msg.from)) return null;
  return `stepped a ${msg.type}${'preVote' in msg && msg.preVote ? ' (pre-vote)' : ''} of term ${msg.term} from ${msg.from} and is still in term ${after.term} (${after.role}): a server that receives a request or response with a higher term must update its term (§5.1)`;
}
