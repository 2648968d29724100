// The lock workload: the real LockMachine (or a SIM_LOCK scratch copy) as the replicated state machine of
// the simulated cluster, the lock service's leader duties, the simulated clients and the fenced resource.
//
// Leader duties mirror src/server/lock-service.ts, per node process (state lost on a crash, kept across
// snapshot installs, as in LockService):
//  - on election (and on any tick/request while not yet ready) propose termStart, stamped by the new
//    leader's clock; the leader is READY for its term only once that entry applied on it (readyTerm);
//  - ensureLeaderReady: a client command reaching a leader that is not ready is refused (the client
//    retries) — so no client command is ever stamped by a leader before its termStart applied;
//  - housekeeping on every tick while ready: propose `expire` for machine.expiredLeases(its clock),
//    remembering what is in flight (cleared when the expire applies, or on a new term), and a `checkpoint`
//    when leases exist and nothing was proposed for checkpointIdleMs.
// Not mirrored: FIFO waiters (simulated clients use wait_ms 0 and retry themselves).
//
// Every command is stamped with the proposing leader's OWN clock (ClockModel: offset + drift), never the
// simulation time; the true time of each stamp is recorded for the oracle (lock-invariants.ts).
import type { Entry } from '../../src/raft/core/types.js';
import type { LockCommand, LockResult } from '../../src/lock/index.js';
import type { SimCluster } from './cluster.js';
import { LockClients } from './lock-clients.js';
import { ClockModel, type LockProfile } from './lock-clock.js';
import { canonicalResult, captureState, LockOracle, type StampWindow } from './lock-invariants.js';
import type { LockMachineLike, LockModule, SimLockMachineOptions } from './lock-module.js';
import { SimFencedResource } from './lock-resource.js';
import type { StateMachine } from './machine.js';
import type { SimNode } from './node.js';
import { SimRng } from './rng.js';
import type { Ack, HistoryEvent, ProposeContext, ReadServe, SimWorkload, WriteContext } from './workload.js';

/** One node's lock state machine plus the per-process leader state of its LockService. */
export class LockReplica implements StateMachine {
  machine: LockMachineLike;
  /** Term whose termStart this node proposed and has applied: only then may it stamp commands. */
  readyTerm = -1;
  termStartInFlight = -1;
  /** The term these leader fields belong to (a new term clears the in-flight expiries). */
  leaderTerm = -1;
  readonly expiring = new Set<string>();
  lastProposalAt = 0;
  ticksSinceHousekeeping = 0;
  /** Index of this leader's last checkpoint (the 'one-in-flight' rule waits for it to apply). */
  checkpointIndex = 0;
  /** Results by index, kept only in scenario tests (they read their answers here). */
  readonly results: Map<number, LockResult> | null;
  private digestValue: string | null = null;
  private nodeIdx = -1;

  constructor(private readonly wl: LockWorkload) {
    this.machine = new wl.module.LockMachine(this.options());
    this.results = wl.keepResults ? new Map() : null;
  }

  /** Index of the simulated node this replica belongs to (found once: node.sm is this object). */
  get nodeIndex(): number {
    if (this.nodeIdx < 0) this.nodeIdx = this.wl.sim.nodes.findIndex((n) => n.sm === this);
    return this.nodeIdx;
  }

  private options(): SimLockMachineOptions {
    // nodeClock: unused by the real machine; lets a scratch copy plant "deadline from the node's clock".
    return { dedupWindowMs: this.wl.profile.dedupWindowMs, nodeClock: () => this.wl.clock.nodeStamp(this.nodeIndex, this.wl.sim.now) };
  }

  apply(entry: Entry): unknown {
    const oracle = this.wl.oracle;
    if (entry.index > oracle.next) oracle.fail(`oracle: entry ${entry.index} applied before entry ${oracle.next} was judged anywhere`);
    this.digestValue = null;
    if (entry.kind !== 'normal') {
      this.machine.skip(entry.index);
      oracle.passNonCommand(entry.index);
      return null;
    }
    const judge = entry.index === oracle.next;
    const keys = this.wl.profile.keys;
    const pre = judge ? captureState(this.machine, keys) : null;
    const result = this.machine.apply(entry.index, entry.term, entry.data);
    let cmd: LockCommand | null = null;
    try {
      cmd = this.wl.module.decodeCommand(entry.data);
    } catch {
      cmd = null;
    }
    if (judge) {
      oracle.judge(entry, cmd, result, pre!, captureState(this.machine, keys), this.wl.stampOf(entry.term, entry.data));
      // Formatted only if a trace is printed: the command and what the machine made of it.
      this.wl.sim.trace.add(this.wl.sim.now, this.wl.sim.nodes[this.nodeIndex]?.id ?? '', `lock ${entry.index}/t${entry.term}`, cmd ?? 'undecodable', result);
    }
    // LockService: the applied listener forgets an expire in flight; the termStart promise makes it ready.
    if (cmd?.type === 'expire') this.expiring.delete(`${cmd.key}#${cmd.token}`);
    if (cmd?.type === 'termStart' && result.type === 'termStart' && entry.term === this.termStartInFlight) this.readyTerm = entry.term;
    this.results?.set(entry.index, result);
    return result;
  }

  snapshot(): Uint8Array {
    return this.machine.snapshot();
  }

  restore(data: Uint8Array): void {
    const M = this.wl.module.LockMachine;
    this.machine = data.length === 0 ? new M(this.options()) : M.restore(data, this.options());
    this.digestValue = null;
  }

  /** Every 8th index the full snapshot fingerprint; in between a cheap summary of the visible state. */
  digest(): string {
    if (this.digestValue === null) {
      const m = this.machine;
      if (m.appliedIndex % 8 === 0) {
        this.digestValue = m.digest();
      } else {
        let s = `${m.appliedIndex}|${m.nowMs}|${m.epochTerm}|${m.epochStartMs}|${m.leaseCount}|${m.dedupSize}`;
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
  readonly oracle: LockOracle;
  readonly resource = new SimFencedResource();
  readonly clients: LockClients;
  readonly stats = { termStarts: 0, expiresProposed: 0, checkpoints: 0, notReadyRefusals: 0 };
  /** Scenario tests read results from replicas. */
  keepResults = false;
  violation: string | null = null;
  private readonly stamps = new Map<string, StampWindow>();
  private readonly readKeys = new Map<number, string>();
  private readonly ackCommands = new WeakMap<Ack, LockCommand>();

  constructor(
    readonly module: LockModule,
    readonly seed: number,
    readonly profile: LockProfile,
  ) {
    this.readRatio = profile.readRatio;
    this.oracle = new LockOracle(profile.keys, profile.maxDrift, profile.dedupWindowMs, profile.oracleChecksExtension);
    this.clients = new LockClients(profile, SimRng.derive(seed, 'lock-clients'), () => this.clock, this.resource, (tag, detail) => this.sim.trace.add(this.sim.now, '', tag, detail));
  }

  /** Bind to the cluster before it runs (clocks need its node count). */
  attach(sim: SimCluster, clock?: ClockModel): void {
    this.sim = sim;
    this.clock = clock ?? new ClockModel(this.seed, sim.nodes.length, this.profile.clients, this.profile.maxDrift, this.profile.nodeOffsetSpreadMs);
  }

  createStateMachine(): LockReplica {
    return new LockReplica(this);
  }

  // ------------------------------------------------------------------ stamping and leader duties

  /** Stamp `cmd` with node i's clock now and remember the true time of that stamp. */
  stampCommand(i: number, term: number, cmd: LockCommand): Uint8Array {
    const bytes = this.module.encodeCommand({ ...cmd, timeMs: this.clock.nodeStamp(i, this.sim.now) } as LockCommand);
    const key = stampKey(term, bytes);
    const w = this.stamps.get(key);
    if (w === undefined) this.stamps.set(key, { min: this.sim.now, max: this.sim.now, node: this.sim.nodes[i]!.id });
    else w.max = this.sim.now;
    return bytes;
  }

  stampOf(term: number, data: Uint8Array): StampWindow | undefined {
    return this.stamps.get(stampKey(term, data));
  }

  /** LockService.ensureLeaderReady for a client command: stamp it, or refuse while not ready. */
  prepareProposal(data: Uint8Array, ctx: ProposeContext): Uint8Array | null {
    const node = this.sim.nodes[this.sim.indexOf(ctx.node)]!;
    const st = node.raft.status();
    if (st.role !== 'leader') return data; // refused by raft as not-leader: the client is redirected
    const rep = node.sm as LockReplica;
    if (rep.readyTerm !== st.term) {
      this.stats.notReadyRefusals++;
      this.ensureTermStart(node, rep, st.term);
      return null;
    }
    const cmd = this.module.decodeCommand(data);
    const stamped = this.stampCommand(node.idx, st.term, cmd);
    rep.lastProposalAt = this.clock.nodeStamp(node.idx, this.sim.now);
    return stamped;
  }

  /** termStart on election; housekeeping on ticks. Proposes directly, to see refusals as LockService does. */
  leaderProposals(ctx: ProposeContext & { reason: 'elected' | 'tick'; sm: LockReplica }): Uint8Array[] {
    const node = this.sim.nodes[this.sim.indexOf(ctx.node)]!;
    const rep = ctx.sm;
    if (rep.leaderTerm !== ctx.term) {
      rep.leaderTerm = ctx.term;
      rep.expiring.clear();
      rep.checkpointIndex = 0;
    }
    this.ensureTermStart(node, rep, ctx.term);
    if (ctx.reason === 'tick' && this.profile.housekeeping && ++rep.ticksSinceHousekeeping >= this.profile.housekeepingEveryTicks) {
      rep.ticksSinceHousekeeping = 0;
      this.housekeeping(node, rep, ctx.term);
    }
    return [];
  }

  private ensureTermStart(node: SimNode, rep: LockReplica, term: number): void {
    if (rep.readyTerm === term || rep.termStartInFlight === term) return;
    rep.termStartInFlight = term;
    if (this.propose(node, term, { type: 'termStart', timeMs: 0 }) > 0) this.stats.termStarts++;
    else rep.termStartInFlight = -1; // LockService: a rejected proposal lets the next attempt retry
  }

  /** LockService.leaderHousekeeping. */
  housekeeping(node: SimNode, rep: LockReplica, term: number): void {
    if (rep.readyTerm !== term) return;
    const now = this.clock.nodeStamp(node.idx, this.sim.now);
    for (const due of rep.machine.expiredLeases(now, 256)) {
      const id = `${due.key}#${due.token}`;
      if (rep.expiring.has(id)) continue;
      rep.expiring.add(id);
      rep.lastProposalAt = now;
      if (this.propose(node, term, { type: 'expire', timeMs: 0, key: due.key, token: due.token }) > 0) this.stats.expiresProposed++;
      else rep.expiring.delete(id);
    }
    const gated = this.profile.checkpointRule === 'one-in-flight' && rep.checkpointIndex > rep.machine.appliedIndex;
    if (rep.machine.hasLiveLeases() && now - rep.lastProposalAt >= this.profile.checkpointIdleMs && !gated) {
      rep.lastProposalAt = now;
      const index = this.propose(node, term, { type: 'checkpoint', timeMs: 0 });
      if (index > 0) {
        this.stats.checkpoints++;
        rep.checkpointIndex = index;
      }
    }
  }

  /** Propose at the leader; the entry's index, or 0 when refused. */
  private propose(node: SimNode, term: number, cmd: LockCommand): number {
    const data = this.stampCommand(node.idx, term, cmd);
    const r = node.raft.propose(data);
    if (!r.ok) return 0;
    this.sim.trace.add(this.sim.now, node.id, `lock propose ${cmd.type}`, `${r.index}/t${r.term}${'key' in cmd ? ` ${cmd.key}` : ''}${'token' in cmd ? `#${cmd.token}` : ''}`);
    return r.index;
  }

  // ------------------------------------------------------------------ clients

  nextWrite(ctx: WriteContext): Uint8Array {
    const c = this.clients.clients[ctx.clientId]!;
    return this.module.encodeCommand(this.clients.nextCommand(c, ctx.opId, ctx.now));
  }

  observe(event: HistoryEvent): void {
    const c = this.clients.clients[event.clientId];
    if (c === undefined) return;
    if (event.kind === 'read') {
      if (event.type === 'invoke') this.readKeys.set(event.opId, this.clients.readKey(c));
      return;
    }
    if (event.type === 'ok') this.clients.completed(c, event.opId, event.result, event.time);
    else if (event.type === 'info') this.clients.unknown(c, event.opId);
  }

  nextOpDelayMs(clientId: number, now: number): number | undefined {
    const c = this.clients.clients[clientId];
    return c === undefined ? undefined : this.clients.nextDelay(c, now);
  }

  /** Get as the lock service serves it after a ReadIndex: judged at max(log time, the serving node's clock). */
  readValue(sm: LockReplica, read: ReadServe): unknown {
    const key = this.readKeys.get(read.opId) ?? this.profile.keys[0]!;
    const v = sm.machine.get(key);
    const now = Math.max(sm.machine.nowMs, this.clock.nodeStamp(this.sim.indexOf(read.node), this.sim.now));
    return v.held && v.expiresAtMs > now ? `${key}:${v.owner}#${v.token}` : `${key}:free(last ${v.lastToken})`;
  }

  /** Linearizable Get: it reflects every acquire and release acknowledged before it was invoked. */
  checkRead(sm: LockReplica, read: ReadServe, ackedBefore: readonly Ack[]): string | null {
    const key = this.readKeys.get(read.opId) ?? this.profile.keys[0]!;
    const v = sm.machine.get(key);
    for (const ack of ackedBefore) {
      const cmd = this.commandOf(ack);
      if (cmd === null || !('key' in cmd) || cmd.key !== key) continue;
      const r = ack.result as LockResult;
      if (r.type === 'acquire' && r.acquired && v.lastToken < r.token) {
        return `[lock] stale Get: read op${read.opId} at ${read.node} sees ${key} with last token ${v.lastToken}, but token ${r.token} was acknowledged (entry ${ack.index}) before the read began`;
      }
      if (r.type === 'release' && r.released && cmd.type === 'release' && v.held && v.token === cmd.token) {
        return `[lock] stale Get: read op${read.opId} at ${read.node} shows ${key} held with token ${cmd.token}, whose release was acknowledged (entry ${ack.index}) before the read began`;
      }
    }
    return null;
  }

  /** Every acknowledged result is the one the log produced at that index. */
  checkAck(ack: Ack): string | null {
    const r = ack.result as LockResult | null | undefined;
    if (r === null || r === undefined || typeof r !== 'object') return `[lock] write op${ack.opId} acknowledged without a lock result`;
    const logged = this.oracle.resultAt(ack.index);
    const got = canonicalResult(r);
    if (logged !== got) return `[lock] acknowledged result ${got} of op${ack.opId} (client ${ack.clientId}) differs from what the log produced at ${ack.index}: ${logged ?? 'nothing judged there'}`;
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
      if (last < r.token) return `[lock] final state: ${cmd.key}'s last token ${last} is below acknowledged token ${r.token} (entry ${ack.index})`;
    }
    return null;
  }

  checkHistory(): string | null {
    return this.pendingViolation();
  }

  /** The extra invariant run after every event: client-side and resource violations, replica bookkeeping. */
  readonly invariant = (sim: SimCluster): string | null => {
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
    if (this.clients.violation !== null) return `[lock] ${this.clients.violation}`;
    if (this.resource.violation !== null) return `[lock] ${this.resource.violation}`;
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
    return (
      `lock: acquire ${o.acquired} ok/${o.acquireRefused} refused (${o.takeovers} takeovers of lapsed leases), renew ${o.renewed}/${o.renewRefused}, release ${o.released}/${o.releaseRefused}, ` +
      `expire ${o.expired}, replays ${o.replays}; epochs ${o.epochStarts} (leases extended ${o.leasesExtended}, ended ${o.leasesEnded}, max carried ${o.maxEpochsCarried}); ` +
      `tightest expiry margin ${Number.isFinite(o.tightestExpiryMarginMs) ? o.tightestExpiryMarginMs.toFixed(2) + 'ms' : '-'}; ` +
      `writes ${c.honestWrites} honest/${c.staleWrites} stale (stale refused ${r.staleRejected}, accepted ${r.staleAccepted}); pauses ${c.pauses}, lost ${c.lost}, abandons ${c.abandons}, ` +
      `stale releases ${c.staleReleases}, stale renews ${c.staleRenews}; leader: ${this.stats.termStarts} termStarts, ${this.stats.expiresProposed} expires, ${this.stats.checkpoints} checkpoints, ${this.stats.notReadyRefusals} not-ready refusals`
    );
  }
}

function stampKey(term: number, bytes: Uint8Array): string {
  return `${term}:${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')}`;
}
