// One incarnation of a simulated node's I/O, handed to the REAL driver (src/raft/node.ts): its scheduler
// (virtual time), its storage (the WAL store that ships, over the node's simulated disk: sim-disk.ts), its
// peer transport (the simulated network) and its state machine. No loop of its own — the driver's loop
// runs; this file only carries its effects into the simulation and checks each one as it happens:
// persist-before-speak on every message sent, a restart's recovery against the durable log, apply order
// and content on every applied entry, snapshot and compaction rules (the log invariants run as the disk
// makes writes durable: durable-checks.ts). After a crash the incarnation is dead: its timers never fire,
// its disk operations never complete, its messages and answers go nowhere.
import type { Entry, Message, RestoredState, Snapshot, SnapshotChunk, SnapshotMeta } from '../../src/raft/core/types.js';
import type { Scheduler, TimerHandle } from '../../src/raft/env.js';
import type { SnapshotJob, StateMachine, StoredStateMachine } from '../../src/raft/fsm.js';
import type { AppliedPoint } from '../../src/state/applied-store.js';
import type { SimStateDb } from './state-db.js';
import { isRecordStream } from '../../src/state/snapshot-stream.js';
import { SimRng } from './rng.js';
import type { PersistBatch, RaftStorage } from '../../src/raft/storage/types.js';
import type { WalLoadReport } from '../../src/raft/storage/wal-storage.js';
import type { PeerSender } from '../../src/raft/peer-sender.js';
import type { SimCluster } from './cluster.js';
import { recoveryMismatch } from './durable-checks.js';
import { entryHash } from './machine.js';
import { durableOnQuorum } from './node-checks.js';
import type { SimNode } from './node.js';
import type { DiskClock } from './sim-disk.js';

export interface Cancellable {
  cancelled: boolean;
}

export class NodeIO implements Scheduler, RaftStorage, PeerSender, StateMachine<unknown> {
  private readonly inc: number;
  private booted = false;
  /** The store that ships (or SimOptions.storage), opened by load() over the node's disk. */
  private wal: (RaftStorage & { readonly loadReport: WalLoadReport }) | null = null;
  /** A mid-persist crash arm waiting for the save's write to start (why), or null. */
  private crashInSync: string | null = null;

  constructor(
    private readonly sim: SimCluster,
    private readonly node: SimNode,
  ) {
    this.inc = node.incarnation;
  }

  /** This incarnation is the node's current one and the node is up. */
  get alive(): boolean {
    return this.node.up && this.node.incarnation === this.inc;
  }

  // ------------------------------------------------------------------ Scheduler (virtual time)

  soon(fn: () => void): void {
    this.sim.schedule(0, { kind: 'call', node: this.node.idx, inc: this.inc, fn, handle: { cancelled: false } });
  }

  after(delayMs: number, fn: () => void): TimerHandle {
    const handle: Cancellable = { cancelled: false };
    this.sim.schedule(delayMs, { kind: 'call', node: this.node.idx, inc: this.inc, fn, handle });
    return { cancel: () => (handle.cancelled = true) };
  }

  /** A periodic timer (the driver's ticker, the lock service's housekeeping). It runs at the NODE's rate:
   *  the 'clock' fault changes node.tickMs, and a node whose clock runs slow ticks slowly. */
  every(intervalMs: number, fn: () => void): TimerHandle {
    const handle: Cancellable = { cancelled: false };
    const rate = this.node.tickMs / this.node.baseTickMs;
    this.sim.schedule(intervalMs * rate * this.sim.netRng.float(), {
      kind: 'tick',
      node: this.node.idx,
      inc: this.inc,
      fn,
      handle,
      intervalMs,
    });
    return { cancel: () => (handle.cancelled = true) };
  }

  // ------------------------------------------------------------------ RaftStorage (the real WAL store)

  /** Opens the store that ships over the node's simulated disk and loads it — a restart recovers by the
   *  store's own open and load — and checks it loaded exactly what the disk holds durably. */
  async load(): Promise<RestoredState | null> {
    const node = this.node;
    let loaded: RestoredState | null;
    try {
      const files = node.disk.open(this.diskClock());
      const wal = await this.sim.storage.WalStorage.open(node.disk.root, {
        files,
        levelDb: false,
        segmentBytes: this.sim.profile.walSegmentBytes,
      });
      this.wal = wal;
      loaded = await wal.load();
    } catch (err) {
      if (!this.alive) return new Promise(() => {});
      this.sim.fail('storage-recovery', node, `its store refused the disk its last crash left: ${(err as Error)?.message ?? String(err)}`);
    }
    if (!this.alive) return new Promise(() => {});
    this.sim.stats.recoveries++;
    const report = this.wal!.loadReport;
    if (report.truncatedBecause !== null) this.sim.trace.add(this.sim.now, node.id, 'recovered', `cut ${report.truncatedBecause}`);
    this.sim.check(recoveryMismatch(node.durable.image, loaded), 'storage-recovery', node);
    return loaded;
  }

  /** The disk's view of this incarnation: its time, its liveness, and the mid-persist crash arm. */
  private diskClock(): DiskClock {
    const sim = this.sim;
    const node = this.node;
    return {
      alive: () => this.alive,
      after: (ms, fn) => sim.schedule(ms, { kind: 'call', node: node.idx, inc: this.inc, fn, handle: { cancelled: false } }),
      syncLatencyMs: () => sim.profile.diskMinMs + sim.diskRng.float() * (sim.profile.diskMaxMs - sim.profile.diskMinMs),
      syncStarted: (ms) => {
        const why = this.crashInSync;
        if (why === null) return;
        // Crash while the write is on its way to the disk: the crash decides what of it survives.
        this.crashInSync = null;
        sim.schedule(ms * 0.9 * sim.diskRng.float(), { kind: 'crash', node: node.idx, inc: this.inc, why });
        sim.stats.armedCrashes++;
      },
    };
  }

  save(batch: PersistBatch): Promise<void> {
    const node = this.node;
    if (!this.alive) return new Promise(() => {}); // a dead incarnation's write never completes
    if (node.inflight !== null) this.sim.fail('driver-serial-writes', node, 'a second write was started while one is in flight');
    node.inflight = batch;
    // Stored entries are immutable; a core that mutates an entry after handing it out throws.
    for (const e of batch.entries) Object.freeze(e);
    if (node.arm && node.arm.point === 'mid-persist' && this.armMatches(batch)) {
      this.crashInSync = `armed: mid-persist of ${node.arm.filter}`;
      node.arm = null;
    }
    return this.wal!.save(batch).then(() => {
      if (!this.alive) return new Promise<void>(() => {});
      node.inflight = null;
      this.crashInSync = null; // a batch that wrote nothing (commit-only) had nothing to crash in
      this.sim.stats.persists++;
      this.sim.trace.add(this.sim.now, node.id, 'persisted', batch);
      node.lastPersisted = batch;
      if (node.arm && node.arm.point === 'after-persist' && this.armMatches(batch)) {
        this.sim.stats.armedCrashes++;
        this.sim.crash(node.idx, `armed: after persisting ${node.arm.filter}, before send`);
        return new Promise<void>(() => {});
      }
      return undefined;
    });
  }

  compact(snap: Snapshot): Promise<void> {
    const node = this.node;
    if (!this.alive) return new Promise(() => {});
    if (node.inflight !== null) this.sim.fail('driver-serial-writes', node, 'compaction started while a write is in flight');
    if (snap.meta.index > node.applied)
      this.sim.fail('compact', node, `storage asked to keep a snapshot at ${snap.meta.index}, above the applied index ${node.applied}`);
    const landed = this.storeLanded();
    if (landed !== undefined) {
      // A stored state machine: the log keeps no data, and must never drop entries whose effects the applied
      // store has not landed (they would be nobody's any more after a crash).
      if (snap.data.length > 0) this.sim.fail('compact', node, `a snapshot with data at ${snap.meta.index}: the store is the snapshot`);
      if (landed === null || snap.meta.index > landed.index)
        this.sim.fail(
          'compact',
          node,
          `the log is compacted to ${snap.meta.index}, past what the applied store holds (${landed?.index ?? 'nothing'})`,
        );
    } else {
      // A snapshot may be of an earlier index than the one applied now (written in slices while entries
      // kept applying), but its bytes must be exactly the state at its index: restored on a scratch
      // machine, they must give the digest the replicas had there.
      const probe = this.sim.workload.createStateMachine();
      probe.restore(snap.data);
      this.sim.check(this.sim.facts.noteDigest(node.id, snap.meta.index, probe.digest()), 'replica-digest', node);
    }
    const committedTerm = this.sim.facts.committedTermAt(snap.meta.index);
    if (committedTerm !== undefined && snap.meta.term !== committedTerm) {
      this.sim.fail(
        'compact',
        node,
        `snapshot at ${snap.meta.index} has term ${snap.meta.term}, committed entry has term ${committedTerm}`,
      );
    }
    this.sim.stats.compactions++;
    this.sim.trace.add(this.sim.now, node.id, 'compact', `${snap.meta.index}/t${snap.meta.term} ${snap.data.length}B`);
    return this.wal!.compact(snap).then(() => (this.alive ? undefined : new Promise<void>(() => {})));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private armMatches(batch: PersistBatch): boolean {
    const arm = this.node.arm!;
    if (arm.filter === 'any') return true;
    if (arm.filter === 'entries') return batch.entries.length > 0;
    const hs = batch.hardState;
    const d = this.node.durable.hardState;
    return hs !== null && hs.votedFor !== null && (hs.term !== d.term || hs.votedFor !== d.votedFor);
  }

  // ------------------------------------------------------------------ PeerSender (the network)

  send(messages: Message[]): void {
    const node = this.node;
    if (!this.alive) return;
    for (const m of messages) {
      this.checkSpeech(m);
      this.checkRestartAsked(m);
      this.sim.send(node.idx, m);
    }
    const last = node.lastPersisted;
    if (node.arm && node.arm.point === 'after-send' && messages.length > 0 && last !== null && this.armMatches(last)) {
      this.sim.stats.armedCrashes++;
      this.sim.crash(node.idx, `armed: after sending (${node.arm.filter}), before apply`);
    }
  }

  /**
   * After its store refused snapshot S, the follower has forgotten S: until it takes S (or any snapshot)
   * from offset 0 again, every refusal it answers a chunk of S with asks for offset 0. One asking for a
   * later offset waits for a chunk the leader will not send (it restarts S from 0), and the follower stays
   * behind — a stall the sim's churn (a newer snapshot offered at the next compaction) would otherwise hide.
   */
  private checkRestartAsked(m: Message): void {
    const refused = this.refusedSnapshot;
    if (refused === null || m.type !== 'InstallSnapshotResponse' || m.snapshotIndex !== refused) return;
    if (!m.success && !m.done && m.nextOffset !== 0)
      this.sim.fail(
        'snapshot-stream',
        this.node,
        `refused snapshot ${refused}, then asks the leader for it from offset ${m.nextOffset}, not from 0`,
      );
  }

  /** Persist before you speak (Raft Figure 2): every message must be backed by durable state — checked
   *  at the moment the driver hands it to the network. */
  private checkSpeech(m: Message): void {
    const node = this.node;
    const sim = this.sim;
    const hs = node.durable.hardState;
    const prospective = (m.type === 'RequestVote' || m.type === 'RequestVoteResponse') && m.preVote;
    if (!prospective && m.term > hs.term) {
      sim.fail('persist-before-speak', node, `sends ${m.type} in term ${m.term} while its durable term is ${hs.term}`);
    }
    if (m.type === 'RequestVoteResponse' && m.granted && !m.preVote) {
      // Safe when the durable state records this vote, or has moved past that term altogether (the
      // grant and a newer term can land in one atomic write): either way it can never vote again in it.
      if (hs.term === m.term && hs.votedFor !== m.to) {
        sim.fail(
          'persist-before-speak',
          node,
          `grants its term-${m.term} vote to ${m.to} but durably voted ${hs.votedFor ?? 'nobody'} in term ${hs.term}`,
        );
      }
      if (hs.term < m.term)
        sim.fail(
          'persist-before-speak',
          node,
          `grants its term-${m.term} vote to ${m.to} before that term is durable (durable term ${hs.term})`,
        );
      sim.check(sim.facts.noteVote(node.id, m.term, m.to), 'one-vote-per-term', node);
    }
    // Within the ack's term the node's log only grows past what that leader sent, so the durable log
    // must cover the ack. (An ack queued in an older term may leave after a newer leader legitimately
    // truncated those entries: they were durable when acknowledged, and the old term's leader is the
    // only one that can count the ack.)
    if (m.type === 'AppendEntriesResponse' && m.success && m.term === hs.term && m.matchIndex > node.durable.lastIndex()) {
      sim.fail('persist-before-speak', node, `acknowledges entries up to ${m.matchIndex} but only ${node.durable.lastIndex()} are durable`);
    }
  }

  // ------------------------------------------------------------------ StateMachine (apply, restore)

  apply(e: Entry): unknown {
    const node = this.node;
    const sim = this.sim;
    if (!this.alive) return undefined;
    const d = node.durable;
    if (e.index !== node.applied + 1) sim.fail('apply-order', node, `applied ${node.applied} then got entry ${e.index}/t${e.term}`);
    // Applied entries are in the node's own durable log — or, on a leader (thesis §10.2.1: it may apply
    // before its own write ends), durable on a quorum of voters.
    if (e.index > d.lastIndex() || (e.index > d.snapIndex && d.term(e.index) !== e.term)) {
      const leaderOnQuorum = node.raft.status().role === 'leader' && durableOnQuorum(sim, node, e.index, e.term);
      if (!leaderOnQuorum) {
        sim.fail(
          'persist-before-apply',
          node,
          `applying ${e.index}/t${e.term} which is not in the durable log (durable last ${d.lastIndex()}, term there ${d.term(e.index)})${node.raft.status().role === 'leader' ? ' nor durable on a quorum of voters' : ''}`,
        );
      }
    }
    const hash = entryHash(e);
    // The leader of this node's term, if it is still up in that term: every entry this node applies
    // must be in that leader's log exactly (it told us the entry is committed, so a quorum holds it,
    // and a leader never rewrites its own log within its term).
    const leader = this.leaderOfMyTerm();
    if (leader !== null) {
      const le = leader.durable.entry(e.index);
      if (le !== undefined && (le.term !== e.term || entryHash(le) !== hash)) {
        sim.fail(
          'apply-matches-leader',
          node,
          `applies ${e.index}/t${e.term}, but its leader ${leader.id} holds ${e.index}/t${le.term}${le.term === e.term ? ' with different data' : ''} — committed beyond what it shares with the leader`,
        );
      }
    }
    sim.check(sim.facts.noteApplied(node.id, e, hash), 'state-machine-safety', node);
    const result = node.sm.apply(e);
    node.applied = e.index;
    sim.check(sim.facts.noteDigest(node.id, e.index, node.sm.digest()), 'replica-digest', node);
    const wl = sim.workload;
    if (wl.checkApply) sim.check(wl.checkApply(node.id, e, result, node.sm), 'workload-apply', node);
    return result;
  }

  private leaderOfMyTerm(): SimNode | null {
    const sim = this.sim;
    const term = this.node.raft.status().term;
    const lid = sim.facts.leaderOfTerm.get(term);
    if (lid === undefined) return null;
    const l = sim.nodes[sim.indexOf(lid)]!;
    return l !== this.node && l.up && l.raft.status().term === term ? l : null;
  }

  snapshot(): Uint8Array {
    return this.node.sm.snapshot();
  }

  /** Always offered, so the driver's sliced path runs in every simulation: the machine's own sliced
   *  writer when it has one (the lock machine), else snapshot() handed over as a one-slice job. */
  beginSnapshot(sizeHint: number): SnapshotJob {
    const sm = this.node.sm;
    if (sm.beginSnapshot !== undefined) return sm.beginSnapshot(sizeHint);
    const data = sm.snapshot();
    return { step: () => true, finish: () => data, cancel: () => {} };
  }

  /** The snapshot being received is a record stream (not the whole-state encoding of a lower level). */
  private receivingRecords = false;

  /** The index of the snapshot this node's store last refused, until it takes a chunk at offset 0 again. */
  private refusedSnapshot: number | null = null;
  /** The stream being received was corrupted here (how), or null: it must be refused, never installed. */
  private corruptedStream: string | null = null;
  /** A stream was refused since this incarnation last installed one. */
  private refusedSinceInstall = false;
  private corruptRngValue: SimRng | null = null;
  private get corruptRng(): SimRng {
    this.corruptRngValue ??= SimRng.derive(this.sim.seed, `stream-corrupt:${this.node.id}:${this.inc}`);
    return this.corruptRngValue;
  }

  /**
   * The fault arm of a corrupt record stream (faults phase only): a chunk as it reaches the store with one
   * byte flipped — as a bad link or a bad buffer would hand it over after the core took it. A quarter of
   * the streams get one; which chunk and which byte are seeded: the last byte of a chunk (a record value's,
   * or the last chunk's checksum: refused at the last chunk, the whole stream written) or any byte past the
   * magic (a length or the trailer: often refused mid-stream, as it does not decode). The store must refuse
   * the stream — the follower keeps its state and log, the leader sends it again — and never install it.
   */
  private maybeCorrupt(chunk: SnapshotChunk): SnapshotChunk {
    const sim = this.sim;
    if (sim.phase !== 'faults' || !this.receivingRecords || chunk.data.length < 5) return chunk;
    const rng = this.corruptRng;
    if (chunk.offset === 0) this.corruptArmed = rng.float() < 0.25;
    if (!this.corruptArmed || this.corruptedStream !== null) return chunk;
    if (!chunk.done && rng.float() >= 0.3) return chunk;
    const at = rng.float() < 0.5 ? chunk.data.length - 1 : 3 + rng.int(chunk.data.length - 3);
    const data = chunk.data.slice();
    data[at] = data[at]! ^ (1 << rng.int(8));
    this.corruptedStream = `byte ${at} of the chunk at ${chunk.offset}${chunk.done ? ', the last' : ''}`;
    sim.stats.streamsCorrupted++;
    return { ...chunk, data };
  }
  private corruptArmed = false;

  /** After a refused stream: the node's applied store holds no record of a generation but the one in force. */
  private async checkNoIncoming(chunk: SnapshotChunk): Promise<void> {
    const wl = this.sim.workload as { stateDbOf?: (node: SimNode) => SimStateDb };
    if (wl.stateDbOf === undefined) return;
    const stray = await wl.stateDbOf(this.node).strayGenerations();
    if (stray.length > 0)
      this.sim.fail(
        'snapshot-stream',
        this.node,
        `snapshot ${chunk.meta.index} refused, but records of generation(s) ${stray.join(', ')} are left in the store`,
      );
  }

  /** The store's own choices (when to crash after an install), apart from the disk's and the network's. */
  private storeRngValue: SimRng | null = null;
  private get storeRng(): SimRng {
    this.storeRngValue ??= SimRng.derive(this.sim.seed, `store-install:${this.node.id}:${this.inc}`);
    return this.storeRngValue;
  }

  /** The point the node's applied store has landed (null: none yet); undefined when the node keeps no store. */
  private storeLanded(): AppliedPoint | null | undefined {
    const wl = this.sim.workload as { stateDbOf?: (node: SimNode) => SimStateDb };
    if (this.stored === undefined || wl.stateDbOf === undefined) return undefined;
    return wl.stateDbOf(this.node).landed;
  }

  /** The state machine's applied store (fsm.ts StoredStateMachine), with the checks of a restore: what it
   *  opens at and what it installs are committed points, at which every replica has the same digest. */
  get stored(): StoredStateMachine | undefined {
    const inner = this.node.sm.stored;
    if (inner === undefined) return undefined;
    const node = this.node;
    const sim = this.sim;
    const never = <T>() => new Promise<T>(() => {});
    const atPoint = (index: number, term: number) => {
      sim.check(sim.facts.noteSnapshotPoint(node.id, index, term), 'snapshot-restore', node);
      sim.check(sim.facts.noteDigest(node.id, index, node.sm.digest()), 'replica-digest', node);
    };
    return {
      open: async () => {
        const point = await inner.open();
        if (!this.alive) return never();
        this.booted = true;
        if (point !== null) {
          node.applied = point.index;
          sim.trace.add(sim.now, node.id, 'store-open', `${point.index}/t${point.term}`);
          if (point.index > 0) atPoint(point.index, point.term);
        }
        return point;
      },
      install: async (snapshot) => {
        const s = snapshot.meta;
        if (s.index < node.applied)
          sim.fail('applied-monotonic', node, `installing snapshot ${s.index}/t${s.term} would move applied back from ${node.applied}`);
        // The machine is replaced at once; the store is written after (LockFsm.install).
        const installed = inner.install(snapshot);
        node.applied = s.index;
        await installed;
        if (!this.alive) return never();
        // Now and then the crash lands between the store's swap and the log's record of the snapshot: the
        // restart finds the store ahead of its log (stored-start.ts), which nothing else makes often.
        if (s.index > 0 && sim.phase === 'faults' && this.storeRng.float() < 0.25) {
          sim.stats.armedCrashes++;
          sim.crash(node.idx, 'armed: after the store took a snapshot, before the log records it');
          sim.schedule(1 + this.storeRng.float() * 30, { kind: 'restart', node: node.idx, inc: node.incarnation });
          return never();
        }
        if (s.index > 0) {
          sim.stats.snapshotsInstalled++;
          sim.trace.add(sim.now, node.id, 'store-install', `${s.index}/t${s.term}`);
          atPoint(s.index, s.term);
        }
      },
      persist: async () => {
        const index = await inner.persist();
        return this.alive ? index : never<number>();
      },
      ...(inner.openStream === undefined
        ? {}
        : {
            openStream: async (chunkBytes: number) => {
              const stream = await inner.openStream!(chunkBytes);
              if (!this.alive) {
                await stream?.close();
                return never();
              }
              if (stream !== null) {
                // The stream holds exactly what the store had landed: a committed point, at or below the
                // leader's applied index.
                sim.check(sim.facts.noteSnapshotPoint(node.id, stream.meta.index, stream.meta.term), 'snapshot-restore', node);
                if (stream.meta.index > node.applied)
                  sim.fail('snapshot-stream', node, `a stream at ${stream.meta.index}, above the applied index ${node.applied}`);
                sim.stats.streamsOpened++;
                sim.trace.add(sim.now, node.id, 'stream-open', `${stream.meta.index}/t${stream.meta.term}`);
              }
              return stream;
            },
          }),
      ...(inner.receiveChunk === undefined
        ? {}
        : {
            receiveChunk: async (chunk: SnapshotChunk) => {
              if (chunk.offset === 0) {
                this.receivingRecords = isRecordStream(chunk.data);
                this.corruptedStream = null;
                this.refusedSnapshot = null;
              }
              const written = this.maybeCorrupt(chunk);
              const verdict = await inner.receiveChunk!(written);
              if (!this.alive) return never();
              sim.trace.add(
                sim.now,
                node.id,
                'stream-chunk',
                `${chunk.meta.index}/t${chunk.meta.term} @${chunk.offset} ${chunk.data.length}B${chunk.done ? ' last' : ''}` +
                  (written !== chunk ? ' CORRUPTED' : '') +
                  (verdict.ok ? '' : ` refused: ${verdict.reason}`),
              );
              if (!verdict.ok) {
                sim.stats.streamsRefused++;
                if (this.corruptedStream === null) sim.fail('snapshot-stream', node, `an intact stream chunk refused: ${verdict.reason}`);
                this.corruptedStream = null;
                this.refusedSinceInstall = true;
                this.refusedSnapshot = chunk.meta.index;
                // Refused: the store deleted what it had written of it (no disk growth from bad streams).
                await this.checkNoIncoming(chunk);
                if (!this.alive) return never();
              } else if (chunk.done && this.corruptedStream !== null) {
                sim.fail('snapshot-stream', node, `a corrupted stream (${this.corruptedStream}) verified at its last chunk`);
              }
              // Now and then the crash lands mid-stream, after a chunk is written and before it is
              // acknowledged: the restart must open the old generation whole (the half-written one is garbage).
              if (sim.phase === 'faults' && this.storeRng.float() < 0.1) {
                sim.stats.armedCrashes++;
                sim.stats.streamCrashes++;
                sim.crash(node.idx, `armed: mid-stream, after writing the chunk at ${chunk.offset} of snapshot ${chunk.meta.index}`);
                sim.schedule(1 + this.storeRng.float() * 30, { kind: 'restart', node: node.idx, inc: node.incarnation });
                return never();
              }
              return verdict;
            },
          }),
      ...(inner.discardReceived === undefined ? {} : { discardReceived: () => inner.discardReceived!() }),
      ...(inner.installReceived === undefined
        ? {}
        : {
            installReceived: async (meta: SnapshotMeta) => {
              if (meta.index < node.applied)
                sim.fail(
                  'applied-monotonic',
                  node,
                  `installing snapshot ${meta.index}/t${meta.term} would move applied back from ${node.applied}`,
                );
              await inner.installReceived!(meta);
              if (!this.alive) return never();
              node.applied = meta.index;
              if (meta.index > 0 && sim.phase === 'faults' && this.storeRng.float() < 0.25) {
                sim.stats.armedCrashes++;
                sim.crash(node.idx, 'armed: after the store swapped in a streamed snapshot, before the log records it');
                sim.schedule(1 + this.storeRng.float() * 30, { kind: 'restart', node: node.idx, inc: node.incarnation });
                return never();
              }
              if (meta.index > 0) {
                sim.stats.snapshotsInstalled++;
                if (this.receivingRecords) sim.stats.streamsInstalled++;
                if (this.receivingRecords && this.refusedSinceInstall) sim.stats.streamsInstalledAfterRefusal++;
                this.refusedSinceInstall = false;
                sim.trace.add(sim.now, node.id, 'stream-install', `${meta.index}/t${meta.term}`);
                atPoint(meta.index, meta.term);
              }
            },
          }),
    };
  }

  /** At boot: the durable snapshot. Later: a snapshot from the leader, which the driver must have
   *  persisted (in the write just completed) before it restores it. */
  restore(data: Uint8Array): void {
    const node = this.node;
    const sim = this.sim;
    if (!this.booted) {
      this.booted = true;
      const meta = node.durable.snapshot.meta;
      node.applied = meta.index;
      if (meta.index > 0) {
        node.sm.restore(data);
        sim.check(sim.facts.noteSnapshotPoint(node.id, meta.index, meta.term), 'snapshot-restore', node);
        sim.check(sim.facts.noteDigest(node.id, meta.index, node.sm.digest()), 'replica-digest', node);
      }
      return;
    }
    if (!this.alive) return;
    const persisted = node.lastPersisted?.snapshot ?? null;
    if (persisted === null || persisted.data !== data)
      sim.fail('persist-before-apply', node, 'restores a snapshot that its last completed write did not persist');
    const s = persisted!.meta;
    if (s.index < node.applied)
      sim.fail('applied-monotonic', node, `restoring snapshot ${s.index}/t${s.term} would move applied back from ${node.applied}`);
    node.sm.restore(data);
    node.applied = s.index;
    sim.stats.snapshotsInstalled++;
    sim.trace.add(sim.now, node.id, 'restore-snapshot', `${s.index}/t${s.term}`);
    sim.check(sim.facts.noteSnapshotPoint(node.id, s.index, s.term), 'snapshot-restore', node);
    sim.check(sim.facts.noteDigest(node.id, s.index, node.sm.digest()), 'replica-digest', node);
  }
}
