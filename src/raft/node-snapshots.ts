// Snapshot scheduling, the driver's part (Raft's is the core's compact/offer): when to snapshot the
// application and compact the log, and how a follower behind the log's start gets the state. A state
// machine that can write its snapshot in slices (beginSnapshot) gets one slice per scheduler turn, so
// entries keep applying meanwhile; the loop saves or offers the finished bytes, so compaction never races
// a save. With a stored state machine (the applied store) the log keeps no snapshot data: the store is
// synced and the log compacted below it, and a follower behind is offered the store's state as a stream
// (read chunk by chunk as the core asks) or, failing that, a whole snapshot written in slices.
import type { InstallSnapshot, Message, NodeId, SnapshotChunk, SnapshotMeta } from './core/types.js';
import type { Scheduler } from './env.js';
import type { SnapshotJob, SnapshotStream, StoredStateMachine } from './fsm.js';
import type { NodeLogger } from './logger.js';
import type { RaftCore, RaftNodeOptions } from './node-options.js';
import { SnapshotPolicy } from './snapshot-policy.js';

/** What the snapshot scheduling reads of its node (RaftNode). */
export interface SnapshotHost {
  readonly id: NodeId;
  readonly raft: RaftCore;
  readonly appliedIndex: number;
  readonly stopped: boolean;
  leading(): boolean;
  /** Runs the loop again (it takes a finished job, a finished persist). */
  schedule(): void;
  /** The node cannot go on. */
  failed(err: unknown): void;
}

export class NodeSnapshots<R> {
  readonly policy: SnapshotPolicy;
  /** The index the log's snapshot (or its compaction point) is at. */
  lastIndex: number;
  /** A snapshot being written in slices between loop turns (fsm.beginSnapshot), of the state at `index`. */
  private job: { job: SnapshotJob; index: number; done: boolean } | null = null;
  /** Stored state machine: a persist for compaction in flight, the applied index it started at, and the
   *  index it reached (once done, for the loop to compact below). */
  private persisting = false;
  private persistStartedAt = 0;
  private persistedForCompaction: number | null = null;
  /** Stored state machine: the stream offered to followers behind the log's start (openStream), one being
   *  opened, and the chunks being read for them (follower/index/offset: one read per chunk asked). */
  private stream: SnapshotStream | null = null;
  private streamOpening = false;
  private readonly chunksReading = new Set<string>();

  constructor(
    private readonly host: SnapshotHost,
    private readonly opts: Pick<RaftNodeOptions<R>, 'fsm' | 'storage' | 'transport' | 'snapshotEvery' | 'catchUpEntries'>,
    private readonly scheduler: Scheduler,
    private readonly logger: NodeLogger,
    /** The snapshot the node started from: its index and size. */
    start: { index: number; bytes: number },
    private readonly chunkBytes: number,
  ) {
    this.lastIndex = start.index;
    this.policy = new SnapshotPolicy(opts.snapshotEvery);
    this.policy.taken(start.bytes);
  }

  /** A finished sliced snapshot waits for the loop to take it. */
  get jobDone(): boolean {
    return this.job?.done === true;
  }

  /** A chunk of the offered stream the core asked to send (InstallSnapshot.streamed): read from the stream
   *  at its offset, then sent. A chunk asked again while it is being read (a heartbeat's resend) is read
   *  once; one of a stream that is gone makes the core ask for a new one. */
  sendChunk(m: InstallSnapshot): void {
    const stream = this.stream;
    if (stream === null || stream.meta.index !== m.meta.index || stream.meta.term !== m.meta.term) {
      if (!this.streamOpening) this.host.raft.withdrawOffer();
      return;
    }
    const reading = `${m.to}/${m.meta.index}/${m.offset}`;
    if (this.chunksReading.has(reading)) return;
    this.chunksReading.add(reading);
    stream.chunkAt(m.offset).then(
      (chunk) => {
        this.chunksReading.delete(reading);
        if (this.host.stopped || this.stream !== stream) return;
        if (chunk === null) {
          // No chunk of this stream starts there: a new stream is offered and the follower starts over.
          void this.closeStream();
          return;
        }
        const { streamed: _, ...message } = m;
        this.opts.transport.send([{ ...message, chunk: chunk.data, done: chunk.last }]);
      },
      (err: unknown) => {
        this.chunksReading.delete(reading);
        if (this.stream === stream) this.host.failed(err);
      },
    );
  }

  /**
   * A follower's side: writes the snapshot chunks the core accepted (one Ready's, in order) where the
   * snapshot goes, and gives the core the store's word on each snapshot whose last chunk is among them —
   * verified (the core takes it: the next Ready carries it to install) or not. A chunk the store refuses
   * (it does not decode, or the stream does not verify at its last chunk) leaves the store's state and the
   * log as they were: the store deleted what it had written, the core forgets the snapshot and tells the
   * leader to send it again (Raft.snapshotRefused). Returns `later` (the Ready's messages that wait for its
   * write) without the answers to a refused snapshot's chunks (acknowledgements, or refusals naming the
   * offset then expected): the leader must not go on with a stream this node dropped.
   */
  async receiveChunks(chunks: SnapshotChunk[], later: Message[]): Promise<Message[]> {
    const stored = this.opts.fsm.stored!;
    const refused: SnapshotMeta[] = [];
    const isRefused = (index: number, term?: number) => refused.some((r) => r.index === index && (term === undefined || r.term === term));
    for (const chunk of chunks) {
      if (isRefused(chunk.meta.index, chunk.meta.term)) continue;
      const verdict = await stored.receiveChunk!(chunk);
      if (this.host.stopped) return later;
      if (!verdict.ok) {
        this.logger.warn(
          { nodeId: this.host.id, index: chunk.meta.index, term: chunk.meta.term, offset: chunk.offset, reason: verdict.reason },
          'a snapshot from the leader did not verify: thrown away, the state in force kept; the leader sends it again',
        );
        this.host.raft.snapshotRefused(chunk.meta);
        refused.push(chunk.meta);
        continue;
      }
      // Verified, but the core no longer wants it (a role change dropped it, or its log holds it already).
      if (chunk.done && !this.host.raft.snapshotVerified(chunk.meta)) await stored.discardReceived!();
    }
    if (refused.length === 0) return later;
    return later.filter((m) => !(m.type === 'InstallSnapshotResponse' && isRefused(m.snapshotIndex)));
  }

  /**
   * Called after each loop turn. A state machine that can write its snapshot in slices (beginSnapshot)
   * gets one slice per scheduler turn, so entries keep applying meanwhile; the finished bytes (the state
   * at the index where the job began) are saved here, inside the loop, so compaction never races a save.
   * Nothing is persisted before the end: a crash mid-way leaves the previous snapshot and the log.
   */
  async maybeSnapshot(): Promise<void> {
    if (this.opts.fsm.stored !== undefined) {
      await this.maybeCompactBelowStore(this.opts.fsm.stored);
      return;
    }
    const running = this.job;
    if (running !== null) {
      if (!running.done) return;
      this.job = null;
      await this.saveSnapshot(running.index, running.job.finish());
      return;
    }
    if (!this.policy.due(this.host.appliedIndex - this.lastIndex)) return;
    // A leader may have applied entries its own write has not covered yet (takeDurableCommitted): the
    // snapshot waits for a loop turn whose write covers what it would compact.
    if (this.host.appliedIndex > this.host.raft.status().durableIndex) return;
    const index = this.host.appliedIndex;
    this.policy.started();
    if (this.opts.fsm.beginSnapshot === undefined) {
      await this.saveSnapshot(index, this.opts.fsm.snapshot());
      return;
    }
    this.startJob(index);
  }

  private async saveSnapshot(index: number, data: Uint8Array): Promise<void> {
    const snapshot = this.host.raft.compact(index, data);
    this.lastIndex = Math.max(this.lastIndex, index);
    this.policy.taken(data.length);
    if (snapshot === null) return; // a newer snapshot from the leader already covers it
    await this.opts.storage.compact(snapshot);
    this.logger.info({ nodeId: this.host.id, index, bytes: data.length }, 'snapshot taken, log compacted');
  }

  /**
   * With a stored state machine: every snapshotEvery applied entries, the store is synced (persist) and the
   * log compacted to catchUpEntries below what it then holds — never past it: entries whose effects the store
   * does not hold durably are the only copy of them. The log keeps no snapshot data; a follower behind its
   * start gets a snapshot made when it needs one (offerSnapshot), written in slices like any other.
   */
  private async maybeCompactBelowStore(stored: StoredStateMachine): Promise<void> {
    const job = this.job;
    if (job !== null && job.done) {
      this.job = null;
      const data = job.job.finish();
      if (this.host.raft.offerSnapshot(job.index, data)) {
        this.logger.info({ nodeId: this.host.id, index: job.index, bytes: data.length }, 'snapshot made for a follower behind the log');
      }
    }
    if (this.stream !== null && ![...this.host.raft.progressSnapshot().values()].some((pr) => pr.state === 'snapshot')) {
      // Nobody is being sent it: the store's view is released (it keeps old data on disk while open).
      await this.closeStream();
    }
    if (this.job === null && !this.streamOpening && this.host.raft.takeSnapshotWanted()) this.offerSnapshotFromStore(stored);
    const persisted = this.persistedForCompaction;
    if (persisted !== null) {
      this.persistedForCompaction = null;
      const keep = this.opts.catchUpEntries ?? Math.floor(this.opts.snapshotEvery / 2);
      const index = Math.min(persisted, this.host.raft.status().durableIndex) - keep;
      const snapshot = index > this.lastIndex ? this.host.raft.compact(index, new Uint8Array(0)) : null;
      if (snapshot !== null) {
        this.lastIndex = index;
        await this.opts.storage.compact(snapshot);
        this.logger.info({ nodeId: this.host.id, index, storeIndex: persisted }, 'log compacted below the applied store');
      }
    }
    if (this.persisting || this.host.appliedIndex - this.persistStartedAt < this.opts.snapshotEvery) return;
    this.persisting = true;
    this.persistStartedAt = this.host.appliedIndex;
    stored.persist().then(
      (index) => {
        this.persisting = false;
        this.persistedForCompaction = index;
        this.host.schedule();
      },
      (err: unknown) => {
        this.persisting = false;
        this.host.failed(err);
      },
    );
  }

  /** A follower is behind the log's start: the store's state is offered as a stream (its point is what the
   *  store holds, after the write-behind flushed), or — when the store cannot stream it to every member
   *  (the cluster level) or has no stream — a whole snapshot is written in slices. */
  private offerSnapshotFromStore(stored: StoredStateMachine): void {
    if (stored.openStream === undefined) {
      this.startJob(this.host.appliedIndex);
      return;
    }
    this.streamOpening = true;
    void (async () => {
      try {
        const stream = await stored.openStream!(this.chunkBytes);
        if (stream === null) {
          if (!this.host.stopped) this.startJob(this.host.appliedIndex);
          return;
        }
        const current = this.stream;
        if (current !== null && current.meta.index === stream.meta.index && current.meta.term === stream.meta.term) {
          // The store has not moved since: the stream being sent goes on (followers keep their offsets).
          await stream.close();
          if (!this.host.stopped && this.host.leading() && !this.host.raft.offerStream(current.meta)) await this.closeStream();
          return;
        }
        await this.closeStream();
        if (this.host.stopped || !this.host.leading() || !this.host.raft.offerStream(stream.meta)) {
          await stream.close();
          return;
        }
        this.stream = stream;
        this.host.raft.takeSnapshotWanted(); // asked for while this one was being opened: it answers that too
        this.logger.info({ nodeId: this.host.id, index: stream.meta.index }, 'snapshot stream opened for a follower behind the log');
      } catch (err) {
        this.host.failed(err);
      } finally {
        this.streamOpening = false;
        if (!this.host.stopped) this.host.schedule();
      }
    })();
  }

  async closeStream(): Promise<void> {
    const stream = this.stream;
    if (stream === null) return;
    this.stream = null;
    this.chunksReading.clear();
    if (!this.host.stopped) this.host.raft.withdrawOffer();
    await stream.close();
  }

  /** Writes a snapshot of the state at `index` (the applied index now) in slices between loop turns; the loop
   *  takes it once done (maybeSnapshot saves it, maybeCompactBelowStore offers it). */
  private startJob(index: number): void {
    const fsm = this.opts.fsm;
    const job = {
      job: fsm.beginSnapshot?.(this.policy.lastBytes) ?? finishedJob(fsm.snapshot()),
      index,
      done: false,
    };
    this.job = job;
    const slice = () => {
      if (this.job !== job) return; // cancelled
      if (!job.job.step()) {
        this.scheduler.soon(slice);
        return;
      }
      job.done = true;
      this.host.schedule(); // the loop takes it
    };
    this.scheduler.soon(slice);
  }

  cancelJob(): void {
    this.job?.job.cancel();
    this.job = null;
  }
}

/** A snapshot made in one piece, as a job (a state machine without beginSnapshot). */
function finishedJob(data: Uint8Array): SnapshotJob {
  return { step: () => true, finish: () => data, cancel: () => {} };
}
