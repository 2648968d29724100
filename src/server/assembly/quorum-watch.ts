// Says so, at a steady rate, while this node knows no leader: a lone node, or one cut off from the others,
// would otherwise log `pre-candidate` once and then nothing. The warning names the peers it cannot reach.
import { quorumOf } from '../../raft/core/quorum.js';
import type { NodeId, Status } from '../../raft/core/types.js';
import type { NodeEnv, TimerHandle } from '../../raft/env.js';
import type { NodeLogger } from '../../raft/logger.js';

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

/** No leader for this many election timeouts is more than an election in progress: warn. */
const WARN_AFTER_ELECTION_TIMEOUTS = 2;
/** Then repeat the warning at most this often (in election timeouts, and never more than every 5 s):
 *  a cluster without quorum must not flood its log. */
const REPEAT_ELECTION_TIMEOUTS = 10;
const REPEAT_AT_LEAST_MS = 5000;
/** Look four times per election timeout, but not more than every 50 ms. */
const LOOKS_PER_ELECTION_TIMEOUT = 4;
const LOOK_AT_MOST_EVERY_MS = 50;

export function watchQuorum(o: QuorumWatchOptions): TimerHandle {
  const firstAfterMs = WARN_AFTER_ELECTION_TIMEOUTS * o.maxElectionTimeoutMs;
  const repeatMs = o.repeatMs ?? Math.max(REPEAT_AT_LEAST_MS, REPEAT_ELECTION_TIMEOUTS * o.maxElectionTimeoutMs);
  let noLeaderSince: number | null = null;
  let lastWarnAt: number | null = null;
  return o.env.scheduler.every(Math.max(LOOK_AT_MOST_EVERY_MS, Math.floor(o.maxElectionTimeoutMs / LOOKS_PER_ELECTION_TIMEOUT)), () => {
    const st = o.status();
    const now = o.env.nowMs();
    if (st.leaderId) {
      if (lastWarnAt !== null)
        o.logger.info(
          { nodeId: st.id, term: st.term, leaderId: st.leaderId, noLeaderForMs: now - (noLeaderSince ?? now) },
          'leader known again; quorum reached',
        );
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
      {
        nodeId: st.id,
        term: st.term,
        role: st.role,
        noLeaderForMs: now - noLeaderSince,
        voters: st.voters.length,
        votersNeeded,
        votersReachable: connected.length + 1,
        unreachable,
      },
      'no leader: this node cannot reach a quorum of voters (check that the unreachable peers run and that their addresses are reachable from here)',
    );
  });
}
