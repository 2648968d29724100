// The lock workload: the real LockMachine (or a SIM_LOCK scratch copy) as the replicated state machine of
// the simulated cluster, the REAL lock service on every node (lock-server.ts: src/lock-on-raft/lock-service.ts
// over the pure lock leader src/lock/leader, on the node's RaftNode, clock and virtual-time scheduler), the
// simulated clients and the fenced resource. Nothing of the leader's duties is copied here: term start
// before stamping, expiry, checkpoints, FIFO wait queues, remembered refusals and dedup fast paths all run
// in the shipped code; this file only judges what comes out.
//
// Every command is stamped by the proposing leader's OWN clock (ClockModel: offset + drift), never the
// simulation time: the service reads it through env.nowMs(), and every reading is recorded (node, value ->
// true-time window) so the oracle knows the true time of each stamp (lock-invariants.ts).
import type { Entry, SnapshotChunk, SnapshotMeta } from '../../src/raft/core/types.js';
import type { SnapshotJob } from '../../src/raft/fsm.js';
import type { LockCommand, LockResult, RenewItem } from '../../src/lock/index.js';
import { BASE_LEVEL, BUILD_LEVEL, lowestReadLevel } from '../../src/lock/index.js';
import type { SimCluster } from './cluster.js';
import { LockClients } from './lock-clients.js';
import { ClockModel, type LockProfile } from './lock-clock.js';
import { canonicalResult, captureState, LockOracle, type StampWindow } from './lock-invariants.js';
import type { LockMachineLike, LockModule, SimLockMachineOptions } from './lock-module.js';
import { LockFsm } from '../../src/lock-on-raft/lock-fsm.js';
import { LockStateStore } from '../../src/state/lock-store.js';
import { AppliedStore } from '../../src/state/applied-store.js';
import type { StoredStateMachine } from '../../src/raft/fsm.js';
import { SimStateDb } from './state-db.js';
import { isRecordStream } from '../../src/state/snapshot-stream.js';
import { LEVEL_RECORD_STREAM } from '../../src/lock/versions.js';
import { SimFencedResource } from './lock-resource.js';
import type { SimStateMachine } from './machine.js';
import type { SimNode } from './node.js';
import { SimRng } from './rng.js';
import { callOf, SimLockServers, type LockCall } from './lock-server.js';
import { membersThatRan } from '../../src/server/assembly/members-ran.js';
import { LockCallChecks } from './lock-calls.js';
import { MaxHoldCheck, servedTailMs } from './lock-max-hold.js';
import { ServedTimeline } from './lock-served.js';
import { TermGateCheck } from './lock-term-gate.js';
import { LimitCheck } from './lock-limits.js';
import type { Attempt, ClientOp } from './clients.js';
import type { Ack, HistoryEvent, ServeOutcome, SimWorkload, WriteContext } from './workload.js';
import type { LockView } from '../../src/lock/index.js';

/** The write-behind's batches in the simulator: often, so crashes land between them and in them. */
const SIM_WRITE_BEHIND_MS = 40;
const SIM_WRITE_BEHIND_CHANGES = 64;
/** Records per batch of a new generation (a snapshot installed): few, so a swap takes several batches. */
const SIM_REPLACE_BATCH_RECORDS = 16;
/** Ops a write-behind batch feeds between yields: few, so a batch is often fed over several events and a
 *  crash lands while it is fed (it must lose it whole). */
const SIM_WRITE_SLICE_OPS = 8;

/** Keys or dedup records per snapshot slice in the simulator (production: SNAPSHOT_SLICE_ITEMS): the
 *  simulator's few keys then take several slices, with entries applied in between, so the copy-on-write
 *  paths run. */
const SIM_SNAPSHOT_SLICE_ITEMS = 2;

/**
 * One node's lock state: the REAL LockFsm (src/lock-on-raft/lock-fsm.ts, what the runtime hands its RaftNode) over
 * the machine under test, so how committed entries reach the machine and how snapshots are written and
 * restored run the shipped code. Around it, test-only: the oracle judges every entry once (pre/post state),
 * and a digest lets replicas be compared.
 */
export class LockReplica implements SimStateMachine {
  readonly fsm: LockFsm<LockMachineLike, SimLockMachineOptions>;
  /** Results by index, kept only in scenario tests. */
  readonly results: Map<number, LockResult> | null;
  private digestValue: string | null = null;
  private nodeIdx = -1;

  constructor(
    private readonly wl: LockWorkload,
    node?: SimNode,
  ) {
    // The cluster level the build of this replica's node reads (versions.ts). nodeClock: unused by the real
    // machine; lets a scratch copy plant "deadline from the node's clock".
    const readLevel = node === undefined ? BUILD_LEVEL : wl.buildLevelOf(node);
    const options: SimLockMachineOptions = {
      dedupWindowMs: wl.profile.dedupWindowMs,
      readLevel,
      nodeClock: () => wl.clock.nodeStamp(this.nodeIndex, wl.sim.now),
    };
    // A node's replica keeps its state in the applied store over the node's simulated LevelDB (state-db.ts),
    // as in production; a probe (no node) only restores and digests.
    const db = node === undefined ? null : wl.stateDbOf(node);
    // This incarnation's timers (node.io is set once the replica is made, before the driver starts).
    const incarnation = node?.incarnation;
    const incarnationTimers = () => (node !== undefined && node.incarnation === incarnation && node.up ? node.io : null);
    const state =
      db === null || wl.module.records === undefined
        ? null
        : new LockStateStore<LockMachineLike>(
            () => AppliedStore.open(db.forIncarnation(incarnationTimers), SIM_REPLACE_BATCH_RECORDS, SIM_WRITE_SLICE_OPS),
            {
              soon: (fn) => incarnationTimers()?.soon(fn),
              after: (ms, fn) => incarnationTimers()?.after(ms, fn) ?? { cancel: () => {} },
              every: (ms, fn) => incarnationTimers()?.every(ms, fn) ?? { cancel: () => {} },
            },
            wl.module.records,
            { intervalMs: SIM_WRITE_BEHIND_MS, maxChanges: SIM_WRITE_BEHIND_CHANGES },
            (err) => wl.sim.fail('store-write', node!, `an applied-store write failed: ${(err as Error)?.message ?? String(err)}`),
          );
    this.fsm = new LockFsm<LockMachineLike, SimLockMachineOptions>(wl.module.LockMachine, options, null, SIM_SNAPSHOT_SLICE_ITEMS, state);
    this.results = wl.keepResults ? new Map() : null;
    const inner = this.fsm.stored;
    if (inner !== undefined) {
      // The machine is replaced inside the fsm: the cached digest goes with it.
      this.stored = {
        open: () => inner.open().finally(() => (this.digestValue = null)),
        install: (snapshot) => inner.install(snapshot).finally(() => (this.digestValue = null)),
        persist: () => inner.persist(),
        ...(inner.openStream === undefined ? {} : { openStream: (chunkBytes: number) => inner.openStream!(chunkBytes) }),
        ...(inner.receiveChunk === undefined
          ? {}
          : {
              receiveChunk: (chunk: SnapshotChunk) => {
                // The version gate: a member of a build below level 6 reads only the whole-state encoding.
                if (chunk.offset === 0 && readLevel < LEVEL_RECORD_STREAM && isRecordStream(chunk.data)) {
                  wl.sim.fail('version-gate', node!, `a record stream sent to a member of a level-${readLevel} build`);
                }
                return inner.receiveChunk!(chunk);
              },
            }),
        ...(inner.installReceived === undefined
          ? {}
          : { installReceived: (meta: SnapshotMeta) => inner.installReceived!(meta).finally(() => (this.digestValue = null)) }),
        ...(inner.discardReceived === undefined ? {} : { discardReceived: () => inner.discardReceived!() }),
      };
    }
  }

  /** The applied store's side of the fsm (fsm.ts StoredStateMachine), when the replica keeps one. */
  readonly stored?: StoredStateMachine;

  /** The machine the fsm holds now (a restore replaces it). */
  get machine(): LockMachineLike {
    return this.fsm.machine;
  }

  /** Index of the simulated node this replica belongs to (found once: node.sm is this object). */
  get nodeIndex(): number {
    if (this.nodeIdx < 0) this.nodeIdx = this.wl.sim.nodes.findIndex((n) => n.sm === this);
    return this.nodeIdx;
  }

  apply(entry: Entry): unknown {
    const oracle = this.wl.oracle;
    if (entry.index > oracle.next) oracle.fail(`oracle: entry ${entry.index} applied before entry ${oracle.next} was judged anywhere`);
    this.digestValue = null;
    if (entry.kind !== 'normal') {
      this.fsm.apply(entry);
      oracle.passNonCommand(entry.index);
      return null;
    }
    const judge = entry.index === oracle.next;
    const keys = this.wl.profile.keys;
    const pre = judge ? captureState(this.machine, keys) : null;
    const limits = judge ? this.wl.limits : null;
    const preCounts = limits?.capture(this.machine);
    const result = this.fsm.apply(entry);
    if (result === null) {
      oracle.fail(`entry ${entry.index}/t${entry.term} (a lock command) was applied without a lock result`);
      return null;
    }
    let cmd: LockCommand | null = null;
    try {
      cmd = this.wl.module.decodeCommand(entry.data);
    } catch {
      cmd = null;
    }
    if (cmd?.type === 'termStart') {
      // Whichever replica judges the term's entries, the gate is the leader's: note when IT applied this.
      const st = this.wl.sim.nodes[this.nodeIndex]?.raft.status();
      this.wl.termGate.termStartApplied(entry.term, st?.role === 'leader' && st.term === entry.term, this.wl.sim.now);
    }
    if (judge) {
      const post = captureState(this.machine, keys);
      const stamp = cmd === null ? undefined : this.wl.stampOf(entry.term, cmd.timeMs);
      oracle.judge(entry, cmd, result, pre!, post, stamp);
      if (limits !== null && cmd !== null && oracle.violation === null) {
        const exceeded = limits.judge(entry, cmd, result, preCounts!, limits.capture(this.machine));
        if (exceeded !== null) oracle.fail(exceeded);
      }
      if (stamp !== undefined && cmd !== null) {
        const gate = this.wl.termGate.check(`entry ${entry.index}/t${entry.term}`, entry.term, cmd, stamp);
        if (gate !== null) oracle.fail(gate);
      }
      if (stamp !== undefined && oracle.violation === null) {
        const level2 = oracle.stats.levelRaisedAt > 0 ? oracle.stats.levelRaisedAt : Infinity;
        this.wl.maxHold.afterEntry(
          entry.index,
          `entry ${entry.index}/t${entry.term} (${cmd!.type})`,
          stamp,
          pre!,
          post,
          keys,
          (k) => oracle.holdOf(k),
          level2,
        );
      }
      const rk = cmd === null ? undefined : requestKeyOf(cmd);
      if (rk !== undefined) this.wl.requestAt.set(entry.index, rk);
      if (cmd?.type === 'renews' && result.type === 'renews')
        this.wl.renewsAt.set(entry.index, { renews: cmd.renews, answers: result.renews.map(canonicalResult) });
      // A revoke ends holds behind their holders' backs: from here their trust and writes are not a holder's.
      if (cmd?.type === 'revoke' && result.type === 'revoke' && !result.replayed && result.revoked.length > 0)
        this.wl.clients.revoked(cmd.key, result.revoked, this.wl.sim.now);
      if (cmd?.type === 'acquire' && result.type === 'acquire' && !result.replayed && cmd.requestId !== '') {
        const requestKey = LockCallChecks.requestKey(cmd.owner, cmd.requestId);
        // A request the log had decided already, executed again: a late copy that outlived its record. Below
        // level 6 its grant may supersede the owner's hold behind its client's back (versions.ts, level 6: the
        // record is kept while the owner holds the key, and the oracle checks that it is); that hold then
        // counts as ended, as a revoked one does.
        if (result.acquired && this.wl.decidedRequests.has(requestKey) && oracle.stats.clusterLevel < 6) {
          this.wl.stats.lateCopyGrants++;
          this.wl.clients.supersededBehind(cmd.owner, cmd.key, result.token, this.wl.sim.now);
        }
        if (result.waitTicket === undefined) this.wl.decidedRequests.add(requestKey);
      }
      for (const d of result.decided ?? []) if (!d.cancelled) this.wl.decidedRequests.add(LockCallChecks.requestKey(d.owner, d.requestId));
      if (cmd?.type === 'acquire' && result.type === 'acquire' && result.waitTicket !== undefined)
        this.wl.servers.checks.queuedInLog(LockCallChecks.requestKey(cmd.owner, cmd.requestId), result.waitTicket);
      if (cmd?.type === 'acquire' && result.type === 'error' && result.code === 'SESSION_NOT_OPEN')
        this.wl.servers.checks.sessionNotOpen(LockCallChecks.requestKey(cmd.owner, cmd.requestId), entry.index);
      if (cmd?.type === 'acquire' && result.type === 'acquire' && !result.acquired && !result.replayed && result.waitTicket === undefined) {
        this.wl.servers.checks.refusedInLog(LockCallChecks.requestKey(cmd.owner, cmd.requestId), this.machine.logNowMs, entry.index);
      }
      // Waiters the entry took out of line: a grant or a refusal decided for them by the log.
      for (const d of result.decided ?? []) {
        if (d.cancelled) continue;
        const rk = LockCallChecks.requestKey(d.owner, d.requestId);
        if (!d.outcome.acquired) {
          this.wl.servers.checks.refusedInLog(rk, this.machine.logNowMs, entry.index);
          continue;
        }
        const leaderId = this.wl.sim.facts.leaderOfTerm.get(entry.term);
        const leader = `${leaderId === undefined ? -1 : this.wl.sim.indexOf(leaderId)}/${entry.term}`;
        this.wl.servers.checks.granted(
          rk,
          `${d.owner}'s waiting acquire ${d.requestId} of ${d.key}`,
          d.outcome.token,
          entry.index,
          this.machine.logNowMs,
          leader,
        );
      }
      if (cmd?.type === 'acquire' && result.type === 'acquire' && result.acquired && !result.replayed) {
        // The holder re-acquiring its own live hold supersedes it (a new token): it keeps the key rather than
        // taking it from the line, so it overtakes nobody (machine.ts).
        const before = pre!.views[keys.indexOf(cmd.key)];
        const ownHold =
          before?.holders !== undefined
            ? before.holders.some((h) => h.owner === cmd.owner && h.expiresAtMs > this.machine.logNowMs)
            : before !== undefined && before.held && before.owner === cmd.owner && before.expiresAtMs > this.machine.logNowMs;
        if (ownHold) this.wl.servers.checks.supersededOwnHold(result.token);
        const leaderId = this.wl.sim.facts.leaderOfTerm.get(entry.term);
        const leader = `${leaderId === undefined ? -1 : this.wl.sim.indexOf(leaderId)}/${entry.term}`;
        this.wl.servers.checks.granted(
          LockCallChecks.requestKey(cmd.owner, cmd.requestId),
          `${cmd.owner}'s acquire ${cmd.requestId} of ${cmd.key}`,
          result.token,
          entry.index,
          this.machine.logNowMs,
          leader,
        );
      }
      // Formatted only if a trace is printed: the command and what the machine made of it.
      this.wl.sim.trace.add(
        this.wl.sim.now,
        this.wl.sim.nodes[this.nodeIndex]?.id ?? '',
        `lock ${entry.index}/t${entry.term}`,
        cmd ?? 'undecodable',
        result,
      );
    }
    this.results?.set(entry.index, result);
    return result;
  }

  snapshot(): Uint8Array {
    return this.fsm.snapshot();
  }

  beginSnapshot(sizeHint: number): SnapshotJob {
    return this.fsm.beginSnapshot(sizeHint);
  }

  restore(data: Uint8Array): void {
    this.fsm.restore(data);
    this.digestValue = null;
  }

  /** Every 8th index the full snapshot fingerprint; in between a cheap summary of the visible state. */
  digest(): string {
    if (this.digestValue === null) {
      const m = this.machine;
      if (m.appliedIndex % 8 === 0) {
        this.digestValue = m.digest();
      } else {
        let s = `${m.appliedIndex}|${m.logNowMs}|${m.epochTerm}|${m.epochStartMs}|${m.leaseCount}|${m.dedupSize}`;
        for (const k of this.wl.profile.keys) {
          const v = m.get(k);
          s += v.held ? `|${v.owner}#${v.token}<${v.expiresAtMs}` : `|-${v.lastToken}`;
        }
        this.digestValue = s;
      }
    }
    return this.digestValue;
  }
}

export class LockWorkload implements SimWorkload<LockReplica> {
  readonly name = 'lock';
  readonly readRatio: number;
  sim!: SimCluster;
  clock!: ClockModel;
  servers!: SimLockServers;
  readonly oracle: LockOracle;
  readonly resource = new SimFencedResource();
  /** The liveness side of leases (lock-max-hold.ts) and the true time it may excuse (lock-served.ts). */
  served!: ServedTimeline;
  maxHold!: MaxHoldCheck;
  /** Nothing stamped in a term before its leader's termStart applied (lock-term-gate.ts). */
  readonly termGate = new TermGateCheck();
  readonly clients: LockClients;
  /** The named invariant `limits` when the run's leaders admit under limits (lock-limits.ts). */
  readonly limits: LimitCheck | null;
  readonly stats = { blockingAcquires: 0, shortAttempts: 0, getsChecked: 0, lockDelayAcquires: 0, lateCopyGrants: 0 };
  /** Acquires (owner + request id) the log has decided: a grant or a refusal, not a place in line. */
  readonly decidedRequests = new Set<string>();
  /** Scenario tests read results from replicas. */
  keepResults = false;
  violation: string | null = null;
  /** stamps[node]: clock value -> the true-time window in which the node's clock read it. */
  private stamps: Map<number, StampWindow>[] = [];
  private readonly readKeys = new Map<number, string>();
  private readonly waitMsByOp = new Map<number, number>();
  private readonly ackCommands = new WeakMap<Ack, LockCommand>();
  /** (owner, request_id) of the client command judged at each index: an acknowledged answer must be that of
   *  its own request's entry. */
  readonly requestAt = new Map<number, string>();
  /** Per `renews` entry (level 7): its renews and each one's canonical answer (checkAck: a renew call is
   *  answered with the one of its own request, never another's). */
  readonly renewsAt = new Map<number, { renews: readonly RenewItem[]; answers: string[] }>();
  /** The build level each node ran in its latest incarnation that started. */
  private readonly runningLevels = new Map<string, number>();

  constructor(
    readonly module: LockModule,
    readonly seed: number,
    readonly profile: LockProfile,
  ) {
    this.readRatio = profile.readRatio;
    this.oracle = new LockOracle(profile.keys, profile.maxDrift, profile.dedupWindowMs, profile.oracleChecksExtension);
    this.clients = new LockClients(
      profile,
      SimRng.derive(seed, 'lock-clients'),
      () => this.clock,
      this.resource,
      (tag, detail) => this.sim.trace.add(this.sim.now, '', tag, detail),
      SimRng.derive(seed, 'lock-revoke'),
      SimRng.derive(seed, 'lock-late'),
    );
    this.limits =
      profile.limits === null
        ? null
        : new LimitCheck(
            profile.limits,
            seed,
            this.clients.clients.map((c) => c.owner),
            profile.keys,
          );
  }

  /** Bind to the cluster before it runs (clocks need its node count). */
  attach(sim: SimCluster, clock?: ClockModel): void {
    this.sim = sim;
    this.clock =
      clock ?? new ClockModel(this.seed, sim.nodes.length, this.profile.clients, this.profile.maxDrift, this.profile.nodeOffsetSpreadMs);
    this.stamps = sim.nodes.map(() => new Map());
    const turnRng = SimRng.derive(this.seed, 'lock-turn-delays');
    this.servers = new SimLockServers(
      sim,
      {
        housekeepingMs: this.profile.housekeepingEveryTicks * sim.profile.tickMs,
        checkpointIdleMs: this.profile.checkpointIdleMs,
        leaderProposalTimeoutMs: this.profile.leaderProposalTimeoutMs,
        dedupWindowMs: this.profile.dedupWindowMs,
        membersReadLevel: (node) => this.membersReadLevel(node),
        membersRan: (node) => this.membersRan(node),
        leader: this.module.LockLeader,
        limits: this.profile.limits,
        turnDelayMs: () => turnRng.float() * this.profile.turnMs,
        ...(this.limits !== null
          ? { proposed: (node: SimNode, index: number, term: number, data: Uint8Array) => this.proposed(node, index, term, data) }
          : {}),
      },
      // The service reads the applied state through the node's LockFsm, as in production (runtime.ts).
      (node) => (node.sm as LockReplica).fsm,
    );
    // Group clients ask for semaphores and shared holds only once some node's log is at level 3 (before,
    // every leader refuses them).
    this.clients.groupsReady = () => sim.nodes.some((n) => n.up && (n.sm as LockReplica).machine.clusterLevel >= 3);
    this.clients.termsChecked = () => sim.nodes.some((n) => n.up && (n.sm as LockReplica).machine.clusterLevel >= 6);
    this.served = new ServedTimeline((node) => this.servers.service(node)?.isReadyLeader ?? false);
    this.maxHold = new MaxHoldCheck(this.profile.maxDrift, servedTailMs(this.profile, sim.profile), this.served);
  }

  /** Each node's applied-store LevelDB: it outlives the node's incarnations, as a disk does. */
  private readonly stateDbs = new Map<number, SimStateDb>();

  stateDbOf(node: SimNode): SimStateDb {
    let db = this.stateDbs.get(node.idx);
    if (db === undefined) {
      db = new SimStateDb(SimRng.derive(this.sim.seed, `state-db:${node.id}`));
      // The store holds only committed entries' effects: every point it reaches is a committed entry.
      db.onLanded = (point) => this.sim.check(this.sim.facts.noteSnapshotPoint(node.id, point.index, point.term), 'store-committed', node);
      // Now and then the node dies the moment a swap lands, before anything its store writes after it: the
      // new generation must be whole by then (a receiver that swapped in before its last chunk was written
      // restarts missing records, and the digest where the store opens says so).
      const swapRng = SimRng.derive(this.sim.seed, `state-db-swap:${node.id}`);
      db.onSwap = (point) => {
        const n = this.sim.nodes[node.idx]!;
        if (this.sim.phase !== 'faults' || !n.up || swapRng.float() >= 0.3) return;
        this.sim.stats.armedCrashes++;
        this.sim.crash(node.idx, `armed: the moment the applied store's swap to ${point.index}/t${point.term} landed`);
        this.sim.schedule(1 + swapRng.float() * 30, { kind: 'restart', node: node.idx, inc: n.incarnation });
      };
      // Now and then the node dies while a write-behind batch is being fed, between two slices (the store
      // yields to the loop between them): the batch must be lost whole. One committed per slice leaves the
      // store's records ahead of its meta record, and the digest where the store opens says so.
      const feedRng = SimRng.derive(this.sim.seed, `state-db-feed:${node.id}`);
      db.onFeed = (opsBefore) => {
        if (opsBefore === 0 || opsBefore % SIM_WRITE_SLICE_OPS !== 0) return; // the first op after a pause
        const n = this.sim.nodes[node.idx]!;
        if (this.sim.phase !== 'faults' || !n.up || feedRng.float() >= 0.01) return;
        this.sim.stats.armedCrashes++;
        this.sim.crash(node.idx, `armed: an applied-store batch being fed, ${opsBefore} ops in`);
        this.sim.schedule(1 + feedRng.float() * 30, { kind: 'restart', node: node.idx, inc: n.incarnation });
      };
      this.stateDbs.set(node.idx, db);
    }
    return db;
  }

  createStateMachine(node?: SimNode): LockReplica {
    return new LockReplica(this, node);
  }

  /** The cluster level `node`'s build reads in its current incarnation (profile.oldBuildNodes). */
  buildLevelOf(node: SimNode): number {
    return node.incarnation === 0 && node.idx < this.profile.oldBuildNodes ? BASE_LEVEL : BUILD_LEVEL;
  }

  /** As the runtime reads it (members-ran.ts): from this node's Raft progress. */
  membersRan(node: SimNode): string[] {
    const rn = node.rn;
    const conf = rn?.configuration();
    return rn && conf ? membersThatRan(node.id, conf, rn.progress()) : [];
  }

  /** What `node`'s transport would know: the level each member of its configuration announced on its
   *  latest message (the level of the build it last ran), undefined for one that never ran. */
  membersReadLevel(node: SimNode): number | undefined {
    const conf = node.rn?.configuration();
    if (!conf) return undefined;
    const others = [...conf.voters, ...conf.learners].filter((id) => id !== node.id);
    return lowestReadLevel(this.buildLevelOf(node), others, (id) => this.runningLevels.get(id));
  }

  // ------------------------------------------------------------------ the nodes' clocks and services

  /** Node i's clock, as its driver and lock service read it (integer ms, like the real monotonic clock).
   *  Every reading is recorded: a stamp in an entry is one of them. */
  nodeClock(i: number, now: number): number {
    const v = this.clock.nodeStamp(i, now);
    const m = this.stamps[i]!;
    const w = m.get(v);
    if (w === undefined) m.set(v, { min: now, max: now, node: this.sim.nodes[i]!.id });
    else if (now > w.max) w.max = now;
    return v;
  }

  /** A node's lock service appended `data` at (index, term): the limits check notes what its leader's
   *  admission judged (the node's applied state is still the one it judged on). */
  private proposed(node: SimNode, index: number, term: number, data: Uint8Array): void {
    let cmd: LockCommand;
    try {
      cmd = this.module.decodeCommand(data);
    } catch {
      return; // the oracle reports an undecodable entry if it commits
    }
    this.limits!.proposed(index, term, cmd, (node.sm as LockReplica).machine);
  }

  /** The true-time window of a stamp `timeMs` in an entry of `term` (taken by that term's leader). */
  stampOf(term: number, timeMs: number): StampWindow | undefined {
    const leader = this.sim.facts.leaderOfTerm.get(term);
    if (leader === undefined) return undefined;
    return this.stamps[this.sim.indexOf(leader)]?.get(timeMs);
  }

  nodeStarted(node: SimNode): void {
    this.runningLevels.set(node.id, this.buildLevelOf(node));
    this.servers.nodeStarted(node);
  }

  nodeCrashed(node: SimNode): void {
    this.servers.nodeCrashed(node);
  }

  /** The ready leader's lock service (termStart applied), or null. */
  readyLeader(): SimNode | null {
    for (const n of this.sim.nodes) if (this.servers.service(n)?.isReadyLeader) return n;
    return null;
  }

  // ------------------------------------------------------------------ clients

  nextWrite(ctx: WriteContext): Uint8Array {
    const c = this.clients.clients[ctx.clientId]!;
    const cmd = this.clients.nextCommand(c, ctx.opId, ctx.now);
    if (cmd.type === 'acquire' && this.clients.rngChance(this.profile.lockDelayChance)) {
      // A hold with a lock-delay: if it expires, its key grants nobody for a while after (the oracle checks).
      this.stats.lockDelayAcquires++;
      cmd.lockDelayMs = Math.max(1, Math.round(c.ttlMs * (0.2 + this.clients.rngFloat())));
    }
    if (cmd.type === 'acquire' && this.clients.rngChance(this.profile.waitChance)) {
      // A blocking acquire: queue FIFO at the leader for up to a few TTLs.
      this.stats.blockingAcquires++;
      this.waitMsByOp.set(ctx.opId, Math.max(1, Math.round(c.ttlMs * (0.5 + 2.5 * this.clients.rngFloat()))));
    }
    return this.module.encodeCommand(cmd);
  }

  /** A blocking acquire's attempt lasts its wait plus the usual answer time — or, now and then, the client
   *  gives up mid-wait (the cancel takes its waiter out of the queue; it retries with the same request_id). */
  attemptTimeoutMs(op: ClientOp): number | undefined {
    const waitMs = this.waitMsByOp.get(op.id);
    if (waitMs === undefined) return undefined;
    if (this.clients.rngChance(this.profile.giveUpChance)) {
      this.stats.shortAttempts++;
      return 1 + this.clients.rngFloat() * waitMs;
    }
    return waitMs + this.sim.profile.clientTimeoutMs;
  }

  serve(node: SimNode, attempt: Attempt, reply: (o: ServeOutcome) => void): void {
    const op = attempt.op;
    let call: LockCall;
    if (op.kind === 'read') {
      call = { op: 'get', key: this.readKeys.get(op.id) ?? this.profile.keys[0]! };
    } else {
      call = callOf(this.module.decodeCommand(op.data), this.waitMsByOp.get(op.id) ?? 0);
    }
    const timeoutMs = (this.attemptTimeoutFor(op) ?? this.sim.profile.clientTimeoutMs) + 1;
    this.servers.serve(node, attempt, call, timeoutMs, (o) => {
      if (o.outcome === 'ok' && call.op === 'get') {
        const v = o.result as LockView;
        this.checkGet(call.key, v, op, node);
        o = { ...o, result: v.held ? `${call.key}:${v.owner}#${v.token}` : `${call.key}:free(last ${v.lastToken})` };
      }
      reply(o);
    });
  }

  cancel(attempt: Attempt): void {
    this.servers.cancel(attempt);
  }

  private attemptTimeoutFor(op: ClientOp): number | undefined {
    const waitMs = this.waitMsByOp.get(op.id);
    return waitMs === undefined ? undefined : waitMs + this.sim.profile.clientTimeoutMs;
  }

  /** Linearizable Get: the answer reflects every acquire and release acknowledged before it was invoked. */
  private checkGet(key: string, v: LockView, op: ClientOp, node: SimNode): void {
    this.stats.getsChecked++;
    for (const ack of this.sim.clients.acks.slice(0, op.ackCountAtInvoke)) {
      const cmd = this.commandOf(ack);
      if (cmd === null || !('key' in cmd) || cmd.key !== key) continue;
      const r = ack.result as LockResult;
      if (r.type === 'acquire' && r.acquired && v.lastToken < r.token) {
        this.fail(
          `stale Get: read op${op.id} at ${node.id} answered ${key} with last token ${v.lastToken}, but token ${r.token} was acknowledged before the read began`,
        );
      }
      if (r.type === 'release' && r.released && cmd.type === 'release' && v.held && v.token === cmd.token) {
        this.fail(
          `stale Get: read op${op.id} at ${node.id} answered ${key} held with token ${cmd.token}, whose release was acknowledged before the read began`,
        );
      }
      if (r.type === 'revoke') {
        const shown = v.holders?.map((h) => h.token) ?? (v.held ? [v.token] : []);
        const still = r.revoked.find((t) => shown.includes(t));
        if (still !== undefined)
          this.fail(
            `stale Get: read op${op.id} at ${node.id} answered ${key} held with token ${still}, whose revoke was acknowledged before the read began`,
          );
      }
    }
  }

  private fail(message: string): void {
    if (this.violation === null) this.violation = message;
  }

  observe(event: HistoryEvent): void {
    const c = this.clients.clients[event.clientId];
    if (c === undefined) return;
    if (event.kind === 'read') {
      if (event.type === 'invoke') this.readKeys.set(event.opId, this.clients.readKey(c));
      return;
    }
    if (event.type === 'ok') {
      const r = event.result as LockResult | undefined;
      const p = c.pending;
      if (r?.type === 'acquire' && !r.acquired && p !== null && p.opId === event.opId && p.command.type === 'acquire') {
        this.servers.checks.refusalReceived(LockCallChecks.requestKey(p.command.owner, p.command.requestId), event.time);
      }
      this.clients.completed(c, event.opId, event.result, event.time);
    } else if (event.type === 'info') this.clients.unknown(c, event.opId);
  }

  nextOpDelayMs(clientId: number, now: number): number | undefined {
    const c = this.clients.clients[clientId];
    return c === undefined ? undefined : this.clients.nextDelay(c, now);
  }

  /** Every acknowledged result is the one the log produced at that index. */
  checkAck(ack: Ack): string | null {
    const r = ack.result as LockResult | null | undefined;
    if (r === null || r === undefined || typeof r !== 'object') return `[lock] write op${ack.opId} acknowledged without a lock result`;
    if (ack.index === 0) return null; // answered without a new entry (a replay, a leader's decision): lock-calls.ts judges those
    const cmd = this.commandOf(ack);
    const mine = cmd === null ? undefined : requestKeyOf(cmd);
    const entry = this.renewsAt.get(ack.index);
    if (entry !== undefined) {
      // A renew answered by a `renews` entry: one of the entry's renews is this request's (same key, owner,
      // token and ttl; copies of one request answer alike), and its answer is the one the call got.
      if (cmd?.type !== 'renew')
        return `[lock] ${cmd?.type ?? 'an unknown'} op${ack.opId} (client ${ack.clientId}) was answered with renews entry ${ack.index}`;
      const got = canonicalResult(r);
      const own = entry.renews.flatMap((x, i) =>
        x.key === cmd.key && x.owner === cmd.owner && x.token === cmd.token && x.ttlMs === cmd.ttlMs ? [entry.answers[i]!] : [],
      );
      if (own.length === 0)
        return `[lock] renew op${ack.opId} (client ${ack.clientId}) was answered with renews entry ${ack.index}, which does not carry it`;
      return own.includes(got)
        ? null
        : `[lock] renew op${ack.opId} (client ${ack.clientId}) was answered ${got}, but its renew in entry ${ack.index} answered ${own.join(' / ')}`;
    }
    // A waiting call is answered by the entry that decided its place in line (a release, an expire, a
    // dequeue, another acquire): compare with the model's decision there.
    if (mine !== undefined && cmd?.type === 'acquire' && this.requestAt.get(ack.index) !== mine) {
      const decided = this.oracle.decisionAt(ack.index, cmd.owner, cmd.requestId);
      if (decided !== undefined) {
        const got = canonicalResult(r);
        return got === decided
          ? null
          : `[lock] waiting op${ack.opId} (client ${ack.clientId}) was answered ${got}, but entry ${ack.index} decided ${decided}`;
      }
    }
    if (mine === undefined || this.requestAt.get(ack.index) !== mine) {
      return `[lock] op${ack.opId} (client ${ack.clientId}) was answered with entry ${ack.index}, which is not its request's (${this.requestAt.get(ack.index) ?? 'no client command there'})`;
    }
    // A remembered outcome the leader replays carries the index of the entry that decided it: compare the
    // outcome with that entry's, whatever the replayed flag.
    const plain = (x: string | undefined) =>
      r.type !== 'error' &&
      r.type !== 'expire' &&
      r.type !== 'termStart' &&
      r.type !== 'checkpoint' &&
      r.type !== 'forget' &&
      r.type !== 'dequeue' &&
      r.type !== 'undelay' &&
      'replayed' in r &&
      r.replayed
        ? x?.replace(/^(\w+@\d+)R\|/, '$1|')
        : x;
    const logged = plain(this.oracle.resultAt(ack.index));
    const got = plain(canonicalResult(r));
    if (logged !== got)
      return `[lock] acknowledged result ${got} of op${ack.opId} (client ${ack.clientId}) differs from what the log produced at ${ack.index}: ${logged ?? 'nothing judged there'}`;
    return null;
  }

  checkApply(): string | null {
    return this.oracle.violation === null ? null : `[lock] ${this.oracle.violation}`;
  }

  checkFinal(sm: LockReplica, acks: readonly Ack[]): string | null {
    for (const ack of acks) {
      const cmd = this.commandOf(ack);
      const r = ack.result as LockResult;
      if (cmd === null || cmd.type !== 'acquire' || r.type !== 'acquire' || !r.acquired) continue;
      const last = sm.machine.get(cmd.key).lastToken;
      if (last < r.token)
        return `[lock] final state: ${cmd.key}'s last token ${last} is below acknowledged token ${r.token} (entry ${ack.index})`;
    }
    return null;
  }

  checkHistory(): string | null {
    return this.pendingViolation();
  }

  /** The extra invariant run after every event: client-side and resource violations, replica bookkeeping. */
  readonly invariant = (sim: SimCluster): string | null => {
    this.served.note(sim);
    const v = this.pendingViolation();
    if (v !== null) return v;
    for (const n of sim.nodes) {
      if (n.up && (n.sm as LockReplica).machine.appliedIndex !== n.applied) {
        return `[lock] ${n.id}: lock machine at index ${(n.sm as LockReplica).machine.appliedIndex}, node applied ${n.applied}`;
      }
    }
    return null;
  };

  private pendingViolation(): string | null {
    if (this.violation !== null) return `[lock] ${this.violation}`;
    if (this.servers.violation !== null) return `[lock] ${this.servers.violation}`;
    if (this.servers.checks.violation !== null) return `[lock] ${this.servers.checks.violation}`;
    if (this.clients.violation !== null) return `[lock] ${this.clients.violation}`;
    if (this.resource.violation !== null) return `[lock] ${this.resource.violation}`;
    if (this.maxHold.violation !== null) return `[lock] ${this.maxHold.violation}`;
    return null;
  }

  private commandOf(ack: Ack): LockCommand | null {
    let cmd = this.ackCommands.get(ack);
    if (cmd === undefined) {
      try {
        cmd = this.module.decodeCommand(ack.data);
      } catch {
        return null;
      }
      this.ackCommands.set(ack, cmd);
    }
    return cmd;
  }

  /** One line of lock statistics for summaries. */
  summary(): string {
    const o = this.oracle.stats;
    const c = this.clients.stats;
    const r = this.resource.stats;
    const v = this.servers.stats;
    const k = this.servers.checks.stats;
    return (
      `lock: acquire ${o.acquired} ok/${o.acquireRefused} refused (${o.takeovers} takeovers of lapsed leases), renew ${o.renewed}/${o.renewRefused}, release ${o.released}/${o.releaseRefused}, ` +
      `expire ${o.expired}, replays ${o.replays}; sessions ${o.sessionsOpened} opened/${o.sessionsRenewed} renewed/${o.sessionsEnded} ended/${o.sessionRefusals} acquires refused not open; epochs ${o.epochStarts} (leases extended ${o.leasesExtended}, ended ${o.leasesEnded}, max carried ${o.maxEpochsCarried}); ` +
      `cluster level ${o.clusterLevel} (raised at entry ${o.levelRaisedAt || '-'}; ${this.profile.oldBuildNodes} node(s) started on a level-1 build); ` +
      `tightest expiry margin ${Number.isFinite(o.tightestExpiryMarginMs) ? o.tightestExpiryMarginMs.toFixed(2) + 'ms' : '-'}; ` +
      `max hold: ${this.maxHold.stats.checks} checks, tightest margin ${Number.isFinite(this.maxHold.stats.tightestMarginMs) ? this.maxHold.stats.tightestMarginMs.toFixed(2) + 'ms' : '-'}, ${this.maxHold.stats.gaps} gaps between terms (largest served part ${this.maxHold.stats.maxServedGapMs.toFixed(1)}ms); ` +
      `writes ${c.honestWrites} honest/${c.staleWrites} stale (stale refused ${r.staleRejected}, accepted ${r.staleAccepted}); pauses ${c.pauses}, lost ${c.lost}, abandons ${c.abandons}, ` +
      `stale releases ${c.staleReleases}, stale renews ${c.staleRenews}; ` +
      `service: ${v.calls} calls, ${v.forwarded} forwarded (${v.forwardsLost} lost, ${v.forwardDuplicates} duplicated, ${v.answersLost} answers lost, ${v.answeredAlreadyForwarded} met a non-leader and were answered), ${v.lateDuplicates} late duplicates, ${v.cancels} cancels, ${v.unavailable} unavailable; ` +
      `${this.stats.blockingAcquires} blocking acquires (${this.stats.shortAttempts} given up mid-wait), ${k.arrivals} arrivals at a leader, ${k.queuedGrants} queued grants, ${k.fifoChecked} FIFO checks, ${k.refusalAnswers} refusal answers (${k.leaderRefusalsOutlived} leader-decided ones outlived by a late duplicate at a new leader), ${this.stats.getsChecked} Gets checked` +
      this.limitsSummary()
    );
  }

  /** The limits the leaders admitted under, the refusals they gave, and what the limits check saw. */
  private limitsSummary(): string {
    const limits = this.profile.limits;
    if (limits === null || this.limits === null) return '';
    const set = Object.entries(limits)
      .filter(([, v]) => Number.isFinite(v))
      .map(([k, v]) => `${k} ${v}`);
    const by = Object.entries(this.servers.exhaustedBy)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`);
    const l = this.limits.stats;
    return `; limits (${set.join(', ') || 'none finite'}): ${this.servers.stats.exhausted} RESOURCE_EXHAUSTED (${by.join(', ') || '-'}), ${l.admissionsChecked} admissions checked (${l.claimsChecked} claims), ${l.entriesAtLimit} entries at a limit, ${l.entriesOverLimit} over one by ${l.softGrowth} granted by hand-offs`;
  }
}

/** Which client request an entry carries: its (owner, request_id); a session renew or close carries none,
 *  so it is known by its owner, kind and session (its retries may commit twice: both are that request); a
 *  revoke by its key and token. */
function requestKeyOf(cmd: LockCommand): string | undefined {
  if (cmd.type === 'renewSession' || cmd.type === 'closeSession')
    return LockCallChecks.requestKey(cmd.owner, `${cmd.type}#${cmd.sessionId}`);
  // A revoke is known by what it names (below cluster level 5 its entry carries no owner nor request id).
  if (cmd.type === 'revoke') return LockCallChecks.requestKey('', `revoke#${cmd.key}#${cmd.token}`);
  return 'requestId' in cmd ? LockCallChecks.requestKey(cmd.owner, cmd.requestId) : undefined;
}
