// Wires one leasehold node together: LevelDB storage, the lock machine, the Raft driver, the peer
// transport and the client API, all on one gRPC port. Also the graceful shutdown: a leader hands
// leadership to the most caught-up follower before it stops (kill -9 is always safe too).
import * as grpc from '@grpc/grpc-js';
import type { Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import type { ClusterConfig, NodeConfig } from '../config/types.js';
import { RaftNode } from '../raft/node.js';
import { realEnv, type NodeEnv } from '../raft/env.js';
import type { LockResult } from '../lock/types.js';
import { LevelStorage } from '../raft/storage/leveldb.js';
import { PeerTransport } from '../transport/grpc.js';
import { RaftClient } from '../transport/proto.js';
import type { Message } from '../raft/core/types.js';
import { LockFsm } from './lock-fsm.js';
import { LockService } from './lock-service.js';
import { ClientApi } from './grpc-server.js';
import { instrumentFsm, instrumentLockService, instrumentProposals, instrumentStorage } from './instrument.js';
import { createNodeLogger } from './logging.js';
import { NodeMetrics, serveMetrics } from './metrics.js';
import { watchQuorum } from './quorum-watch.js';

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
  /** Overrides this node's dataDir from the config (`serve --data-dir`, env LEASEHOLD_DATA_DIR). */
  dataDir?: string;
}

export async function startNode(config: ClusterConfig, id: string, options: StartOptions = {}): Promise<RunningNode> {
  const self = config.nodes.find((n) => n.id === id);
  if (!self) throw new Error(`--id ${id}: no node with that id in the config (have: ${config.nodes.map((n) => n.id).join(', ')})`);
  const logger = options.logger ?? createNodeLogger(config.log);
  // One env for the driver and the lock service: realEnv()'s clock is monotonic (see env.ts), so an NTP
  // step while we lead cannot make leases look older or younger than they are.
  const env = options.env ?? realEnv();

  const dataDir = options.dataDir ?? self.dataDir;
  const storage = await openStorage(dataDir, id);
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
  let service: LockService | null = null;
  // Metrics (off unless metrics.address is set): gauges read status at scrape time; wrappers feed the rest.
  const metricsAddress = self.metricsAddress ?? config.metrics.address;
  const metrics = metricsAddress
    ? new NodeMetrics(id, {
        status: () => node!.status(),
        progress: () => node!.progress(),
        peers: () => transport.peerStates(),
        leasesHeld: () => fsm.machine.leaseCount,
        waiters: () => service?.waiterCount ?? 0,
        dedupEntries: () => fsm.machine.dedupSize,
      })
    : null;
  const observedFsm = metrics ? instrumentFsm(fsm, metrics) : null;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': config.limits.maxMessageBytes,
    'grpc.max_send_message_length': config.limits.maxMessageBytes,
  });
  server.addService(RaftClient.service, transport.handlers((m: Message) => node?.receive(m)));

  node = await RaftNode.start({
    id,
    voters: config.nodes.map((n) => n.id),
    storage: metrics && observedFsm ? instrumentStorage(storage, metrics, observedFsm.snapshotStartedAt) : storage,
    transport,
    fsm: observedFsm?.fsm ?? fsm,
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

  if (metrics) liveNode.on('softState', (ss, prev) => metrics.onSoftState(ss, prev));
  const quorumWatch = watchQuorum({
    env,
    logger,
    electionTimeoutMs: 2 * config.raft.electionTicks * config.raft.tickMs,
    status: () => liveNode.status(),
    peers: () => transport.peerStates(),
    addresses: members,
  });

  const liveService = new LockService(metrics ? instrumentProposals(liveNode, metrics) : liveNode, fsm, {
    env,
    housekeepingMs: Math.max(10, Math.floor(config.raft.tickMs / 2)),
    checkpointIdleMs: config.lock.checkpointIdleMs,
    defaultTimeoutMs: 5000,
    logger,
  });
  service = liveService;
  const api = new ClientApi({
    service: metrics ? instrumentLockService(liveService, metrics) : liveService,
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

  const listen = self.listen ?? self.address;
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(listen, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(new Error(`node ${id}: cannot listen on ${listen}${self.listen ? ' (nodes[].listen)' : ' (nodes[].address)'}: ${err.message} — is another process using the port?`)) : resolve(),
    );
  });
  const metricsServer: HttpServer | null = metrics && metricsAddress ? await serveMetrics(metricsAddress, metrics.registry) : null;
  logger.info(
    { nodeId: id, address: self.address, listen, dataDir, metrics: metricsAddress, members: Object.fromEntries(members) },
    'leasehold node serving',
  );

  let stopping: Promise<void> | null = null;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      if (liveNode.isLeader()) await handOver(liveNode, config.raft.tickMs * config.raft.electionTicks * 2, logger);
      api.health.setStatus('', 'NOT_SERVING');
      quorumWatch.cancel();
      metricsServer?.close();
      liveService.close();
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

  return { id, address: self.address, node: liveNode, service: liveService, logger, shutdown };
}

/** Opens the node's LevelDB, turning LevelDB's bare "Database failed to open" into the cause and the place. */
async function openStorage(dataDir: string, id: string): Promise<LevelStorage> {
  try {
    return await LevelStorage.open(dataDir);
  } catch (err) {
    const codes: string[] = [];
    for (let e: unknown = err; e instanceof Error && codes.length < 5; e = (e as { cause?: unknown }).cause) codes.push(String((e as { code?: unknown }).code ?? ''));
    const detail = (err as Error).message;
    if (codes.includes('LEVEL_LOCKED')) {
      throw new Error(
        `node ${id}: dataDir ${dataDir} is locked by another process — another leasehold node (or a second copy of this one) is using it. Each node needs its own dataDir; stop the other process or fix nodes[].dataDir`,
        { cause: err },
      );
    }
    if (codes.includes('EACCES') || /permission denied/i.test(detail)) throw new Error(`node ${id}: cannot open dataDir ${dataDir}: permission denied`, { cause: err });
    if (codes.includes('LEVEL_CORRUPTION')) throw new Error(`node ${id}: dataDir ${dataDir} is corrupt (${detail}); restore it from a peer by replacing the node`, { cause: err });
    throw new Error(`node ${id}: cannot open dataDir ${dataDir}: ${detail}${codes.length ? ` (${codes.filter(Boolean).join(' <- ')})` : ''}`, { cause: err });
  }
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
