// A graceful stop: a leader first hands leadership to the most caught-up follower (so clients see one
// short election-free switch instead of an election timeout), then every part stops in dependency order,
// storage last so the deferred commit index is written. kill -9 is always safe too.
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { RaftNode } from '../../raft/node.js';
import type { LockResult } from '../../lock/types.js';

/** How long in-flight calls on our gRPC servers get before they are cut (peers keep streams to us open). */
const SERVER_DRAIN_MS = 500;
/** How often the hand-over checks whether leadership has moved. */
const HAND_OVER_POLL_MS = 10;

export interface StoppableParts {
  node: RaftNode<LockResult | null>;
  /** Stopped before the hand-over (the health reporter: we stop saying SERVING first). */
  first: Array<() => void>;
  /** How long a hand-over may take before we stop anyway. */
  handOverTimeoutMs: number;
  /** Stopped first, in this order, before the Raft node (health reports, timers, the lock service). */
  beforeNode: Array<() => void>;
  /** Stopped after the Raft node, before the servers (transport, client API). */
  afterNode: Array<() => void>;
  servers: grpc.Server[];
  /** Closed last (storage, then test faults). */
  last: Array<() => Promise<void> | void>;
  logger: Logger;
}

export async function stopNode(p: StoppableParts): Promise<void> {
  for (const stop of p.first) stop();
  if (p.node.isLeader()) await handOver(p.node, p.handOverTimeoutMs, p.logger);
  for (const stop of p.beforeNode) stop();
  await p.node.stop();
  for (const stop of p.afterNode) stop();
  await Promise.all(p.servers.map(drainServer));
  for (const close of p.last) await close();
  p.logger.info({ nodeId: p.node.id }, 'leasehold node stopped');
}

function drainServer(server: grpc.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, SERVER_DRAIN_MS);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}

/** Transfers leadership to the follower with the highest match index and waits until it took over. */
async function handOver(node: RaftNode<LockResult | null>, timeoutMs: number, logger: Logger): Promise<void> {
  let best: { id: string; match: number } | null = null;
  for (const [peer, pr] of node.progress()) {
    if (peer === node.id) continue;
    if (!best || pr.match > best.match) best = { id: peer, match: pr.match };
  }
  if (!best || !node.transferLeadership(best.id)) return;
  logger.info({ nodeId: node.id, to: best.id, term: node.term }, 'transferring leadership before shutdown');
  const deadline = Date.now() + timeoutMs;
  while (node.isLeader() && Date.now() < deadline) await new Promise((r) => setTimeout(r, HAND_OVER_POLL_MS));
}
