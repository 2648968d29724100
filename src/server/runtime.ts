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
import { PeerAuthenticator } from '../transport/peer-auth.js';
import { RaftClient, packageDefinition } from '../transport/proto.js';
import type { Message } from '../raft/core/types.js';
import { LockFsm } from './lock-fsm.js';
import { LockService } from './lock-service.js';
import { ClientApi } from './grpc-server.js';
import { descriptorRegistry, strictRequestDeserializers } from './strict-decode.js';
import { NodeServerCredentials, nodeChannelCredentials, readTlsMaterial } from './tls.js';

export interface RunningNode {
  id: string;
  address: string;
  node: RaftNode<LockResult | null>;
  service: LockService;
  logger: Logger;
  /** Hand over leadership if we lead, then stop. */
  shutdown(): Promise<void>;
  /** Re-read the TLS certificate, key and CA (SIGHUP); false when the node runs without TLS. */
  reloadTls(): boolean;
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
  // Who is a member, for peer authentication and owner binding. For now the configured node list; the
  // membership work rewires this callback to the live Raft configuration.
  const isMember = (memberId: string): boolean => members.has(memberId);
  const tlsMaterial = config.tls ? readTlsMaterial(config.tls, id) : null;
  const clientCredentials = tlsMaterial ? new NodeServerCredentials(tlsMaterial, config.tls!.clientAuth === 'require') : grpc.ServerCredentials.createInsecure();
  // Peers always present a certificate, so a separate peer listener requires one at the handshake.
  const peerCredentials = tlsMaterial && self.peerAddress ? new NodeServerCredentials(tlsMaterial, true) : clientCredentials;
  const transport = new PeerTransport({
    selfId: id,
    peers: new Map(config.nodes.map((n: NodeConfig) => [n.id, n.peerAddress ?? n.address])),
    queueLimit: config.limits.peerQueueMessages,
    maxMessageBytes: config.limits.maxMessageBytes,
    logger,
    traceMessages: logger.isLevelEnabled('debug'),
    ...(tlsMaterial ? { credentials: nodeChannelCredentials(tlsMaterial), authenticator: new PeerAuthenticator({ isMember, logger, selfId: id }) } : {}),
  });

  let node: RaftNode<LockResult | null> | null = null;
  const serverOptions = {
    'grpc.max_receive_message_length': config.limits.maxMessageBytes,
    'grpc.max_send_message_length': config.limits.maxMessageBytes,
  };
  const server = new grpc.Server(serverOptions);
  // With peerAddress the Raft service is served only there, and `address` serves clients only.
  const peerServer = self.peerAddress ? new grpc.Server(serverOptions) : server;
  // The peer stream sits behind the same strict decoder as the client services (no silently wrapped
  // varints or replaced UTF-8 in a Raft message either).
  peerServer.addService(strictRequestDeserializers(RaftClient.service, descriptorRegistry(packageDefinition)), transport.handlers((m: Message) => node?.receive(m)));

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
    limits: {
      maxWaitersPerKey: config.limits.maxWaitersPerKey,
      maxWaiters: config.limits.maxWaiters,
      maxHeldPerOwner: config.limits.maxHeldPerOwner,
      maxHeld: config.limits.maxHeld,
      maxKeys: config.limits.maxKeys,
    },
    freeKeyRetentionMs: config.lock.freeKeyRetentionMs,
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
    ...(tlsMaterial ? { forwardCredentials: nodeChannelCredentials(tlsMaterial) } : {}),
    ownerBinding: config.auth.ownerBinding,
    isMember,
  });
  api.register(server);

  const listen = (srv: grpc.Server, address: string, creds: grpc.ServerCredentials) =>
    new Promise<void>((resolve, reject) => {
      srv.bindAsync(address, creds, (err) => (err ? reject(new Error(`cannot listen on ${address}: ${err.message}`)) : resolve()));
    });
  await listen(server, self.address, clientCredentials);
  if (self.peerAddress) await listen(peerServer, self.peerAddress, peerCredentials);
  logger.info(
    { nodeId: id, address: self.address, peerAddress: self.peerAddress ?? self.address, tls: config.tls ? config.tls.clientAuth : 'off', ownerBinding: config.auth.ownerBinding, dataDir: self.dataDir, members: Object.fromEntries(members) },
    'leasehold node serving',
  );

  const reloadTls = (): boolean => {
    if (!config.tls) return false;
    const material = readTlsMaterial(config.tls, id);
    if (clientCredentials instanceof NodeServerCredentials) clientCredentials.reload(material);
    if (peerCredentials !== clientCredentials && peerCredentials instanceof NodeServerCredentials) peerCredentials.reload(material);
    transport.setCredentials(nodeChannelCredentials(material));
    api.setForwardCredentials(nodeChannelCredentials(material));
    logger.info({ nodeId: id }, 'TLS certificates reloaded');
    return true;
  };

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
      const stopServer = (srv: grpc.Server) =>
        new Promise<void>((resolve) => {
          const force = setTimeout(() => {
            srv.forceShutdown();
            resolve();
          }, 500);
          srv.tryShutdown(() => {
            clearTimeout(force);
            resolve();
          });
        });
      await Promise.all([stopServer(server), ...(peerServer !== server ? [stopServer(peerServer)] : [])]);
      await storage.close();
      logger.info({ nodeId: id }, 'leasehold node stopped');
    })();
    return stopping;
  };

  return { id, address: self.address, node: liveNode, service, logger, shutdown, reloadTls };
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
