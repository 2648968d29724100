// Who the other members are and what this node knows of them (etcd-io/raft keeps the same in tracker/):
// the configuration in use (who votes, who only learns), the votes of an election under way, and while
// leading one Progress per member. Every decision it takes by majority — an election, a commit,
// CheckQuorum — goes through quorum.ts over the CURRENT VOTERS ONLY, so a learner's answer or a leader
// outside its own configuration never counts. What the leader sends each member from its Progress is
// replication.ts's; when a role change resets what is tracked, raft.ts decides.
// PURE: no I/O, no time.
import { Progress, type ProgressView } from './progress.js';
import { committedIndex, isMajority, voteResult, type VoteResult } from './quorum.js';
import type { NodeId } from './types.js';

export class ProgressTracker {
  /** The configuration in use (the latest in the log, committed or not: conf.ts). */
  voters: NodeId[] = [];
  learners: NodeId[] = [];
  /** Leading: one Progress per member, and one for the leader itself even when it is no member (it is
   *  removing itself). Empty in every other role. */
  progress = new Map<NodeId, Progress>();
  /** An election's answers by voter, the first answer only (true: granted). */
  private votes = new Map<NodeId, boolean>();

  /** Act on a configuration: who votes and who learns from now on. */
  useConf(voters: readonly NodeId[], learners: readonly NodeId[]): void {
    this.voters = [...voters];
    this.learners = [...learners];
  }

  isVoter(id: NodeId): boolean {
    return this.voters.includes(id);
  }

  // ------------------------------------------------------------------ elections

  /** A new election (or none): forget every answer. */
  resetVotes(): void {
    this.votes = new Map();
  }

  /** Only a voter's first answer counts: a duplicate or a changed mind is ignored. */
  recordVote(id: NodeId, granted: boolean): void {
    if (!this.votes.has(id)) this.votes.set(id, granted);
  }

  hasAnswered(id: NodeId): boolean {
    return this.votes.has(id);
  }

  /** Won once a majority of the voters granted, lost once a majority refused, else still pending. */
  tallyVotes(): VoteResult {
    return voteResult(this.voters, this.votes);
  }

  // ------------------------------------------------------------------ leading

  /** Not leading (any role change): no member is tracked. */
  clearProgress(): void {
    this.progress = new Map();
  }

  /**
   * A new leader's view of every member: each is assumed to need everything after `lastIndex` (probing
   * finds out how much it really has) and counts as heard from, so the first CheckQuorum round does not
   * depose a leader that has had no time to hear anyone. The leader's own match is what its disk holds:
   * it counts toward a commit only with entries that are durable.
   */
  startLeading(self: NodeId, lastIndex: number, durableIndex: number): void {
    for (const id of [...this.voters, ...this.learners]) {
      const pr = new Progress(id, lastIndex);
      if (id === self) pr.match = durableIndex;
      pr.recentActive = true;
      this.progress.set(id, pr);
    }
    if (!this.progress.has(self)) {
      // A leader outside its own configuration (its removal is in the log, not yet committed) still
      // tracks its own durable index, though it counts toward no quorum.
      const own = new Progress(self, lastIndex);
      own.match = durableIndex;
      this.progress.set(self, own);
    }
  }

  /** The configuration changed while leading: track the new members, forget the removed ones. */
  trackMembers(self: NodeId, lastIndex: number): void {
    for (const id of [...this.voters, ...this.learners]) {
      if (this.progress.has(id)) continue;
      // Probe a new member WITH the last entry (next = last, as etcd does): a probe carrying no entry is
      // never resent by the heartbeat path, so if the first one is lost (the joining node is not up
      // yet) and no new entry follows, the member would never be caught up.
      const pr = new Progress(id, Math.max(0, lastIndex - 1));
      pr.recentActive = true;
      this.progress.set(id, pr);
    }
    for (const id of [...this.progress.keys()]) {
      if (id !== self && !this.voters.includes(id) && !this.learners.includes(id)) this.progress.delete(id);
    }
  }

  /** The highest index a majority of the voters hold (§5.3); whether it may be committed is the log's
   *  term rule (§5.4.2), not a count. */
  committed(): number {
    return committedIndex(this.voters, (id) => this.progress.get(id)?.match ?? 0);
  }

  /** CheckQuorum (thesis §6.2): heard from a majority of the voters since the last check (ourselves
   *  included if we are one); starts the next round. */
  quorumActive(self: NodeId): boolean {
    const active = isMajority(this.voters, (id) => id === self || this.progress.get(id)?.recentActive === true);
    for (const [id, pr] of this.progress) if (id !== self) pr.recentActive = false;
    return active;
  }

  /** Do the voters among `acks` form a majority? (A ReadIndex round's confirmation, thesis §6.4.) */
  isQuorum(acks: ReadonlySet<NodeId>): boolean {
    return isMajority(this.voters, (id) => acks.has(id));
  }

  /** The voter whose log matches ours furthest (the first of equals, in voter order), or null. */
  mostCaughtUpVoter(): Progress | null {
    let best: Progress | null = null;
    for (const id of this.voters) {
      const pr = this.progress.get(id);
      if (pr && (best === null || pr.match > best.match)) best = pr;
    }
    return best;
  }

  /** A copy of each tracked member's progress (empty unless leading). */
  view(): Map<NodeId, ProgressView> {
    const out = new Map<NodeId, ProgressView>();
    for (const [id, pr] of this.progress) out.set(id, { match: pr.match, next: pr.next, state: pr.state });
    return out;
  }
}
