// A seeded discrete-event simulation of a cluster of REAL Raft nodes (TigerBeetle VOPR / FoundationDB
// style): each node is the production driver (src/raft/node.ts RaftNode: its run loop, its early
// AppendEntries send, its proposal/read bookkeeping and deadlines) and the real store (WalStorage) over a
// simulated disk (sim-disk.ts), network and time (io.ts). One seed drives everything random: tick jitter,
// network delay/loss/duplication/reordering, partitions, disk latency, crashes (losing or tearing what
// was not synced), restarts through the store's own recovery of the disk only, client traffic. Safety invariants are checked after every event; a violation throws a
// SimViolation carrying the seed and the tail of the trace, and `SEED=<n> npm run test:sim` replays it.
//
// The driver is asynchronous (it awaits its storage); after every event the simulator lets the promise
// continuations that event caused run to completion (a setImmediate turn: nothing in the simulation uses
// real timers), so each event's consequences happen at its virtual instant, in a deterministic order.
import { Raft, defaultRaftConfig } from '../../src/raft/core/raft.js';
import { bootstrapSnapshot, type ConfState, type Message, type NodeId } from '../../src/raft/core/types.js';
import { RaftNode } from '../../src/raft/node.js';
import { WalStorage } from '../../src/raft/storage/wal-storage.js';
import { ClientDriver, type Attempt } from './clients.js';
import { DurableLayoutError, DurableStore } from './durable.js';
import { checkDurableChange } from './durable-checks.js';
import { FaultInjector } from './faults.js';
import { GlobalFacts } from './invariants.js';
import { NodeIO, type Cancellable } from './io.js';
import { LivenessPhase } from './liveness.js';
import { MembershipNemesis } from './membership.js';
import { afterNodeEvent, committedRemovals, type EventCause } from './node-checks.js';
import { SimNode } from './node.js';
import { profileFor, type SimProfile } from './profile.js';
import { UnreachableReports } from './reports.js';
import { EventQueue, type Timed } from './queue.js';
import { describeNode, runSummary, violationReport } from './report.js';
import { SimRng } from './rng.js';
import { SimDisk } from './sim-disk.js';
import { termNotLearned } from './term-learned.js';
import { Trace } from './trace.js';
import {
  emptyStats,
  SimViolation,
  type CoreModule,
  type StorageModule,
  type ExtraInvariant,
  type SimOptions,
  type SimResult,
  type SimStats,
} from './types.js';
import { ValueWorkload, type SimWorkload } from './workload.js';

// The public surface of the simulator, in one import.
export * from './types.js';
export { SimNode } from './node.js';
export type { SimProfile } from './profile.js';
export type { Ack, HistoryEvent, ReadServe, SimWorkload } from './workload.js';
export type { SimStateMachine } from './machine.js';

export const defaultCore: CoreModule = { Raft, defaultRaftConfig };

type SimEvent = Timed &
  (
    | { kind: 'tick'; node: number; inc: number; fn: () => void; handle: Cancellable; intervalMs: number }
    | { kind: 'call'; node: number; inc: number; fn: () => void; handle: Cancellable }
    | { kind: 'deliver'; msg: Message; from: number; to: number; dup: boolean }
    | { kind: 'crash'; node: number; inc: number; why: string }
    | { kind: 'restart'; node: number; inc: number }
    | { kind: 'fault' }
    | { kind: 'heal'; epoch: number }
    | { kind: 'member' }
    | { kind: 'client'; client: number; token: number }
    | { kind: 'request'; node: number; attempt: Attempt }
    | { kind: 'response'; attempt: Attempt; outcome: 'ok' | 'redirect' | 'failed' | 'unknown'; hint: number; result: unknown }
    | { kind: 'check' }
    | { kind: 'later'; fn: () => void }
    | { kind: 'unreachable'; node: number; inc: number; peer: NodeId; real: boolean }
    | { kind: 'false-report' }
  );

/** Let every promise continuation queued so far run (setImmediate runs after the microtask queue). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class SimCluster {
  readonly seed: number;
  readonly profile: SimProfile;
  readonly workload: SimWorkload<any>;
  readonly nodes: SimNode[] = [];
  /** Every slot's id: the initial nodes, then (with membership) the spare ids nodes may join under. */
  readonly ids: NodeId[];
  /** The nodes of the bootstrap configuration. */
  readonly initialIds: NodeId[];
  /** The bootstrap configuration (what a joining node's empty configuration at index 0 stands for). */
  readonly bootConf: ConfState;
  private readonly idIndex = new Map<NodeId, number>();
  readonly facts = new GlobalFacts();
  readonly trace: Trace;
  readonly clients: ClientDriver;
  readonly faults: FaultInjector;
  readonly reports: UnreachableReports;
  readonly membership: MembershipNemesis | null;
  /** The first violation seen (kept: one thrown inside the driver's loop is caught there). */
  private pending: SimViolation | null = null;
  private readonly liveness: LivenessPhase;
  readonly netRng: SimRng;
  readonly diskRng: SimRng;
  private readonly queue = new EventQueue<SimEvent>();
  private readonly core: CoreModule;
  readonly storage: StorageModule;
  private readonly extra: ExtraInvariant[];
  private readonly traceLines: number;
  now = 0;
  phase: 'faults' | 'quiet' | 'done' = 'faults';
  /** blocked[from * n + to]: the link from -> to drops everything (partitions, one-way cuts). */
  readonly blocked: boolean[];
  loss: number;
  duplicate: number;
  spikeChance: number;
  /** A few old messages, kept to re-deliver much later (stale, duplicated AppendEntries & co). */
  readonly reservoir: Message[] = [];
  readonly stats: SimStats = emptyStats();

  private readonly opts: SimOptions;

  constructor(opts: SimOptions) {
    this.opts = opts;
    this.seed = opts.seed;
    this.profile = profileFor(opts.seed, opts.profile);
    this.workload = opts.workload ?? new ValueWorkload();
    this.core = opts.core ?? defaultCore;
    this.storage = opts.storage ?? { WalStorage };
    this.extra = opts.invariants ?? [];
    this.traceLines = opts.traceLines ?? 60;
    this.trace = new Trace(opts.fullTrace ? Infinity : Math.max(4 * this.traceLines, 240));
    this.netRng = SimRng.derive(opts.seed, 'network');
    this.diskRng = SimRng.derive(opts.seed, 'disk');
    const initial = this.profile.nodeCount;
    const n = initial + (opts.membership ? this.profile.spareNodes : 0);
    this.ids = Array.from({ length: n }, (_, i) => `n${i + 1}`);
    this.initialIds = this.ids.slice(0, initial);
    this.bootConf = bootstrapSnapshot(this.initialIds).meta.conf;
    this.blocked = new Array<boolean>(n * n).fill(false);
    this.loss = this.profile.loss;
    this.duplicate = this.profile.duplicate;
    this.spikeChance = this.profile.spikeChance;
    const nodeRng = SimRng.derive(opts.seed, 'nodes');
    for (let i = 0; i < n; i++) {
      const id = this.ids[i]!;
      this.idIndex.set(id, i);
      const tickMs = this.profile.tickMs * (0.85 + 0.3 * nodeRng.float());
      const skew = (nodeRng.float() * 2 - 1) * this.profile.clockSkewMs;
      // Every node starts on an empty disk and bootstraps through the real store (a joiner: join: true).
      const disk = new SimDisk(SimRng.derive(opts.seed, `disk-crash:${id}`), `/${id}`);
      const durable = new DurableStore(disk, disk.root);
      const node = new SimNode(i, id, disk, durable, SimRng.derive(opts.seed, `core:${id}`), tickMs, skew, n);
      disk.onDurable = (change) => {
        try {
          durable.follow(change);
        } catch (err) {
          if (err instanceof DurableLayoutError) this.fail('durable-layout', node, err.message);
          throw err;
        }
      };
      durable.onChange = (before, after) => checkDurableChange(this, node, before, after);
      if (i >= initial) {
        node.born = false;
        node.joiner = true;
      }
      this.nodes.push(node);
    }
    this.clients = new ClientDriver(this);
    this.faults = new FaultInjector(this);
    this.reports = new UnreachableReports(this);
    this.membership = opts.membership ? new MembershipNemesis(this) : null;
    this.liveness = new LivenessPhase(this);
  }

  // ------------------------------------------------------------------ scheduling

  schedule(delayMs: number, ev: DistributiveOmit<SimEvent, 'time' | 'seq'>): void {
    (ev as SimEvent).time = this.now + Math.max(0, delayMs);
    this.queue.push(ev as SimEvent);
  }

  indexOf(id: NodeId): number {
    const i = this.idIndex.get(id);
    return i === undefined ? -1 : i;
  }

  /** Start (or restart) node i from its durable store only: a new incarnation of the real driver. The
   *  node counts as up once the driver has loaded its state (within this event's continuations). */
  boot(i: number): void {
    const node = this.nodes[i]!;
    if (node.booting) return;
    node.booting = true;
    node.rn = null;
    node.inflight = null;
    node.lastPersisted = null;
    node.arm = null;
    node.leaderSince = -1;
    node.sm = this.workload.createStateMachine(node);
    node.applied = 0;
    const inc = node.incarnation;
    const io = new NodeIO(this, node);
    node.io = io;
    // Up for the I/O adapters while the driver loads (its restore must count), down for everyone else
    // until it is running.
    node.up = true;
    const started = RaftNode.start<unknown>({
      id: node.id,
      voters: node.joiner ? [] : this.initialIds,
      join: node.joiner,
      storage: io,
      transport: io,
      fsm: io,
      tickMs: node.baseTickMs,
      snapshotEvery: this.profile.snapshotEvery,
      raft: this.profile.raft,
      env: { nowMs: () => this.nodeNow(node), scheduler: io, rng: node.coreRng },
      core: (cfg, restored) => (node.raft = new this.core.Raft(cfg, restored) as typeof node.raft),
    });
    started.then(
      (rn) => {
        // A start that outlived its incarnation (crashed while loading) must not touch the next one.
        if (node.incarnation !== inc) return;
        node.booting = false;
        node.rn = rn;
        rn.on('softState', (ss: { role: string; term: number; leaderId: string | null }) => {
          if (node.incarnation !== inc) return;
          this.trace.add(this.now, node.id, 'soft', `${ss.role} t${ss.term} leader=${ss.leaderId ?? '-'}`);
          if (ss.role === 'leader') {
            this.leaderProposals(node, 'elected');
            this.membership?.onElected(node);
          }
        });
        rn.on('fatal', (err: unknown) => {
          if (this.pending === null)
            this.record(this.violation('core-threw', `the driver stopped on an exception: ${(err as Error)?.stack ?? String(err)}`));
        });
        const st = node.raft.status();
        node.lastTerm = st.term;
        node.lastCommit = st.commitIndex;
        node.confIndexSeen = st.confIndex;
        this.workload.nodeStarted?.(node);
      },
      (err: unknown) => {
        if (node.incarnation !== inc) return;
        node.booting = false;
        if (this.pending === null)
          this.record(this.violation('core-threw', `the driver failed to start: ${(err as Error)?.stack ?? String(err)}`));
      },
    );
  }

  /** A node's own clock (virtual ms plus its skew, or the workload's clock model). */
  nodeNow(node: SimNode): number {
    return this.workload.nodeClock ? this.workload.nodeClock(node.idx, this.now) : this.now + node.clockSkewMs;
  }

  crash(i: number, why: string): void {
    const node = this.nodes[i]!;
    if (!node.up) return;
    if (node.inflight) this.stats.lostBatches++;
    // The incarnation dies: its timers, disk operations, messages and answers go nowhere from now on; its
    // disk keeps what the crash model leaves (sim-disk.ts), and the durable log follows it.
    node.up = false;
    const disk = node.disk.crash();
    this.stats.tornWrites += disk.torn.length;
    const unsynced = disk.writesKept + disk.writesLost + disk.torn.length + disk.metaKept + disk.metaLost;
    const lost =
      unsynced === 0
        ? undefined
        : `disk: ${disk.writesKept} unsynced writes kept, ${disk.writesLost} lost, ${disk.torn.map((t) => `torn ${t.kept}/${t.of} B at ${t.offset}`).join(', ') || 'none torn'}; metadata ${disk.metaKept} kept, ${disk.metaLost} lost`;
    this.trace.add(this.now, node.id, `CRASH (${why})`, lost, node.inflight ?? undefined);
    // A crash during the start (its first bootstrap write still unsynced) kills that start too: its
    // promise never settles, and the node must stay restartable.
    node.booting = false;
    node.incarnation++;
    node.rn = null;
    node.io = null;
    node.inflight = null;
    node.arm = null;
    node.leaderSince = -1;
    this.clients.nodeCrashed(node);
    this.workload.nodeCrashed?.(node);
    this.stats.crashes++;
    this.reports.crashed(i);
  }

  restart(i: number): void {
    const node = this.nodes[i]!;
    if (node.up || node.booting) return;
    this.trace.add(this.now, node.id, 'RESTART', {
      term: node.durable.hardState.term,
      vote: node.durable.hardState.votedFor ?? '-',
      commit: node.durable.hardState.commitIndex,
      snap: node.durable.snapIndex,
      last: node.durable.lastIndex(),
    });
    this.stats.restarts++;
    this.boot(i);
  }

  /** First start of a node added at runtime (membership.ts): the real driver with `join: true` over the
   *  slot's blank storage. */
  join(i: number): void {
    const node = this.nodes[i]!;
    if (!node.born || node.up || node.booting || node.incarnation > 0) return;
    this.trace.add(this.now, node.id, 'JOIN', 'blank storage, join: true');
    this.stats.joins++;
    this.boot(i);
  }

  upCount(): number {
    let c = 0;
    for (const n of this.nodes) if (n.up) c++;
    return c;
  }

  /** The node that is leader in the highest term among live nodes, or null. */
  currentLeader(): SimNode | null {
    let best: SimNode | null = null;
    let bestTerm = -1;
    for (const n of this.nodes) {
      if (!n.up || n.rn === null) continue;
      const st = n.raft.status();
      if (st.role === 'leader' && st.term > bestTerm) {
        best = n;
        bestTerm = st.term;
      }
    }
    return best;
  }

  // ------------------------------------------------------------------ network

  send(from: number, msg: Message): void {
    const to = this.idIndex.get(msg.to);
    if (to === undefined) return;
    this.stats.messagesSent++;
    if (msg.type === 'InstallSnapshot') this.stats.snapshotsSent++;
    const r = this.netRng;
    if (this.profile.reservoirChance > 0 && r.chance(this.profile.reservoirChance)) {
      if (this.reservoir.length < 32) this.reservoir.push(msg);
      else this.reservoir[r.int(32)] = msg;
    }
    if (this.blocked[from * this.nodes.length + to]) {
      this.stats.messagesDropped++;
      this.trace.add(this.now, this.nodes[from]!.id, 'cut', msg);
      return;
    }
    if (r.chance(this.loss)) {
      this.stats.messagesDropped++;
      this.trace.add(this.now, this.nodes[from]!.id, 'lost', msg);
      return;
    }
    this.schedule(this.netDelay(), { kind: 'deliver', msg, from, to, dup: false });
    if (this.duplicate > 0 && r.chance(this.duplicate)) {
      this.stats.messagesDuplicated++;
      this.schedule(this.netDelay(), { kind: 'deliver', msg, from, to, dup: true });
    }
  }

  netDelay(): number {
    const r = this.netRng;
    const p = this.profile;
    if (this.spikeChance > 0 && r.chance(this.spikeChance)) return p.netDelayMaxMs + r.float() * p.spikeMaxMs;
    return p.netDelayMinMs + r.float() * (p.netDelayMaxMs - p.netDelayMinMs);
  }

  /** Re-deliver an old message as if it had been stuck in the network all along. */
  replay(msg: Message): void {
    const from = this.idIndex.get(msg.from);
    const to = this.idIndex.get(msg.to);
    if (from === undefined || to === undefined) return;
    this.stats.messagesReplayed++;
    this.schedule(this.netDelay(), { kind: 'deliver', msg, from, to, dup: true });
  }

  // ------------------------------------------------------------------ events

  private dispatch(ev: SimEvent): void {
    switch (ev.kind) {
      case 'tick': {
        const node = this.nodes[ev.node]!;
        if (!node.up || node.incarnation !== ev.inc || ev.handle.cancelled) return;
        ev.fn();
        if (this.workload.leaderProposals && ev.intervalMs === node.baseTickMs) this.leaderProposals(node, 'tick');
        this.schedule(ev.intervalMs * (node.tickMs / node.baseTickMs) * (0.95 + 0.1 * this.netRng.float()), ev);
        this.touchedBy = node;
        this.cause = TICK;
        return;
      }
      case 'call': {
        const node = this.nodes[ev.node]!;
        if (!node.up || node.incarnation !== ev.inc || ev.handle.cancelled) return;
        ev.fn();
        this.touchedBy = node;
        return;
      }
      case 'deliver': {
        const node = this.nodes[ev.to]!;
        if (!node.up || node.rn === null || this.blocked[ev.from * this.nodes.length + ev.to]) {
          this.stats.messagesDropped++;
          return;
        }
        this.trace.add(this.now, node.id, ev.dup ? 'recv(dup)' : 'recv', ev.msg);
        if (this.membership !== null) this.removedBeforeDelivery = committedRemovals(node);
        node.heardAt[ev.from] = this.now;
        node.rn.receive(ev.msg);
        const after = node.raft.status();
        if (ev.msg.term === after.term) node.heardInTermAt[ev.from] = this.now;
        // The driver steps the core synchronously: its term now is what handling this message left
        // (term-learned.ts). A stopped driver (a recorded violation) steps nothing.
        if (this.pending === null) {
          const ctx = {
            after,
            checkQuorum: this.profile.raft.checkQuorum ?? true,
            removedBefore: this.membership !== null ? this.removedBeforeDelivery : [],
          };
          this.check(termNotLearned(ev.msg, ctx), 'term-learned', node);
        }
        this.touchedBy = node;
        this.cause = { kind: 'deliver', msg: ev.msg };
        return;
      }
      case 'crash': {
        const node = this.nodes[ev.node]!;
        // A crash armed before the quiet phase must not fire inside it (nobody would restart the node).
        if (node.up && node.incarnation === ev.inc && this.phase === 'faults') this.crash(ev.node, ev.why);
        return;
      }
      case 'restart': {
        const node = this.nodes[ev.node]!;
        if (!node.up && node.incarnation === ev.inc) this.restart(ev.node);
        return;
      }
      case 'fault':
        this.faults.onFault();
        return;
      case 'heal':
        this.faults.onHeal(ev.epoch);
        return;
      case 'member':
        this.membership?.onEvent();
        return;
      case 'client':
        this.clients.onTimer(ev.client, ev.token);
        return;
      case 'request': {
        const node = this.nodes[ev.node]!;
        this.clients.onRequest(node, ev.attempt);
        this.touchedBy = node;
        return;
      }
      case 'response':
        this.clients.onResponse(ev.attempt, ev.outcome, ev.hint, ev.result);
        return;
      case 'check':
        this.liveness.check();
        return;
      case 'later':
        ev.fn();
        return;
      case 'unreachable': {
        const node = this.nodes[ev.node]!;
        if (!node.up || node.incarnation !== ev.inc || node.rn === null) return;
        this.trace.add(this.now, node.id, `peer ${ev.peer} unreachable (${ev.real ? 'true' : 'FALSE'} report)`);
        if (ev.real) this.stats.reportsTrue++;
        else this.stats.reportsFalse++;
        node.rn.peerUnreachable(ev.peer);
        this.touchedBy = node;
        return;
      }
      case 'false-report':
        this.reports.onFalseTimer();
        return;
    }
  }

  /** Run `fn` after `delayMs` of virtual time (a message the workload models itself, e.g. a forwarded
   *  client call); `fn` checks whatever liveness it depends on. */
  later(delayMs: number, fn: () => void): void {
    this.schedule(delayMs, { kind: 'later', fn });
  }

  /** Let the workload's driver logic propose its own entries on a leader (see SimWorkload). */
  leaderProposals(node: SimNode, reason: 'elected' | 'tick'): void {
    const wl = this.workload;
    if (!wl.leaderProposals || !node.up || node.rn === null) return;
    const st = node.raft.status();
    if (st.role !== 'leader') return;
    const rn = node.rn;
    for (const data of wl.leaderProposals({ node: node.id, nodeNow: this.nodeNow(node), term: st.term, reason, sm: node.sm })) {
      // Through the driver, like any proposal; the outcome is the workload's to observe in apply.
      this.trace.add(this.now, node.id, `propose (${reason})`, `t${st.term}`);
      rn.propose(data, this.profile.clientTimeoutMs).catch(() => {});
    }
  }

  /** Faults and scripted tests that act on a node say so: its checks run after the event. */
  touched(node: SimNode): void {
    this.touchedBy = node;
  }

  // ------------------------------------------------------------------ run

  /** Boot every node (their drivers load their durable state). */
  async start(): Promise<void> {
    for (let i = 0; i < this.nodes.length; i++) if (this.nodes[i]!.born) this.boot(i);
    await settle();
    this.throwPending();
  }

  /** Run the fault phase, then (unless disabled) the liveness phase; rejects with a SimViolation. */
  async run(): Promise<SimStats> {
    const opts = this.opts;
    const budget = opts.events ?? 2000;
    try {
      await this.start();
      this.clients.start();
      this.faults.start();
      this.reports.start();
      this.membership?.start();
      while (this.phase === 'faults' && this.stats.events < budget) await this.step();
      this.stats.faultPhaseEvents = this.stats.events;
      if (opts.liveness ?? true) {
        this.liveness.enter(opts.quietMs);
        while (this.phase === 'quiet') await this.step();
        this.liveness.finalChecks();
      }
    } catch (err) {
      if (err instanceof SimViolation) throw err;
      const e = err as Error;
      throw this.violation('core-threw', `an exception escaped: ${e.stack ?? String(e)}`);
    }
    this.stats.virtualMs = this.now;
    this.phase = 'done';
    return this.stats;
  }

  private touchedBy: SimNode | null = null;
  private cause: EventCause = OTHER;
  /** With membership: the ids whose removal the receiver knew committed just before the delivery being
   *  checked (a message from one of them must not change its term: node-checks.ts removed-disturbs). */
  removedBeforeDelivery: NodeId[] = [];

  /** One event, its promise continuations, then the checks of the node it touched and the extras. */
  async step(): Promise<void> {
    let ev = this.nextLiveEvent();
    if (ev === undefined) {
      // Work started outside an event (a scripted restart) may still be settling: let it finish first.
      await settle();
      ev = this.nextLiveEvent();
    }
    if (ev === undefined) throw this.violation('liveness', 'the event queue ran dry');
    this.now = ev.time;
    this.stats.events++;
    this.touchedBy = null;
    this.cause = OTHER;
    try {
      this.dispatch(ev);
    } catch (err) {
      // A violation thrown straight from an event handler (the liveness deadline, acked-committed in a
      // client response) is recorded here, so throwPending() reports it: swallowing it would leave the
      // quiet phase without its next check, running until the test times out.
      if (err instanceof SimViolation) this.record(err);
      else if (this.pending === null) throw err;
    }
    await settle();
    this.throwPending();
    const node = this.touchedBy as SimNode | null;
    if (node !== null) afterNodeEvent(this, node, this.cause);
    for (const inv of this.extra) {
      const msg = inv(this);
      if (msg !== null) throw this.violation('extra-invariant', msg);
    }
  }

  /** A cancelled timer (a settled proposal's deadline) is not an event: it does not use up the budget. */
  private nextLiveEvent(): SimEvent | undefined {
    let ev = this.queue.pop();
    while (ev !== undefined && (ev.kind === 'call' || ev.kind === 'tick') && ev.handle.cancelled) ev = this.queue.pop();
    return ev;
  }

  private throwPending(): void {
    if (this.pending !== null) throw this.pending;
  }

  private record(v: SimViolation): SimViolation {
    if (this.pending === null) this.pending = v;
    return this.pending;
  }

  // ------------------------------------------------------------------ violations

  // A violation is recorded before it is thrown: one thrown inside the driver's loop (apply, send) is
  // caught there (the driver stops, as on a storage failure), and step() rethrows the recorded one.

  check(msg: string | null, invariant: string, node?: SimNode): void {
    if (msg !== null) throw this.record(this.violation(invariant, node ? `[${node.id}] ${msg}` : msg));
  }

  fail(invariant: string, node: SimNode, msg: string): never {
    throw this.record(this.violation(invariant, `[${node.id}] ${msg}`));
  }

  /** For promise callbacks: run `fn`, keeping a violation it throws for step() instead of letting it
   *  become an unhandled rejection. */
  guard<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void {
    return (...args: A) => {
      try {
        fn(...args);
      } catch (err) {
        if (!(err instanceof SimViolation))
          this.record(this.violation('core-threw', `an exception escaped: ${(err as Error)?.stack ?? String(err)}`));
      }
    };
  }

  violation(invariant: string, detail: string): SimViolation {
    return new SimViolation(this.seed, invariant, violationReport(this, invariant, detail, this.traceLines));
  }

  describeNode(n: SimNode): string {
    return describeNode(n);
  }

  /** A short multi-line account of the run (printed when replaying one seed). */
  summary(): string {
    return runSummary(this);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

const TICK: EventCause = { kind: 'tick' };
const OTHER: EventCause = { kind: 'other' };

/** Run one seed to completion; rejects with a SimViolation on any broken invariant. */
export async function runSimulation(opts: SimOptions): Promise<SimResult> {
  const t0 = performance.now();
  const sim = new SimCluster(opts);
  const stats = await sim.run();
  return { seed: opts.seed, stats, summary: sim.summary(), wallMs: performance.now() - t0, cluster: sim };
}
