// The nemesis: every `faultMeanMs` (exponential) it picks one fault with the seeded rng. The menu is
// aimed at the classic Raft bugs: leaders that crash after appending but before replicating (divergent
// uncommitted tails), minority leaders that keep accepting proposals behind a partition, stale,
// duplicated and reordered AppendEntries, crashes right before/after a vote is persisted, and nodes
// kept down long enough that the leader compacts past them and must send InstallSnapshot.
import type { CrashArm, CrashFilter, CrashPoint, SimCluster, SimNode } from './cluster.js';
import { SimRng } from './rng.js';

type FaultKind =
  | 'crash'
  | 'crash-leader'
  | 'restart'
  | 'arm-crash'
  | 'split'
  | 'isolate-leader'
  | 'one-way'
  | 'bridge'
  | 'heal'
  | 'weather'
  | 'replay'
  | 'transfer'
  | 'power-loss'
  | 'clock';

const MENU: [FaultKind, number][] = [
  ['crash', 3],
  ['crash-leader', 2.5],
  ['restart', 2],
  ['arm-crash', 3],
  ['split', 2],
  ['isolate-leader', 2],
  ['one-way', 1.5],
  ['bridge', 1],
  ['heal', 2],
  ['weather', 1],
  ['replay', 2],
  ['transfer', 1],
  ['power-loss', 0.25],
  ['clock', 0.5],
];
const MENU_TOTAL = MENU.reduce((s, [, w]) => s + w, 0);

export class FaultInjector {
  readonly rng: SimRng;
  private epoch = 0;

  constructor(private readonly sim: SimCluster) {
    this.rng = SimRng.derive(sim.seed, 'faults');
  }

  start(): void {
    this.scheduleNext();
  }

  private scheduleNext(): void {
    this.sim.schedule(this.rng.exp(this.sim.profile.faultMeanMs), { kind: 'fault' });
  }

  private pickKind(): FaultKind {
    let x = this.rng.float() * MENU_TOTAL;
    for (const [k, w] of MENU) {
      x -= w;
      if (x < 0) return k;
    }
    return 'heal';
  }

  /** Most of the time at most a minority is down; now and then (5%) we go past it. */
  private mayCrashAnother(): boolean {
    const n = this.born().length;
    const down = n - this.sim.upCount();
    return down < Math.floor((n - 1) / 2) || (down < n && this.rng.chance(0.05));
  }

  /** The nodes that exist (membership.ts: a spare id's slot is unborn until a leader accepted its
   *  addition); every node when membership is off. */
  private born(): SimNode[] {
    return this.sim.nodes.filter((x) => x.born);
  }

  onFault(): void {
    const sim = this.sim;
    if (sim.phase !== 'faults') return;
    if (this.rng.chance(sim.profile.calmChance)) {
      const calm = this.rng.exp(sim.profile.calmMeanMs);
      sim.trace.add(sim.now, '', 'CALM', `${calm.toFixed(0)}ms`);
      sim.schedule(calm, { kind: 'fault' });
      return;
    }
    this.scheduleNext();
    const kind = this.pickKind();
    const r = this.rng;
    const born = this.born();
    const n = born.length;
    const all = sim.nodes.length;
    const upNodes = born.filter((x) => x.up);
    const downNodes = born.filter((x) => !x.up);
    switch (kind) {
      case 'crash': {
        if (upNodes.length === 0 || !this.mayCrashAnother()) return;
        this.crashFor(r.pick(upNodes), 'nemesis');
        return;
      }
      case 'crash-leader': {
        const leader = sim.currentLeader();
        if (leader === null || !this.mayCrashAnother()) return;
        this.crashFor(leader, 'nemesis: leader');
        return;
      }
      case 'restart': {
        if (downNodes.length === 0) return;
        const node = r.pick(downNodes);
        sim.restart(node.idx);
        return;
      }
      case 'arm-crash': {
        // Crash at a precise point of the persist -> send -> apply pipeline, on the next Ready that
        // matches (a vote being persisted, entries being persisted, or any).
        const leader = sim.currentLeader();
        const target = leader !== null && r.chance(0.5) ? leader : upNodes.length > 0 ? r.pick(upNodes) : null;
        if (target === null || !this.mayCrashAnother()) return;
        const arm: CrashArm = {
          point: r.pick<CrashPoint>(['mid-persist', 'after-persist', 'after-send']),
          filter: r.pick<CrashFilter>(['any', 'vote', 'vote', 'entries', 'entries']),
        };
        target.arm = arm;
        sim.trace.add(sim.now, target.id, 'ARM crash', `${arm.point} on ${arm.filter}`);
        return;
      }
      case 'split': {
        // Symmetric majority/minority split.
        const order = r.shuffle(born.map((x) => x.idx));
        const minority = r.range(1, Math.floor((n - 1) / 2));
        this.partition([order.slice(0, minority), order.slice(minority)], 'split');
        return;
      }
      case 'isolate-leader': {
        const leader = sim.currentLeader() ?? r.pick(born);
        const rest = born.filter((x) => x !== leader).map((x) => x.idx);
        this.partition([[leader.idx], rest], `isolate ${leader.id}`);
        return;
      }
      case 'one-way': {
        // Some links drop traffic in one direction only (e.g. the leader hears followers but they never
        // hear it: they elect a new leader while the old one keeps thinking it is in charge).
        const count = r.range(1, n - 1);
        for (let k = 0; k < count; k++) {
          const a = r.int(n);
          let b = r.int(n - 1);
          if (b >= a) b++;
          sim.blocked[born[a]!.idx * all + born[b]!.idx] = true;
        }
        this.bumpEpoch('one-way cuts');
        return;
      }
      case 'bridge': {
        // Two halves that cannot talk, one node connected to both.
        const order = r.shuffle(born.map((x) => x.idx));
        const bridge = order[0]!;
        const rest = order.slice(1);
        const half = Math.ceil(rest.length / 2);
        const a = rest.slice(0, half);
        const b = rest.slice(half);
        sim.blocked.fill(false);
        for (const i of a)
          for (const j of b) {
            sim.blocked[i * all + j] = true;
            sim.blocked[j * all + i] = true;
          }
        this.bumpEpoch(`bridge n${bridge + 1} between [${a.map((i) => i + 1)}] and [${b.map((i) => i + 1)}]`);
        return;
      }
      case 'heal':
        this.healAll();
        return;
      case 'weather': {
        sim.loss = r.pick([0, 0, 0.01, 0.05, 0.2, 0.5]);
        sim.duplicate = r.pick([0, 0.02, 0.1, 0.3]);
        sim.spikeChance = r.pick([0, 0.01, 0.05, 0.2]);
        sim.trace.add(sim.now, '', 'WEATHER', `loss=${sim.loss} dup=${sim.duplicate} spikes=${sim.spikeChance}`);
        return;
      }
      case 'replay': {
        const res = sim.reservoir;
        if (res.length === 0) return;
        const count = r.range(1, Math.min(6, res.length));
        for (let k = 0; k < count; k++) {
          const m = r.pick(res);
          sim.trace.add(sim.now, '', 'REPLAY stale', m);
          sim.replay(m);
        }
        return;
      }
      case 'transfer': {
        const leader = sim.currentLeader();
        if (leader === null) return;
        const others = born.filter((x) => x !== leader);
        const to = r.pick(others);
        const ok = leader.rn!.transferLeadership(to.id);
        sim.stats.transfers++;
        sim.trace.add(sim.now, leader.id, 'TRANSFER', `to ${to.id} ${ok ? 'started' : 'refused'}`);
        sim.touched(leader);
        return;
      }
      case 'power-loss': {
        // Everyone at once (all unsynced batches lost); they come back one by one.
        sim.stats.powerLosses++;
        for (const node of upNodes) this.crashFor(node, 'power loss');
        return;
      }
      case 'clock': {
        const node = r.pick(born);
        node.tickMs = node.baseTickMs * r.pick([0.5, 0.8, 1, 1.25, 2]);
        sim.trace.add(sim.now, node.id, 'CLOCK', `tick every ${node.tickMs.toFixed(2)}ms`);
        return;
      }
    }
  }

  private crashFor(node: SimNode, why: string): void {
    this.sim.crash(node.idx, why);
    const down = 1 + this.rng.exp(this.sim.profile.downMeanMs);
    this.sim.schedule(down, { kind: 'restart', node: node.idx, inc: node.incarnation });
  }

  private partition(groups: number[][], label: string): void {
    const sim = this.sim;
    const n = sim.nodes.length;
    const groupOf = new Array<number>(n).fill(0);
    groups.forEach((g, gi) => g.forEach((i) => (groupOf[i] = gi)));
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) sim.blocked[i * n + j] = groupOf[i] !== groupOf[j];
    this.bumpEpoch(`${label}: ${groups.map((g) => '[' + g.map((i) => sim.nodes[i]!.id).join(',') + ']').join(' | ')}`);
  }

  /** A new network topology; it heals by itself after a while unless replaced first. */
  private bumpEpoch(label: string): void {
    const sim = this.sim;
    this.epoch++;
    sim.stats.partitions++;
    sim.trace.add(sim.now, '', 'PARTITION', label);
    sim.schedule(20 + this.rng.exp(sim.profile.partitionMeanMs), { kind: 'heal', epoch: this.epoch });
  }

  onHeal(epoch: number): void {
    if (epoch === this.epoch && this.sim.phase === 'faults') this.healAll();
  }

  healAll(): void {
    this.epoch++;
    this.sim.blocked.fill(false);
    this.sim.trace.add(this.sim.now, '', 'HEAL');
  }
}
