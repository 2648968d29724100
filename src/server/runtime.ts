// Wires one leasehold node together: storage (WAL + LevelDB), the lock machine, the Raft driver, the peer
// transport and the client API, all on one gRPC port. Also the graceful shutdown: a leader hands
// leadership to the most caught-up follower before it stops (kill -9 is always safe too).
import { enableTrace } from '../trace/stages.js';
import * as grpc from '@grpc/grpc-js';
import type { Server as HttpServer } from 'node:http';
import type { Logger } from 'pino';
import type { ClusterConfig, NodeConfig } from '../config/types.js';
import { RaftNode } from '../raft/node.js';
import { realEnv, type NodeEnv } from '../raft/env.js';
import type { LockResult } from '../lock/types.js';
import { WalStorage } from '../raft/storage/wal-storage.js';
import type { RaftStorage } from '../raft/storage/types.js';
import { PeerTransport } from '../transport/grpc.js';
import { PeerAuthenticator } from '../transport/peer-auth.js';
import { RaftClient, packageDefinition } from '../transport/proto.js';
import type { ConfState, Message } from '../raft/core/types.js';
import { LockFsm } from './lock-fsm.js';
import { LockService } from './lock-service.js';
import { ClientApi } from './grpc-server.js';
import { ClusterApi } from './cluster-api.js';
import { HealthReporter } from './health.js';
import { askPeers, checkFirstBoot, clusterIdFor } from './identity.js';
import { Membership } from './membership.js';
import { descriptorRegistry, strictRequestDeserializers } from './strict-decode.js';
import { NodeServerCredentials, nodeChannelCredentials, readTlsMaterial } from './tls.js';
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
  /** Re-read the TLS certificate, key and CA (SIGHUP); false when the node runs without TLS. */
  reloadTls(): boolean;
}

export interface StartOptions {
  /** Clock, timers and rng of this node: the Raft driver and the lock service share it. Default realEnv()
   *  (a monotonic clock anchored once to the wall clock, so an NTP step cannot move stamps). */
  env?: NodeEnv;
  logger?: Logger;
  /** `serve --join`: on first boot, never bootstrap; wait to be contacted by the cluster's leader. */
  join?: boolean;
  /** Overrides this node's dataDir from the config (`serve --data-dir`, env LEASEHOLD_DATA_DIR). */
  dataDir?: string;
}

/** How long the first-boot questions to peers may take: a dead peer must not hold up a start for long. */
const ASK_PEERS_TIMEOUT_MS = 1500;

export async function startNode(config: ClusterConfig, id: string, options: StartOptions = {}): Promise<RunningNode> {
  const self = config.nodes.find((n) => n.id === id);
  if (!self) throw new Error(`--id ${id}: no node with that id in the config (have: ${config.nodes.map((n) => n.id).join(', ')})`);
  const logger = options.logger ?? createNodeLogger(config.log);
  // One env for the driver and the lock service: realEnv()'s clock is monotonic (see env.ts), so an NTP
  // step while we lead cannot make leases look older or younger than they are.
  // Test faults (clock and disk) only when the env var names a fault file; the module is not even loaded
  // otherwise. Its clock replaces realEnv() unless the caller passed its own env.
  // LEASEHOLD_TRACE=1: record stage stamps for the bench's latency waterfall (served at /debug/trace).
  if (process.env['LEASEHOLD_TRACE'] === '1') enableTrace();
  const faultFile = process.env['LEASEHOLD_TEST_FAULTS'];
  const testFaults = faultFile ? (await import('./test-faults/switch.js')).startTestFaults(faultFile, logger) : null;
  const env = options.env ?? testFaults?.env ?? realEnv();

  const dataDir = options.dataDir ?? self.dataDir;
  const diskStorage = await openStorage(dataDir, id);
  const storage: RaftStorage = testFaults ? testFaults.wrapStorage(diskStorage) : diskStorage;
  const fsm = new LockFsm({ dedupWindowMs: config.lock.dedupWindowMs });
  // Client addresses for forwarding; peers' addresses come from the configuration in the log once it is
  // known (updated on every 'conf' event below). The file's list only seeds the first boot.
  const members = new Map(config.nodes.map((n: NodeConfig) => [n.id, n.address]));
  const fileClientAddress = new Map(members);
  // Peer addresses from the file (a node's peerAddress when it has one): they seed the first boot; from
  // then on the configuration in the log says who the peers are and where (every 'conf' event below).
  const fileAddress = new Map(config.nodes.map((n: NodeConfig) => [n.id, n.peerAddress ?? n.address]));
  // nodes[].peerDialOverrides of this node: where it dials those members instead (never what it advertises).
  const dialOverrides = new Map(Object.entries(self.peerDialOverrides ?? {}));
  const dialAddressOf = (member: string): string | undefined => dialOverrides.get(member) ?? members.get(member);
  if (dialOverrides.size) logger.warn({ nodeId: id, peerDialOverrides: Object.fromEntries(dialOverrides) }, 'peerDialOverrides: this node dials these members at these addresses instead of their advertised ones');
  // Who is a member, for peer authentication (TLS) and owner binding: the live Raft configuration (and the
  // leader we follow, which may be on its way out); before a joining node knows one, the nodes it was told of.
  const isMember = (memberId: string): boolean => {
    const conf = node?.configuration();
    if (!conf || conf.voters.length === 0) return members.has(memberId);
    return conf.voters.includes(memberId) || conf.learners.includes(memberId) || memberId === node?.leaderId;
  };
  const tlsMaterial = config.tls ? readTlsMaterial(config.tls, id) : null;
  const clientCredentials = tlsMaterial ? new NodeServerCredentials(tlsMaterial, config.tls!.clientAuth === 'require') : grpc.ServerCredentials.createInsecure();
  // Peers always present a certificate, so a separate peer listener requires one at the handshake.
  const peerCredentials = tlsMaterial && self.peerAddress ? new NodeServerCredentials(tlsMaterial, true) : clientCredentials;
  /** How this node dials its peers' client ports (forwarding, first-boot questions): TLS when configured. */
  let dialCredentials = tlsMaterial ? nodeChannelCredentials(tlsMaterial) : grpc.credentials.createInsecure();
  const transport = new PeerTransport({
    onUnknownSender: (from) => {
      // Ask the members we know whether `from` is one of theirs (a node added while we were down may now
      // lead, and our log cannot list it until we hear from it). Only a member of our own cluster's
      // configuration vouches; a removed node or a stranger stays refused.
      const conf = node?.configuration();
      const asked = [...(conf ? [...conf.voters, ...conf.learners] : [])].filter((m) => m !== id).map(dialAddressOf).filter((a): a is string => a !== undefined);
      void askPeers(asked, dialCredentials, ASK_PEERS_TIMEOUT_MS).then((answers) => {
        const ours = node?.configuration()?.clusterId ?? '';
        const vouched = answers.find((a) => (ours === '' || a.status.cluster_id === ours) && a.status.members.some((m) => m.id === from));
        if (!vouched) return;
        const entry = vouched.status.members.find((m) => m.id === from)!;
        if (entry.address) {
          knownAddress.set(from, entry.address);
          if (!members.has(from)) members.set(from, entry.address);
        }
        transport.vouch(from);
        logger.info({ nodeId: id, from, vouchedBy: vouched.status.node_id }, `hearing ${from}: our configuration does not list it yet, but ${vouched.status.node_id} says it is a member`);
      });
    },
    // A peer whose connection broke and whose port refuses a reconnect (killed): if it was our leader,
    // campaign now rather than after the election timeout (Raft.leaderUnreachable; Pre-Vote keeps a false
    // report harmless).
    onPeerUnreachable: (peer) => node?.peerUnreachable(peer),
    selfId: id,
    peers: new Map(config.nodes.map((n: NodeConfig) => [n.id, n.peerAddress ?? n.address])),
    queueLimit: config.limits.peerQueueMessages,
    maxMessageBytes: config.limits.maxMessageBytes,
    logger,
    traceMessages: logger.isLevelEnabled('debug'),
    dialOverrides,
    ...(tlsMaterial ? { credentials: nodeChannelCredentials(tlsMaterial), authenticator: new PeerAuthenticator({ isMember, logger, selfId: id }) } : {}),
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

  const others = config.nodes.filter((n) => n.id !== id).map((n) => dialOverrides.get(n.id) ?? n.address);
  const electionTimeoutMs = config.raft.tickMs * config.raft.electionTicks;
  node = await RaftNode.start({
    id,
    voters: config.nodes.map((n) => n.id),
    addresses: Object.fromEntries(fileAddress),
    clusterId: clusterIdFor(config.nodes),
    join: options.join ?? false,
    beforeBootstrap: async () => {
      const answers = await askPeers(others, dialCredentials, ASK_PEERS_TIMEOUT_MS);
      if (!options.join) {
        checkFirstBoot(id, dataDir, answers);
        return;
      }
      // Joining: dial every member the cluster reports, so our answers reach the leader even when the
      // file does not list it.
      const peers = new Map<string, string>(config.nodes.filter((n) => n.id !== id).map((n) => [n.id, n.address]));
      for (const a of answers) for (const m of a.status.members) if (m.id !== id && m.address) peers.set(m.id, m.address);
      transport.setPeers(peers);
      // Stamp our messages with the cluster's id from the start (else '' until our log tells us).
      const clusterId = answers.map((a) => a.status.cluster_id).find((c) => c !== '') ?? '';
      transport.setIdentity({ clusterId, members: new Set() });
      logger.info({ nodeId: id, clusterId, asked: others, answered: answers.map((a) => a.status.node_id), peers: Object.fromEntries(peers) }, 'joining: waiting for the leader to contact us');
    },
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
  let warnedNotMember = false;
  /** Every peer address we ever learned: a leader being removed keeps leading until its removal commits,
   *  and our answers must still reach it after our own log has dropped it (thesis §4.2.2). */
  const knownAddress = new Map(fileAddress);
  const refreshPeers = () => {
    const conf = liveNode.configuration();
    if (!conf || conf.voters.length === 0) return; // joining: keep the seeded peers until the cluster speaks
    const peers = new Map<string, string>();
    const leader = liveNode.leaderId;
    for (const member of [...conf.voters, ...conf.learners, ...(leader ? [leader] : [])]) {
      const address = conf.addresses[member] ?? knownAddress.get(member);
      if (address !== undefined) peers.set(member, address);
    }
    transport.setPeers(peers);
  };
  const onConf = (conf: ConfState) => {
    if (conf.voters.length === 0) return;
    for (const member of [...conf.voters, ...conf.learners]) {
      const address = conf.addresses[member] ?? fileAddress.get(member);
      if (address === undefined) continue;
      knownAddress.set(member, address);
      // A member added at runtime is reached at the address it was added with (for clients and peers alike,
      // unless this node's file lists it with a separate peerAddress).
      members.set(member, fileClientAddress.get(member) ?? address);
    }
    refreshPeers();
    transport.setIdentity({ clusterId: conf.clusterId, members: new Set([...conf.voters, ...conf.learners]), leaderId: liveNode.leaderId });
    const isMember = conf.voters.includes(id) || conf.learners.includes(id);
    if (!isMember && !warnedNotMember) {
      warnedNotMember = true;
      logger.warn({ nodeId: id, voters: conf.voters, learners: conf.learners }, 'this node is not a member of the cluster configuration (removed?); it will not campaign and its messages are refused');
    } else if (isMember) {
      warnedNotMember = false;
    }
    logger.info({ nodeId: id, clusterId: conf.clusterId, voters: conf.voters, learners: conf.learners }, 'cluster configuration in use');
  };
  liveNode.on('conf', onConf);
  liveNode.on('softState', (ss: { leaderId: string | null }) => {
    transport.setLeader(ss.leaderId);
    refreshPeers();
  });
  const current = liveNode.configuration();
  if (current) onConf(current);
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
    limits: {
      maxWaitersPerKey: config.limits.maxWaitersPerKey,
      maxWaiters: config.limits.maxWaiters,
      maxHeldPerOwner: config.limits.maxHeldPerOwner,
      maxHeld: config.limits.maxHeld,
      maxKeys: config.limits.maxKeys,
    },
    freeKeyRetentionMs: config.lock.freeKeyRetentionMs,
  });
  const membership = new Membership(liveNode as RaftNode<unknown>, { env, electionTimeoutMs });
  const cluster = new ClusterApi({
    node: liveNode as RaftNode<unknown>,
    membership,
    health: () => liveNode.serving(electionTimeoutMs),
    clientAddressOf: (member) => members.get(member),
    credentials: () => dialCredentials,
    defaultTimeoutMs: 5000,
    logger,
  });
  service = liveService;
  const api = new ClientApi({
    cluster,
    service: metrics ? instrumentLockService(liveService, metrics) : liveService,
    limits: {
      minTtlMs: config.lock.minTtlMs,
      maxTtlMs: config.lock.maxTtlMs,
      maxWaitMs: config.lock.maxWaitMs,
    },
    members,
    dialOverrides,
    defaultTimeoutMs: 5000,
    logger,
    ...(tlsMaterial ? { forwardCredentials: nodeChannelCredentials(tlsMaterial) } : {}),
    ownerBinding: config.auth.ownerBinding,
    isMember,
    // Lock calls for the leader ride our peer link to it (raft.proto Forward), not a unary call each.
    forwardVia: (leaderId) => transport.forward(leaderId),
  });
  api.register(server);
  transport.setForwardedCallHandler((call, peer, signal) => api.serveForwarded(call, peer, signal));

  const bindAddress = self.listen ?? self.address;
  const listenOn = (srv: grpc.Server, address: string, creds: grpc.ServerCredentials, key: string) =>
    new Promise<void>((resolve, reject) => {
      srv.bindAsync(address, creds, (err) =>
        err ? reject(new Error(`node ${id}: cannot listen on ${address} (${key}): ${err.message} — is another process using the port?`)) : resolve(),
      );
    });
  await listenOn(server, bindAddress, clientCredentials, self.listen ? 'nodes[].listen' : 'nodes[].address');
  if (self.peerAddress) await listenOn(peerServer, self.peerAddress, peerCredentials, 'nodes[].peerAddress');
  const metricsServer: HttpServer | null = metrics && metricsAddress ? await serveMetrics(metricsAddress, metrics.registry) : null;
  logger.info(
    {
      nodeId: id,
      address: self.address,
      listen: bindAddress,
      peerAddress: self.peerAddress ?? self.address,
      tls: config.tls ? config.tls.clientAuth : 'off',
      ownerBinding: config.auth.ownerBinding,
      dataDir,
      metrics: metricsAddress,
      members: Object.fromEntries(members),
    },
    'leasehold node serving',
  );
  const health = new HealthReporter(api.health, () => liveNode.serving(electionTimeoutMs), logger, id);
  health.start(Math.max(20, config.raft.tickMs));

  const reloadTls = (): boolean => {
    if (!config.tls) return false;
    const material = readTlsMaterial(config.tls, id);
    if (clientCredentials instanceof NodeServerCredentials) clientCredentials.reload(material);
    if (peerCredentials !== clientCredentials && peerCredentials instanceof NodeServerCredentials) peerCredentials.reload(material);
    transport.setCredentials(nodeChannelCredentials(material));
    dialCredentials = nodeChannelCredentials(material);
    api.setForwardCredentials(nodeChannelCredentials(material));
    logger.info({ nodeId: id }, 'TLS certificates reloaded');
    return true;
  };

  let stopping: Promise<void> | null = null;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      health.stop();
      if (liveNode.isLeader()) await handOver(liveNode, config.raft.tickMs * config.raft.electionTicks * 2, logger);
      quorumWatch.cancel();
      metricsServer?.close();
      liveService.close();
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
      testFaults?.stop();
      logger.info({ nodeId: id }, 'leasehold node stopped');
    })();
    return stopping;
  };

  return { id, address: self.address, node: liveNode, service: liveService, logger, shutdown, reloadTls };
}

/** Opens the node's store (its WAL and LevelDB), turning LevelDB's bare "Database failed to open" into the cause and the place. */
async function openStorage(dataDir: string, id: string): Promise<WalStorage> {
  try {
    return await WalStorage.open(dataDir);
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
