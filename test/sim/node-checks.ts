// Invariants checked on a node after every event that touched it (the driver's loop, a delivery, a
// tick, a client call): what can be read off its core and the durable stores at that instant.
//  - term-monotonic, commit-monotonic, election-safety, applied-index;
//  - commit-rule (§5.4.2): a leader's commit index only moves onto an entry of its own term;
//  - commit-durable-quorum: whenever any node's commit index rises to c, the entry at c is on the
//    DURABLE log of a quorum. (Not "on the leader's disk": the leader sends its AppendEntries before its
//    own write, thesis §10.2.1, and with 5 nodes three followers may commit an entry the leader has not
//    written yet. What may never happen is a commit counted on copies that a power loss would erase.)
//  - check-quorum: with CheckQuorum on, a leader that heard nothing in its term from a quorum for a
//    window of several election timeouts is no longer leader;
//  - pre-vote: with Pre-Vote on, a node raises its term only (a) on learning a higher term from a
//    message, (b) on a leadership-transfer TimeoutNow, or (c) after hearing from a quorum recently —
//    so a node that cannot reach a quorum never raises its term (and never disrupts the cluster).
// With runtime membership (membership.ts) a quorum is a majority of the VOTERS of a configuration
// (learners count toward nothing), and the configuration is the node's own (latest in its log,
// "applied when appended"). Membership adds:
//  - conf-one-pending: a leader's log never holds two uncommitted configuration entries (rule 1 of
//    single-server changes, src/raft/core/conf.ts);
//  - conf-after-term-commit: a leader appends a configuration entry only once an entry of its own term
//    is committed (rule 2, the 2015 single-server bug);
//  - non-voter-campaign: a node that is not a voter of its own configuration (a learner, a joining
//    node, a removed node that knows it) never becomes (pre-)candidate nor leader;
//  - removed-leader: a node never becomes leader once its removal is committed;
//  - removed-disturbs: a node never raises its term on a message from a sender whose removal it knows
//    committed — a removed node that restarts with an old log cannot depose anyone. (A sender that is
//    merely unknown may be a member added by an entry this node has not received yet, thesis §4.1; an
//    uncommitted removal may be truncated by the very node it names.)
import type { ConfAt } from '../../src/raft/core/inspect.js';
import type { ConfState, Message, NodeId } from '../../src/raft/core/types.js';
import type { SimCluster } from './cluster.js';
import type { SimNode } from './node.js';

/** What the event that touched the node was (the pre-vote rule needs it). */
export type EventCause = { kind: 'deliver'; msg: Message } | { kind: 'tick' } | { kind: 'other' };

/** The term of entry `index` in the core's in-memory log (its read-only inspection, inspect.ts). */
function coreLogTerm(node: SimNode, index: number): number | undefined {
  return node.raft.inspect().termAt(index);
}

/** The ids whose removal `node` knows committed: the removed list of the configuration in force at its
 *  commit index (removals accumulate in ConfState.removed). */
export function committedRemovals(node: SimNode): NodeId[] {
  const core = node.raft.inspect();
  return core.configurationAt(core.basic().commitIndex).removed; // not status(): this runs before every delivery
}

/** A majority of a configuration's voters. */
function majority(conf: ConfState): number {
  return Math.floor(conf.voters.length / 2) + 1;
}

/** How many VOTERS of `conf` hold (index, term) on their durable log (or have compacted past it). A
 *  learner's copy counts toward nothing. */
function durableCopies(sim: SimCluster, index: number, term: number, conf: ConfState): number {
  let n = 0;
  for (const id of conf.voters) {
    const i = sim.indexOf(id);
    if (i < 0) continue;
    const d = sim.nodes[i]!.durable;
    if (index < d.snapIndex || (index === d.snapIndex && d.snapshot.meta.term === term) || (index > d.snapIndex && d.term(index) === term))
      n++;
  }
  return n;
}

/** The configuration in force at `index` in a log (its configurations, oldest first: the snapshot's, then
 *  one per configuration entry), and the later ones. A joining node's empty configuration at index 0
 *  stands for the bootstrap configuration it never saw. */
function confsFrom(sim: SimCluster, confs: readonly ConfAt[], index: number): ConfState[] {
  let k = confs.length - 1;
  while (k > 0 && confs[k]!.index > index) k--;
  const inForce = confs[k]!;
  const out = [inForce.conf.voters.length === 0 && inForce.index === 0 ? sim.bootConf : inForce.conf];
  for (let j = k + 1; j < confs.length; j++) out.push(confs[j]!.conf);
  return out;
}

/**
 * The configurations a commit of (index, term) on `node` may have been counted on. A leader counts on
 * the configuration it uses now (its latest, committed or not: applied when appended, thesis §4.1). A
 * follower learned the commit from some leader whose log holds (index, term) and so the same
 * configuration in force at `index`; that leader may have counted on a LATER configuration entry of
 * its log, which the follower may not hold yet — any configuration entry some core appended after
 * `index` in a term >= `term` (log terms never decrease).
 */
function commitConfs(sim: SimCluster, node: SimNode, index: number, term: number, asLeader: ConfState | null): ConfState[] {
  if (asLeader !== null) return [asLeader.voters.length === 0 ? sim.bootConf : asLeader];
  const out = confsFrom(sim, node.raft.inspect().configurations(), index);
  for (const e of sim.facts.confEntries.values()) if (e.index > index && e.term >= term) out.push(e.conf);
  return out;
}

/** (index, term) is durable on a majority of a configuration `node` may count it on — what a leader's
 *  commit index promises, and so what lets a leader apply an entry before its own write of it ends. */
export function durableOnQuorum(sim: SimCluster, node: SimNode, index: number, term: number): boolean {
  const st = node.raft.status();
  const confs = commitConfs(sim, node, index, term, st.role === 'leader' ? st.conf : null);
  return confs.some((c) => c.voters.length > 0 && durableCopies(sim, index, term, c) >= majority(c));
}

/** The longest a correct node may take to act on a lost quorum: several election timeouts at the
 *  slowest tick rate the 'clock' fault can give it, plus the longest network delay. */
function leadershipWindowMs(sim: SimCluster, node: SimNode): number {
  const electionTicks = sim.profile.raft.electionTicks ?? 10;
  return 3 * electionTicks * 2 * node.baseTickMs + sim.profile.netDelayMaxMs + sim.profile.spikeMaxMs;
}

/** Peers among `voters` heard from since `since`. */
function peersHeardSince(sim: SimCluster, node: SimNode, heard: number[], since: number, voters: NodeId[]): number {
  let n = 0;
  for (const id of voters) {
    const j = sim.indexOf(id);
    if (j >= 0 && j !== node.idx && heard[j]! >= since) n++;
  }
  return n;
}

/** Peers a node must hear from to act as part of a quorum of its configuration: a majority of its
 *  voters, less itself when it is one. */
function peersNeeded(conf: ConfState, self: NodeId): number {
  return majority(conf) - (conf.voters.includes(self) ? 1 : 0);
}

export function afterNodeEvent(sim: SimCluster, node: SimNode, cause: EventCause): void {
  if (!node.up || node.rn === null) return;
  const st = node.raft.status();
  const conf = st.conf;
  const votersKey = conf.voters.join(',');
  if (votersKey !== node.votersKey) {
    node.votersKey = votersKey;
    node.votersSince = sim.now;
  }
  if (st.term < node.lastTerm) sim.fail('term-monotonic', node, `term went back from ${node.lastTerm} to ${st.term}`);
  if (st.commitIndex < node.lastCommit)
    sim.fail('commit-monotonic', node, `commitIndex went back from ${node.lastCommit} to ${st.commitIndex}`);
  if (st.term > node.lastTerm && sim.profile.raft.preVote) {
    const m = cause.kind === 'deliver' ? cause.msg : null;
    const prospective =
      m !== null && ((m.type === 'RequestVote' && m.preVote) || (m.type === 'RequestVoteResponse' && m.preVote && m.granted));
    const learned = m !== null && m.term >= st.term && !prospective;
    const transfer = m !== null && m.type === 'TimeoutNow';
    if (!learned && !transfer) {
      const since = sim.now - leadershipWindowMs(sim, node);
      const heard = peersHeardSince(sim, node, node.heardAt, since, conf.voters);
      const need = peersNeeded(conf, node.id);
      if (heard < need) {
        sim.fail(
          'pre-vote',
          node,
          `raised its term ${node.lastTerm} -> ${st.term} on a ${cause.kind === 'deliver' ? `${m!.type}${'preVote' in m! && m!.preVote ? ' (pre-vote)' : ''}` : cause.kind} while it had heard from only ${heard} voter(s) in the last ${(sim.now - since).toFixed(0)}ms (a quorum needs ${need}): Pre-Vote must keep a node that cannot win from raising its term`,
        );
      }
    }
  }
  if (st.commitIndex > node.lastCommit) {
    const t = coreLogTerm(node, st.commitIndex);
    if (st.role === 'leader' && st.term === node.lastTerm && t !== st.term) {
      sim.fail(
        'commit-rule',
        node,
        `leader of term ${st.term} advanced its commitIndex to ${st.commitIndex}, whose entry ${t === undefined ? 'is not in its log' : `is from term ${t}`} (§5.4.2)`,
      );
    }
    if (t !== undefined) {
      const asLeader = st.role === 'leader' && st.term === node.lastTerm ? conf : null;
      const confs = commitConfs(sim, node, st.commitIndex, t, asLeader);
      let ok = false;
      for (const c of confs) if (c.voters.length > 0 && durableCopies(sim, st.commitIndex, t, c) >= majority(c)) ok = true;
      if (!ok) {
        const tried = confs.map(
          (c) =>
            `${durableCopies(sim, st.commitIndex, t, c)} of voters [${c.voters.join(',')}]${c.learners.length > 0 ? ` (learners [${c.learners.join(',')}] count toward nothing)` : ''}`,
        );
        sim.fail(
          'commit-durable-quorum',
          node,
          `commitIndex rose to ${st.commitIndex}/t${t} with durable copies on only ${tried.join('; ')}: no majority of a configuration's voters holds it, a power loss would erase a committed entry`,
        );
      }
      if (sim.membership !== null)
        for (const id of confsFrom(sim, node.raft.inspect().configurations(), st.commitIndex)[0]!.removed)
          sim.facts.removedCommitted.add(id);
    }
  }
  if (sim.membership !== null) membershipChecks(sim, node, st, cause);
  if (st.role === 'leader') {
    if (node.leaderSince < 0 || st.term !== node.lastTerm) {
      node.leaderSince = sim.now;
      // A new leadership: won with a quorum of its own configuration's voters, itself among them.
      if (!conf.voters.includes(node.id))
        sim.fail(
          'non-voter-campaign',
          node,
          `became leader of term ${st.term} but is not a voter of its configuration (voters [${conf.voters.join(',')}], learners [${conf.learners.join(',')}])`,
        );
      if (sim.facts.removedCommitted.has(node.id))
        sim.fail('removed-leader', node, `became leader of term ${st.term} after its removal was committed`);
    }
    sim.check(sim.facts.noteLeader(st.term, node.id), 'election-safety', node);
    if (sim.profile.raft.checkQuorum) {
      const w = leadershipWindowMs(sim, node);
      // The window starts when it became leader or when its voters last changed, whichever is later: a
      // leader that just appended a promotion of a learner it cannot reach (the membership nemesis does)
      // needs the new quorum from then on, not over the window before (it steps down at its next
      // CheckQuorum round, within an election timeout).
      if (sim.now - Math.max(node.leaderSince, node.votersSince) > w) {
        const heard = peersHeardSince(sim, node, node.heardInTermAt, sim.now - w, conf.voters);
        const need = peersNeeded(conf, node.id);
        if (heard < need) {
          sim.fail(
            'check-quorum',
            node,
            `still leader of term ${st.term} although it heard from only ${heard} voter(s) in its term during the last ${w.toFixed(0)}ms (a quorum needs ${need}): CheckQuorum must step it down`,
          );
        }
      }
    }
  } else {
    node.leaderSince = -1;
  }
  const driverApplied = node.rn.status().appliedIndex;
  if (driverApplied !== node.applied)
    sim.fail('applied-index', node, `the driver reports appliedIndex ${driverApplied}, the state machine applied ${node.applied}`);
  node.lastTerm = st.term;
  node.lastCommit = st.commitIndex;
  node.confIndexSeen = st.confIndex;
  if (st.term > sim.stats.maxTerm) sim.stats.maxTerm = st.term;
}

/** The membership rules (see the header), on the node the event touched, before its lastTerm,
 *  lastCommit and confIndexSeen move on. */
function membershipChecks(sim: SimCluster, node: SimNode, st: ReturnType<SimNode['raft']['status']>, cause: EventCause): void {
  const conf = st.conf;
  if ((st.role === 'candidate' || st.role === 'pre-candidate') && !conf.voters.includes(node.id)) {
    sim.fail(
      'non-voter-campaign',
      node,
      `is ${st.role} in term ${st.term} but not a voter of its configuration (voters [${conf.voters.join(',')}], learners [${conf.learners.join(',')}])`,
    );
  }
  if (cause.kind === 'deliver' && st.term > node.lastTerm) {
    const from = cause.msg.from;
    if (sim.removedBeforeDelivery.includes(from)) {
      sim.fail(
        'removed-disturbs',
        node,
        `raised its term ${node.lastTerm} -> ${st.term} on a ${cause.msg.type} from ${from}, whose removal it knew committed`,
      );
    }
  }
  if (st.confIndex === node.confIndexSeen) return;
  // Its configuration entries: all but the first configuration, the snapshot's.
  const entries = node.raft.inspect().configurations().slice(1);
  // Remember every configuration entry any core held: a follower's commit may have been counted on it.
  for (const e of entries) {
    const t = coreLogTerm(node, e.index);
    if (t !== undefined) sim.facts.noteConfEntry(e.index, t, e.conf);
  }
  if (st.role !== 'leader') return;
  let uncommitted = 0;
  for (const e of entries) if (e.index > st.commitIndex) uncommitted++;
  if (uncommitted > 1) {
    sim.fail(
      'conf-one-pending',
      node,
      `leader of term ${st.term} holds ${uncommitted} uncommitted configuration entries (${entries
        .filter((e) => e.index > st.commitIndex)
        .map((e) => e.index)
        .join(', ')}; commit ${st.commitIndex}): one membership change at a time`,
    );
  }
  if (st.confIndex > node.confIndexSeen && coreLogTerm(node, st.confIndex) === st.term) {
    // It appended a configuration entry in this event; its commit index before the event must have been
    // on an entry of its own term.
    const committedInTerm = st.term === node.lastTerm && coreLogTerm(node, node.lastCommit) === st.term;
    if (!committedInTerm) {
      sim.fail(
        'conf-after-term-commit',
        node,
        `leader of term ${st.term} appended configuration entry ${st.confIndex} while its commit index ${node.lastCommit} (term ${coreLogTerm(node, node.lastCommit) ?? '?'}) was not on an entry of its term`,
      );
    }
  }
}
