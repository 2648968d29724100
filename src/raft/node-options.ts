// What the driver (node.ts) is built from: the slice of the core it drives (a scratch core with a planted
// bug plugs in here) and the options a RaftNode starts with.
import type {
  ConfChange,
  ConfChangeResult,
  Entry,
  Message,
  NodeId,
  ProposeResult,
  RaftConfig,
  Ready,
  RestoredState,
  Snapshot,
  SnapshotMeta,
  Status,
} from './core/types.js';
import type { ProgressView } from './core/progress.js';
import type { NodeEnv } from './env.js';
import type { StateMachine } from './fsm.js';
import type { NodeLogger } from './logger.js';
import type { RaftStorage } from './storage/types.js';
import type { PeerSender } from './peer-sender.js';

/** The slice of the core's API the driver uses: a scratch copy with a planted bug plugs in here. */
export interface RaftCore {
  tick(): void;
  step(msg: Message): void;
  leaderUnreachable(from: NodeId): void;
  propose(data: Uint8Array): ProposeResult;
  proposeConfChange(change: ConfChange): ConfChangeResult;
  readIndex(ctx: string): void;
  transferLeadership(to: NodeId): boolean;
  hasReady(): boolean;
  ready(): Ready;
  advance(rd: Ready): void;
  takeDurableCommitted(maxCount?: number): Entry[];
  takeMessagesNotWaitingForDisk(): Message[];
  compact(index: number, data: Uint8Array): Snapshot | null;
  takeSnapshotWanted(): boolean;
  offerSnapshot(index: number, data: Uint8Array): boolean;
  offerStream(meta: SnapshotMeta): boolean;
  withdrawOffer(): void;
  snapshotVerified(meta: SnapshotMeta): boolean;
  snapshotRefused(meta: SnapshotMeta): void;
  dropSnapshotData(): void;
  status(): Status;
  progressSnapshot(): Map<NodeId, ProgressView>;
}

export type CoreFactory = (cfg: RaftConfig, restored: RestoredState) => RaftCore;

export interface RaftNodeOptions<R> {
  id: NodeId;
  /** First boot only (empty storage): the initial voters, their peer addresses and the cluster id, which
   *  become the bootstrap snapshot at index 0. Ignored once storage holds state. */
  voters: NodeId[];
  addresses?: Record<NodeId, string>;
  clusterId?: string;
  /** First boot of a node added with `members add`: start with no configuration at all and wait for the
   *  leader to contact us (never bootstrap a cluster of our own). */
  join?: boolean;
  /** Runs on first boot (empty storage) before anything is written; throwing aborts the start. The
   *  runtime asks its peers here whether the cluster already knows this node (a wiped data dir). */
  beforeBootstrap?: () => Promise<void>;
  storage: RaftStorage;
  transport: PeerSender;
  fsm: StateMachine<R>;
  tickMs: number;
  /** Take an application snapshot (and compact the log) every this many applied entries — for a large
   *  state, only once the log is also a share of its size (snapshot-policy.ts). */
  snapshotEvery: number;
  /** With a stored state machine (fsm.stored): entries the log keeps below what the store holds, so a
   *  follower a little behind catches up from the log rather than a snapshot (etcd keeps 5,000). Default
   *  half of snapshotEvery. */
  catchUpEntries?: number;
  raft?: Partial<Omit<RaftConfig, 'id' | 'rng'>>;
  logger?: NodeLogger;
  /** Clock, timers and rng; default realEnv(). */
  env?: NodeEnv;
  /** Builds the core; default the real one. */
  core?: CoreFactory;
}
