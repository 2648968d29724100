// The Ready API's bookkeeping (etcd-io/raft keeps it in rawnode.go): what the core has produced that the
// driver has not taken yet — messages, read results, a new configuration — and what the driver has told
// us it did with the Readys it took: the hard state it persisted, the soft state it was shown, the entries
// it wrote and applied. The log keeps the entries' side of it (unstable entries, a received snapshot to
// persist, the applied and handed-out indexes); this file decides what a Ready carries and what may leave
// before the write that the Ready asks for (src/raft/node.ts: send early what needs no disk, apply what
// is durable). PURE: no I/O, no time.
import { copyConf, type ConfHistory } from './conf.js';
import type { RaftLog } from './log.js';
import type { Entry, HardState, Message, NodeId, ReadFailure, ReadState, Ready, SnapshotChunk, SoftState } from './types.js';

/** The most committed entries one Ready (or one takeDurableCommitted) hands out: a large backlog is
 *  applied over several turns of the driver's loop, not in one. */
const MAX_COMMITTED_PER_READY = 1024;

/** What a Ready reports of the core's own state, read when the driver asks. */
export interface ReadySource {
  hardState(): HardState;
  softState(): SoftState;
}

export class PendingReady {
  /** Messages not yet taken by the driver, oldest first. */
  msgs: Message[] = [];
  /** Results of this node's own ReadIndex requests, not yet taken. */
  readStates: ReadState[] = [];
  readFailures: ReadFailure[] = [];
  /** Snapshot chunks accepted for the driver to write (RaftConfig.snapshotChunksToDriver), not yet taken. */
  snapshotChunks: SnapshotChunk[] = [];
  /** The next Ready reports the configuration (the driver updates peer addresses from it). */
  confChanged = true;
  /** The hard state the driver last persisted (advance()), and the soft state it was last shown. */
  private persistedHardState: HardState;
  private lastSoftState: SoftState;

  constructor(
    private readonly log: RaftLog,
    private readonly confs: ConfHistory,
    private readonly source: ReadySource,
  ) {
    // What storage gave us at start is persisted, and the role we start in is no news.
    this.persistedHardState = source.hardState();
    this.lastSoftState = source.softState();
  }

  hasReady(): boolean {
    const log = this.log;
    return (
      this.msgs.length > 0 ||
      this.snapshotChunks.length > 0 ||
      log.stableIndex < log.lastIndex() ||
      log.pendingSnapshot !== null ||
      log.hasUnhandedCommitted() ||
      this.readStates.length > 0 ||
      this.readFailures.length > 0 ||
      this.confChanged ||
      !sameHardState(this.source.hardState(), this.persistedHardState) ||
      !sameSoftState(this.source.softState(), this.lastSoftState)
    );
  }

  /** Everything pending, handed out: messages, read results and committed entries are not handed out
   *  again; what is to be persisted is, until advance() says it was. */
  ready(): Ready {
    const hs = this.source.hardState();
    const ss = this.source.softState();
    const rd: Ready = {
      softState: sameSoftState(ss, this.lastSoftState) ? null : ss,
      hardState: sameHardState(hs, this.persistedHardState) ? null : hs,
      snapshot: this.log.pendingSnapshot,
      entries: this.log.unstableEntries(),
      messages: this.msgs,
      committedEntries: this.log.takeCommitted(MAX_COMMITTED_PER_READY),
      readStates: this.readStates,
      readFailures: this.readFailures,
      snapshotChunks: this.snapshotChunks,
      conf: this.confChanged ? copyConf(this.confs.current()) : null,
    };
    this.confChanged = false;
    this.msgs = [];
    this.readStates = [];
    this.readFailures = [];
    this.snapshotChunks = [];
    if (rd.softState) this.lastSoftState = rd.softState;
    return rd;
  }

  /** The driver persisted `rd` and applied its committed entries. Returns the last entry it persisted,
   *  if any (the log keeps it as stable only if no leader replaced it meanwhile). */
  advance(rd: Ready): Entry | undefined {
    if (rd.hardState) this.persistedHardState = rd.hardState;
    if (rd.snapshot && this.log.pendingSnapshot === rd.snapshot) this.log.pendingSnapshot = null;
    const lastPersisted = rd.entries[rd.entries.length - 1];
    if (lastPersisted) this.log.stableTo(lastPersisted.index, lastPersisted.term);
    const lastApplied = rd.committedEntries[rd.committedEntries.length - 1];
    if (lastApplied && lastApplied.index > this.log.applied) this.log.applied = lastApplied.index;
    return lastPersisted;
  }

  /**
   * Committed entries that may be applied while a Ready's write is still in flight, marked applied: the
   * driver applies them at once, so a commit learnt from a follower's acknowledgement is not held back
   * by our own fsync. On a follower, only those already durable in its own log. On a leader, everything
   * committed: a leader counts itself toward a commit only once its entries are durable (Raft.advance), so
   * an entry its commit index covers is durable on a quorum even while its own copy is still being
   * written — thesis §10.2.1 lets the leader commit (and so apply and answer) before its own write ends,
   * and a crash of the leader then loses nothing a quorum does not hold. Nothing while a received
   * snapshot waits to be persisted and restored (entries after it must apply on top of it) — belt and
   * braces: restoring it also sets stableIndex to the snapshot, so nothing after it counts as durable
   * yet (a planted removal of this check was not caught by 300 sim seeds for that reason).
   */
  takeDurableCommitted(leading: boolean, maxCount = MAX_COMMITTED_PER_READY): Entry[] {
    const log = this.log;
    if (log.pendingSnapshot !== null) return [];
    const out = log.takeCommitted(maxCount, leading ? log.committed : log.stableIndex);
    const last = out[out.length - 1];
    if (last && last.index > log.applied) log.applied = last.index;
    return out;
  }

  /**
   * Messages that may leave while this node's write is still in flight, taken out of the next Ready's:
   * they promise nothing the write would make durable. Two kinds, and only while the term and vote we
   * send in (`term`, `votedFor`) are already on disk and no received snapshot waits to be persisted:
   * - a leader's AppendEntries, with or without entries: they promise nothing about the leader's own
   *   disk (thesis §10.2.1 — it counts itself toward a commit only once its write ends, Raft.advance);
   * - a follower's successful AppendEntriesResponse whose match index our log already had on disk. A
   *   heartbeat is anchored at our match index, so its answer is one of these unless the commit index it
   *   carries runs past our durable log.
   * Everything else (votes, acknowledgements of entries being written) still waits for the write.
   * Why: a node sent nothing while its write was in flight. With a slow disk a leader's heartbeats then
   * waited for its own writes (one after the other under load), followers heard nothing for longer than
   * an election timeout and deposed it; their answers waited for theirs, and CheckQuorum deposed it from
   * the other side — a 200 ms fsync on every node cost elections again and again. And every
   * proposal made during a write reached the followers only after it.
   */
  takeMessagesNotWaitingForDisk(term: number, votedFor: NodeId | null, leading: boolean): Message[] {
    if (this.msgs.length === 0 || this.log.pendingSnapshot !== null) return [];
    const onDisk = this.persistedHardState;
    if (onDisk.term !== term || onDisk.votedFor !== votedFor) return [];
    let out: Message[] | null = null;
    const keep: Message[] = [];
    for (const m of this.msgs) {
      const free =
        (m.type === 'AppendEntries' && leading) ||
        (m.type === 'AppendEntriesResponse' && m.success && m.matchIndex <= this.log.stableIndex);
      if (free) (out ??= []).push(m);
      else keep.push(m);
    }
    if (out === null) return [];
    this.msgs = keep;
    return out;
  }
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.votedFor === b.votedFor && a.commitIndex === b.commitIndex;
}

function sameSoftState(a: SoftState, b: SoftState): boolean {
  return a.role === b.role && a.leaderId === b.leaderId && a.term === b.term;
}
