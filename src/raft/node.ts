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
// Its parts, by job: node-options.ts (the core slice it drives, its options), node-calls.ts (proposals and
// reads waiting, with their deadlines), node-health.ts (whom it heard from; the policy serving()),
// node-notices.ts (the leader's commit notices held back), node-snapshots.ts (snapshot scheduling and
// compaction, the stream a follower behind the log is sent).
import { EventEmitter } from 'node:events';
import { Raft, defaultRaftConfig } from './core/raft.js';
import type { ConfChange, ConfState, Entry, Message, NodeId, RaftConfig, SoftState, Status } from './core/types.js';
import { bootstrapSnapshot, emptyHardState } from './core/types.js';
import type { ProgressView } from './core/progress.js';
import { realEnv, type NodeEnv, type TimerHandle } from './env.js';
import { ConfChangeRefusedError, NodeStoppedError, NotLeaderError } from './errors.js';
import { StoredStartError, holdsData, startFromStore } from './stored-start.js';
import { silentNodeLogger, type NodeLogger } from './logger.js';
import type { CoreFactory, RaftCore, RaftNodeOptions } from './node-options.js';
import { NodeCalls } from './node-calls.js';
import { PeerContact, servingOf } from './node-health.js';
import { CommitNotices } from './node-notices.js';
import { NodeSnapshots, type SnapshotHost } from './node-snapshots.js';
import { mark } from '../trace/stages.js';

export type { CoreFactory, RaftCore, RaftNodeOptions } from './node-options.js';

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
  private readonly calls: NodeCalls<R>;
  private readSeq = 0;
  private appliedIndex = 0;
  private snapshots!: NodeSnapshots<R>;
  private soft: SoftState = { role: 'follower', leaderId: null, term: 0 };
  /** The loop is waiting on a write whose Ready changes neither role nor snapshot: entries that commit
   *  meanwhile and are already durable here may be applied from receive(), without waiting for it. */
  private applyWhileWriting = false;
  /** The loop is waiting on a write in flight: messages that promise nothing it would make durable leave
   *  at once, from whatever input made them (schedule(), Raft.takeMessagesNotWaitingForDisk). */
  private writing = false;
  private conf: ConfState | null = null;
  private readonly notices: CommitNotices;
  private readonly contact = new PeerContact();

  private constructor(opts: RaftNodeOptions<R>) {
    super();
    this.opts = opts;
    this.id = opts.id;
    this.env = opts.env ?? realEnv();
    this.logger = opts.logger ?? silentNodeLogger;
    this.calls = new NodeCalls<R>(this.env.scheduler);
    this.notices = new CommitNotices({
      scheduler: this.env.scheduler,
      stopped: () => this.stopped,
      leading: () => this.soft.role === 'leader',
      send: (messages) => this.opts.transport.send(messages),
    });
  }

  static async start<R>(opts: RaftNodeOptions<R>): Promise<RaftNode<R>> {
    const node = new RaftNode(opts);
    await node.init();
    return node;
  }

  private async init(): Promise<void> {
    // How long the log's load and the store's restore took (the restart's phases, in the log line below).
    const startedMs = this.env.nowMs();
    let restored = await this.opts.storage.load();
    const logLoadedMs = this.env.nowMs();
    const stored = this.opts.fsm.stored;
    // A stored state machine restores itself from its store; its point is where the log is replayed from.
    const point = stored === undefined ? null : await stored.open();
    const storeLoadedMs = this.env.nowMs();
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
      if (start.confDisagrees === true) {
        this.logger.warn(
          { nodeId: this.id, index: point.index, term: point.term },
          'the log holds another configuration than the applied store at the store point: no entries below the point are kept',
        );
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
    // A stored state machine restarted with the log's catch-up tail: applied at the store's point, above the
    // log's snapshot (stored-start.ts).
    this.appliedIndex = restored.appliedIndex ?? restored.snapshot.meta.index;
    const rng = this.env.rng;
    const cfg: RaftConfig = { ...defaultRaftConfig(this.id, rng), ...this.opts.raft, id: this.id, rng };
    // A store that takes a snapshot's chunks as they come: the core hands them out instead of collecting them.
    if (stored?.receiveChunk !== undefined && stored.installReceived !== undefined && stored.discardReceived !== undefined)
      cfg.snapshotChunksToDriver = true;
    this.snapshots = new NodeSnapshots<R>(
      this.snapshotHost(),
      this.opts,
      this.env.scheduler,
      this.logger,
      { index: restored.snapshot.meta.index, bytes: restored.snapshot.data.length },
      cfg.snapshotChunkBytes,
    );
    this.raft = (this.opts.core ?? realCore)(cfg, restored);
    this.soft = { role: 'follower', leaderId: null, term: restored.hardState.term };
    this.logger.info(
      {
        nodeId: this.id,
        term: restored.hardState.term,
        snapshotIndex: restored.snapshot.meta.index,
        appliedIndex: this.appliedIndex,
        entries: restored.entries.length,
        logLoadMs: Math.round(logLoadedMs - startedMs),
        storeLoadMs: Math.round(storeLoadedMs - logLoadedMs),
      },
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
    this.contact.heard(m.from, this.env.nowMs());
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
    return this.contact.everHeard(id);
  }

  /** Did a message from `id` arrive within the last `windowMs`? */
  heardWithin(id: NodeId, windowMs: number): boolean {
    return this.contact.heardWithin(id, this.env.nowMs(), windowMs);
  }

  /** Can this node serve lock calls now (SPEC "Health"; node-health.ts)? */
  serving(windowMs: number): { serving: boolean; reason: string } {
    if (this.stopped) return { serving: false, reason: 'shutting down' };
    const now = this.env.nowMs();
    return servingOf(this.id, this.soft, this.conf, (id) => this.contact.heardWithin(id, now, windowMs));
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
    return this.calls.awaitApplied(index, term, timeoutMs);
  }

  /** Propose one membership change (core/conf.ts); resolves once the configuration entry is applied
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
    return this.calls.awaitRead(ctx, timeoutMs);
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
    this.notices.stop();
    this.snapshots.cancelJob();
    await this.loopDone;
    await this.snapshots.closeStream();
    this.calls.failAll(new NodeStoppedError());
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
      while (!this.stopped && (this.raft.hasReady() || this.snapshots.jobDone)) {
        if (!this.raft.hasReady()) {
          await this.snapshots.maybeSnapshot(); // only a finished sliced snapshot to save
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
        let later = this.notices.hold(rd.messages);
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
        let snapshotToLog = rd.snapshot;
        if (rd.snapshot && stored !== undefined) {
          // The store takes the snapshot first, durably: a crash after this and before the log records it
          // restarts from the store (ahead of the log: stored-start.ts); the other order would leave a log
          // that starts after a state nobody holds. The log then keeps only the snapshot's metadata.
          this.snapshots.cancelJob();
          if (stored.installReceived !== undefined && stored.receiveChunk !== undefined) {
            // Its chunks are in the store already, verified whole (an earlier Ready's): swapped in, the
            // machine restored.
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
        if (rd.snapshotChunks.length > 0) {
          // Snapshot chunks go where the snapshot goes (a new generation of the store) before this Ready's
          // answers acknowledge them: the leader sends the next chunk only once this one is written. After
          // the snapshot above: chunks beside a snapshot to install are of a later one.
          later = await this.snapshots.receiveChunks(rd.snapshotChunks, later);
          if (this.stopped) return;
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
          this.snapshots.cancelJob(); // of the state being replaced
          this.snapshots.policy.taken(rd.snapshot.data.length);
          if (stored === undefined) this.opts.fsm.restore(rd.snapshot.data);
          this.appliedIndex = rd.snapshot.meta.index;
          this.snapshots.lastIndex = rd.snapshot.meta.index;
          this.logger.info(
            { nodeId: this.id, index: rd.snapshot.meta.index, bytes: rd.snapshot.data.length },
            'installed snapshot from leader',
          );
          this.calls.dropProposalsUpTo(rd.snapshot.meta.index);
        }
        for (const e of committed) this.applyEntry(e);
        for (const rs of rd.readStates) this.calls.readConfirmed(rs.ctx, rs.index);
        for (const rf of rd.readFailures) {
          this.calls.readFailed(
            rf.ctx,
            new NotLeaderError(
              this.soft.leaderId,
              rf.reason === 'no-leader' ? 'no leader to confirm the read' : 'the leader could not confirm the read',
            ),
          );
        }
        this.raft.advance(rd);
        if (rd.snapshot && stored !== undefined) this.raft.dropSnapshotData();
        this.releaseReads();
        await this.snapshots.maybeSnapshot();
      }
    } catch (err) {
      // A storage failure means we can no longer promise durability; an entry we cannot read, that we
      // would diverge: stop rather than lie.
      this.failed(err);
    } finally {
      this.running = false;
    }
    if (!this.stopped && (this.raft.hasReady() || this.snapshots.jobDone)) this.schedule();
  }

  /** While a write is in flight: a leader's appends and heartbeats, and a follower's answers that claim
   *  only what is on disk, leave now instead of after the write (Raft.takeMessagesNotWaitingForDisk). */
  private sendWhatNeedNotWait(): void {
    const messages = this.raft.takeMessagesNotWaitingForDisk();
    if (messages.length === 0) return;
    const now = this.notices.hold(messages);
    if (now.length === 0) return;
    mark('loop.send-early');
    this.sendNow(now);
  }

  /** Sends `messages`; an append to a follower replaces the notice held for it (it carries the commit index). */
  private sendNow(messages: Message[]): void {
    this.notices.sending(messages);
    if (messages.some((m) => m.type === 'InstallSnapshot' && m.streamed === true)) {
      const rest: Message[] = [];
      for (const m of messages) {
        if (m.type === 'InstallSnapshot' && m.streamed === true) this.snapshots.sendChunk(m);
        else rest.push(m);
      }
      messages = rest;
    }
    this.opts.transport.send(messages);
  }

  private applyEntry(e: Entry): void {
    // Every committed entry goes to the machine: noop/config entries still move its applied index.
    if (e.data.length > 0) mark('loop.apply');
    const result = this.opts.fsm.apply(e);
    this.appliedIndex = e.index;
    this.snapshots.policy.noteApplied(e.data.length);
    this.calls.applied(e, result);
    this.emit('applied', e, result);
  }

  private releaseReads(): void {
    this.calls.releaseReads(this.appliedIndex);
  }

  private onSoftState(ss: SoftState): void {
    const prev = this.soft;
    this.soft = ss;
    if (prev.role !== ss.role || prev.term !== ss.term || prev.leaderId !== ss.leaderId) {
      this.logger.info({ nodeId: this.id, role: ss.role, term: ss.term, leaderId: ss.leaderId }, 'raft role/term changed');
      this.emit('softState', ss, prev);
    }
    if (prev.role === 'leader' && ss.role !== 'leader') {
      void this.snapshots.closeStream();
      this.calls.leadershipLost(ss.leaderId);
    }
  }

  /** What the snapshot scheduling (node-snapshots.ts) reads of this node. */
  private snapshotHost(): SnapshotHost {
    const node = this;
    return {
      id: this.id,
      get raft() {
        return node.raft;
      },
      get appliedIndex() {
        return node.appliedIndex;
      },
      get stopped() {
        return node.stopped;
      },
      leading: () => this.soft.role === 'leader',
      schedule: () => this.schedule(),
      failed: (err) => this.failed(err),
    };
  }
}

/** The trace stage of a message from a peer (trace/stages.ts): appends with entries and heartbeats
 *  (empty appends: a tick's or a ReadIndex round's) and their answers. */
function markReceived(m: Message): void {
  if (m.type === 'AppendEntries') mark(m.entries.length > 0 ? 'peer.recv.append' : 'peer.recv.heartbeat');
  else if (m.type === 'AppendEntriesResponse') mark('peer.recv.ack');
}
