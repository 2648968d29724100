// Types shared by the simulator's files: the core API it drives, run options, crash arms, statistics.
import type { NodeId, RaftConfig, RestoredState, Rng } from '../../src/raft/core/types.js';
import type { RaftStorage } from '../../src/raft/storage/types.js';
import type { WalLoadReport, WalStorageOptions } from '../../src/raft/storage/wal-storage.js';
import type { SimCluster } from './cluster.js';
import type { SimProfile } from './profile.js';
import type { SimWorkload } from './workload.js';

import type { RaftInspection } from '../../src/raft/core/inspect.js';
/** The slice of the core's API the driver uses (a scratch copy with a planted bug plugs in). */
export type { RaftCore } from '../../src/raft/node.js';
import type { RaftCore } from '../../src/raft/node.js';

/** The core's read-only inspection (src/raft/core/inspect.ts), as a structural type: a scratch copy's
 *  plugs in too. */
export type CoreInspection = Pick<RaftInspection, 'basic' | 'termAt' | 'entryAt' | 'configurations' | 'configurationAt'>;

/** What the simulator drives: the driver's slice of the core, and the inspection its invariants read
 *  instead of the core's private fields. */
export type SimCore = RaftCore & { inspect(): CoreInspection };

export interface CoreModule {
  Raft: new (cfg: RaftConfig, restored: RestoredState) => SimCore;
  defaultRaftConfig(id: NodeId, rng: Rng): RaftConfig;
}

/** An extra invariant run after every event; return a violation message or null. */
export type ExtraInvariant = (sim: SimCluster) => string | null;

/** The slice of src/raft/storage/wal-storage.ts the simulator opens its nodes' stores with. */
export interface StorageModule {
  WalStorage: { open(dir: string, options: WalStorageOptions): Promise<RaftStorage & { readonly loadReport: WalLoadReport }> };
}

export interface SimOptions {
  seed: number;
  /** Events in the fault phase (ticks, deliveries, persists, client and fault events all count). */
  events?: number;
  workload?: SimWorkload<any>;
  invariants?: ExtraInvariant[];
  core?: CoreModule;
  /** The store the nodes persist through: default the real WalStorage; a scratch copy with a planted bug
   *  plugs in here (storage-mutants.ts). */
  storage?: StorageModule;
  /** Overrides of the per-seed profile (e.g. { nodeCount: 5 }). */
  profile?: Partial<SimProfile>;
  /** Trace lines printed with a violation (default 60). */
  traceLines?: number;
  /** Keep every trace line (memory grows with the run); default keeps a ring of 4 * traceLines. */
  fullTrace?: boolean;
  /** Run the final heal/restart/quiet liveness phase (default true). */
  liveness?: boolean;
  /** Max virtual ms the quiet phase may take to converge (default 150 election timeouts' worth). */
  quietMs?: number;
  /** Runtime membership changes in the fault schedule (membership.ts): spare node ids join as learners,
   *  are promoted, members (the leader too) are removed. Default false (the lock simulation's services
   *  are built for a fixed set of nodes). */
  membership?: boolean;
}

export class SimViolation extends Error {
  constructor(
    readonly seed: number,
    readonly invariant: string,
    message: string,
  ) {
    super(message);
    this.name = 'SimViolation';
  }
}

export type CrashPoint = 'mid-persist' | 'after-persist' | 'after-send';
export type CrashFilter = 'any' | 'vote' | 'entries';

export interface CrashArm {
  point: CrashPoint;
  filter: CrashFilter;
}

export interface SimStats {
  events: number;
  faultPhaseEvents: number;
  virtualMs: number;
  messagesSent: number;
  messagesDropped: number;
  messagesDuplicated: number;
  messagesReplayed: number;
  persists: number;
  lostBatches: number;
  /** Writes a crash tore (a prefix of their bytes survived: sim-disk.ts), and storage recoveries checked. */
  tornWrites: number;
  recoveries: number;
  crashes: number;
  /** Crashes at a chosen pipeline point: mid-persist (batch lost), after-persist (before send), after-send. */
  armedCrashes: number;
  restarts: number;
  powerLosses: number;
  partitions: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
  /** Streams of the applied store opened by a leader, and streamed snapshots a follower swapped in. */
  streamsOpened: number;
  streamsInstalled: number;
  /** Armed crashes of a follower mid-stream (after a chunk was written, before its answer). */
  streamCrashes: number;
  /** Streams a follower's store was handed a corrupted chunk of (the fault arm), streams it refused, and
   *  streams it installed after it had refused one. */
  streamsCorrupted: number;
  streamsRefused: number;
  streamsInstalledAfterRefusal: number;
  compactions: number;
  proposals: number;
  acks: number;
  readsOk: number;
  readsFailed: number;
  transfers: number;
  /** Membership changes the nemesis proposed, those a leader accepted (appended), those refused (not
   *  leader, pending, not ready, invalid), and nodes started with `join`. */
  confProposed: number;
  confAccepted: number;
  confRefused: number;
  joins: number;
  /** Peer-unreachable reports delivered (reports.ts): after a crash, and false ones (peer alive). */
  reportsTrue: number;
  reportsFalse: number;
  maxTerm: number;
  finalCommit: number;
  convergeMs: number;
}

export function emptyStats(): SimStats {
  return {
    events: 0,
    faultPhaseEvents: 0,
    virtualMs: 0,
    messagesSent: 0,
    messagesDropped: 0,
    messagesDuplicated: 0,
    messagesReplayed: 0,
    persists: 0,
    lostBatches: 0,
    tornWrites: 0,
    recoveries: 0,
    crashes: 0,
    armedCrashes: 0,
    restarts: 0,
    powerLosses: 0,
    partitions: 0,
    snapshotsSent: 0,
    snapshotsInstalled: 0,
    streamsOpened: 0,
    streamsInstalled: 0,
    streamCrashes: 0,
    streamsCorrupted: 0,
    streamsRefused: 0,
    streamsInstalledAfterRefusal: 0,
    compactions: 0,
    proposals: 0,
    acks: 0,
    readsOk: 0,
    readsFailed: 0,
    transfers: 0,
    confProposed: 0,
    confAccepted: 0,
    confRefused: 0,
    joins: 0,
    reportsTrue: 0,
    reportsFalse: 0,
    maxTerm: 0,
    finalCommit: 0,
    convergeMs: 0,
  };
}

export interface SimResult {
  seed: number;
  stats: SimStats;
  summary: string;
  wallMs: number;
  cluster: SimCluster;
}
