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
import type { Message } from '../../src/raft/core/types.js';
import type { SimCluster } from './cluster.js';
import type { SimNode } from './node.js';

/** What the event that touched the node was (the pre-vote rule needs it). */
export type EventCause = { kind: 'deliver'; msg: Message } | { kind: 'tick' } | { kind: 'other' };

interface CoreLog {
  term(index: number): number | undefined;
}

/** The term of entry `index` in the core's in-memory log. Reaches into the core (or the core a planted
 *  bug wraps) and fails loudly if the field was renamed, rather than silently checking nothing. */
function coreLogTerm(node: SimNode, index: number): number | undefined {
  let c = node.raft as unknown as { log?: CoreLog; inner?: unknown };
  for (let depth = 0; depth < 3 && c.log === undefined && c.inner !== undefined; depth++) c = c.inner as typeof c;
  if (c.log === undefined || typeof c.log.term !== 'function') throw new Error('node-checks needs the core\'s log.term(i): update test/sim/node-checks.ts');
  return c.log.term(index);
}

export function quorumOf(sim: SimCluster): number {
  return Math.floor(sim.nodes.length / 2) + 1;
}

/** How many nodes hold (index, term) on their durable log (or have compacted past it). */
function durableCopies(sim: SimCluster, index: number, term: number): number {
  let n = 0;
  for (const x of sim.nodes) {
    const d = x.durable;
    if (index < d.snapIndex || (index === d.snapIndex && d.snapshot.meta.term === term) || (index > d.snapIndex && d.term(index) === term)) n++;
  }
  return n;
}

/** The longest a correct node may take to act on a lost quorum: several election timeouts at the
 *  slowest tick rate the 'clock' fault can give it, plus the longest network delay. */
function leadershipWindowMs(sim: SimCluster, node: SimNode): number {
  const electionTicks = sim.profile.raft.electionTicks ?? 10;
  return 3 * electionTicks * 2 * node.baseTickMs + sim.profile.netDelayMaxMs + sim.profile.spikeMaxMs;
}

function peersHeardSince(node: SimNode, heard: number[], since: number): number {
  let n = 0;
  for (let j = 0; j < heard.length; j++) if (j !== node.idx && heard[j]! >= since) n++;
  return n;
}

export function afterNodeEvent(sim: SimCluster, node: SimNode, cause: EventCause): void {
  if (!node.up || node.rn === null) return;
  const st = node.raft.status();
  const q = quorumOf(sim);
  if (st.term < node.lastTerm) sim.fail('term-monotonic', node, `term went back from ${node.lastTerm} to ${st.term}`);
  if (st.commitIndex < node.lastCommit) sim.fail('commit-monotonic', node, `commitIndex went back from ${node.lastCommit} to ${st.commitIndex}`);
  if (st.term > node.lastTerm && sim.profile.raft.preVote) {
    const m = cause.kind === 'deliver' ? cause.msg : null;
    const prospective = m !== null && ((m.type === 'RequestVote' && m.preVote) || (m.type === 'RequestVoteResponse' && m.preVote && m.granted));
    const learned = m !== null && m.term >= st.term && !prospective;
    const transfer = m !== null && m.type === 'TimeoutNow';
    if (!learned && !transfer) {
      const since = sim.now - leadershipWindowMs(sim, node);
      const heard = peersHeardSince(node, node.heardAt, since);
      if (heard < q - 1) {
        sim.fail('pre-vote', node, `raised its term ${node.lastTerm} -> ${st.term} on a ${cause.kind === 'deliver' ? `${m!.type}${'preVote' in m! && m!.preVote ? ' (pre-vote)' : ''}` : cause.kind} while it had heard from only ${heard} peer(s) in the last ${(sim.now - since).toFixed(0)}ms (a quorum needs ${q - 1}): Pre-Vote must keep a node that cannot win from raising its term`);
      }
    }
  }
  if (st.commitIndex > node.lastCommit) {
    const t = coreLogTerm(node, st.commitIndex);
    if (st.role === 'leader' && st.term === node.lastTerm && t !== st.term) {
      sim.fail('commit-rule', node, `leader of term ${st.term} advanced its commitIndex to ${st.commitIndex}, whose entry ${t === undefined ? 'is not in its log' : `is from term ${t}`} (§5.4.2)`);
    }
    if (t !== undefined) {
      const copies = durableCopies(sim, st.commitIndex, t);
      if (copies < q) {
        sim.fail('commit-durable-quorum', node, `commitIndex rose to ${st.commitIndex}/t${t} with only ${copies} durable copies (a quorum is ${q}): a power loss would erase a committed entry`);
      }
    }
  }
  if (st.role === 'leader') {
    if (node.leaderSince < 0 || st.term !== node.lastTerm) node.leaderSince = sim.now;
    sim.check(sim.facts.noteLeader(st.term, node.id), 'election-safety', node);
    if (sim.profile.raft.checkQuorum) {
      const w = leadershipWindowMs(sim, node);
      if (sim.now - node.leaderSince > w) {
        const heard = peersHeardSince(node, node.heardInTermAt, sim.now - w);
        if (heard < q - 1) {
          sim.fail('check-quorum', node, `still leader of term ${st.term} although it heard from only ${heard} peer(s) in its term during the last ${w.toFixed(0)}ms (a quorum needs ${q - 1}): CheckQuorum must step it down`);
        }
      }
    }
  } else {
    node.leaderSince = -1;
  }
  const driverApplied = node.rn.status().appliedIndex;
  if (driverApplied !== node.applied) sim.fail('applied-index', node, `the driver reports appliedIndex ${driverApplied}, the state machine applied ${node.applied}`);
  node.lastTerm = st.term;
  node.lastCommit = st.commitIndex;
  if (st.term > sim.stats.maxTerm) sim.stats.maxTerm = st.term;
}
