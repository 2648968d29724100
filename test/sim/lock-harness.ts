// A scripted lock cluster for deterministic scenario tests (lock-scenarios.test.ts): the same simulated
// cluster of real Raft nodes, lock replicas, real lock services, oracle and invariants as the seeded runs, but
// with a calm network, no nemesis and no random clients. The test decides everything: when time passes,
// which node crashes, which link is cut, which requests are sent, to which node, and which answers are
// lost. Clients follow the SPEC's client rules (ACTIVE / LOST / RELEASED, a deadline from the SEND time).
import type { LockCommand, LockResult, LockView } from '../../src/lock/index.js';
import { SimCluster, SimViolation, type SimNode, type SimProfile } from './cluster.js';
import { ClockModel, lockProfileFor, type LinearClock, type LockProfile } from './lock-clock.js';
import { realLockModule, type LockModule } from './lock-module.js';
import type { SimFencedResource } from './lock-resource.js';
import { callOf } from './lock-server.js';
import { LockWorkload, type LockReplica } from './lock-workload.js';

export interface ScenarioOptions {
  seed?: number;
  nodes?: 3 | 5;
  /** Per node clock (offset, rate); default: all in step at 1,000,000 ms. */
  nodeClocks?: LinearClock[];
  lockProfile?: Partial<LockProfile>;
  profile?: Partial<SimProfile>;
  /** The lock machine under test (default src/lock; SIM_LOCK scratch copies for planted bugs). */
  module?: LockModule;
}

/** A request in flight through a node's driver: filled in when the driver settles it. */
export interface Sent {
  node: SimNode;
  settled: boolean;
  /** The entry's index once applied (0 before). */
  index: number;
  result: LockResult | null;
  error: Error | null;
}

export class LockScenario {
  readonly sim: SimCluster;
  readonly workload: LockWorkload;
  readonly resource: SimFencedResource;
  private readonly stepOnce: () => Promise<void>;
  private nextRequest = 1;

  constructor(opts: ScenarioOptions = {}) {
    const seed = opts.seed ?? 1;
    const nodes = opts.nodes ?? 3;
    const lockProfile = lockProfileFor(seed, {
      keys: ['orders', 'invoices', 'reports'],
      clients: 0,
      maxDrift: 0,
      dedupWindowMs: 600_000,
      checkpointIdleMs: 50,
      housekeepingEveryTicks: 1,
      leaderProposalTimeoutMs: 5_000,
      waitChance: 0,
      giveUpChance: 0,
      readRatio: 0,
      // Scripted steps expect every call admitted: no limits unless a scenario sets them.
      limits: null,
      ...opts.lockProfile,
    });
    this.workload = new LockWorkload(opts.module ?? realLockModule, seed, lockProfile);
    this.workload.keepResults = true;
    this.resource = this.workload.resource;
    const profile: Partial<SimProfile> = {
      nodeCount: nodes,
      clients: 0,
      raft: {
        electionTicks: 10,
        heartbeatTicks: 1,
        preVote: true,
        checkQuorum: true,
        maxInflight: 64,
        maxEntriesPerMessage: 64,
        maxBytesPerMessage: 1 << 20,
        snapshotChunkBytes: 1 << 20,
      },
      netDelayMinMs: 0.5,
      netDelayMaxMs: 2,
      spikeChance: 0,
      loss: 0,
      duplicate: 0,
      reservoirChance: 0,
      diskMinMs: 0.1,
      diskMaxMs: 0.5,
      snapshotEvery: 1e9,
      clockSkewMs: 0,
      ...opts.profile,
    };
    this.sim = new SimCluster({
      seed,
      events: Infinity,
      workload: this.workload,
      invariants: [this.workload.invariant],
      profile,
      liveness: false,
    });
    const clock = new ClockModel(seed, nodes, 0, 0, 0);
    for (let i = 0; i < nodes; i++) clock.nodes[i] = opts.nodeClocks?.[i] ?? { offsetMs: 1_000_000, rate: 1 };
    this.workload.attach(this.sim, clock);
    this.stepOnce = () => this.sim.step();
  }

  /** Boot the nodes (their drivers load from the empty disks). */
  async start(): Promise<this> {
    await this.sim.start();
    return this;
  }

  get now(): number {
    return this.sim.now;
  }

  /** Process events until `done()` holds (checked before each event); fail after `withinMs` of virtual time. */
  async runUntil(done: () => boolean, what: string, withinMs = 5_000): Promise<void> {
    const deadline = this.sim.now + withinMs;
    while (!done()) {
      if (this.sim.now > deadline)
        throw new Error(
          `scenario: ${what} did not happen within ${withinMs}ms (t=${this.sim.now.toFixed(1)})\n${this.sim.trace.tail(30).join('\n')}`,
        );
      await this.step();
    }
  }

  /** Let `ms` of virtual time pass (ticks, heartbeats, housekeeping all run). */
  async advance(ms: number): Promise<void> {
    const target = this.sim.now + ms;
    // A marker event at the target time (a heal of an epoch that never exists is a no-op).
    this.sim.schedule(ms, { kind: 'heal', epoch: -1 });
    while (this.sim.now < target) await this.step();
  }

  private async step(): Promise<void> {
    try {
      await this.stepOnce();
    } catch (e) {
      if (e instanceof SimViolation) throw new Error(`scenario broke an invariant: ${e.invariant}\n${e.message}`);
      throw e;
    }
  }

  /** The leader that has applied its termStart (ready to stamp commands), waiting for one if needed. */
  async readyLeader(withinMs = 5_000): Promise<SimNode> {
    let found: SimNode | null = null;
    await this.runUntil(() => (found = this.currentReadyLeader()) !== null, 'a ready leader', withinMs);
    return found!;
  }

  currentReadyLeader(): SimNode | null {
    return this.workload.readyLeader();
  }

  /** Make node i the leader (leadership transfer), and wait until it is ready. */
  async makeLeader(i: number): Promise<SimNode> {
    const target = this.sim.nodes[i]!;
    for (let attempt = 0; attempt < 5; attempt++) {
      const leader = await this.readyLeader();
      if (leader === target) return leader;
      leader.rn!.transferLeadership(target.id);
      this.sim.touched(leader);
      await this.advance(200);
    }
    throw new Error(`scenario: could not make ${target.id} the leader`);
  }

  crash(node: SimNode): void {
    this.sim.crash(node.idx, 'scenario');
  }

  restart(node: SimNode): void {
    this.sim.restart(node.idx);
  }

  /** Cut every link to and from `node` (both directions). */
  isolate(node: SimNode): void {
    const n = this.sim.nodes.length;
    for (let j = 0; j < n; j++) {
      if (j === node.idx) continue;
      this.sim.blocked[node.idx * n + j] = true;
      this.sim.blocked[j * n + node.idx] = true;
    }
  }

  heal(): void {
    this.sim.faults.healAll();
  }

  /** Send a client command to the lock service of `via` (default: the ready leader). */
  async send(cmd: LockCommand, via?: SimNode): Promise<Sent> {
    const node = via ?? (await this.readyLeader());
    const service = this.workload.servers.service(node);
    if (service === null) throw new Error(`scenario: ${node.id} is down`);
    const call = callOf(cmd, 0);
    const sent: Sent = { node, settled: false, index: 0, result: null, error: null };
    const p: Promise<LockResult> =
      call.op === 'acquire'
        ? service.acquire(call, 60_000)
        : call.op === 'renew'
          ? service.renew(call, 60_000)
          : call.op === 'release'
            ? service.release(call, 60_000)
            : Promise.reject(new Error(`scenario: cannot send ${cmd.type}`));
    p.then(
      (result) => Object.assign(sent, { settled: true, index: result.index, result }),
      (error: Error) => Object.assign(sent, { settled: true, error }),
    );
    this.sim.touched(node);
    return sent;
  }

  /** Wait for a sent request's answer (the result the proposing node's lock machine produced). */
  async answer(sent: Sent, withinMs = 5_000): Promise<LockResult> {
    await this.runUntil(() => !sent.node.up || sent.settled, `the request on ${sent.node.id} applying`, withinMs);
    if (!sent.settled) throw new Error(`scenario: ${sent.node.id} crashed before answering`);
    if (sent.error !== null) throw new Error(`scenario: the request failed (${sent.error.message}); it must be retried`);
    return sent.result!;
  }

  async request(cmd: LockCommand, via?: SimNode): Promise<LockResult> {
    return this.answer(await this.send(cmd, via));
  }

  newRequestId(): string {
    return `req-${this.nextRequest++}`;
  }

  /** Linearizable Get as the lock service serves it: the ready leader, caught up, judged at its clock. */
  async get(key: string): Promise<LockView> {
    const leader = await this.readyLeader();
    const target = leader.raft.status().commitIndex;
    await this.runUntil(() => leader.applied >= target, 'the leader applying its commit index');
    const m = (leader.sm as LockReplica).machine;
    const v = m.get(key);
    const now = Math.max(m.logNowMs, this.workload.clock.nodeStamp(leader.idx, this.sim.now));
    if (v.held && v.expiresAtMs <= now) return { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken };
    return v.held ? { ...v, ttlMs: v.expiresAtMs - now } : v;
  }

  /** The lock as the current ready leader sees it right now (no waiting; null without a ready leader). */
  peek(key: string): LockView | null {
    const leader = this.currentReadyLeader();
    if (leader === null) return null;
    const m = (leader.sm as LockReplica).machine;
    const v = m.get(key);
    const now = Math.max(m.logNowMs, this.workload.clock.nodeStamp(leader.idx, this.sim.now));
    return v.held && v.expiresAtMs > now ? v : { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken };
  }

  /** Every live replica caught up with the leader and in the same state. */
  converged(): boolean {
    const leader = this.currentReadyLeader();
    if (leader === null) return false;
    const last = leader.raft.status().lastIndex;
    const digest = (leader.sm as LockReplica).machine.digest();
    return this.sim.nodes.every((n) => n.up && n.applied === last && (n.sm as LockReplica).machine.digest() === digest);
  }

  async leaseCount(): Promise<number> {
    return ((await this.readyLeader()).sm as LockReplica).machine.leaseCount;
  }

  client(owner: string): ScenarioClient {
    return new ScenarioClient(this, owner);
  }
}

export type ClientState = 'IDLE' | 'ACTIVE' | 'LOST' | 'RELEASED';

/**
 * The SPEC's client on the simulated cluster: ACTIVE only while its own deadline — the time it SENT the
 * acquire/renew plus the TTL minus a 2% margin (src/client's leaseSafetyFraction) — has not passed and no
 * renew was refused; only ACTIVE may write. Its clock is the simulation's (no drift in scenarios).
 */
export class ScenarioClient {
  key = '';
  token = 0n;
  ttlMs = 0;
  private stateValue: ClientState = 'IDLE';
  private deadline = 0;
  lastRequestId = '';

  constructor(
    private readonly scn: LockScenario,
    readonly owner: string,
  ) {}

  get state(): ClientState {
    if (this.stateValue === 'ACTIVE' && this.scn.now >= this.deadline) this.stateValue = 'LOST';
    return this.stateValue;
  }

  canWrite(): boolean {
    return this.state === 'ACTIVE';
  }

  acquireCommand(key: string, ttlMs: number, requestId = this.scn.newRequestId()): LockCommand {
    this.lastRequestId = requestId;
    return { type: 'acquire', timeMs: 0, key, owner: this.owner, ttlMs, requestId };
  }

  /** Take the answer of an acquire that was sent at `sentAt` (the client's deadline counts from there). */
  onAcquire(r: LockResult, key: string, ttlMs: number, sentAt: number): LockResult {
    if (r.type !== 'acquire') throw new Error(`expected an acquire result, got ${r.type}`);
    if (r.acquired) {
      this.key = key;
      this.token = r.token;
      this.ttlMs = ttlMs;
      this.stateValue = 'ACTIVE';
      this.deadline = sentAt + ttlMs - Math.ceil(ttlMs * 0.02);
    }
    return r;
  }

  async acquire(key: string, ttlMs: number, requestId?: string, via?: SimNode): Promise<Extract<LockResult, { type: 'acquire' }>> {
    const sentAt = this.scn.now;
    return this.onAcquire(await this.scn.request(this.acquireCommand(key, ttlMs, requestId), via), key, ttlMs, sentAt) as Extract<
      LockResult,
      { type: 'acquire' }
    >;
  }

  async renew(requestId = this.scn.newRequestId(), token = this.token): Promise<Extract<LockResult, { type: 'renew' }>> {
    const sentAt = this.scn.now;
    const r = await this.scn.request({ type: 'renew', timeMs: 0, key: this.key, owner: this.owner, token, ttlMs: this.ttlMs, requestId });
    if (r.type !== 'renew') throw new Error(`expected a renew result, got ${r.type}`);
    if (token === this.token) {
      if (r.renewed && this.state === 'ACTIVE') this.deadline = sentAt + this.ttlMs - Math.ceil(this.ttlMs * 0.02);
      else if (!r.renewed) this.stateValue = 'LOST'; // LOST is final for this handle
    }
    return r;
  }

  async release(
    requestId = this.scn.newRequestId(),
    token = this.token,
    key = this.key,
  ): Promise<Extract<LockResult, { type: 'release' }>> {
    if (token === this.token && this.state !== 'LOST') this.stateValue = 'RELEASED';
    const r = await this.scn.request({ type: 'release', timeMs: 0, key, owner: this.owner, token, requestId });
    if (r.type !== 'release') throw new Error(`expected a release result, got ${r.type}`);
    return r;
  }

  /** A write through the client: only an ACTIVE handle writes (else 'not-attempted'); the resource fences it. */
  write(): 'accepted' | 'refused' | 'not-attempted' {
    if (!this.canWrite()) return 'not-attempted';
    return this.scn.resource.write(this.key, this.token, this.owner, this.scn.now, true) ? 'accepted' : 'refused';
  }

  /** A write with the token it held before a pause, without re-checking (a GC-paused process). */
  zombieWrite(token = this.token): 'accepted' | 'refused' {
    return this.scn.resource.write(this.key, token, this.owner, this.scn.now, false) ? 'accepted' : 'refused';
  }
}
