// A scripted lock cluster for deterministic scenario tests (lock-scenarios.test.ts): the same simulated
// cluster of real Raft cores, lock replicas, leader duties, oracle and invariants as the seeded runs, but
// with a calm network, no nemesis and no random clients. The test decides everything: when time passes,
// which node crashes, which link is cut, which requests are sent, to which node, and which answers are
// lost. Clients follow the SPEC's client rules (ACTIVE / LOST / RELEASED, a deadline from the SEND time).
import type { LockCommand, LockResult, LockView } from '../../src/lock/index.js';
import { SimCluster, SimViolation, type SimNode, type SimProfile } from './cluster.js';
import { ClockModel, lockProfileFor, type LinearClock, type LockProfile } from './lock-clock.js';
import { realLockModule, type LockModule } from './lock-module.js';
import type { SimFencedResource } from './lock-resource.js';
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

/** A request in flight: where it was proposed. */
export interface Sent {
  node: SimNode;
  index: number;
  term: number;
}

export class LockScenario {
  readonly sim: SimCluster;
  readonly workload: LockWorkload;
  readonly resource: SimFencedResource;
  private readonly stepOnce: () => void;
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
      housekeeping: true,
      housekeepingEveryTicks: 1,
      checkpointRule: 'one-in-flight',
      readRatio: 0,
      ...opts.lockProfile,
    });
    this.workload = new LockWorkload(opts.module ?? realLockModule, seed, lockProfile);
    this.workload.keepResults = true;
    this.resource = this.workload.resource;
    const profile: Partial<SimProfile> = {
      nodeCount: nodes,
      clients: 0,
      raft: { electionTicks: 10, heartbeatTicks: 1, preVote: true, checkQuorum: true, maxInflight: 64, maxEntriesPerMessage: 64, maxBytesPerMessage: 1 << 20, snapshotChunkBytes: 1 << 20 },
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
    this.sim = new SimCluster({ seed, events: Infinity, workload: this.workload, invariants: [this.workload.invariant], profile, liveness: false });
    const clock = new ClockModel(seed, nodes, 0, 0, 0);
    for (let i = 0; i < nodes; i++) clock.nodes[i] = opts.nodeClocks?.[i] ?? { offsetMs: 1_000_000, rate: 1 };
    this.workload.attach(this.sim, clock);
    // The harness loop is private to SimCluster (run() drives it for seeded runs); scenarios step it.
    const step = (this.sim as unknown as { step?: () => void }).step;
    if (typeof step !== 'function') throw new Error('SimCluster.step() not found: update test/sim/lock-harness.ts');
    this.stepOnce = step.bind(this.sim);
    for (let i = 0; i < nodes; i++) this.sim.boot(i);
  }

  get now(): number {
    return this.sim.now;
  }

  /** Process events until `done()` holds (checked before each event); fail after `withinMs` of virtual time. */
  runUntil(done: () => boolean, what: string, withinMs = 5_000): void {
    const deadline = this.sim.now + withinMs;
    while (!done()) {
      if (this.sim.now > deadline) throw new Error(`scenario: ${what} did not happen within ${withinMs}ms (t=${this.sim.now.toFixed(1)})\n${this.sim.trace.tail(30).join('\n')}`);
      this.step();
    }
  }

  /** Let `ms` of virtual time pass (ticks, heartbeats, housekeeping all run). */
  advance(ms: number): void {
    const target = this.sim.now + ms;
    // A marker event at the target time (a heal of an epoch that never exists is a no-op).
    this.sim.schedule(ms, { kind: 'heal', epoch: -1 });
    while (this.sim.now < target) this.step();
  }

  private step(): void {
    try {
      this.stepOnce();
    } catch (e) {
      if (e instanceof SimViolation) throw new Error(`scenario broke an invariant: ${e.invariant}\n${e.message}`);
      throw e;
    }
  }

  /** The leader that has applied its termStart (ready to stamp commands), waiting for one if needed. */
  readyLeader(withinMs = 5_000): SimNode {
    let found: SimNode | null = null;
    this.runUntil(() => (found = this.currentReadyLeader()) !== null, 'a ready leader', withinMs);
    return found!;
  }

  currentReadyLeader(): SimNode | null {
    for (const n of this.sim.nodes) {
      if (!n.up) continue;
      const st = n.raft.status();
      if (st.role === 'leader' && (n.sm as LockReplica).readyTerm === st.term) return n;
    }
    return null;
  }

  /** Make node i the leader (leadership transfer), and wait until it is ready. */
  makeLeader(i: number): SimNode {
    const target = this.sim.nodes[i]!;
    for (let attempt = 0; attempt < 5; attempt++) {
      const leader = this.readyLeader();
      if (leader === target) return leader;
      leader.raft.transferLeadership(target.id);
      this.sim.touched(leader);
      this.advance(200);
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

  /** Propose a client command at `via` (default: the ready leader), as the lock service would. */
  send(cmd: LockCommand, via?: SimNode): Sent {
    const node = via ?? this.readyLeader();
    const data = this.workload.prepareProposal(this.workload.module.encodeCommand(cmd), { node: node.id, nodeNow: 0, term: node.raft.status().term });
    if (data === null) throw new Error(`scenario: ${node.id} is not ready to take commands`);
    const r = node.raft.propose(data);
    if (!r.ok) throw new Error(`scenario: ${node.id} refused the proposal (${r.reason})`);
    this.sim.touched(node);
    return { node, index: r.index, term: r.term };
  }

  /** Wait for a sent request's answer (the result the proposing node's lock machine produced). */
  answer(sent: Sent, withinMs = 5_000): LockResult {
    const rep = () => sent.node.sm as LockReplica;
    this.runUntil(() => !sent.node.up || sent.node.applied >= sent.index, `entry ${sent.index} applying on ${sent.node.id}`, withinMs);
    if (!sent.node.up) throw new Error(`scenario: ${sent.node.id} crashed before answering entry ${sent.index}`);
    if (this.sim.facts.committedTermAt(sent.index) !== sent.term) throw new Error(`scenario: entry ${sent.index}/t${sent.term} was overwritten (the request must be retried)`);
    const result = rep().results!.get(sent.index);
    if (result === undefined) throw new Error(`scenario: no result kept for entry ${sent.index}`);
    return result;
  }

  request(cmd: LockCommand, via?: SimNode): LockResult {
    return this.answer(this.send(cmd, via));
  }

  newRequestId(): string {
    return `req-${this.nextRequest++}`;
  }

  /** Linearizable Get as the lock service serves it: the ready leader, caught up, judged at its clock. */
  get(key: string): LockView {
    const leader = this.readyLeader();
    const target = leader.raft.status().commitIndex;
    this.runUntil(() => leader.applied >= target, 'the leader applying its commit index');
    const m = (leader.sm as LockReplica).machine;
    const v = m.get(key);
    const now = Math.max(m.nowMs, this.workload.clock.nodeStamp(leader.idx, this.sim.now));
    if (v.held && v.expiresAtMs <= now) return { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken };
    return v.held ? { ...v, ttlMs: v.expiresAtMs - now } : v;
  }

  /** The lock as the current ready leader sees it right now (no waiting; null without a ready leader). */
  peek(key: string): LockView | null {
    const leader = this.currentReadyLeader();
    if (leader === null) return null;
    const m = (leader.sm as LockReplica).machine;
    const v = m.get(key);
    const now = Math.max(m.nowMs, this.workload.clock.nodeStamp(leader.idx, this.sim.now));
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

  leaseCount(): number {
    return (this.readyLeader().sm as LockReplica).machine.leaseCount;
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

  acquire(key: string, ttlMs: number, requestId?: string, via?: SimNode): Extract<LockResult, { type: 'acquire' }> {
    const sentAt = this.scn.now;
    return this.onAcquire(this.scn.request(this.acquireCommand(key, ttlMs, requestId), via), key, ttlMs, sentAt) as Extract<LockResult, { type: 'acquire' }>;
  }

  renew(requestId = this.scn.newRequestId(), token = this.token): Extract<LockResult, { type: 'renew' }> {
    const sentAt = this.scn.now;
    const r = this.scn.request({ type: 'renew', timeMs: 0, key: this.key, owner: this.owner, token, ttlMs: this.ttlMs, requestId });
    if (r.type !== 'renew') throw new Error(`expected a renew result, got ${r.type}`);
    if (token === this.token) {
      if (r.renewed && this.state === 'ACTIVE') this.deadline = sentAt + this.ttlMs - Math.ceil(this.ttlMs * 0.02);
      else if (!r.renewed) this.stateValue = 'LOST'; // LOST is final for this handle
    }
    return r;
  }

  release(requestId = this.scn.newRequestId(), token = this.token, key = this.key): Extract<LockResult, { type: 'release' }> {
    if (token === this.token && this.state !== 'LOST') this.stateValue = 'RELEASED';
    const r = this.scn.request({ type: 'release', timeMs: 0, key, owner: this.owner, token, requestId });
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
