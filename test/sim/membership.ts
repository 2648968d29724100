// The membership nemesis (SimOptions.membership): an operator changing the cluster at random moments,
// interleaved with every fault of faults.ts. Each attempt asks whoever the simulation thinks leads
// (SimCluster.currentLeader: the highest-term live leader) for ONE change through the real driver
// (RaftNode.proposeConfChange), exactly as the gRPC service will:
//  - add a learner: a spare slot's brand-new id (ids are never reused, so the slots bound the adds);
//    once a leader has accepted (appended) the change, that slot's node is started as a real RaftNode
//    with `join: true` over blank storage — it knows no configuration and waits for the leader;
//  - promote a learner; remove a member, a voter (the current leader too) or a learner;
//  - now and then re-add an id removed earlier, which must be refused (ids are never reused);
//  - bursts (a second change right after the first, while it is pending) and eager attempts right after
//    an election (before the new leader committed an entry of its term): the moments where the two
//    rules of single-server changes (src/raft/core/conf.ts) are what keeps the cluster safe.
// Refusals (not leader, a change pending, leader not ready, invalid) are expected and counted. A
// removed node is left running, or crashed — and the nemesis's ordinary restarts bring it back from its
// old storage, where it must not disturb the cluster. Bounds: 3..5 voters, at most 2 learners (by the
// leader's current configuration).
import type { ConfChange, ConfState } from '../../src/raft/core/types.js';
import { ConfChangeRefusedError, NotLeaderError } from '../../src/raft/errors.js';
import type { SimCluster } from './cluster.js';
import type { SimNode } from './node.js';
import { SimRng } from './rng.js';

const MIN_VOTERS = 3;
const MAX_VOTERS = 5;
const MAX_LEARNERS = 2;

type Action = 'add' | 'promote' | 'remove-voter' | 'remove-learner' | 'reuse-id';

export class MembershipNemesis {
  readonly rng: SimRng;
  /** The next spare slot an accepted addition takes. */
  private nextSpare: number;
  /** How attempts ended, for the summary: accepted, refused:<why>, committed, lost:<why>. */
  readonly outcomes = new Map<string, number>();

  /**
   * With Pre-Vote AND CheckQuorum both off, a removed node restarted from a log that predates its removal
   * CAN disturb the cluster, and the core says so by design: leader stickiness (thesis §4.2.3, ignore a
   * RequestVote while hearing from a leader) is tied to CheckQuorum (raft.ts, step). Members that have
   * not yet received its removal still count it a voter, take its ever higher terms, and depose leaders
   * in turn — in the quiet phase that livelocks a lagging member's snapshot transfer (seed 639). Such
   * profiles still get every membership change and removed nodes during the fault phase (safety must
   * hold); only the final phase retires nodes whose removal is committed instead of restarting them.
   */
  readonly removedMayDisturb: boolean;

  constructor(private readonly sim: SimCluster) {
    this.rng = SimRng.derive(sim.seed, 'membership');
    this.nextSpare = sim.initialIds.length;
    this.removedMayDisturb = !sim.profile.raft.preVote && !sim.profile.raft.checkQuorum;
  }

  start(): void {
    this.scheduleNext();
  }

  private scheduleNext(): void {
    this.sim.schedule(this.rng.exp(this.sim.profile.memberMeanMs), { kind: 'member' });
  }

  onEvent(): void {
    if (this.sim.phase !== 'faults') return;
    this.scheduleNext();
    this.attempt(this.sim.currentLeader(), 'timer');
  }

  /** A node just became leader: an eager operator may ask it for a change at once (rule 2 of conf.ts
   *  must make it wait for an entry of its term to commit). */
  onElected(node: SimNode): void {
    if (this.sim.phase !== 'faults' || !this.rng.chance(0.3)) return;
    const inc = node.incarnation;
    this.sim.later(this.rng.float() * 2, () => {
      if (this.sim.phase !== 'faults' || !node.up || node.incarnation !== inc || node.rn === null) return;
      if (node.raft.status().role === 'leader') this.attempt(node, 'eager');
    });
  }

  private count(what: string): void {
    this.outcomes.set(what, (this.outcomes.get(what) ?? 0) + 1);
  }

  private attempt(leader: SimNode | null, why: string): void {
    if (leader === null || leader.rn === null) {
      this.count('refused:no-leader');
      return;
    }
    this.sim.touched(leader);
    this.proposeOne(leader, why);
    // A burst: the operator fires a second command before the first committed (rule 1: one at a time).
    if (this.rng.chance(0.3)) this.proposeOne(leader, `${why}, burst`);
  }

  private pickAction(conf: ConfState): Action | null {
    const options: [Action, number][] = [];
    if (conf.learners.length < MAX_LEARNERS && this.nextSpare < this.sim.nodes.length) options.push(['add', 3]);
    if (conf.learners.length > 0 && conf.voters.length < MAX_VOTERS) options.push(['promote', 3]);
    if (conf.voters.length > MIN_VOTERS) options.push(['remove-voter', 2]);
    if (conf.learners.length > 0) options.push(['remove-learner', 1]);
    if (conf.removed.length > 0) options.push(['reuse-id', 0.3]);
    const total = options.reduce((s, [, w]) => s + w, 0);
    let x = this.rng.float() * total;
    for (const [a, w] of options) {
      x -= w;
      if (x < 0) return a;
    }
    return null;
  }

  private proposeOne(leader: SimNode, why: string): void {
    const sim = this.sim;
    const rn = leader.rn;
    if (rn === null || !leader.up) return;
    const st = leader.raft.status();
    const action = this.pickAction(st.conf);
    if (action === null) return;
    const r = this.rng;
    let change: ConfChange;
    let joiner: SimNode | null = null;
    switch (action) {
      case 'add':
        joiner = sim.nodes[this.nextSpare]!;
        change = { type: 'add', id: joiner.id, address: `sim://${joiner.id}`, learner: true };
        break;
      case 'promote':
        change = { type: 'promote', id: r.pick(st.conf.learners) };
        break;
      case 'remove-voter': {
        // The leader itself a third of the time: it must hand over and step down once its removal commits.
        const id = r.chance(0.33) ? leader.id : r.pick(st.conf.voters);
        change = { type: 'remove', id };
        break;
      }
      case 'remove-learner':
        change = { type: 'remove', id: r.pick(st.conf.learners) };
        break;
      case 'reuse-id': {
        const id = r.pick(st.conf.removed);
        change = { type: 'add', id, address: `sim://${id}`, learner: r.chance(0.5) };
        break;
      }
    }
    sim.stats.confProposed++;
    const before = st.lastIndex;
    const p = rn.proposeConfChange(change, sim.profile.clientTimeoutMs);
    // The core decides at once: the change was accepted iff the leader's log grew.
    const accepted = leader.raft.status().lastIndex > before;
    sim.trace.add(sim.now, leader.id, `CONF ${accepted ? 'proposed' : 'refused'} (${why})`, change);
    p.then(
      () => this.count('committed'),
      (err: unknown) => {
        if (accepted) this.count(`lost:${(err as Error)?.name ?? 'error'}`);
        else if (err instanceof ConfChangeRefusedError) this.count(`refused:${err.kind}`);
        else if (err instanceof NotLeaderError) this.count('refused:not-leader');
        else this.count(`refused:${(err as Error)?.name ?? 'error'}`);
      },
    );
    if (!accepted) {
      sim.stats.confRefused++;
      return;
    }
    sim.stats.confAccepted++;
    this.count('accepted');
    if (action === 'reuse-id')
      sim.fail('id-reused', leader, `accepted ${JSON.stringify(change)}: ${change.id} was removed earlier and node ids are never reused`);
    if (joiner !== null) {
      // The id is taken for good now, even if this entry is later truncated away (the node then runs
      // as an orphan nobody contacts; it is not a member and takes no part in convergence).
      this.nextSpare++;
      joiner.born = true;
      const idx = joiner.idx;
      sim.later(r.float() * 30, () => sim.join(idx));
    }
    if (change.type === 'remove' && r.chance(0.5)) {
      // Decommission the removed node a little later (the ordinary restarts may bring it back from its
      // old storage); otherwise it is left running.
      const node = sim.nodes[sim.indexOf(change.id)]!;
      sim.later(r.exp(100), () => {
        if (sim.phase === 'faults' && node.up) sim.crash(node.idx, 'removed member decommissioned');
      });
    }
  }

  summary(): string {
    const parts = [...this.outcomes.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([k, v]) => `${k} ${v}`);
    return `membership: ${this.sim.stats.confProposed} changes proposed (${parts.join(', ')}), ${this.sim.stats.joins} nodes joined`;
  }
}
