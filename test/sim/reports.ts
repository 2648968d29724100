// The transport's "peer unreachable" reports (RaftNode.peerUnreachable -> Raft.leaderUnreachable), as the
// real one makes them (src/transport/grpc.ts: stream broken + reconnect refused), plus lies:
//  - true reports: when a node crashes, every live node that had a working link to it (neither direction
//    cut) is told, after a network delay — most of the time; a real transport can miss the signal;
//  - false reports: at random times a live node is told that its leader — alive and well — is gone (a
//    reset connection, a port briefly refusing), or that some other node is. Pre-Vote must make those
//    harmless: every safety invariant is checked after each one like after any other event.
// Own rng stream ('reports'), so the fault schedule of a seed does not depend on this file.
import type { NodeId } from '../../src/raft/core/types.js';
import type { SimCluster } from './cluster.js';
import { SimRng } from './rng.js';

/** Chance that a live node with a link to a crashed one gets the report (the rest wait out the timeout). */
const TRUE_REPORT_CHANCE = 0.9;
/** Mean virtual ms between false reports during the fault phase. */
const FALSE_REPORT_MEAN_MS = 400;

export class UnreachableReports {
  readonly rng: SimRng;

  constructor(private readonly sim: SimCluster) {
    this.rng = SimRng.derive(sim.seed, 'reports');
  }

  start(): void {
    this.scheduleFalse();
  }

  private scheduleFalse(): void {
    this.sim.schedule(this.rng.exp(FALSE_REPORT_MEAN_MS), { kind: 'false-report' });
  }

  /** Node `i` just crashed: its kernel closed its sockets; the nodes that had a link to it notice. */
  crashed(i: number): void {
    const sim = this.sim;
    const n = sim.nodes.length;
    for (const other of sim.nodes) {
      if (other.idx === i || !other.up || other.rn === null) continue;
      if (sim.blocked[i * n + other.idx] || sim.blocked[other.idx * n + i]) continue; // no link: no signal
      if (!this.rng.chance(TRUE_REPORT_CHANCE)) continue;
      const p = sim.profile;
      const delayMs = p.netDelayMinMs + this.rng.float() * (p.netDelayMaxMs - p.netDelayMinMs);
      sim.schedule(delayMs, { kind: 'unreachable', node: other.idx, inc: other.incarnation, peer: sim.nodes[i]!.id, real: true });
    }
  }

  /** A false report now: mostly about the node's live leader (the case that must not depose it). */
  onFalseTimer(): void {
    const sim = this.sim;
    if (sim.phase !== 'faults') return;
    this.scheduleFalse();
    const live = sim.nodes.filter((x) => x.up && x.rn !== null);
    if (live.length === 0) return;
    const target = live[this.rng.int(live.length)]!;
    const leaderId = target.raft.status().leaderId;
    const leaderUp = leaderId !== null && sim.nodes.some((x) => x.id === leaderId && x.up);
    let peer: NodeId;
    if (leaderUp && this.rng.chance(0.8)) peer = leaderId;
    else peer = sim.nodes[this.rng.int(sim.nodes.length)]!.id;
    if (!sim.nodes.some((x) => x.id === peer && x.up)) return; // only lies: a down peer would make it true
    sim.schedule(0, { kind: 'unreachable', node: target.idx, inc: target.incarnation, peer, real: false });
  }
}
