// When (in true time) the lock cluster could write into its log — what the max-hold check (lock-max-hold.ts)
// may NOT excuse. A dead holder's lease is ended by time the log observed (LEASES.md "Liveness"); time in
// which no leader could commit anything is observed by nobody and is excused. "Served" at an instant:
// some node is a READY lock leader (its termStart applied: it stamps, expires and checkpoints), not handing
// its leadership over (a leader transferring refuses every proposal until the transfer ends), that
//  - heard in its term from a quorum of its voters within the last heartbeat round trip (a cut-off or
//    deposed leader that does not know it yet cannot commit), and
//  - has nothing of its own log older than one commit round uncommitted (a leader stuck behind a follower
//    it must catch up first — tiny messages, one in flight, lost appends — commits nothing meanwhile).
// Both windows are generous on purpose: an instant wrongly called unserved only loosens the bound.
import type { SimCluster } from './cluster.js';
import type { SimNode } from './node.js';

interface Flip {
  at: number;
  /** Unserved time accumulated up to `at`. */
  cum: number;
  /** The state from `at` on. */
  served: boolean;
}

export class ServedTimeline {
  private readonly flips: Flip[] = [{ at: 0, cum: 0, served: false }];
  /** Per node index: (true time, last index) each time its log grew while it led. */
  private readonly appended = new Map<number, { at: number; index: number }[]>();
  /** A node counts as served only while its lock service is ready: the workload says which. */
  constructor(private readonly isReadyLeader: (node: SimNode) => boolean) {}

  /** After every event: is the cluster served from now on? */
  note(sim: SimCluster): void {
    const served = this.servedNow(sim);
    const last = this.flips[this.flips.length - 1]!;
    if (served === last.served) return;
    this.flips.push({ at: sim.now, cum: last.cum + (last.served ? 0 : sim.now - last.at), served });
  }

  /** Unserved true time in [a, b]. */
  unservedBetween(a: number, b: number): number {
    return b <= a ? 0 : this.unservedUntil(b) - this.unservedUntil(a);
  }

  private unservedUntil(t: number): number {
    let lo = 0;
    let hi = this.flips.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.flips[mid]!.at <= t) lo = mid;
      else hi = mid - 1;
    }
    const f = this.flips[lo]!;
    return f.cum + (f.served ? 0 : t - f.at);
  }

  private servedNow(sim: SimCluster): boolean {
    const p = sim.profile;
    let served = false;
    for (const node of sim.nodes) {
      if (!node.up || node.rn === null) {
        this.appended.delete(node.idx);
        continue;
      }
      // The core's scalars (basic()), not status(): this runs for every node after every event, and status()
      // copies the configuration (6 % of a lock seed's time); only a leader that may serve needs its voters.
      const st = node.raft.inspect().basic();
      if (st.role !== 'leader') {
        this.appended.delete(node.idx);
        continue;
      }
      // Its log's growth while leading, to know what has waited longer than one commit round.
      let log = this.appended.get(node.idx);
      if (log === undefined) this.appended.set(node.idx, (log = []));
      if (log.length === 0 || log[log.length - 1]!.index < st.lastIndex) log.push({ at: sim.now, index: st.lastIndex });
      // A leader handing its leadership over (leadTransferee) refuses every proposal until the transfer ends.
      if (served || !this.isReadyLeader(node) || st.leadTransferee !== null) continue;
      const voters = node.raft.status().conf.voters;
      const slow = node.tickMs / node.baseTickMs;
      const heartbeatMs = (p.raft.heartbeatTicks ?? 1) * node.baseTickMs * Math.max(1, slow);
      const roundTripMs = heartbeatMs + 2 * p.netDelayMaxMs;
      const commitRoundMs = roundTripMs + p.diskMaxMs;
      let heard = 0;
      for (const id of voters) {
        const j = sim.indexOf(id);
        if (j >= 0 && j !== node.idx && node.heardInTermAt[j]! >= sim.now - roundTripMs) heard++;
      }
      const need = Math.floor(voters.length / 2) + 1 - (voters.includes(node.id) ? 1 : 0);
      if (heard < need) continue;
      // The newest index appended at least one commit round ago must be committed.
      while (log.length > 1 && log[1]!.at <= sim.now - commitRoundMs) log.shift();
      const due = log[0]!.at <= sim.now - commitRoundMs ? log[0]!.index : 0;
      if (st.commitIndex >= due) served = true;
    }
    return served;
  }
}
