// Prometheus metrics of one node (prom-client), served at GET /metrics on `metrics.address`; the read-only
// dashboard (dashboard-routes.ts) is served beside it on the same HTTP server. Gauges read the node's
// existing status at scrape time (collect()); counters and histograms are fed by wrappers the runtime puts
// around the storage, the state machine, the driver's propose() and the lock service's calls
// (instrument.ts), so neither the Raft driver nor the pure layers know about metrics. README "Metrics" lists
// every series.
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { drainTrace, traceEnabled } from '../../trace/stages.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { replyText } from './http-reply.js';
import { accessRefusal, PLAIN_HTTP, type EndpointSecurity } from './http-access.js';
import { CounterTally, HistogramTally, TallyGroup } from './metric-tallies.js';
import type { TlsMaterial } from '../../transport/tls.js';
import type { NodeId, Role, SoftState, Status } from '../../raft/core/types.js';
import type { ProgressView } from '../../raft/core/progress.js';
import { DEFAULT_SETTINGS } from '../../config/schema.js';

/** What the scrape-time gauges read. */
export interface MetricsSources {
  status(): Status;
  progress(): Map<NodeId, ProgressView>;
  /** Outbound peer streams: true while connected. */
  peers(): Map<NodeId, boolean>;
  leasesHeld(): number;
  waiters(): number;
  dedupEntries(): number;
}

const ROLES: readonly Role[] = ['follower', 'pre-candidate', 'candidate', 'leader'];
const FAST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export class NodeMetrics {
  readonly registry = new Registry();
  readonly proposals: Counter<'outcome'>;
  readonly proposalSeconds: Histogram;
  readonly commits: Counter;
  /** leasehold_storage_fsync_duration_seconds, as a tally: observed once per synced Ready. */
  readonly fsyncSeconds: HistogramTally<never>;
  readonly snapshotBytes: Gauge<'kind'>;
  readonly snapshotSeconds: Histogram;
  readonly snapshots: Counter<'kind'>;
  readonly logCompactions: Counter;
  readonly lockOps: Counter<'op' | 'outcome'>;
  readonly lockOpSeconds: Histogram<'op'>;
  readonly leaderChanges: Counter;

  // The hot path's counts and timings as tallies (metric-tallies.ts), flushed by their metric's collect():
  // each read of the registry sees them all.
  private readonly proposalTallies = new TallyGroup();
  private readonly proposalSecondsTallies = new TallyGroup();
  private readonly commitTallies = new TallyGroup();
  private readonly lockOpTallies = new TallyGroup();
  private readonly lockOpSecondsTallies = new TallyGroup();
  private readonly proposalsBy = new Map<string, CounterTally<'outcome'>>();
  private readonly lockOpsBy = new Map<string, LockOpTallies>();
  /** leasehold_raft_commits_total, as a tally. */
  readonly commitCount: CounterTally<never>;
  /** leasehold_raft_proposal_duration_seconds, as a tally. */
  readonly proposalTime: HistogramTally<never>;

  /** leasehold_raft_proposals_total{outcome}, as a tally made once per outcome. */
  proposalCount(outcome: string): CounterTally<'outcome'> {
    let t = this.proposalsBy.get(outcome);
    if (t === undefined) {
      t = this.proposalTallies.add(new CounterTally(this.proposals, { outcome }));
      this.proposalsBy.set(outcome, t);
    }
    return t;
  }

  /** leasehold_lock_operations_total{op,outcome} and leasehold_lock_operation_duration_seconds{op} of one
   *  op, as tallies made once per op (and outcome): a caller keeps the result. */
  lockOp(op: string): LockOpTallies {
    let t = this.lockOpsBy.get(op);
    if (t === undefined) {
      t = new LockOpTallies(
        op,
        this.lockOps,
        this.lockOpTallies,
        this.lockOpSecondsTallies.add(new HistogramTally(this.lockOpSeconds, { op })),
      );
      this.lockOpsBy.set(op, t);
    }
    return t;
  }

  /** Feed the driver's softState events (leader changes). */
  onSoftState(ss: SoftState, prev: SoftState): void {
    if (ss.leaderId !== prev.leaderId) this.leaderChanges.inc();
  }

  /** loopLagResolutionMs: metrics.loopLagResolutionMs, the event-loop lag histogram's sampling period. */
  constructor(nodeId: string, src: MetricsSources, loopLagResolutionMs = DEFAULT_SETTINGS.metrics.loopLagResolutionMs) {
    const r = this.registry;
    r.setDefaultLabels({ node: nodeId });
    // The lag histogram's timer wakes the loop every period whether or not anything else would: at
    // prom-client's 10 ms that was 100 wake-ups a second, most of an idle node's (issue 37).
    collectDefaultMetrics({ register: r, prefix: 'leasehold_', eventLoopMonitoringPrecision: loopLagResolutionMs });

    new Gauge({
      name: 'leasehold_raft_role',
      help: 'Raft role of this node: 1 for the current role, 0 for the others',
      labelNames: ['role'],
      registers: [r],
      collect() {
        const role = src.status().role;
        for (const x of ROLES) this.set({ role: x }, x === role ? 1 : 0);
      },
    });
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [r],
        collect() {
          this.set(read());
        },
      });
    gauge('leasehold_raft_term', 'Current Raft term', () => src.status().term);
    gauge('leasehold_raft_commit_index', 'Highest log index known to be committed', () => src.status().commitIndex);
    gauge('leasehold_raft_applied_index', 'Highest log index applied to the lock state machine here', () => src.status().appliedIndex);
    gauge('leasehold_raft_last_index', 'Last index of the local log', () => src.status().lastIndex);
    gauge('leasehold_raft_has_leader', '1 while this node knows a leader (itself included), else 0', () => (src.status().leaderId ? 1 : 0));
    new Gauge({
      name: 'leasehold_raft_peer_match_lag_entries',
      help: "On the leader: entries each follower is behind the leader's last index (empty on followers)",
      labelNames: ['peer'],
      registers: [r],
      collect() {
        this.reset();
        const st = src.status();
        if (st.role !== 'leader') return;
        for (const [peer, pr] of src.progress()) if (peer !== st.id) this.set({ peer }, Math.max(0, st.lastIndex - pr.match));
      },
    });
    new Gauge({
      name: 'leasehold_peer_connected',
      help: 'Outbound peer stream to each other member: 1 connected, 0 not',
      labelNames: ['peer'],
      registers: [r],
      collect() {
        this.reset();
        for (const [peer, up] of src.peers()) this.set({ peer }, up ? 1 : 0);
      },
    });
    gauge('leasehold_lock_leases_held', 'Locks held (live leases) in the applied lock state', () => src.leasesHeld());
    gauge(
      'leasehold_lock_waiters',
      "Acquires waiting in a wait line (wait_ms), from this node's applied state: the same on every node",
      () => src.waiters(),
    );
    gauge('leasehold_lock_dedup_entries', 'request_id outcomes remembered for retries (the dedup table)', () => src.dedupEntries());

    this.leaderChanges = new Counter({
      name: 'leasehold_raft_leader_changes_total',
      help: 'Times the leader this node knows changed (to another node or to none)',
      registers: [r],
    });
    this.proposals = new Counter({
      name: 'leasehold_raft_proposals_total',
      help: 'Entries proposed by this node (as leader), by outcome: committed, timeout, not_leader, dropped, error',
      labelNames: ['outcome'],
      registers: [r],
      collect: () => this.proposalTallies.flush(),
    });
    this.proposalSeconds = new Histogram({
      name: 'leasehold_raft_proposal_duration_seconds',
      help: 'From propose to applied here, for committed proposals',
      buckets: FAST_BUCKETS,
      registers: [r],
      collect: () => this.proposalSecondsTallies.flush(),
    });
    this.commits = new Counter({
      name: 'leasehold_raft_commits_total',
      help: 'Committed entries applied to the state machine on this node',
      registers: [r],
      collect: () => this.commitTallies.flush(),
    });
    this.commitCount = this.commitTallies.add(new CounterTally(this.commits, {}));
    this.proposalTime = this.proposalSecondsTallies.add(new HistogramTally(this.proposalSeconds, {}));
    const fsyncTallies = new TallyGroup();
    const fsyncHistogram = new Histogram({
      name: 'leasehold_storage_fsync_duration_seconds',
      help: 'One synced write of a Ready (hard state and entries: one WAL frame)',
      buckets: FAST_BUCKETS,
      registers: [r],
      collect: () => fsyncTallies.flush(),
    });
    this.fsyncSeconds = fsyncTallies.add(new HistogramTally(fsyncHistogram, {}));
    this.snapshotBytes = new Gauge({
      name: 'leasehold_snapshot_bytes',
      help: 'Size of the last snapshot taken here or installed from the leader',
      labelNames: ['kind'],
      registers: [r],
    });
    this.snapshotSeconds = new Histogram({
      name: 'leasehold_snapshot_duration_seconds',
      help: 'Making a snapshot of the lock state for a follower behind the log: encoding it in slices',
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10],
      registers: [r],
    });
    this.logCompactions = new Counter({
      name: 'leasehold_log_compactions_total',
      help: 'Log compactions: the write-ahead log cut below what the applied store holds durably',
      registers: [r],
    });
    this.snapshots = new Counter({
      name: 'leasehold_snapshots_total',
      help: 'Snapshots made here for a follower behind the log (taken), received from the leader (installed), or received and thrown away because they did not verify (refused; the leader sends them again)',
      labelNames: ['kind'],
      registers: [r],
    });
    this.lockOps = new Counter({
      name: 'leasehold_lock_operations_total',
      help: 'Lock calls served by this node by op (acquire, renew, release, get, open_session, renew_session, close_session, revoke) and outcome (acquired, not_acquired, renewed, released, opened, closed, revoked, not_held, wrong_owner, wrong_token, expired, held, free, not_leader, unavailable, rejected, error; and invalid or denied for a call refused before it was served: malformed, out of bounds, or not permitted)',
      labelNames: ['op', 'outcome'],
      registers: [r],
      collect: () => this.lockOpTallies.flush(),
    });
    this.lockOpSeconds = new Histogram({
      name: 'leasehold_lock_operation_duration_seconds',
      help: 'Lock calls served by this node, by op (queueing of acquire with wait_ms included)',
      labelNames: ['op'],
      buckets: [...FAST_BUCKETS, 5, 10, 30, 60],
      registers: [r],
      collect: () => this.lockOpSecondsTallies.flush(),
    });
  }
}

/** One lock op's tallies: its count by outcome (one tally per outcome, made when first met) and its time. */
export class LockOpTallies {
  private readonly byOutcome = new Map<string, CounterTally<'op' | 'outcome'>>();

  constructor(
    private readonly op: string,
    private readonly counter: Counter<'op' | 'outcome'>,
    private readonly group: TallyGroup,
    readonly time: HistogramTally<'op'>,
  ) {}

  count(outcome: string): CounterTally<'op' | 'outcome'> {
    let t = this.byOutcome.get(outcome);
    if (t === undefined) {
      t = this.group.add(new CounterTally(this.counter, { op: this.op, outcome }));
      this.byOutcome.set(outcome, t);
    }
    return t;
  }
}

/** More routes on the same HTTP server (the dashboard): handle() answers and returns true for a path it serves. */
export interface HttpRoutes {
  handle(req: IncomingMessage, res: ServerResponse, url: URL): boolean;
  /** What it serves, for the 404 message. */
  readonly summary: string;
}

/** The node's HTTP endpoint while it runs. */
export interface MetricsServer {
  /** Serve new connections with a re-read certificate (SIGHUP); established ones keep theirs. */
  reloadTls(material: TlsMaterial): void;
  close(): void;
}

/** Serves `GET /metrics` on host:port, and `routes` (the dashboard) beside it, as `security` says (HTTPS,
 *  client certificates: http-access.ts); resolves once listening. */
export async function serveMetrics(
  address: string,
  registry: Registry,
  routes?: HttpRoutes,
  security: EndpointSecurity = PLAIN_HTTP,
): Promise<MetricsServer> {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(i + 1));
  const handler: RequestListener = (req, res) => {
    let url: URL;
    try {
      // Prefixed, not resolved against a base: a request target like //x must stay a path.
      url = new URL(`http://node${req.url ?? '/'}`);
    } catch {
      return replyText(res, 400, 'bad request: malformed request target');
    }
    const path = url.pathname;
    const refused = accessRefusal(req, path, security);
    if (refused !== null) return replyText(res, 403, `forbidden: ${refused}`);
    if (req.method === 'GET' && path === '/debug/trace' && traceEnabled()) {
      // The stage stamps of the latency waterfall (LEASEHOLD_TRACE=1 only; trace/stages.ts).
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(drainTrace()));
      return;
    }
    if (path === '/metrics') {
      if (req.method !== 'GET')
        return replyText(res, 405, `method ${req.method ?? '?'} not allowed: metrics are at GET /metrics`, { allow: 'GET' });
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (err: unknown) => replyText(res, 500, `metrics failed: ${String(err)}`),
      );
      return;
    }
    if (routes?.handle(req, res, url)) return;
    replyText(res, 404, `not found: ${path.slice(0, 200)}; metrics are at GET /metrics${routes ? `, ${routes.summary}` : ''}`);
  };
  const tls = security.tls;
  // requestCert only where a certificate is needed: otherwise a browser would prompt for one for nothing.
  const server = tls
    ? createHttpsServer(
        { ca: tls.ca, cert: tls.cert, key: tls.key, requestCert: security.requireClientCertificate, rejectUnauthorized: false },
        handler,
      )
    : createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `metrics endpoint ${address}: cannot listen (${err.code === 'EADDRINUSE' ? 'the port is in use by another process' : err.message})`,
        ),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  return {
    reloadTls(material) {
      if ('setSecureContext' in server) server.setSecureContext({ ca: material.ca, cert: material.cert, key: material.key });
    },
    close() {
      server.close();
    },
  };
}
