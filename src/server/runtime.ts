// Wires one leasehold node together: LevelDB storage, the lock machine, the Raft driver, the peer
// transport and the client API, all on one gRPC port. Also the graceful shutdown: a leader hands
// leadership to the most caught-up follower before it stops (kill -9 is always safe too).
import * as grpc from '@grpc/grpc-js';
import { pino, type Logger } from 'pino';
import type { ClusterConfig, NodeConfig } from '../config/types.js';
import { RaftNode } from '../raft/node.js';
import { realEnv, type NodeEnv } from '../raft/env.js';
import type { LockResult } from '../lock/types.js';
import { LevelStorage } from '../raft/storage/leveldb.js';
import { PeerTransport } from '../transport/grpc.js';
import { RaftClient, packageDefinition } from '../transport/proto.js';
import type { Message } from '../raft/core/types.js';
import { LockFsm } from './lock-fsm.js';
import { LockService } from './lock-service.js';
import { ClientApi } from './grpc-server.js';
import { descriptorRegistry, strictRequestDeserializers } from './strict-decode.js';

export interface RunningNode {
  id: string;
  address: string;
  node: RaftNode<LockResult | null>;
  service: LockService;
  logger: Logger;
  /** Hand over leadership if we lead, then stop. */
  shutdown(): Promise<void>;
}

export interface StartOptions {
  /** Clock, timers and rng of this node: the Raft driver and the lock service share it. Default realEnv()
   *  (a monotonic clock anchored once to the wall clock, so an NTP step cannot move stamps). */
  env?: NodeEnv;
  logger?: Logger;
}

export async function startNode(config: ClusterConfig, id: string, options: StartOptions = {}): Promise<RunningNode> {
  const self = config.nodes.find((n) => n.id === id);
  if (!self) throw new Error(`--id ${id}: no node with that id in the config (have: ${config.nodes.map((n) => n.id).join(', ')})`);
  const logger = options.logger ?? pino({ level: config.log.level, base: { pid: process.pid } });
  // One env for the driver and the lock service: realEnv()'s clock is monotonic (see env.ts), so an NTP
  // step while we lead cannot make leases look older or younger than they are.
  const env = options.env ?? realEnv();

  const storage = await LevelStorage.open(self.dataDir);
  const fsm = new LockFsm({ dedupWindowMs: config.lock.dedupWindowMs });
  const members = new Map(config.nodes.map((n: NodeConfig) => [n.id, n.address]));
  const transport = new PeerTransport({
    selfId: id,
    peers: members,
    queueLimit: config.limits.peerQueueMessages,
    maxMessageBytes: config.limits.maxMessageBytes,
    logger,
    traceMessages: logger.isLevelEnabled('debug'),
  });

  let node: RaftNode<LockResult | null> | null = null;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': config.limits.maxMessageBytes,
    'grpc.max_send_message_length': config.limits.maxMessageBytes,
  });
  // The peer stream sits behind the same strict decoder as the client services (no silently wrapped
  // varints or replaced UTF-8 in a Raft message either).
  server.addService(strictRequestDeserializers(RaftClient.service, descriptorRegistry(packageDefinition)), transport.handlers((m: Message) => node?.receive(m)));

  node = await RaftNode.start({
    id,
    voters: config.nodes.map((n) => n.id),
    storage,
    transport,
    fsm,
    tickMs: config.raft.tickMs,
    snapshotEvery: config.raft.snapshotEvery,
    raft: {
      electionTicks: config.raft.electionTicks,
      heartbeatTicks: config.raft.heartbeatTicks,
      preVote: config.raft.preVote,
      checkQuorum: config.raft.checkQuorum,
      maxInflight: config.raft.maxInflight,
      maxEntriesPerMessage: config.raft.maxEntriesPerMessage,
      maxBytesPerMessage: config.raft.maxBytesPerMessage,
      snapshotChunkBytes: config.raft.snapshotChunkBytes,
    },
    logger,
    env,
  });
  const liveNode = node;
  liveNode.on('fatal', () => {
    logger.fatal({ nodeId: id }, 'storage failed; exiting so a supervisor restarts the node from disk');
    process.exit(70);
  });

  const service = new LockService(liveNode, fsm, {
    env,
    housekeepingMs: Math.max(10, Math.floor(config.raft.tickMs / 2)),
    checkpointIdleMs: config.lock.checkpointIdleMs,
    defaultTimeoutMs: 5000,
    logger,
  });
  const api = new ClientApi({
    service,
    limits: {
      minTtlMs: config.lock.minTtlMs,
      maxTtlMs: config.lock.maxTtlMs,
      maxWaitMs: config.lock.maxWaitMs,
    },
    members,
    defaultTimeoutMs: 5000,
    logger,
  });
  api.register(server);

  await new Promise<void>((resolve, reject) => {
    server.bindAsync(self.address, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(new Error(`cannot listen on ${self.address}: ${err.message}`)) : resolve()));
  });
  logger.info({ nodeId: id, address: self.address, dataDir: self.dataDir, members: Object.fromEntries(members) }, 'leasehold node serving');

  let stopping: Promise<void> | null = null;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      if (liveNode.isLeader()) await handOver(liveNode, config.raft.tickMs * config.raft.electionTicks * 2, logger);
      api.health.setStatus('', 'NOT_SERVING');
      service.close();
      await liveNode.stop();
      transport.close();
      api.close();
      // Peers keep their streams to us open; give in-flight calls a moment, then close the rest.
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 500);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await storage.close();
      logger.info({ nodeId: id }, 'leasehold node stopped');
    })();
    return stopping;
  };

  return { id, address: self.address, node: liveNode, service, logger, shutdown };
}

/** Transfer leadership to the most caught-up follower and wait (bounded) until it takes over. */
async function handOver(node: RaftNode<LockResult | null>, timeoutMs: number, logger: Logger): Promise<void> {
  let best: { id: string; match: number } | null = null;
  for (const [peer, pr] of node.progress()) {
    if (peer === node.id) continue;
    if (!best || pr.match > best.match) best = { id: peer, match: pr.match };
  }
  if (!best || !node.transferLeadership(best.id)) return;
  logger.info({ nodeId: node.id, to: best.id, term: node.term }, 'transferring leadership before shutdown');
  const deadline = Date.now() + timeoutMs;
  while (node.isLeader() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}
