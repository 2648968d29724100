// The validated, defaulted cluster configuration (see cluster.example.yaml for every key and its meaning).
// Produced only by parseConfig / loadConfig / devConfig, which validate everything, and deep-frozen.

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** A pino level name. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `auto`: human-readable on a terminal, JSON lines otherwise. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface NodeConfig {
  /** Unique node id, also the Raft member id. */
  readonly id: string;
  /** host:port of the node's gRPC endpoint (client and peer traffic share it). */
  readonly address: string;
  /** Absolute path of the node's LevelDB data (relative paths in a file resolve against its directory). */
  readonly dataDir: string;
  /** host:port the node binds (e.g. 0.0.0.0:7001 in a container) when it differs from the advertised
   *  `address`; absent: it binds `address`. */
  readonly listen?: string;
  /** This node's Prometheus endpoint, instead of `metrics.address` (several nodes on one host). */
  readonly metricsAddress?: string;
  /** host:port of a separate listener for the Raft peer service only; then `address` serves clients only. */
  readonly peerAddress?: string;
  /** Member id -> host:port: THIS node dials that member there instead of the address it knows for it
   *  (its Raft peer stream, client calls it forwards, the questions it asks peers). Node-local: the
   *  replicated configuration keeps the advertised addresses, and Status still reports them. For a member
   *  that serves Raft and clients on one `address` (no peerAddress) — e.g. a TCP proxy per link in the
   *  chaos runs (scripts/chaos.ts), which cut, delay or drop one direction of one node-to-node link. */
  readonly peerDialOverrides?: Readonly<Record<string, string>>;
  /** Not one of the initial voters: a member added later with `members add`, whose first start joins the
   *  running cluster (as `serve --join`) instead of bootstrapping. Lets one file — a Kubernetes ConfigMap —
   *  list the members a StatefulSet may grow to. The initial voters and the cluster id come from the others. */
  readonly join?: true;
}

export const CLIENT_AUTH_MODES = ['none', 'request', 'require'] as const;
export type ClientAuthMode = (typeof CLIENT_AUTH_MODES)[number];

/** `tls:` — all paths PEM, resolved against the config file's directory. */
export interface TlsSettings {
  readonly cert: string;
  readonly key: string;
  readonly ca: string;
  readonly clientAuth: ClientAuthMode;
}

export interface AuthSettings {
  /** The owner of every Acquire/Renew/Release must equal the caller's certificate CN. */
  readonly ownerBinding: boolean;
  /** Certificate CNs that may call Revoke under owner binding (SPEC "Revoke"). */
  readonly admins: readonly string[];
}

/** Raft timing and flow control. Field names match src/raft/core RaftConfig where they overlap. */
export interface RaftSettings {
  /** Wall-clock length of one logical tick. */
  readonly tickMs: number;
  /** Election timeout in ticks, randomized in [electionTicks, 2*electionTicks); a node's first after it
   *  starts, with preVote and checkQuorum on, in [1, electionTicks] (Raft.fastForwardFirstElectionTimeout). */
  readonly electionTicks: number;
  /** Leader heartbeat interval in ticks; must be less than electionTicks. */
  readonly heartbeatTicks: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  readonly maxInflight: number;
  readonly maxEntriesPerMessage: number;
  readonly maxBytesPerMessage: number;
  /** Take a snapshot after this many applied entries since the last one. */
  readonly snapshotEvery: number;
  readonly snapshotChunkBytes: number;
}

/** Lock service behaviour. Must be identical on every node: some of it shapes replicated state. */
export interface LockSettings {
  readonly minTtlMs: number;
  readonly maxTtlMs: number;
  /** How long (log time) a request_id's outcome is remembered for safe retries. */
  readonly dedupWindowMs: number;
  /** Upper bound of AcquireRequest.wait_ms (0 disables waiting). */
  readonly maxWaitMs: number;
  /** Largest AcquireRequest.lock_delay_ms (SPEC "Lock-delay"). */
  readonly maxLockDelayMs: number;
  /** Largest AcquireRequest.value in bytes (SPEC "Value"). */
  readonly maxValueBytes: number;
  /** While leases are live and nothing else is proposed, the leader checkpoints log time this often. */
  readonly checkpointIdleMs: number;
  /** A free key's record (its last token) is forgotten this long (log time) after it was freed. */
  readonly freeKeyRetentionMs: number;
}

export interface LimitSettings {
  /** Largest gRPC message a node sends or accepts (client and peer). */
  readonly maxMessageBytes: number;
  /** Outbound Raft messages queued per unreachable peer before the oldest are dropped. */
  readonly peerQueueMessages: number;
  readonly maxKeyBytes: number;
  readonly maxOwnerBytes: number;
  readonly maxWaitersPerKey: number;
  readonly maxWaiters: number;
  readonly maxHeldPerOwner: number;
  readonly maxHeld: number;
  readonly maxKeys: number;
  /** Open sessions in the cluster (each ~200 bytes plus its holds' records). */
  readonly maxSessions: number;
  /** Holds under one session. */
  readonly maxHoldsPerSession: number;
}

/** Watch (SPEC "Watch"): each node's own; they shape no replicated state. */
export interface WatchSettings {
  /** Events kept for resuming a watch from an index; a watcher further behind is cut off. */
  readonly historyEvents: number;
  /** Open watches on one node. */
  readonly maxWatchers: number;
}

export interface LogSettings {
  readonly level: LogLevel;
  readonly format: LogFormat;
}

export interface MetricsSettings {
  /** host:port of the Prometheus endpoint (GET /metrics); null: no metrics endpoint. */
  readonly address: string | null;
  /** With tls.clientAuth: require, serve GET /metrics without a client certificate (scrapers); the
   *  dashboard and its JSON views still require one. */
  readonly openScrape: boolean;
  /** Sampling period of the event-loop lag histogram (leasehold_nodejs_eventloop_lag_*), ms. */
  readonly loopLagResolutionMs: number;
}

export interface ClusterSettings {
  readonly raft: RaftSettings;
  readonly lock: LockSettings;
  readonly limits: LimitSettings;
  readonly watch: WatchSettings;
  readonly log: LogSettings;
  readonly metrics: MetricsSettings;
}

export interface ClusterConfig extends ClusterSettings {
  readonly nodes: readonly NodeConfig[];
  /** null: plaintext. */
  readonly tls: TlsSettings | null;
  readonly auth: AuthSettings;
  /** Where the config came from: the file path, or a label such as `<dev>`. */
  readonly source: string;
}

/** Per-section overrides, e.g. `{ raft: { tickMs: 20 } }` (for devConfig and tests). */
export type SettingsOverrides = { readonly [S in keyof ClusterSettings]?: Partial<ClusterSettings[S]> };
