// The chaos run's nemesis: one fault at a time, chosen by a seeded RNG, each undone before the next one
// (so the schedule of faults replays from the seed; the interleaving with real processes does not).
//
//   kill-leader / kill-node     kill -9, then restart from the node's LevelDB directory after a while
//   kill-majority               kill -9 a majority (no quorum), then restart them
//   restart-all                 kill -9 every node, then start them all again (SPEC scenario 8)
//   pause-leader / pause-node   SIGSTOP for longer than an election timeout, then SIGCONT
//   partition-node              clients cannot reach one node (its proxies black-hole); nodes still talk
//   isolate-client              one client cannot reach any node, for longer than its leases
//   hold-client                 one client's traffic is held, then delivered late and all at once
//   slow-node                   every client's traffic to one node is delayed
import type { TestCluster } from '../integration/harness.js';
import type { FaultProxy } from '../e2e/proxy.js';
import type { SimRng } from '../sim/rng.js';
import { sleep } from './workload.js';

export const FAULT_KINDS = [
  'kill-leader',
  'kill-node',
  'kill-majority',
  'restart-all',
  'pause-leader',
  'pause-node',
  'partition-node',
  'isolate-client',
  'hold-client',
  'slow-node',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

const WEIGHTS: Record<FaultKind, number> = {
  'kill-leader': 3,
  'kill-node': 2,
  'kill-majority': 0.5,
  'restart-all': 0.5,
  'pause-leader': 2,
  'pause-node': 1.5,
  'partition-node': 2,
  'isolate-client': 2,
  'hold-client': 1.5,
  'slow-node': 1,
};

export interface FaultRecord {
  kind: FaultKind;
  targets: string[];
  startMs: number;
  endMs: number | null;
}

export interface NemesisOptions {
  cluster: TestCluster;
  /** worker id -> node id -> the proxy that worker uses to reach that node. */
  proxies: Map<string, Map<string, FaultProxy>>;
  rng: SimRng;
  now: () => number;
  log: (msg: string) => void;
  /** Longest lease the workers take (isolations outlast it). */
  maxTtlMs: number;
  kinds?: readonly FaultKind[];
}

export class Nemesis {
  readonly faults: FaultRecord[] = [];
  private readonly paused = new Set<string>();

  constructor(private readonly o: NemesisOptions) {}

  async run(stop: AbortSignal): Promise<void> {
    const kinds = this.o.kinds ?? FAULT_KINDS;
    const total = kinds.reduce((s, k) => s + WEIGHTS[k], 0);
    await sleep(this.o.rng.range(300, 1200), stop);
    while (!stop.aborted) {
      let x = this.o.rng.float() * total;
      const kind = kinds.find((k) => (x -= WEIGHTS[k]) < 0) ?? kinds[kinds.length - 1]!;
      await this.inject(kind, stop);
      await sleep(this.o.rng.range(500, 2500), stop);
    }
  }

  /** Undo everything: resume paused nodes, start dead ones, open every proxy. */
  async heal(): Promise<void> {
    for (const id of this.paused) this.signal(id, 'SIGCONT');
    this.paused.clear();
    for (const id of this.o.cluster.ids) if (!this.o.cluster.procs.has(id)) this.start(id);
    for (const byNode of this.o.proxies.values()) {
      for (const p of byNode.values()) {
        p.delay = { up: 0, down: 0 };
        if (p.mode !== 'pass') p.setMode('pass');
      }
    }
    for (const f of this.faults) if (f.endMs === null) f.endMs = this.o.now();
  }

  private async inject(kind: FaultKind, stop: AbortSignal): Promise<void> {
    const { cluster, rng } = this.o;
    // A fault's own duration is not cut short by `stop`: heal() undoes whatever is still in place.
    const hold = (lo: number, hi: number) => sleep(rng.range(lo, hi), stop);
    const running = () => cluster.ids.filter((id) => cluster.procs.has(id));
    switch (kind) {
      case 'kill-leader':
      case 'kill-node': {
        const target = kind === 'kill-leader' ? await this.leader() : rng.pick(running());
        if (!target) return;
        const f = this.begin(kind, [target]);
        await cluster.kill(target, 'SIGKILL');
        await hold(300, 3000);
        this.start(target);
        return this.end(f);
      }
      case 'kill-majority': {
        const victims = rng.shuffle([...running()]).slice(0, Math.floor(cluster.ids.length / 2) + 1);
        const f = this.begin(kind, victims);
        for (const id of victims) await cluster.kill(id, 'SIGKILL');
        await hold(500, 2500);
        for (const id of victims) this.start(id);
        return this.end(f);
      }
      case 'restart-all': {
        const f = this.begin(kind, [...cluster.ids]);
        for (const id of running()) await cluster.kill(id, 'SIGKILL');
        await hold(200, 1500);
        for (const id of cluster.ids) this.start(id);
        return this.end(f);
      }
      case 'pause-leader':
      case 'pause-node': {
        const target = kind === 'pause-leader' ? await this.leader() : rng.pick(running());
        if (!target) return;
        const f = this.begin(kind, [target]);
        this.signal(target, 'SIGSTOP');
        this.paused.add(target);
        await hold(800, 4000);
        this.signal(target, 'SIGCONT');
        this.paused.delete(target);
        return this.end(f);
      }
      case 'partition-node':
      case 'slow-node': {
        const target = rng.pick(cluster.ids);
        const f = this.begin(kind, [target]);
        const delay = rng.range(50, 400);
        for (const byNode of this.o.proxies.values()) {
          const p = byNode.get(target)!;
          if (kind === 'partition-node') p.setMode('block');
          else p.delay = { up: delay, down: delay };
        }
        await hold(1000, 4000);
        for (const byNode of this.o.proxies.values()) {
          const p = byNode.get(target)!;
          if (kind === 'partition-node') p.setMode('pass');
          else p.delay = { up: 0, down: 0 };
        }
        return this.end(f);
      }
      case 'isolate-client':
      case 'hold-client': {
        const worker = rng.pick([...this.o.proxies.keys()]);
        const f = this.begin(kind, [worker]);
        const proxies = [...this.o.proxies.get(worker)!.values()];
        for (const p of proxies) p.setMode(kind === 'isolate-client' ? 'block' : 'hold');
        if (kind === 'isolate-client') await hold(this.o.maxTtlMs, this.o.maxTtlMs * 2);
        else await hold(300, 2000);
        for (const p of proxies) p.setMode('pass');
        return this.end(f);
      }
    }
  }

  private begin(kind: FaultKind, targets: string[]): FaultRecord {
    const f: FaultRecord = { kind, targets, startMs: this.o.now(), endMs: null };
    this.faults.push(f);
    this.o.log(`nemesis: ${kind} ${targets.join(',')}`);
    return f;
  }

  private end(f: FaultRecord): void {
    f.endMs = this.o.now();
    this.o.log(`nemesis: healed ${f.kind} ${f.targets.join(',')} after ${Math.round(f.endMs - f.startMs)} ms`);
  }

  private start(id: string): void {
    this.o.cluster.start(id);
    this.o.log(`node ${id} started pid ${this.o.cluster.procs.get(id)?.pid}`);
  }

  private signal(id: string, sig: 'SIGSTOP' | 'SIGCONT'): void {
    const pid = this.o.cluster.procs.get(id)?.pid;
    if (pid === undefined) return;
    try {
      process.kill(pid, sig);
    } catch {
      // gone already
    }
  }

  /** The current leader among the running, unpaused nodes (by their own Status), or a random running node. */
  private async leader(): Promise<string | undefined> {
    const { cluster, rng } = this.o;
    const up = cluster.ids.filter((id) => cluster.procs.has(id) && !this.paused.has(id));
    const sts = await Promise.all(up.map((id) => cluster.status(id, 500).catch(() => null)));
    let best: { id: string; term: bigint } | null = null;
    for (const s of sts) if (s && s.role === 'LEADER' && (!best || BigInt(s.term) > best.term)) best = { id: s.node_id, term: BigInt(s.term) };
    return best?.id ?? (up.length ? rng.pick(up) : undefined);
  }
}
