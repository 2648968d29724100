// The driver: the only part of Raft that touches time and I/O. It turns scheduler ticks into core ticks
// and runs the loop, one Ready at a time (run()): report a new configuration (the transport dials a new
// member before the first append to it) -> hold the leader's commit notices -> send a leader's appends
// early (they promise nothing about our disk) -> apply the committed entries this write is not needed
// for (a follower's already on its disk; all of a leader's, a quorum holds them) -> persist the Ready (one
// synced write) -> send the rest (votes, acknowledgements of what was just written) -> apply the rest (a
// role change, a received snapshot, entries, read results) -> advance.
// The node is not silent while the write is in flight: what new input makes that the write cannot take
// back — a leader's appends and heartbeats, a follower's answers that acknowledge only what is on disk —
// leaves at once (schedule(), Raft.takeMessagesNotWaitingForDisk), and entries that commit meanwhile are
// applied at once by the same rule (receive(), Raft.takeDurableCommitted).
// Time, timers and randomness come in through `env` (NodeEnv), so the simulator runs this very loop on
// virtual time; production passes realEnv().
import { EventEmitter } from 'node:events';
import { quorumOf } from './core/quorum.js';
import { Raft, defaultRaftConfig } from './core/raft.js';
import type {
  ConfChange,
  ConfChangeResult,
  ConfState,
  Entry,
  InstallSnapshot,
  Message,
  NodeId,
  ProposeResult,
  RaftConfig,
  Ready,
  RestoredState,
  SoftState,
  Snapshot,
  SnapshotMeta,
  Status,
} from './core/types.js';
import { bootstrapSnapshot, emptyHardState } from './core/types.js';
import type { ProgressView } from './core/progress.js';
import { realEnv, type NodeEnv, type TimerHandle } from './env.js';
import {
  ConfChangeRefusedError,
  NodeStoppedError,
  NotLeaderError,
  ProposalDroppedError,
  ProposalTimeoutError,
  ReadTimeoutError,
} from './errors.js';
import type { SnapshotJob, SnapshotStream, StateMachine, StoredStateMachine } from './fsm.js';
import { StoredStartError, holdsData, startFromStore } from './stored-start.js';
import { SnapshotPolicy } from './snapshot-policy.js';
import { silentNodeLogger, type NodeLogger } from './logger.js';
import type { RaftStorage } from './storage/types.js';
import type { PeerSender } from './transport.js';
import { mark } from '../trace/stages.js';

/** The slice of the core's API the driver uses: a scratch copy with a planted bug plugs in here. */
export interface RaftCore {
  tick(): void;
  step(msg: Message): void;
  leaderUnreachable(from: NodeId): void;
  propose(data: Uint8Array): ProposeResult;
  proposeConfChange(change: ConfChange): ConfChangeResult;
  readIndex(ctx: string): void;
  transferLeadership(to: NodeId): boolean;
  hasReady(): boolean;
  ready(): Ready;
  advance(rd: Ready): void;
  takeDurableCommitted(maxCount?: number): Entry[];
  takeMessagesNotWaitingForDisk(): Message[];
  compact(index: number, data: Uint8Array): Snapshot | null;
  takeSnapshotWanted(): boolean;
  offerSnapshot(index: number, data: Uint8Array): boolean;
  offerStream(meta: SnapshotMeta): boolean;
  withdrawOffer(): void;
  dropSnapshotData(): void;
  status(): Status;
  progressSnapshot(): Map<NodeId, ProgressView>;
}

export type CoreFactory = (cfg: RaftConfig, restored: RestoredState) => RaftCore;

export interface RaftNodeOptions<R> {
  id: NodeId;
  /** First boot only (empty storage): the initial voters, their peer addresses and the cluster id, which
   *  become the bootstrap snapshot at index 0. Ignored once storage holds state. */
  voters: NodeId[];
  addresses?: Record<NodeId, string>;
  clusterId?: string;
  /** First boot of a node added with `members add`: start with no configuration at all and wait for the
   *  leader to contact us (never bootstrap a cluster of our own). */
  join?: boolean;
  /** Runs on first boot (empty storage) before anything is written; throwing aborts the start. The
   *  runtime asks its peers here whether the cluster already knows this node (a wiped data dir). */
  beforeBootstrap?: () => Promise<void>;
  storage: RaftStorage;
  transport: PeerSender;
  fsm: StateMachine<R>;
  tickMs: number;
  /** Take an application snapshot (and compact the log) every this many applied entries — for a large
   *  state, only once the log is also a share of its size (snapshot-policy.ts). */
  snapshotEvery: number;
  /** With a stored state machine (fsm.stored): entries the log keeps below what the store holds, so a
   *  follower a little behind catches up from the log rather than a snapshot (etcd keeps 5,000). Default
   *  half of snapshotEvery. */
  catchUpEntries?: number;
  raft?: Partial<Omit<RaftConfig, 'id' | 'rng'>>;
  logger?: NodeLogger;
  /** Clock, timers and rng; default realEnv(). */
  env?: NodeEnv;
  /** Builds the core; default the real one. */
  core?: CoreFactory;
}

interface PendingProposal<R> {
  term: number;
  resolve(v: { index: number; result: R }): void;
  reject(e: Error): void;
}

interface PendingRead {
  index: number | null;
  resolve(index: number): void;
  reject(e: Error): void;
}

/** How long a commit notice waits for a later append to carry the commit index instead (holdNotices). */
const NOTICE_HOLD_MS = 5;

const realCore: CoreFactory = (cfg, restored) => new Raft(cfg, restored);

export class RaftNode<R = unknown> extends EventEmitter {
  readonly id: NodeId;
  private raft!: RaftCore;
  private readonly opts: RaftNodeOptions<R>;
  private readonly env: NodeEnv;
  private readonly logger: NodeLogger;
  private ticker: TimerHandle | null = null;
  private scheduled = false;
  private running = false;
  /** Resolves when the loop in progress finishes (stop() waits on it). */
  private loopDone: Promise<void> = Promise.resolve();
  private stopped = false;
  private proposals = new Map<number, PendingProposal<R>>();
  private reads = new Map<string, PendingRead>();
  private readSeq = 0;
  private appliedIndex = 0;
  private lastSnapshotIndex = 0;
  private snapshotPolicy!: SnapshotPolicy;
  /** A snapshot being written in slices between loop turns (fsm.beginSnapshot), of the state at `index`. */
  private snapshotJob: { job: SnapshotJob; index: number; done: boolean } | null = null;
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
  private soft: SoftState = { role: 'follower', leaderId: null, term: 0 };
  /** The loop is waiting on a write whose Ready changes neither role nor snapshot: entries that commit
   *  meanwhile and are already durable here may be applied from receive(), without waiting for it. */
  private applyWhileWriting = false;
  /** The loop is waiting on a write in flight: messages that promise nothing it would make durable leave
   *  at once, from whatever input made them (schedule(), Raft.takeMessagesNotWaitingForDisk). */
  private writing = false;
  private conf: ConfState | null = null;
  /** Commit notices held back, one per follower (holdNotices). */
  private heldNotices = new Map<NodeId, Message>();
  private noticeTimer: TimerHandle | null = null;
  /** When we last received anything from each peer (our clock): what health is judged by. */
  private lastHeardMs = new Map<NodeId, number>();
  private chunkBytes = 0;

  private constructor(opts: RaftNodeOptions<R>) {
    super();
    this.opts = opts;
    this.id = opts.id;
    this.env = opts.env ?? realEnv();
    this.logger = opts.logger ?? silentNodeLogger;
  }

  static async start<R>(opts: RaftNodeOptions<R>): Promise<RaftNode<R>> {
    const node = new RaftNode(opts);
    await node.init();
    return node;
  }

  private async init(): Promise<void> {
    let restored = await this.opts.storage.load();
    const stored = this.opts.fsm.stored;
    // A stored state machine restores itself from its store; its point is where the log is replayed from.
    const point = stored === undefined ? null : await stored.open();
    if (point !== null) {
      const start = startFromStore(restored, point);
      restored = start.restored;
      if (start.rewriteLog) {
        this.logger.warn(
          { nodeId: this.id, index: point.index, term: point.term },
          'the applied store is ahead of the log: it counts as a snapshot there, and the log is rewritten to start from it',
        );
        await this.opts.storage.save({ hardState: restored.hardState, snapshot: restored.snapshot, entries: [] });
      }
    }
    if (restored === null) {
      await this.opts.beforeBootstrap?.();
      // First boot: the initial voter set becomes data in a bootstrap snapshot at index 0.
      const snapshot = this.opts.join
        ? bootstrapSnapshot([])
        : bootstrapSnapshot(this.opts.voters, { clusterId: this.opts.clusterId ?? '', addresses: this.opts.addresses ?? {} });
      restored = { hardState: emptyHardState(), snapshot, entries: [] };
      await this.opts.storage.save({ hardState: restored.hardState, snapshot: restored.snapshot, entries: [] });
    }
    if (stored === undefined) this.opts.fsm.restore(restored.snapshot.data);
    else if (point === null) {
      // The store holds nothing: a first boot (the bootstrap snapshot), or a data dir of an older layout
      // whose state is the log's snapshot. Anything else means the state up to the log's start is lost.
      if (restored.snapshot.meta.index > 0 && !holdsData(restored.snapshot)) {
        throw new StoredStartError(
          `the applied store is empty but the log starts after index ${restored.snapshot.meta.index}: the state up to it is lost`,
        );
      }
      await stored.install(restored.snapshot);
      if (restored.snapshot.meta.index > 0) {
        this.logger.info(
          { nodeId: this.id, index: restored.snapshot.meta.index, bytes: restored.snapshot.data.length },
          'moved the state of an older data dir layout (a whole-state snapshot) into the applied store',
        );
      }
      restored = { ...restored, snapshot: { meta: restored.snapshot.meta, data: new Uint8Array(0) } };
    }
    this.appliedIndex = restored.snapshot.meta.index;
    this.lastSnapshotIndex = restored.snapshot.meta.index;
    this.snapshotPolicy = new SnapshotPolicy(this.opts.snapshotEvery);
    this.snapshotPolicy.taken(restored.snapshot.data.length);
    const rng = this.env.rng;
    const cfg: RaftConfig = { ...defaultRaftConfig(this.id, rng), ...this.opts.raft, id: this.id, rng };
    // A store that takes a snapshot's chunks as they come: the core hands them out instead of collecting them.
    if (stored?.receiveChunk !== undefined && stored.installReceived !== undefined) cfg.snapshotChunksToDriver = true;
    this.chunkBytes = cfg.snapshotChunkBytes;
    this.raft = (this.opts.core ?? realCore)(cfg, restored);
    this.soft = { role: 'follower', leaderId: null, term: restored.hardState.term };
    this.logger.info(
      { nodeId: this.id, term: restored.hardState.term, snapshotIndex: restored.snapshot.meta.index, entries: restored.entries.length },
      'raft node restored from storage',
    );
    this.ticker = this.env.scheduler.every(this.opts.tickMs, () => {
      if (this.stopped) return;
      this.raft.tick();
      this.schedule();
    });
    this.schedule();
  }

  // ------------------------------------------------------------------ inputs

  /** A message from a peer (called by the transport). */
  receive(m: Message): void {
    if (this.stopped) return;
    this.lastHeardMs.set(m.from, this.env.nowMs());
    markReceived(m);
    this.raft.step(m);
    if (this.applyWhileWriting) this.applyDurable();
    this.schedule();
  }

  /** The transport lost `id` for good (connection broken, reconnect refused): if it is our leader the
   *  core campaigns soon instead of waiting out the election timeout (Raft.leaderUnreachable). */
  peerUnreachable(id: NodeId): void {
    if (this.stopped) return;
    this.raft.leaderUnreachable(id);
    this.schedule();
  }

  /** Apply what the core says is committed and durable here (takeDurableCommitted), then release reads. */
  private applyDurable(): void {
    const entries = this.raft.takeDurableCommitted();
    if (entries.length === 0) return;
    try {
      for (const e of entries) this.applyEntry(e);
    } catch (err) {
      // Outside the loop (a message arrived while the loop writes): the same end as a failure inside it.
      this.failed(err);
      return;
    }
    this.releaseReads();
  }

  /** The node cannot go on (storage failed, or the state machine refused an entry it cannot read): stop
   *  rather than go on with a state it cannot vouch for. */
  private failed(err: unknown): void {
    if (this.stopped) return;
    this.logger.error({ nodeId: this.id, err: String(err) }, 'raft loop failed; stopping the node');
    this.stopped = true;
    this.ticker?.cancel();
    this.emit('fatal', err);
  }

  /** Has any message from `id` arrived since this node started? */
  everHeard(id: NodeId): boolean {
    return this.lastHeardMs.has(id);
  }

  /** Did a message from `id` arrive within the last `windowMs`? */
  heardWithin(id: NodeId, windowMs: number): boolean {
    return this.heardWithinAt(id, this.env.nowMs(), windowMs);
  }

  /** Did a message from `id` arrive in the `windowMs` before `nowMs`? */
  private heardWithinAt(id: NodeId, nowMs: number, windowMs: number): boolean {
    const t = this.lastHeardMs.get(id);
    return t !== undefined && nowMs - t < windowMs;
  }

  /**
   * Can this node serve lock calls now (SPEC "Health")? A leader must have heard from a quorum of its
   * voters (itself included) within `windowMs`; a follower must have heard from its leader within it.
   * CheckQuorum deposes a cut-off leader only after up to two election timeouts; this answers sooner.
   */
  serving(windowMs: number): { serving: boolean; reason: string } {
    if (this.stopped) return { serving: false, reason: 'shutting down' };
    const now = this.env.nowMs();
    const recent = (id: NodeId) => this.heardWithinAt(id, now, windowMs);
    const conf = this.conf;
    if (this.soft.role === 'leader') {
      if (!conf || !conf.voters.includes(this.id)) return { serving: false, reason: 'leader outside its own configuration' };
      const heard = conf.voters.filter((id) => id === this.id || recent(id)).length;
      const quorum = quorumOf(conf.voters.length);
      return heard >= quorum
        ? { serving: true, reason: 'leader with a quorum' }
        : { serving: false, reason: `leader heard from ${heard} of ${conf.voters.length} voters (quorum ${quorum})` };
    }
    const leader = this.soft.leaderId;
    if (leader === null) return { serving: false, reason: 'no leader' };
    return recent(leader)
      ? { serving: true, reason: `follower of ${leader}` }
      : { serving: false, reason: `no word from leader ${leader}` };
  }

  /** Propose `data`; resolves with the state machine's result once it is applied here. After
   *  `timeoutMs` the promise rejects with ProposalTimeoutError: the outcome is then UNKNOWN (the entry
   *  may still commit) — callers retry with the same request id and rely on dedup. */
  propose(data: Uint8Array, timeoutMs: number): Promise<{ index: number; result: R }> {
    if (this.stopped) return Promise.reject(new NodeStoppedError());
    mark('call.propose');
    const r = this.raft.propose(data);
    if (!r.ok) {
      return Promise.reject(
        new NotLeaderError(r.leaderId, r.reason === 'transferring' ? 'leadership is being transferred' : 'not the leader'),
      );
    }
    return this.awaitApplied(r.index, r.term, timeoutMs);
  }

  /** The entry proposed at (index, term) applied here, or ProposalTimeoutError after `timeoutMs`. */
  private awaitApplied(index: number, term: number, timeoutMs: number): Promise<{ index: number; result: R }> {
    this.schedule();
    return this.withDeadline<{ index: number; result: R }>(
      timeoutMs,
      () => {
        const p = this.proposals.get(index);
        if (!p || p.term !== term) return null;
        this.proposals.delete(index);
        return new ProposalTimeoutError(timeoutMs, index);
      },
      (settle) => {
        // An older proposal still waiting at this index (made in an earlier term, then overwritten by
        // another leader) can never apply: fail it now instead of leaving it to hang.
        this.proposals.get(index)?.reject(new ProposalDroppedError(index));
        this.proposals.set(index, { term, ...settle });
      },
    );
  }

  /** Propose one membership change (core/config.ts); resolves once the configuration entry is applied
   *  here, i.e. committed. Refusals: NotLeaderError, ConfChangeRefusedError. */
  proposeConfChange(change: ConfChange, timeoutMs: number): Promise<{ index: number }> {
    if (this.stopped) return Promise.reject(new NodeStoppedError());
    const r = this.raft.proposeConfChange(change);
    if (!r.ok) {
      switch (r.reason) {
        case 'not-leader':
        case 'transferring':
          return Promise.reject(
            new NotLeaderError(r.leaderId, r.reason === 'transferring' ? 'leadership is being transferred' : 'not the leader'),
          );
        case 'conf-pending':
          return Promise.reject(new ConfChangeRefusedError('pending', r.message));
        case 'conf-not-ready':
          return Promise.reject(new ConfChangeRefusedError('not-ready', r.message));
        case 'conf-invalid':
          return Promise.reject(new ConfChangeRefusedError('invalid', r.message));
      }
    }
    return this.awaitApplied(r.index, r.term, timeoutMs).then(({ index }) => ({ index }));
  }

  /** The configuration this node acts on (latest in its log, committed or not). */
  configuration(): ConfState | null {
    return this.conf;
  }

  /** Linearizable read barrier (ReadIndex): resolves once this node has applied everything that was
   *  committed when it was called. Rejects after `timeoutMs` (a lost ReadIndex message, a dead leader). */
  readBarrier(timeoutMs: number): Promise<number> {
    if (this.stopped) return Promise.reject(new NodeStoppedError());
    const ctx = `${this.id}:${++this.readSeq}`;
    mark('call.read');
    this.raft.readIndex(ctx);
    this.schedule();
    return this.withDeadline<number>(
      timeoutMs,
      () => (this.reads.delete(ctx) ? new ReadTimeoutError(timeoutMs) : null),
      (settle) => this.reads.set(ctx, { index: null, ...settle }),
    );
  }

  transferLeadership(to: NodeId): boolean {
    const ok = this.raft.transferLeadership(to);
    this.schedule();
    return ok;
  }

  /** Role, term and leader as this node has acted on them: a role change counts once the Ready that made
   *  it is durable and the lock service has heard of it (onSoftState). The core's own view runs ahead by
   *  one disk write, and a status saying LEADER while the service still refused as a follower sent a
   *  client (and a test harness waiting for a leader) to a node that answered "no leader". */
  status(): Status {
    return {
      ...this.raft.status(),
      role: this.soft.role,
      term: this.soft.term,
      leaderId: this.soft.leaderId,
      appliedIndex: this.appliedIndex,
    };
  }

  get role(): SoftState['role'] {
    return this.soft.role;
  }

  get leaderId(): NodeId | null {
    return this.soft.leaderId;
  }

  get term(): number {
    return this.soft.term;
  }

  isLeader(): boolean {
    return this.soft.role === 'leader';
  }

  progress(): Map<NodeId, ProgressView> {
    return this.raft.progressSnapshot();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.ticker?.cancel();
    this.noticeTimer?.cancel();
    this.heldNotices.clear();
    this.cancelSnapshotJob();
    await this.loopDone;
    await this.closeStream();
    const err = new NodeStoppedError();
    for (const p of this.proposals.values()) p.reject(err);
    for (const r of this.reads.values()) r.reject(err);
    this.proposals.clear();
    this.reads.clear();
  }

  // ------------------------------------------------------------------ the loop

  private schedule(): void {
    if (this.writing && !this.stopped) this.sendWhatNeedNotWait();
    if (this.scheduled || this.running || this.stopped) return;
    this.scheduled = true;
    this.env.scheduler.soon(() => {
      this.scheduled = false;
      if (this.running || this.stopped) return;
      this.loopDone = this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (!this.stopped && (this.raft.hasReady() || this.snapshotJob?.done === true)) {
        if (!this.raft.hasReady()) {
          await this.maybeSnapshot(); // only a finished sliced snapshot to save
          continue;
        }
        const rd = this.raft.ready();
        if (rd.entries.length > 0) mark('loop.ready');
        // A new configuration first: the transport must know a new member's address before this Ready's
        // messages (the leader's first append to it) go out.
        if (rd.conf) {
          this.conf = rd.conf;
          this.emit('conf', rd.conf);
        }
        // 0. A leader's AppendEntries may leave BEFORE its own write (thesis §10.2.1): they promise nothing
        //    about our disk — the leader counts itself toward a commit only once its entries are durable
        //    (advance() updates its own match). This overlaps the leader's fsync with the followers'.
        //    Everything else (votes, acknowledgements) waits for the write below.
        let later = this.holdNotices(rd.messages);
        if (later.length > 0 && (rd.hardState || rd.entries.length > 0)) {
          const early = later.filter((m) => m.type === 'AppendEntries');
          if (early.length > 0) {
            later = later.filter((m) => m.type !== 'AppendEntries');
            mark('loop.send-early');
            this.sendNow(early);
          }
        }
        // 1. Apply, while this Ready's write is still ahead of us, the committed entries that are already
        //    durable here: they are committed (a quorum has them) and in our own log on disk, so nothing the
        //    write below does can change them. Without this every commit waited one more fsync — the one
        //    of the entries proposed while it was being replicated (etcd's raft applies concurrently with
        //    the next write for the same reason). On a follower, entries in this very Ready wait for the
        //    write; a role change or a snapshot to install always waits, in the order below.
        let committed = rd.committedEntries;
        if (!rd.softState && !rd.snapshot && committed.length > 0) {
          // A leader's commit index covers only entries durable on a quorum (it counts itself once its
          // own write ends), so it applies them all now; a follower only what its own log already holds.
          const firstUnstable = rd.entries.length > 0 && this.soft.role !== 'leader' ? rd.entries[0]!.index : Infinity;
          let durable = 0;
          while (durable < committed.length && committed[durable]!.index < firstUnstable) durable++;
          for (let i = 0; i < durable; i++) this.applyEntry(committed[i]!);
          if (durable > 0) committed = committed.slice(durable);
        }
        // 2. Persist before we speak: one atomic synced batch (group commit: every proposal and every
        //    vote since the last Ready rides in it).
        //    While it is on its way to disk, receive() applies entries that commit meanwhile if they are
        //    already durable here (takeDurableCommitted) — not when this Ready changes our role (the
        //    service must hear of it before anything applies in the new role) or installs a snapshot.
        const stored = this.opts.fsm.stored;
        if (rd.snapshotChunks.length > 0) {
          // Snapshot chunks go where the snapshot goes (a new generation of the store) before this Ready's
          // answers acknowledge them: the leader sends the next chunk only once this one is written.
          for (const chunk of rd.snapshotChunks) await stored!.receiveChunk!(chunk);
          if (this.stopped) return;
        }
        let snapshotToLog = rd.snapshot;
        if (rd.snapshot && stored !== undefined) {
          // The store takes the snapshot first, durably: a crash after this and before the log records it
          // restarts from the store (ahead of the log: stored-start.ts); the other order would leave a log
          // that starts after a state nobody holds. The log then keeps only the snapshot's metadata.
          this.cancelSnapshotJob();
          if (stored.installReceived !== undefined && stored.receiveChunk !== undefined) {
            // Its chunks are in the store already: swapped in (once verified whole), the machine restored.
            await stored.installReceived(rd.snapshot.meta);
            this.appliedIndex = rd.snapshot.meta.index;
          } else {
            const installed = stored.install(rd.snapshot); // the machine is replaced at once, the store after
            this.appliedIndex = rd.snapshot.meta.index;
            await installed;
          }
          if (this.stopped) return;
          snapshotToLog = { meta: rd.snapshot.meta, data: new Uint8Array(0) };
        }
        if (rd.hardState || rd.snapshot || rd.entries.length > 0) {
          this.applyWhileWriting = !rd.softState && !rd.snapshot;
          this.writing = true;
          try {
            await this.opts.storage.save({ hardState: rd.hardState, snapshot: snapshotToLog, entries: rd.entries });
          } finally {
            this.applyWhileWriting = false;
            this.writing = false;
          }
          if (this.stopped) return; // a stopped node says nothing more, not even what it just persisted
        }
        // 3. Send the rest.
        if (later.length > 0) {
          mark('loop.send');
          this.sendNow(later);
        }
        // 4. Apply the rest.
        if (rd.softState) this.onSoftState(rd.softState);
        if (rd.snapshot) {
          this.cancelSnapshotJob(); // of the state being replaced
          this.snapshotPolicy.taken(rd.snapshot.data.length);
          if (stored === undefined) this.opts.fsm.restore(rd.snapshot.data);
          this.appliedIndex = rd.snapshot.meta.index;
          this.lastSnapshotIndex = rd.snapshot.meta.index;
          this.logger.info(
            { nodeId: this.id, index: rd.snapshot.meta.index, bytes: rd.snapshot.data.length },
            'installed snapshot from leader',
          );
          this.failProposalsUpTo(rd.snapshot.meta.index);
        }
        for (const e of committed) this.applyEntry(e);
        for (const rs of rd.readStates) {
          const r = this.reads.get(rs.ctx);
          if (r) r.index = rs.index;
        }
        for (const rf of rd.readFailures) {
          const r = this.reads.get(rf.ctx);
          if (r) {
            this.reads.delete(rf.ctx);
            r.reject(
              new NotLeaderError(
                this.soft.leaderId,
                rf.reason === 'no-leader' ? 'no leader to confirm the read' : 'the leader could not confirm the read',
              ),
            );
          }
        }
        this.raft.advance(rd);
        if (rd.snapshot && stored !== undefined) this.raft.dropSnapshotData();
        this.releaseReads();
        await this.maybeSnapshot();
      }
    } catch (err) {
      // A storage failure means we can no longer promise durability; an entry we cannot read, that we
      // would diverge: stop rather than lie.
      this.failed(err);
    } finally {
      this.running = false;
    }
    if (!this.stopped && (this.raft.hasReady() || this.snapshotJob?.done === true)) this.schedule();
  }

  /** While a write is in flight: a leader's appends and heartbeats, and a follower's answers that claim
   *  only what is on disk, leave now instead of after the write (Raft.takeMessagesNotWaitingForDisk). */
  private sendWhatNeedNotWait(): void {
    const messages = this.raft.takeMessagesNotWaitingForDisk();
    if (messages.length === 0) return;
    const now = this.holdNotices(messages);
    if (now.length === 0) return;
    mark('loop.send-early');
    this.sendNow(now);
  }

  /**
   * Takes the leader's commit notices (appends the core marked `commitOnly`: nothing to replicate, only a
   * new commit index) out of `messages` and holds them, one per follower, for NOTICE_HOLD_MS; returns the
   * rest. A later append to that follower carries the commit index too and replaces its notice
   * (sendNow); otherwise the notice leaves when the hold ends. Under steady traffic the next proposal's
   * append comes within a millisecond, so most notices never travel: sent at once, each one cost both
   * followers a message, a Ready and an answer, and the leader two answers to read, on every commit —
   * and woke the followers just as the leader answered its client (issue 19, bench --trace). Holding one
   * is safe: Raft tolerates any delay or loss of an append without entries, a follower's commit index
   * never moves back, and reads confirm leadership with their own heartbeats, which are never held.
   */
  private holdNotices(messages: Message[]): Message[] {
    if (!messages.some((m) => m.type === 'AppendEntries' && m.commitOnly === true)) return messages;
    const rest: Message[] = [];
    for (const m of messages) {
      if (m.type === 'AppendEntries' && m.commitOnly === true) this.heldNotices.set(m.to, m);
      else rest.push(m);
    }
    this.noticeTimer ??= this.env.scheduler.after(NOTICE_HOLD_MS, () => this.flushNotices());
    return rest;
  }

  /** Sends `messages`; an append to a follower replaces the notice held for it (it carries the commit index). */
  private sendNow(messages: Message[]): void {
    if (this.heldNotices.size > 0) {
      for (const m of messages) if (m.type === 'AppendEntries') this.heldNotices.delete(m.to);
    }
    if (messages.some((m) => m.type === 'InstallSnapshot' && m.streamed === true)) {
      const rest: Message[] = [];
      for (const m of messages) {
        if (m.type === 'InstallSnapshot' && m.streamed === true) this.sendStreamedChunk(m);
        else rest.push(m);
      }
      messages = rest;
    }
    this.opts.transport.send(messages);
  }

  /** A chunk of the offered stream the core asked to send (InstallSnapshot.streamed): read from the stream
   *  at its offset, then sent. A chunk asked again while it is being read (a heartbeat's resend) is read
   *  once; one of a stream that is gone makes the core ask for a new one. */
  private sendStreamedChunk(m: InstallSnapshot): void {
    const stream = this.stream;
    if (stream === null || stream.meta.index !== m.meta.index || stream.meta.term !== m.meta.term) {
      if (!this.streamOpening) this.raft.withdrawOffer();
      return;
    }
    const reading = `${m.to}/${m.meta.index}/${m.offset}`;
    if (this.chunksReading.has(reading)) return;
    this.chunksReading.add(reading);
    stream.chunkAt(m.offset).then(
      (chunk) => {
        this.chunksReading.delete(reading);
        if (this.stopped || this.stream !== stream) return;
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
        if (this.stream === stream) this.failed(err);
      },
    );
  }

  private flushNotices(): void {
    this.noticeTimer = null;
    if (this.stopped || this.heldNotices.size === 0) return;
    const notices = [...this.heldNotices.values()];
    this.heldNotices.clear();
    if (this.soft.role !== 'leader') return; // of a term that is over: the new leader says what commits
    mark('loop.send-notices');
    this.opts.transport.send(notices);
  }

  private applyEntry(e: Entry): void {
    // Every committed entry goes to the machine: noop/config entries still move its applied index.
    if (e.data.length > 0) mark('loop.apply');
    const result = this.opts.fsm.apply(e);
    this.appliedIndex = e.index;
    this.snapshotPolicy.noteApplied(e.data.length);
    const p = this.proposals.get(e.index);
    if (p) {
      this.proposals.delete(e.index);
      if (p.term === e.term) p.resolve({ index: e.index, result });
      else p.reject(new ProposalDroppedError(e.index));
    }
    this.emit('applied', e, result);
  }

  private failProposalsUpTo(index: number): void {
    for (const [i, p] of this.proposals) {
      if (i <= index) {
        this.proposals.delete(i);
        p.reject(new ProposalDroppedError(i));
      }
    }
  }

  private releaseReads(): void {
    for (const [ctx, r] of this.reads) {
      if (r.index !== null && r.index <= this.appliedIndex) {
        this.reads.delete(ctx);
        mark('read.done');
        r.resolve(r.index);
      }
    }
  }

  private onSoftState(ss: SoftState): void {
    const prev = this.soft;
    this.soft = ss;
    if (prev.role !== ss.role || prev.term !== ss.term || prev.leaderId !== ss.leaderId) {
      this.logger.info({ nodeId: this.id, role: ss.role, term: ss.term, leaderId: ss.leaderId }, 'raft role/term changed');
      this.emit('softState', ss, prev);
    }
    if (prev.role === 'leader' && ss.role !== 'leader') {
      void this.closeStream();
      // Reads queued on a deposed leader can no longer be confirmed.
      for (const [ctx, r] of this.reads) {
        if (r.index === null) {
          this.reads.delete(ctx);
          r.reject(new NotLeaderError(ss.leaderId, 'leadership lost'));
        }
      }
    }
  }

  /**
   * Called after each loop turn. A state machine that can write its snapshot in slices (beginSnapshot)
   * gets one slice per scheduler turn, so entries keep applying meanwhile; the finished bytes (the state
   * at the index where the job began) are saved here, inside the loop, so compaction never races a save.
   * Nothing is persisted before the end: a crash mid-way leaves the previous snapshot and the log.
   */
  private async maybeSnapshot(): Promise<void> {
    if (this.opts.fsm.stored !== undefined) {
      await this.maybeCompactBelowStore(this.opts.fsm.stored);
      return;
    }
    const running = this.snapshotJob;
    if (running !== null) {
      if (!running.done) return;
      this.snapshotJob = null;
      await this.saveSnapshot(running.index, running.job.finish());
      return;
    }
    if (!this.snapshotPolicy.due(this.appliedIndex - this.lastSnapshotIndex)) return;
    // A leader may have applied entries its own write has not covered yet (takeDurableCommitted): the
    // snapshot waits for a loop turn whose write covers what it would compact.
    if (this.appliedIndex > this.raft.status().durableIndex) return;
    const index = this.appliedIndex;
    this.snapshotPolicy.started();
    if (this.opts.fsm.beginSnapshot === undefined) {
      await this.saveSnapshot(index, this.opts.fsm.snapshot());
      return;
    }
    this.startSnapshotJob(index);
  }

  private async saveSnapshot(index: number, data: Uint8Array): Promise<void> {
    const snapshot = this.raft.compact(index, data);
    this.lastSnapshotIndex = Math.max(this.lastSnapshotIndex, index);
    this.snapshotPolicy.taken(data.length);
    if (snapshot === null) return; // a newer snapshot from the leader already covers it
    await this.opts.storage.compact(snapshot);
    this.logger.info({ nodeId: this.id, index, bytes: data.length }, 'snapshot taken, log compacted');
  }

  /**
   * With a stored state machine: every snapshotEvery applied entries, the store is synced (persist) and the
   * log compacted to catchUpEntries below what it then holds — never past it: entries whose effects the store
   * does not hold durably are the only copy of them. The log keeps no snapshot data; a follower behind its
   * start gets a snapshot made when it needs one (offerSnapshot), written in slices like any other.
   */
  private async maybeCompactBelowStore(stored: StoredStateMachine): Promise<void> {
    const job = this.snapshotJob;
    if (job !== null && job.done) {
      this.snapshotJob = null;
      const data = job.job.finish();
      if (this.raft.offerSnapshot(job.index, data)) {
        this.logger.info({ nodeId: this.id, index: job.index, bytes: data.length }, 'snapshot made for a follower behind the log');
      }
    }
    if (this.stream !== null && ![...this.raft.progressSnapshot().values()].some((pr) => pr.state === 'snapshot')) {
      // Nobody is being sent it: the store's view is released (it keeps old data on disk while open).
      await this.closeStream();
    }
    if (this.snapshotJob === null && !this.streamOpening && this.raft.takeSnapshotWanted()) this.offerSnapshotFromStore(stored);
    const persisted = this.persistedForCompaction;
    if (persisted !== null) {
      this.persistedForCompaction = null;
      const keep = this.opts.catchUpEntries ?? Math.floor(this.opts.snapshotEvery / 2);
      const index = Math.min(persisted, this.raft.status().durableIndex) - keep;
      const snapshot = index > this.lastSnapshotIndex ? this.raft.compact(index, new Uint8Array(0)) : null;
      if (snapshot !== null) {
        this.lastSnapshotIndex = index;
        await this.opts.storage.compact(snapshot);
        this.logger.info({ nodeId: this.id, index, storeIndex: persisted }, 'log compacted below the applied store');
      }
    }
    if (this.persisting || this.appliedIndex - this.persistStartedAt < this.opts.snapshotEvery) return;
    this.persisting = true;
    this.persistStartedAt = this.appliedIndex;
    stored.persist().then(
      (index) => {
        this.persisting = false;
        this.persistedForCompaction = index;
        this.schedule();
      },
      (err: unknown) => {
        this.persisting = false;
        this.failed(err);
      },
    );
  }

  /** A follower is behind the log's start: the store's state is offered as a stream (its point is what the
   *  store holds, after the write-behind flushed), or — when the store cannot stream it to every member
   *  (the cluster level) or has no stream — a whole snapshot is written in slices. */
  private offerSnapshotFromStore(stored: StoredStateMachine): void {
    if (stored.openStream === undefined) {
      this.startSnapshotJob(this.appliedIndex);
      return;
    }
    this.streamOpening = true;
    void (async () => {
      try {
        const stream = await stored.openStream!(this.chunkBytes);
        if (stream === null) {
          if (!this.stopped) this.startSnapshotJob(this.appliedIndex);
          return;
        }
        const current = this.stream;
        if (current !== null && current.meta.index === stream.meta.index && current.meta.term === stream.meta.term) {
          // The store has not moved since: the stream being sent goes on (followers keep their offsets).
          await stream.close();
          if (!this.stopped && this.soft.role === 'leader' && !this.raft.offerStream(current.meta)) await this.closeStream();
          return;
        }
        await this.closeStream();
        if (this.stopped || this.soft.role !== 'leader' || !this.raft.offerStream(stream.meta)) {
          await stream.close();
          return;
        }
        this.stream = stream;
        this.raft.takeSnapshotWanted(); // asked for while this one was being opened: it answers that too
        this.logger.info({ nodeId: this.id, index: stream.meta.index }, 'snapshot stream opened for a follower behind the log');
      } catch (err) {
        this.failed(err);
      } finally {
        this.streamOpening = false;
        if (!this.stopped) this.schedule();
      }
    })();
  }

  private async closeStream(): Promise<void> {
    const stream = this.stream;
    if (stream === null) return;
    this.stream = null;
    this.chunksReading.clear();
    if (!this.stopped) this.raft.withdrawOffer();
    await stream.close();
  }

  /** Writes a snapshot of the state at `index` (the applied index now) in slices between loop turns; the loop
   *  takes it once done (maybeSnapshot saves it, maybeCompactBelowStore offers it). */
  private startSnapshotJob(index: number): void {
    const fsm = this.opts.fsm;
    const job = {
      job: fsm.beginSnapshot?.(this.snapshotPolicy.lastBytes) ?? finishedJob(fsm.snapshot()),
      index,
      done: false,
    };
    this.snapshotJob = job;
    const slice = () => {
      if (this.snapshotJob !== job) return; // cancelled
      if (!job.job.step()) {
        this.env.scheduler.soon(slice);
        return;
      }
      job.done = true;
      this.schedule(); // the loop takes it
    };
    this.env.scheduler.soon(slice);
  }

  private cancelSnapshotJob(): void {
    this.snapshotJob?.job.cancel();
    this.snapshotJob = null;
  }

  /** A promise settled through the callbacks `register` stores, or rejected by `onTimeout` after
   *  `timeoutMs` (which returns the error, or null when the entry was already settled). Settling
   *  cancels the timer. */
  private withDeadline<T>(
    timeoutMs: number,
    onTimeout: () => Error | null,
    register: (settle: { resolve(v: T): void; reject(e: Error): void }) => void,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.env.scheduler.after(timeoutMs, () => {
        const err = onTimeout();
        if (err) reject(err);
      });
      register({
        resolve: (v) => {
          timer.cancel();
          resolve(v);
        },
        reject: (e) => {
          timer.cancel();
          reject(e);
        },
      });
    });
  }
}

/** The trace stage of a message from a peer (trace/stages.ts): appends with entries and heartbeats
 *  (empty appends: a tick's or a ReadIndex round's) and their answers. */
function markReceived(m: Message): void {
  if (m.type === 'AppendEntries') mark(m.entries.length > 0 ? 'peer.recv.append' : 'peer.recv.heartbeat');
  else if (m.type === 'AppendEntriesResponse') mark('peer.recv.ack');
}

/** A snapshot made in one piece, as a job (a state machine without beginSnapshot). */
function finishedJob(data: Uint8Array): SnapshotJob {
  return { step: () => true, finish: () => data, cancel: () => {} };
}
