// Human-readable output: the violation report (seed, invariant, node states, replay command, trace
// tail) and the run summary printed when replaying one seed.
import type { NodeId, Status } from '../../src/raft/core/types.js';
import type { ProgressView } from '../../src/raft/core/progress.js';
import type { SimCluster } from './cluster.js';
import type { SimNode } from './node.js';
import type { RaftCore } from './types.js';

export function violationReport(sim: SimCluster, invariant: string, detail: string, traceLines: number): string {
  return [
    `simulation seed=${sim.seed} (${sim.nodes.length} nodes): invariant "${invariant}" violated at t=${sim.now.toFixed(2)}ms after ${sim.stats.events} events`,
    `  ${detail}`,
    `  profile: ${JSON.stringify(sim.profile)}`,
    '  nodes:',
    ...sim.nodes.map((n) => '    ' + describeNode(n)),
    `  replay: SEED=${sim.seed} npm run test:sim   (SIM_TRACE=full for every line)`,
    `  last ${traceLines} trace lines:`,
    ...sim.trace.tail(traceLines).map((l) => '    ' + l),
  ].join('\n');
}

export function describeNode(n: SimNode): string {
  const d = n.durable;
  const disk = `disk[t${d.hardState.term} v=${d.hardState.votedFor ?? '-'} c${d.hardState.commitIndex} snap=${d.snapIndex} last=${d.lastIndex()}]`;
  if (!n.born) return `${n.id} (spare id, never added)`;
  if (!n.up) return `${n.id} DOWN ${disk}`;
  let st: Status;
  try {
    st = n.raft.status();
  } catch {
    return `${n.id} up (status() threw) ${disk}`;
  }
  // The real core exposes the leader's per-follower progress; show it when available.
  let progress = '';
  const core = n.raft as RaftCore & { progressSnapshot?: () => Map<NodeId, ProgressView> };
  if (st.role === 'leader' && typeof core.progressSnapshot === 'function') {
    const parts: string[] = [];
    for (const [id, p] of core.progressSnapshot()) if (id !== n.id) parts.push(`${id}:${p.state}/m${p.match}/n${p.next}`);
    progress = ` progress[${parts.join(' ')}]`;
  }
  // The configuration it acts on, when it is not simply "every node a voter" (membership changes).
  const c = st.conf;
  const conf =
    c.learners.length > 0 || c.removed.length > 0 || st.confIndex > 0 || c.voters.length === 0
      ? ` conf@${st.confIndex}[v=${c.voters.join(',')} l=${c.learners.join(',')} r=${c.removed.join(',')}]`
      : '';
  return `${n.id} ${st.role} t${st.term} leader=${st.leaderId ?? '-'} commit=${st.commitIndex} applied=${n.applied} first=${st.firstIndex} last=${st.lastIndex} digest=${String(n.sm.digest())}${n.inflight ? ' persisting' : ''}${conf} ${disk}${progress}`;
}

export function runSummary(sim: SimCluster): string {
  const s = sim.stats;
  const terms = [...sim.facts.leaderOfTerm.entries()].sort((a, b) => a[0] - b[0]);
  return [
    `seed ${sim.seed}: ${sim.nodes.length} nodes, ${s.events} events (${s.faultPhaseEvents} with faults), ${sim.now.toFixed(0)} virtual ms, converged ${s.convergeMs.toFixed(0)}ms after healing`,
    `  profile: ${JSON.stringify(sim.profile)}`,
    `  leaders by term: ${terms.map(([t, id]) => `${t}:${id}`).join(' ')}`,
    `  messages: ${s.messagesSent} sent, ${s.messagesDropped} dropped, ${s.messagesDuplicated} duplicated, ${s.messagesReplayed} replayed; snapshots ${s.snapshotsSent} chunks sent, ${s.snapshotsInstalled} installed (${s.streamsInstalled} streamed, ${s.streamsOpened} streams opened, ${s.streamsRefused} refused of ${s.streamsCorrupted} corrupted), ${s.compactions} compactions`,
    `  disk: ${s.persists} persists, ${s.lostBatches} unsynced batches lost, ${s.tornWrites} writes torn, ${s.recoveries} recoveries checked; ${s.crashes} crashes (${s.armedCrashes} at armed pipeline points, ${s.powerLosses} power losses), ${s.restarts} restarts, ${s.partitions} partitions, ${s.transfers} transfers, ${s.reportsTrue}+${s.reportsFalse} true+false unreachable reports`,
    `  clients: ${s.proposals} proposals, ${s.acks} acks, ${s.readsOk} reads ok, ${s.readsFailed} reads failed; final commit index ${s.finalCommit}, max term ${s.maxTerm}`,
    ...(sim.membership !== null ? ['  ' + sim.membership.summary()] : []),
    ...sim.nodes.map((n) => '  ' + describeNode(n)),
  ].join('\n');
}
