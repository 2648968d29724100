// Leader flow control (Raft §5.3 and §7): what the leader sends each member, and when. The pace is the
// member's Progress (progress.ts): one probe at a time while we look for where its log matches ours, up to
// maxInflight pipelined appends once it does, snapshot chunks when the entries it needs are compacted
// away; each answer moves that Progress on. Heartbeats are appends anchored at the member's match index,
// so they never disturb pipelining, and the round they carry is how ReadIndex confirms leadership.
// What an advanced match means — a commit, a leadership transfer — is raft.ts's (the `matched` hook).
// PURE: no I/O, no time.
import type { RaftLog } from './log.js';
import type { Progress } from './progress.js';
import type { ProgressTracker } from './tracker.js';
import type { AppendEntriesResponse, InstallSnapshotResponse, NodeId, RaftConfig, UnstampedMessage } from './types.js';

/** Leader ticks a replicating follower may go without progress (while behind) before we re-probe it. */
const STALL_TICKS = 3;

export interface ReplicationHooks {
  /** Queue a message (the core stamps it with its id and term). */
  send(m: UnstampedMessage): void;
  /** An answer moved `pr.match` forward (and a probed member now replicates). */
  matched(pr: Progress): void;
}

export class Replicator {
  /** The heartbeat round: carried by every append and snapshot chunk, echoed in the answers (ReadIndex). */
  round = 0;

  constructor(
    private readonly cfg: RaftConfig,
    private readonly log: RaftLog,
    private readonly tracker: ProgressTracker,
    private readonly hooks: ReplicationHooks,
  ) {}

  /** Every member its missing entries, or a heartbeat carrying the commit index: many proposals between
   *  two Readys go out as one AppendEntries per follower. */
  broadcastAppend(): void {
    for (const id of this.tracker.progress.keys()) if (id !== this.cfg.id) this.sendAppend(id, true);
  }

  /** A leader tick: count how long each member that is behind has gone without progress (an idle,
   *  caught-up one is never stalled); broadcastHeartbeat re-probes the stalled. */
  countStalls(): void {
    const last = this.log.lastIndex();
    for (const pr of this.tracker.progress.values()) pr.ticksWithoutProgress = pr.match < last ? pr.ticksWithoutProgress + 1 : 0;
  }

  /** A member answered an append: move its Progress on, and send it what it is missing next. */
  onAppendResponse(m: AppendEntriesResponse, pr: Progress): void {
    if (!m.success) {
      // A stale-term reply carries matchIndex 0 and was handled in step(); here: log mismatch.
      if (m.matchIndex <= pr.match) return; // stale rejection of something already matched
      if (pr.state === 'replicate' || (pr.state === 'probe' && m.matchIndex === pr.next - 1)) {
        let next: number;
        if (m.conflictTerm > 0) {
          const last = this.log.lastIndexOfTerm(m.conflictTerm);
          next = last > 0 ? last + 1 : m.conflictIndex;
        } else {
          next = m.conflictIndex;
        }
        pr.becomeProbe();
        pr.next = Math.max(pr.match + 1, Math.min(next, m.matchIndex));
        this.sendAppend(pr.id, true);
      }
      return;
    }
    const wasPaused = pr.isPaused(this.cfg.maxInflight);
    if (pr.maybeUpdate(m.matchIndex)) {
      if (pr.state === 'probe') pr.becomeReplicate();
      this.hooks.matched(pr);
    } else if (pr.state === 'probe' && pr.next > pr.match + 1) {
      // A success that did not move match (a heartbeat answered at pr.match) while probing beyond it: that
      // probe was lost — e.g. sent before a new member was up. Probe again from what is known to match;
      // else an idle leader (nothing new to broadcast) would never resend it and the follower stalls.
      pr.next = pr.match + 1;
    }
    if (wasPaused || pr.next <= this.log.lastIndex()) this.sendAppend(pr.id, false);
  }

  /** A member answered a snapshot chunk: the next chunk, or back to appends once it has it all. */
  onSnapshotResponse(m: InstallSnapshotResponse, pr: Progress): void {
    if (pr.state !== 'snapshot' || m.snapshotIndex !== pr.snapshotIndex) return;
    if (m.done && m.success) {
      pr.maybeUpdate(m.snapshotIndex);
      pr.becomeProbe();
      // An offered snapshot is kept only while someone is being sent it (it may be the whole state).
      if (![...this.tracker.progress.values()].some((other) => other.state === 'snapshot')) this.log.offered = null;
      this.sendAppend(pr.id, true);
      return;
    }
    pr.snapshotOffset = m.nextOffset;
    // Done but not taken (Raft.snapshotRefused): what the member wrote did not verify. It starts again from
    // offset 0 at the next heartbeat (broadcastHeartbeat resends the chunk at snapshotOffset), not at once:
    // a stream that keeps failing is resent at the heartbeat's pace, never back to back.
    if (m.done) return;
    this.sendSnapshotChunk(pr);
  }

  /** Send what the follower is missing. `sendEmpty` also sends when there is nothing new (carries commit). */
  sendAppend(to: NodeId, sendEmpty: boolean): void {
    const pr = this.tracker.progress.get(to);
    if (!pr) return;
    for (;;) {
      if (pr.isPaused(this.cfg.maxInflight)) return;
      const prevLogIndex = pr.next - 1;
      const prevLogTerm = this.log.term(prevLogIndex);
      if (prevLogTerm === undefined) {
        // §7: the entries it needs are compacted away — stream the snapshot.
        pr.becomeSnapshot(this.log.snapshot.meta.index);
        this.sendSnapshotChunk(pr);
        return;
      }
      const entries = this.log.slice(
        pr.next,
        this.log.lastIndex(),
        pr.state === 'probe' ? 1 : this.cfg.maxEntriesPerMessage,
        this.cfg.maxBytesPerMessage,
      );
      if (entries.length === 0 && !sendEmpty) return;
      if (entries.length === 0 && pr.state === 'replicate') {
        // Nothing new, only the commit index to carry: anchor at the match index so an in-flight
        // (possibly reordered) append is not rejected and pipelining is not thrown back to probing.
        this.sendHeartbeat(pr, true);
        return;
      }
      this.hooks.send({
        type: 'AppendEntries',
        to,
        prevLogIndex,
        prevLogTerm,
        entries,
        leaderCommit: this.log.committed,
        round: this.round,
      });
      if (entries.length > 0) pr.sentEntries(entries[entries.length - 1]!.index);
      else if (pr.state === 'probe') pr.probeSent = true;
      if (entries.length === 0 || pr.state !== 'replicate') return;
      sendEmpty = false;
    }
  }

  private sendSnapshotChunk(pr: Progress): void {
    const snap = this.log.sendableSnapshot();
    if (snap === null) {
      // The log was compacted without data (the application's store is the snapshot): ask for one, and send
      // it from a later heartbeat once offered (Raft.offerSnapshot).
      this.log.snapshotWanted = true;
      return;
    }
    if (snap.meta.index !== pr.snapshotIndex) {
      // We compacted again meanwhile: start over with the newer snapshot.
      pr.snapshotIndex = snap.meta.index;
      pr.snapshotOffset = 0;
    }
    const start = pr.snapshotOffset;
    if (snap.streamed === true) {
      // The driver reads this chunk from the application's stream at `start` and fills it in.
      this.hooks.send({
        type: 'InstallSnapshot',
        to: pr.id,
        meta: snap.meta,
        offset: start,
        chunk: new Uint8Array(0),
        done: false,
        round: this.round,
        streamed: true,
      });
      return;
    }
    const end = Math.min(snap.data.length, start + this.cfg.snapshotChunkBytes);
    this.hooks.send({
      type: 'InstallSnapshot',
      to: pr.id,
      meta: snap.meta,
      offset: start,
      chunk: snap.data.subarray(start, end),
      done: end >= snap.data.length,
      round: this.round,
    });
  }

  /** Heartbeats (§5.2) double as the leadership check for ReadIndex (round numbers). They are shaped
   *  as AppendEntries anchored at the follower's match index, so they never disturb pipelining. */
  broadcastHeartbeat(): void {
    this.round++;
    for (const [id, pr] of this.tracker.progress) {
      if (id === this.cfg.id) continue;
      if (pr.state === 'snapshot') {
        this.sendSnapshotChunk(pr); // also retransmits a lost chunk
        continue;
      }
      if (pr.state === 'probe') pr.probeSent = false; // a lost probe must not stall the follower forever
      if (pr.state === 'replicate' && pr.match < this.log.lastIndex() && pr.ticksWithoutProgress > STALL_TICKS) {
        // §5.3 "the leader retries AppendEntries indefinitely": pipelined appends (or their answers) were
        // lost — heartbeats still succeed at pr.match but nothing moves. Fall back to probing from match.
        pr.becomeProbe();
        pr.ticksWithoutProgress = 0;
      }
      if (!this.sendHeartbeat(pr)) {
        this.sendAppend(id, true);
        continue;
      }
      if (pr.state === 'probe' || pr.next <= this.log.lastIndex()) this.sendAppend(id, false);
    }
  }

  /** An empty AppendEntries at the follower's match index; false when that entry is compacted. */
  sendHeartbeat(pr: Progress, commitOnly = false): boolean {
    const prevLogTerm = this.log.term(pr.match);
    if (prevLogTerm === undefined) return false;
    this.hooks.send({
      type: 'AppendEntries',
      to: pr.id,
      prevLogIndex: pr.match,
      prevLogTerm,
      entries: [],
      // The follower is only known to match up to pr.match; never tell it to commit past that.
      leaderCommit: Math.min(pr.match, this.log.committed),
      round: this.round,
      ...(commitOnly ? { commitOnly: true as const } : {}),
    });
    return true;
  }
}
