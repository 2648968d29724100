// The leader's ReadIndex bookkeeping (Raft §8, thesis §6.4), kept apart from the role logic in raft.ts.
// A read is registered at the commit index with a fresh heartbeat round; it is confirmed once a quorum
// (the leader included) has answered an AppendEntries of that round or later — proof that no newer leader
// existed when the read arrived. Reads that arrive before the leader has committed an entry of its own
// term wait here, because until then its commit index may lag what earlier leaders committed.
import type { NodeId } from './types.js';

export interface ReadRequest {
  ctx: string;
  /** Who asked: this node, or a follower that forwarded a ReadIndexRequest. */
  requester: NodeId;
}

/** A read registered at `index` in heartbeat round `round`, with the members that have answered that round
 *  (etcd's readIndexStatus). */
interface ReadIndexStatus extends ReadRequest {
  index: number;
  round: number;
  acks: Set<NodeId>;
}

export class ReadOnlyQueue {
  private pending: ReadIndexStatus[] = [];
  private awaitingCommit: ReadRequest[] = [];

  /** Before the leader's first commit in its term. */
  defer(read: ReadRequest): void {
    this.awaitingCommit.push(read);
  }

  /** The deferred reads, to register now that an entry of the term committed. */
  takeDeferred(): ReadRequest[] {
    const waiting = this.awaitingCommit;
    this.awaitingCommit = [];
    return waiting;
  }

  register(read: ReadRequest, index: number, round: number, self: NodeId): void {
    this.pending.push({ ...read, index, round, acks: new Set([self]) });
  }

  /** `from` answered a message of heartbeat round `round`. Returns the reads now confirmed, oldest first:
   *  leadership confirmed at a later round also confirms every earlier pending read. */
  ack(from: NodeId, round: number, confirmed: (acks: ReadonlySet<NodeId>) => boolean): (ReadRequest & { index: number })[] {
    if (this.pending.length === 0) return [];
    let lastConfirmed = -1;
    for (let i = 0; i < this.pending.length; i++) {
      const r = this.pending[i]!;
      if (round >= r.round) r.acks.add(from);
      if (confirmed(r.acks)) lastConfirmed = i;
    }
    return lastConfirmed < 0 ? [] : this.pending.splice(0, lastConfirmed + 1);
  }

  /** Leadership lost: every read, pending or deferred, can no longer be served. */
  drain(): ReadRequest[] {
    const all: ReadRequest[] = [...this.pending.map((r) => ({ ctx: r.ctx, requester: r.requester })), ...this.awaitingCommit];
    this.pending = [];
    this.awaitingCommit = [];
    return all;
  }
}
