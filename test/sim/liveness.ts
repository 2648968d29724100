// The end of every run: heal the network, restart every node (sometimes all of them from disk), calm
// the weather and clocks, stop new client operations, and require convergence within a deadline — one
// leader, every node at the same commit/applied index and state digest. A core that deadlocks, livelocks
// or leaves a replica behind fails here. Then whole-run checks on the final state.
// With membership changes, "every node" is every MEMBER of the leader's configuration (voters and
// learners, all with that same configuration): removed nodes — restarted from their old storage like
// everyone else — and orphans (added by an entry that was later truncated) must simply not get in the
// way. Unborn spare slots take no part.
import { sameConf } from '../../src/raft/core/conf.js';
import type { Status } from '../../src/raft/core/types.js';
import type { SimCluster } from './cluster.js';
import { entryHash } from './machine.js';
import type { SimNode } from './node.js';

export class LivenessPhase {
  private quietDeadline = 0;
  private quietStart = 0;

  constructor(private readonly sim: SimCluster) {}

  enter(quietMs: number | undefined): void {
    this.sim.phase = 'quiet';
    this.sim.trace.add(this.sim.now, '', 'QUIET: heal all, restart all, calm network, nominal clocks');
    this.sim.faults.healAll();
    this.sim.loss = 0;
    this.sim.duplicate = 0;
    this.sim.spikeChance = 0;
    const fullRestart = this.sim.faults.rng.chance(0.2);
    for (let i = 0; i < this.sim.nodes.length; i++) {
      const node = this.sim.nodes[i]!;
      node.arm = null;
      node.tickMs = node.baseTickMs;
      if (!node.born) continue;
      if (this.retired(node)) continue;
      if (fullRestart && node.up) this.sim.crash(i, 'full restart before quiet phase');
      if (!node.up) this.sim.schedule(this.sim.faults.rng.float() * 20, { kind: 'restart', node: i, inc: node.incarnation });
    }
    const electionMs = (this.sim.profile.raft.electionTicks ?? 10) * this.sim.profile.tickMs;
    this.quietDeadline = this.sim.now + (quietMs ?? 150 * electionMs + 2000);
    this.quietStart = this.sim.now;
    this.sim.schedule(this.sim.profile.tickMs * 2, { kind: 'check' });
  }

  /** A node whose removal is committed, in a profile where it may disturb the cluster (membership.ts
   *  removedMayDisturb): shut down for good instead of restarted. */
  private retired(node: SimNode): boolean {
    const m = this.sim.membership;
    if (m === null || !m.removedMayDisturb || !this.sim.facts.removedCommitted.has(node.id)) return false;
    if (node.up) this.sim.crash(node.idx, 'removed member retired (Pre-Vote and CheckQuorum off)');
    return true;
  }

  check(): void {
    for (const n of this.sim.nodes) if (n.born && n.up) this.retired(n);
    const conv = this.convergence();
    if (conv === null) {
      this.sim.phase = 'done';
      this.sim.stats.convergeMs = this.sim.now - this.quietStart;
      return;
    }
    if (this.sim.now > this.quietDeadline) {
      throw this.sim.violation(
        'liveness',
        `no convergence ${(this.sim.now - this.quietStart).toFixed(0)}ms after healing everything: ${conv}`,
      );
    }
    this.sim.schedule(this.sim.profile.tickMs * 2, { kind: 'check' });
  }

  /** The members at the end: the nodes of the converged leader's configuration. */
  private members: SimNode[] = [];

  /** null when converged, else why not. */
  private convergence(): string | null {
    const sim = this.sim;
    if (sim.membership === null) for (const n of sim.nodes) if (!n.up || n.rn === null) return `${n.id} is down`;
    // The leader: the highest-term one that is a voter of its own configuration (a removed node that
    // has not yet handed over does not count).
    let leader: SimNode | null = null;
    let leaderSt: Status | null = null;
    for (const n of sim.nodes) {
      if (!n.up || n.rn === null) continue;
      const st = n.raft.status();
      if (st.role === 'leader' && st.conf.voters.includes(n.id) && (leaderSt === null || st.term > leaderSt.term)) {
        leader = n;
        leaderSt = st;
      }
    }
    if (leader === null || leaderSt === null) return 'no leader';
    const members: SimNode[] = [];
    for (const id of [...leaderSt.conf.voters, ...leaderSt.conf.learners]) {
      const i = sim.indexOf(id);
      if (i < 0) return `member ${id} of the leader's configuration is no node of this simulation`;
      members.push(sim.nodes[i]!);
    }
    for (const n of members) {
      if (!n.up || n.rn === null) return `${n.id} is down`;
      const st = n === leader ? leaderSt : n.raft.status();
      if (st.term !== leaderSt.term) return `${n.id} is in term ${st.term}, leader ${leader.id} in ${leaderSt.term}`;
      if (n !== leader && st.role !== 'follower') return `${n.id} is ${st.role}`;
      if (st.commitIndex !== leaderSt.lastIndex) return `${n.id} commit ${st.commitIndex} != leader last ${leaderSt.lastIndex}`;
      if (n.applied !== leaderSt.lastIndex) return `${n.id} applied ${n.applied} != ${leaderSt.lastIndex}`;
      if (n.inflight !== null) return `${n.id} is persisting`;
      if (!sameConf(st.conf, leaderSt.conf))
        return `${n.id} acts on configuration ${JSON.stringify(st.conf)}, the leader on ${JSON.stringify(leaderSt.conf)}`;
    }
    const d0 = leader.sm.digest();
    for (const n of members) if (n.sm.digest() !== d0) return `${n.id} digest ${String(n.sm.digest())} != leader ${String(d0)}`;
    this.members = members;
    return null;
  }

  finalChecks(): void {
    const wl = this.sim.workload;
    // The final state must hold every acknowledged write on every member (a removed node stopped
    // receiving the log when it left).
    if (wl.checkFinal) for (const n of this.members) this.sim.check(wl.checkFinal(n.sm, this.sim.clients.acks), 'workload-final', n);
    for (const n of this.sim.nodes) {
      if (!n.born) continue;
      // Every durable log agrees with the committed history up to its commit index.
      const d = n.durable;
      const upTo = Math.min(d.lastIndex(), d.hardState.commitIndex);
      for (let i = d.snapIndex + 1; i <= upTo; i++) {
        const e = d.entry(i)!;
        const t = this.sim.facts.committedTermAt(i);
        if (t !== e.term || this.sim.facts.committedHashAt(i) !== entryHash(e)) {
          this.sim.fail('state-machine-safety', n, `durable committed entry ${i}/t${e.term} differs from the committed history (t${t})`);
        }
      }
    }
    if (wl.checkHistory) this.sim.check(wl.checkHistory(this.sim.clients.history, this.sim.clients.acks), 'workload-history');
    for (const ack of this.sim.clients.acks) {
      if (ack.index !== 0 && this.sim.facts.committedTermAt(ack.index) !== ack.term) {
        throw this.sim.violation(
          'acked-durable',
          `acknowledged write op ${ack.opId} at ${ack.index}/t${ack.term} is not in the final committed log`,
        );
      }
    }
    this.sim.stats.finalCommit = this.sim.facts.maxCommitted;
  }
}
