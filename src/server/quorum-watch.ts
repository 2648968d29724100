// Says so, at a steady rate, while this node knows no leader: a lone node, or one cut off from the others,
// would otherwise log `pre-candidate` once and then nothing. The warning names the peers it cannot reach.
import { quorumOf } from '../raft/core/quorum.js';
import type { NodeId, Status } from '../raft/core/types.js';
import type { NodeEnv, TimerHandle } from '../raft/env.js';
import type { NodeLogger } from '../raft/logger.js';

export interface QuorumWatchOptions {
  env: NodeEnv;
  logger: NodeLogger;
  /** The longest election timeout: a follower waits a random [1, 2) × electionTicks × tickMs. */
  maxElectionTimeoutMs: number;
  status(): Status;
  /** Peer id -> outbound stream connected. */
  peers(): Map<NodeId, boolean>;
  /** Peer id -> address, for the message. */
  addresses: Map<NodeId, string>;
  /** Between repeated warnings; default max(5 s, 10 election timeouts). */
  repeatMs?: number;
}

export function watchQuorum(o: QuorumWatchOptions): TimerHandle {
  const firstAfterMs = 2 * o.maxElectionTimeoutMs;
  const repeatMs = o.repeatMs ?? Math.max(5000, 10 * o.maxElectionTimeoutMs);
  let noLeaderSince: number | null = null;
  let lastWarnAt: number | null = null;
  return o.env.scheduler.every(Math.max(50, Math.floor(o.maxElectionTimeoutMs / 4)), () => {
    const st = o.status();
    const now = o.env.nowMs();
    if (st.leaderId) {
      if (lastWarnAt !== null) o.logger.info({ nodeId: st.id, term: st.term, leaderId: st.leaderId, noLeaderForMs: now - (noLeaderSince ?? now) }, 'leader known again; quorum reached');
      noLeaderSince = null;
      lastWarnAt = null;
      return;
    }
    noLeaderSince ??= now;
    if (now - noLeaderSince < firstAfterMs) return;
    if (lastWarnAt !== null && now - lastWarnAt < repeatMs) return;
    lastWarnAt = now;
    const peers = o.peers();
    const others = st.voters.filter((v) => v !== st.id);
    const connected = others.filter((v) => peers.get(v) === true);
    const unreachable = others.filter((v) => peers.get(v) !== true).map((v) => `${v} (${o.addresses.get(v) ?? '?'})`);
    const votersNeeded = quorumOf(st.voters.length);
    o.logger.warn(
      { nodeId: st.id, term: st.term, role: st.role, noLeaderForMs: now - noLeaderSince, voters: st.voters.length, votersNeeded, votersReachable: connected.length + 1, unreachable },
      'no leader: this node cannot reach a quorum of voters (check that the unreachable peers run and that their addresses are reachable from here)',
    );
  });
}
