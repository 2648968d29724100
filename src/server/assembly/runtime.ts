// Wires one leasehold node together: storage (WAL + LevelDB), the lock machine, the Raft driver, the peer
// transport and the client API, all on one gRPC port. Also the graceful shutdown: a leader hands
// leadership to the most caught-up follower before it stops (kill -9 is always safe too).
import { enableTrace } from '../../trace/stages.js';
import * as grpc from '@grpc/grpc-js';
import { getHeapStatistics } from 'node:v8';
import type { Logger } from 'pino';
import type { ClusterConfig } from '../../config/types.js';
import { initialMembers } from '../../config/initial-members.js';
import { RaftNode } from '../../raft/node.js';
import { realEnv, type NodeEnv } from '../../raft/env.js';
import type { LockResult } from '../../lock/types.js';
import type { RaftStorage } from '../../raft/storage/types.js';
import { PeerTransport } from '../../transport/grpc.js';
import { PeerAuthenticator } from '../../transport/peer-auth.js';
import { packageDefinition } from '../../wire/load.js';
import { raftGrpcService } from '../../wire/raft.js';
import type { ConfState, Message } from '../../raft/core/types.js';
import { isMember } from '../../raft/core/conf.js';
import { UnknownCommandError } from '../../lock/commands.js';
import { BUILD_LEVEL, lowestReadLevel } from '../../lock/versions.js';
import { LockMachine } from '../../lock/machine.js';
import { LockFsm } from '../../lock-on-raft/lock-fsm.js';
import { WatchHub } from '../client-api/watch-hub.js';
import { LockService } from '../../lock-on-raft/lock-service.js';
import { ClientApi } from '../client-api/grpc-server.js';
import { ClusterApi } from '../client-api/cluster-api.js';
import { HealthReporter } from '../client-api/health.js';
import { clusterIdFor } from './identity.js';
import { AddressBook } from './address-book.js';
import { beforeBootstrap } from './first-boot.js';
import { NodeCredentials } from './node-credentials.js';
import { stopNode } from './node-shutdown.js';
import { openAppliedStore, openStorage } from './node-storage.js';
import { LockStateStore } from '../../state/lock-store.js';
import { backupChunks } from '../../state/backup.js';
import { askMembersAbout } from './vouching.js';
import { Membership } from '../client-api/membership.js';
import { descriptorRegistry, strictRequestDeserializers } from '../client-api/strict-decode.js';
import { instrumentFsm, instrumentLockService, instrumentProposals, instrumentStorage } from '../observability/instrument.js';
import { createNodeLogger } from './logging.js';
import { NodeMetrics, serveMetrics, type MetricsServer } from '../observability/metrics.js';
import { DashboardCharts, startSampling } from '../observability/dashboard-charts.js';
import { DashboardRoutes } from '../observability/dashboard-routes.js';
import { membersThatRan } from './members-ran.js';
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
  /** Overrides this node's Prometheus address (`serve --metrics-address`, env LEASEHOLD_METRICS_ADDRESS). */
  metricsAddress?: string;
  /** The node cannot go on (storage failed, an entry of a newer build); why is logged already. It must
   *  not serve on: `serve` exits at once with EXIT.NODE_FAILED (cli/exit-codes.ts). */
  onFatal: (err: unknown) => void;
}

/** How long the first-boot and vouching questions to peers may take: a dead peer must not hold up a start for long. */
const ASK_PEERS_TIMEOUT_MS = 1500;
/** The deadline of a call that names none: cluster calls, client calls, the read barriers they wait on. */
const DEFAULT_CALL_TIMEOUT_MS = 5000;
/** How long the lock leader's proposals may take (its own, and an acquire's entry): as long as a call that
 *  names no deadline. */
const LEADER_PROPOSAL_TIMEOUT_MS = DEFAULT_CALL_TIMEOUT_MS;

export async function startNode(config: ClusterConfig, id: string, options: StartOptions): Promise<RunningNode> {
  const self = config.nodes.find((n) => n.id === id);
  if (!self) throw new Error(`--id ${id}: no node with that id in the config (have: ${config.nodes.map((n) => n.id).join(', ')})`);
  const logger = options.logger ?? createNodeLogger(config.log);
  // One env for the driver and the lock service: realEnv()'s clock is monotonic (see env.ts), so an NTP
  // step while we lead cannot make leases look older or younger than they are.
  // Test faults (clock, disk, snapshot chunks) only when the env var names a fault file; the module is not even loaded
  // otherwise. Its clock replaces realEnv() unless the caller passed its own env.
  // LEASEHOLD_TRACE=1: record stage stamps for the bench's latency waterfall (served at /debug/trace).
  if (process.env['LEASEHOLD_TRACE'] === '1') enableTrace();
  const faultFile = process.env['LEASEHOLD_TEST_FAULTS'];
  const testFaults = faultFile ? (await loadTestFaults()).startTestFaults(faultFile, logger) : null;
  const env = options.env ?? testFaults?.env ?? realEnv();

  const dataDir = options.dataDir ?? self.dataDir;
  const diskStorage = await openStorage(dataDir, id);
  const storage: RaftStorage = testFaults ? testFaults.wrapStorage(diskStorage) : diskStorage;
  const watchHub = new WatchHub({
    historyEvents: config.watch.historyEvents,
    maxWatchers: config.watch.maxWatchers,
    appliedIndex: () => fsm.machine.appliedIndex,
  });
  // The lock state lives in LevelDB under dataDir/state (src/state), written behind the WAL; a failed write
  // stops the node like a failed log write (its store no longer follows what it applies).
  let failApplied: (err: unknown) => void = () => {};
  const appliedStore = await openAppliedStore(dataDir, id);
  const fsm = new LockFsm<LockMachine>(
    LockMachine,
    { dedupWindowMs: config.lock.dedupWindowMs },
    { sink: (e) => watchHub.record(e), replaced: (index) => watchHub.reset(index) },
    undefined,
    new LockStateStore<LockMachine>(
      () => Promise.resolve(appliedStore),
      env.scheduler,
      undefined,
      undefined,
      (err) => failApplied(err),
    ),
  );
  const addresses = new AddressBook(config.nodes, self);
  if (addresses.dialOverrides.size)
    logger.warn(
      { nodeId: id, peerDialOverrides: Object.fromEntries(addresses.dialOverrides) },
      'peerDialOverrides: this node dials these members at these addresses instead of their advertised ones',
    );
  const credentials = new NodeCredentials(config, self);
  let node: RaftNode<LockResult | null> | null = null;
  let service: LockService | null = null;
  // Who is a member, for peer authentication (TLS) and owner binding: the live Raft configuration (and the
  // leader we follow, which may be on its way out); before a joining node knows one, the nodes it was told of.
  const isKnownMember = (memberId: string): boolean => {
    const conf = node?.configuration();
    if (!conf || conf.voters.length === 0) return addresses.clientAddress.has(memberId);
    return isMember(conf, memberId) || memberId === node?.leaderId;
  };
  const transport: PeerTransport = new PeerTransport({
    onUnknownSender: askMembersAbout({
      selfId: id,
      addresses,
      configuration: () => node?.configuration() ?? null,
      dialCredentials: () => credentials.dial,
      vouch: (from) => transport.vouch(from),
      askTimeoutMs: ASK_PEERS_TIMEOUT_MS,
      logger,
    }),
    // A peer whose connection broke and whose port refuses a reconnect (killed): if it was our leader,
    // campaign now rather than after the election timeout (Raft.leaderUnreachable; Pre-Vote keeps a false
    // report harmless).
    onPeerUnreachable: (peer) => node?.peerUnreachable(peer),
    selfId: id,
    peers: new Map(addresses.filePeers),
    queueLimit: config.limits.peerQueueMessages,
    maxMessageBytes: config.limits.maxMessageBytes,
    logger,
    traceMessages: logger.isLevelEnabled('debug'),
    dialOverrides: addresses.dialOverrides,
    clusterLevel: BUILD_LEVEL,
    ...(credentials.tls
      ? { credentials: credentials.freshDial(), authenticator: new PeerAuthenticator({ isMember: isKnownMember, logger, selfId: id }) }
      : {}),
  });

  // Metrics (off unless metrics.address is set): gauges read status at scrape time; wrappers feed the rest.
  const metricsAddress = options.metricsAddress ?? self.metricsAddress ?? config.metrics.address;
  const metrics = metricsAddress
    ? new NodeMetrics(
        id,
        {
          status: () => node!.status(),
          progress: () => node!.progress(),
          peers: () => transport.peerStates(),
          leasesHeld: () => fsm.machine.leaseCount,
          waiters: () => service?.waiterCount ?? 0,
          dedupEntries: () => fsm.machine.dedupSize,
        },
        config.metrics.loopLagResolutionMs,
      )
    : null;
  const observedFsm = metrics ? instrumentFsm(fsm, metrics) : null;
  const serverOptions = {
    'grpc.max_receive_message_length': config.limits.maxMessageBytes,
    'grpc.max_send_message_length': config.limits.maxMessageBytes,
    // No channelz: nothing here serves it (no channelz service is registered), and with it on grpc-js
    // makes a tracker object of four closures per call and reads the clock per message sent and received
    // (issue 37: a unary call's per-call work). Off, it keeps a stub tracker; the wire is the same.
    'grpc.enable_channelz': 0,
  };
  const server = new grpc.Server(serverOptions);
  // With peerAddress the Raft service is served only there, and `address` serves clients only.
  const peerServer = self.peerAddress ? new grpc.Server(serverOptions) : server;
  // The peer service decodes as strictly as the client services (no silently wrapped varints or replaced
  // UTF-8 in a Raft message either): Forward behind the strict decoder, Stream by its own hand-written
  // decoder (wire/raft-decode.ts), which refuses the same and is not walked twice.
  peerServer.addService(
    strictRequestDeserializers(raftGrpcService.definition(), descriptorRegistry(packageDefinition())),
    transport.handlers((m: Message) => node?.receive(m)),
  );

  const electionTimeoutMs = config.raft.tickMs * config.raft.electionTicks;
  // A node marked `join` in the file (a member added later) joins on its first start as `serve --join` does.
  const join = (options.join ?? false) || self.join === true;
  const initial = initialMembers(config.nodes);
  node = await RaftNode.start({
    id,
    voters: initial.map((n) => n.id),
    addresses: Object.fromEntries([...addresses.filePeers].filter(([peer]) => initial.some((n) => n.id === peer))),
    clusterId: clusterIdFor(initial),
    join,
    beforeBootstrap: () =>
      beforeBootstrap({
        selfId: id,
        dataDir,
        join,
        nodes: config.nodes,
        others: config.nodes.filter((n) => n.id !== id).map((n) => addresses.dialOverrides.get(n.id) ?? n.address),
        transport,
        dialCredentials: () => credentials.dial,
        askTimeoutMs: ASK_PEERS_TIMEOUT_MS,
        logger,
      }),
    storage: metrics && observedFsm ? instrumentStorage(storage, metrics, observedFsm.snapshotStartedAt) : storage,
    transport,
    fsm: testFaults ? testFaults.wrapFsm(observedFsm?.fsm ?? fsm) : (observedFsm?.fsm ?? fsm),
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
  followConfiguration(liveNode, transport, addresses, logger);
  liveNode.on('fatal', (err: unknown) => {
    // A storage failure (restarting from disk may help), or an entry this build cannot read (it will not:
    // upgrade the node). Either way the node stops rather than go on with a state it cannot vouch for.
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof UnknownCommandError)
      logger.fatal({ nodeId: id, err: message }, 'an entry of a newer build: exiting; upgrade this node');
    else logger.fatal({ nodeId: id, err: message }, 'storage failed; exiting so a supervisor restarts the node from disk');
    options.onFatal(err);
  });
  failApplied = (err) => {
    logger.fatal(
      { nodeId: id, err: (err as Error)?.message ?? String(err) },
      'the applied store failed a write; exiting so a supervisor restarts the node from disk',
    );
    options.onFatal(err);
  };

  if (metrics) liveNode.on('softState', (ss, prev) => metrics.onSoftState(ss, prev));
  const quorumWatch = watchQuorum({
    env,
    logger,
    maxElectionTimeoutMs: 2 * electionTimeoutMs, // randomized in [1, 2) x the base
    status: () => liveNode.status(),
    peers: () => transport.peerStates(),
    addresses: addresses.clientAddress,
  });

  const liveService = new LockService(metrics ? instrumentProposals(liveNode, metrics) : liveNode, fsm, {
    env,
    // On the Raft tick's beat (one wake-up for both): a lease or a wait past its deadline is seen within
    // a tick (50 ms by default; etcd's lessor looks every 500 ms). Half a tick cost an idle leader 20
    // wake-ups a second more (issue 37's idle goal).
    housekeepingMs: config.raft.tickMs,
    checkpointIdleMs: config.lock.checkpointIdleMs,
    proposalTimeoutMs: LEADER_PROPOSAL_TIMEOUT_MS,
    logger,
    limits: {
      maxWaitersPerKey: config.limits.maxWaitersPerKey,
      maxWaiters: config.limits.maxWaiters,
      maxHeldPerOwner: config.limits.maxHeldPerOwner,
      maxHeld: config.limits.maxHeld,
      maxKeys: config.limits.maxKeys,
      maxSessions: config.limits.maxSessions,
      maxHoldsPerSession: config.limits.maxHoldsPerSession,
    },
    freeKeyRetentionMs: config.lock.freeKeyRetentionMs,
    // The version gate (versions.ts): what every member of the current configuration announced on its
    // messages to us; one not heard from since we started holds the cluster where it is.
    membersReadLevel: () => {
      const conf = node?.configuration();
      if (!conf) return undefined;
      const others = [...conf.voters, ...conf.learners].filter((member) => member !== id);
      return lowestReadLevel(BUILD_LEVEL, others, (member) => transport.announcedLevel(member));
    },
    // Members that acknowledged entries of this log have run (the leader's own progress says so; asked
    // only while leading), and so has the leader: recorded in the log for the first-boot check.
    membersRan: () => {
      const conf = node?.configuration();
      return conf ? membersThatRan(id, conf, node.progress()) : [];
    },
  });
  const membership = new Membership(liveNode as RaftNode<unknown>, { env, electionTimeoutMs });
  const cluster = new ClusterApi({
    node: liveNode as RaftNode<unknown>,
    membership,
    health: () => liveNode.serving(electionTimeoutMs),
    levels: () => ({ cluster: liveService.machine.clusterLevel, build: BUILD_LEVEL }),
    hasRun: (member) => liveService.machine.hasRun(member),
    clientAddressOf: (member) => addresses.clientAddress.get(member),
    credentials: () => credentials.dial,
    defaultTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
    logger,
    backup: () => (appliedStore.point === null ? null : backupChunks(appliedStore.db, liveNode.configuration()?.clusterId ?? '')),
  });
  service = liveService;
  const api = new ClientApi({
    cluster,
    service: metrics ? instrumentLockService(liveService, metrics) : liveService,
    limits: {
      minTtlMs: config.lock.minTtlMs,
      maxTtlMs: config.lock.maxTtlMs,
      maxWaitMs: config.lock.maxWaitMs,
      maxLockDelayMs: config.lock.maxLockDelayMs,
      maxValueBytes: config.lock.maxValueBytes,
    },
    members: addresses.clientAddress,
    dialOverrides: addresses.dialOverrides,
    defaultTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
    logger,
    ...(credentials.tls ? { forwardCredentials: credentials.freshDial() } : {}),
    ownerBinding: config.auth.ownerBinding,
    admins: config.auth.admins,
    ...(metrics
      ? {
          countRefused: (op: string, outcome: 'invalid' | 'denied') => metrics.lockOp(op).count(outcome).inc(),
          // A forwarding follower counts every call it forwards here: tallies, not prom-client per call.
          countNotLeading: (op: string, outcome: 'not_leader' | 'unavailable', seconds: number) => {
            const tallies = metrics.lockOp(op);
            tallies.count(outcome).inc();
            tallies.time.observe(seconds);
          },
        }
      : {}),
    isMember: isKnownMember,
    // Lock calls for the leader ride our peer link to it (raft.proto Forward), not a unary call each.
    forwardVia: (leaderId) => transport.forward(leaderId),
    watch: {
      hub: watchHub,
      readBarrier: (timeoutMs) => liveNode.readBarrier(timeoutMs),
      barrierTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
    },
    list: {
      machine: () => fsm.machine,
      readBarrier: (timeoutMs) => liveNode.readBarrier(timeoutMs),
      barrierTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
    },
  });
  api.register(server);
  transport.setForwardedCallHandler((call, peer, signal) => api.serveForwarded(call, peer, signal));
  credentials.whenReloaded((dial) => transport.setCredentials(dial));
  credentials.whenReloaded(() => api.setForwardCredentials(credentials.freshDial()));

  const bindAddress = self.listen ?? self.address;
  const listenOn = (srv: grpc.Server, address: string, creds: grpc.ServerCredentials, key: string) =>
    new Promise<void>((resolve, reject) => {
      srv.bindAsync(address, creds, (err) =>
        err
          ? reject(new Error(`node ${id}: cannot listen on ${address} (${key}): ${err.message} — is another process using the port?`))
          : resolve(),
      );
    });
  await listenOn(server, bindAddress, credentials.client, self.listen ? 'nodes[].listen' : 'nodes[].address');
  if (self.peerAddress) await listenOn(peerServer, self.peerAddress, credentials.peer, 'nodes[].peerAddress');
  // The read-only dashboard rides on the metrics endpoint (same address): no metrics address, no dashboard.
  const charts = metrics ? new DashboardCharts(metrics.registry) : null;
  const stopSampling = charts
    ? startSampling(charts, (err) => logger.warn({ nodeId: id, err: String(err) }, 'dashboard charts: sampling the metrics failed'))
    : null;
  const dashboard = metrics
    ? new DashboardRoutes({
        status: () => liveNode.status(),
        progress: () => liveNode.progress(),
        health: () => liveNode.serving(electionTimeoutMs),
        peers: () => transport.peerStates(),
        clientAddressOf: (member) => addresses.clientAddress.get(member),
        everHeard: (member) => liveNode.everHeard(member),
        machine: () => fsm.machine,
        readBarrier: (timeoutMs) => liveNode.readBarrier(timeoutMs),
        barrierTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
        charts: () => charts!.view(),
        hub: watchHub,
      })
    : undefined;
  // The endpoint follows the gRPC port's security: HTTPS with the node's certificate, and a client
  // certificate wherever the client port demands one (http-access.ts).
  const metricsServer: MetricsServer | null =
    metrics && metricsAddress
      ? await serveMetrics(metricsAddress, metrics.registry, dashboard, {
          tls: credentials.tlsMaterial,
          requireClientCertificate: config.tls?.clientAuth === 'require',
          openScrape: config.metrics.openScrape,
        })
      : null;
  if (metricsServer) credentials.whenReloaded(() => metricsServer.reloadTls(credentials.tlsMaterial!));
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
      members: Object.fromEntries(addresses.clientAddress),
      // V8's heap bound (--max-old-space-size, or V8's default): README "Memory" says how to size it.
      heapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20),
    },
    'leasehold node serving',
  );
  const health = new HealthReporter(api.health, () => liveNode.serving(electionTimeoutMs), logger, id);
  // Looked at on the Raft tick's beat (env's timers of one interval share one wake-up), and at once when
  // the role or leader changes: a node is SERVING as soon as it can be, not a tick later.
  health.start(Math.max(20, config.raft.tickMs), env.scheduler);
  liveNode.on('softState', () => health.refresh());

  const reloadTls = (): boolean => {
    if (!credentials.reload()) return false;
    logger.info({ nodeId: id }, 'TLS certificates reloaded');
    return true;
  };

  let stopping: Promise<void> | null = null;
  const shutdown = (): Promise<void> => {
    stopping ??= stopNode({
      node: liveNode,
      first: [() => health.stop()],
      handOverTimeoutMs: 2 * electionTimeoutMs,
      beforeNode: [
        () => quorumWatch.cancel(),
        () => stopSampling?.(),
        () => metricsServer?.close(),
        () => liveService.close(),
        () => watchHub.closeAll('the node is shutting down; resume the watch on another node'),
      ],
      afterNode: [() => transport.close(), () => api.close()],
      servers: peerServer !== server ? [server, peerServer] : [server],
      last: [() => storage.close(), () => fsm.closeStore(), () => testFaults?.stop()],
      logger,
    });
    return stopping;
  };

  return { id, address: self.address, node: liveNode, service: liveService, logger, shutdown, reloadTls };
}

/** Keeps the transport's peers and admission in step with the configuration in the log and the leader we follow. */
function followConfiguration(node: RaftNode<LockResult | null>, transport: PeerTransport, addresses: AddressBook, logger: Logger): void {
  let warnedNotMember = false;
  const refreshPeers = () => {
    const conf = node.configuration();
    if (!conf || conf.voters.length === 0) return; // joining: keep the seeded peers until the cluster speaks
    transport.setPeers(addresses.peersFor(conf, node.leaderId));
  };
  const onConf = (conf: ConfState) => {
    if (conf.voters.length === 0) return;
    addresses.onConf(conf);
    refreshPeers();
    transport.setIdentity({ clusterId: conf.clusterId, members: new Set([...conf.voters, ...conf.learners]), leaderId: node.leaderId });
    const selfIsMember = isMember(conf, node.id);
    if (!selfIsMember && !warnedNotMember) {
      warnedNotMember = true;
      logger.warn(
        { nodeId: node.id, voters: conf.voters, learners: conf.learners },
        'this node is not a member of the cluster configuration (removed?); it will not campaign and its messages are refused',
      );
    } else if (selfIsMember) {
      warnedNotMember = false;
    }
    logger.info(
      { nodeId: node.id, clusterId: conf.clusterId, voters: conf.voters, learners: conf.learners },
      'cluster configuration in use',
    );
  };
  node.on('conf', onConf);
  node.on('softState', (ss: { leaderId: string | null }) => {
    transport.setLeader(ss.leaderId);
    refreshPeers();
  });
  const current = node.configuration();
  if (current) onConf(current);
}

/** src/test-faults, loaded only when LEASEHOLD_TEST_FAULTS names a fault file. The package leaves it out
 *  (package.json `files`): an installed node asked for it says so instead of failing on a module path. */
async function loadTestFaults(): Promise<typeof import('../../test-faults/switch.js')> {
  try {
    return await import('../../test-faults/switch.js');
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new Error("LEASEHOLD_TEST_FAULTS: test faults belong to the repository's tests and the package does not ship them; unset it", {
      cause: err,
    });
  }
}
