// Shared types of the pure Raft core. No I/O, no clocks: time is ticks, randomness is an injected Rng.
// Indexes and terms are plain numbers: they count log entries and elections, and stay far below 2^53.
// (Fencing tokens derived from indexes are widened to bigint at the lock layer and on the wire.)

export type NodeId = string;

/** 'noop' is the empty entry a new leader appends to commit entries of earlier terms (Raft §5.4.2, §8).
 *  'config' carries a membership change: the change and the configuration it makes (conf.ts ConfEntry,
 *  encoded by the core). */
export type EntryKind = 'normal' | 'noop' | 'config';

export interface Entry {
  index: number;
  term: number;
  kind: EntryKind;
  data: Uint8Array;
}

/** What must be durable before any message that depends on it leaves the node (Raft Figure 2). */
export interface HardState {
  term: number;
  votedFor: NodeId | null;
  commitIndex: number;
}

/** Membership is data: it lives in snapshots and configuration entries (conf.ts), never only in a
 *  config file. */
export interface ConfState {
  /** Fixed at bootstrap and kept in every node's data; peers of another cluster are refused. '' while a
   *  joining node has not yet heard from its cluster. */
  clusterId: string;
  voters: NodeId[];
  learners: NodeId[];
  /** host:port of each member's peer endpoint (voters and learners). */
  addresses: Record<NodeId, string>;
  /** Every id ever removed: node ids are never reused (a returning old node must not be mistaken for a
   *  new one with the same name). */
  removed: NodeId[];
}

export type ConfChange =
  { type: 'add'; id: NodeId; address: string; learner: boolean } | { type: 'promote'; id: NodeId } | { type: 'remove'; id: NodeId };

export interface SnapshotMeta {
  index: number;
  term: number;
  conf: ConfState;
}

export interface Snapshot {
  meta: SnapshotMeta;
  data: Uint8Array;
  /** The application streams the data chunk by chunk (Raft.offerStream): `data` is empty and each
   *  InstallSnapshot the core makes of it is filled by the driver (InstallSnapshot.streamed). */
  streamed?: true;
}

/** A chunk of a snapshot a follower accepted, in order, for the driver to write (RaftConfig.snapshotChunksToDriver). */
export interface SnapshotChunk {
  meta: SnapshotMeta;
  /** Byte offset of `data` in the snapshot (0: a new snapshot begins; forget any half-received one). */
  offset: number;
  data: Uint8Array;
  /** The last chunk: the driver checks what it wrote and says so (Raft.snapshotVerified, which makes the
   *  snapshot the log's — the next Ready carries it to install — or Raft.snapshotRefused). */
  done: boolean;
}

/** Deterministic randomness injected into the core (seeded in tests and simulation). */
export interface Rng {
  /** A uniformly distributed integer in [0, n). */
  int(n: number): number;
}

// ---- Messages: one-way, each carries from/to/term (etcd style), so drop/duplicate/reorder are trivial. ----

interface MessageBase {
  from: NodeId;
  to: NodeId;
  term: number;
}

/** A message as the core's parts write it: the core stamps `from`, and `term` unless it is given. */
export type UnstampedMessage = Message extends infer M ? (M extends Message ? Omit<M, 'from' | 'term'> & { term?: number } : never) : never;

export interface RequestVote extends MessageBase {
  type: 'RequestVote';
  /** Pre-Vote (Raft thesis §9.6): `term` is the term the candidate *would* use; nobody changes state. */
  preVote: boolean;
  lastLogIndex: number;
  lastLogTerm: number;
  /** Set when the election follows a TimeoutNow: voters must not ignore it because of leader stickiness. */
  transfer: boolean;
}

export interface RequestVoteResponse extends MessageBase {
  type: 'RequestVoteResponse';
  preVote: boolean;
  granted: boolean;
}

export interface AppendEntries extends MessageBase {
  type: 'AppendEntries';
  prevLogIndex: number;
  prevLogTerm: number;
  entries: Entry[];
  leaderCommit: number;
  /** Leader's heartbeat round; echoed in the response. Used to confirm leadership for ReadIndex. */
  round: number;
  /** Set by the leader on an append sent only to carry a new commit index (nothing new to replicate, no
   *  read to confirm): the driver may hold it briefly and drop it when a later message to the same
   *  follower carries the commit index anyway. Not on the wire. */
  commitOnly?: true;
}

export interface AppendEntriesResponse extends MessageBase {
  type: 'AppendEntriesResponse';
  success: boolean;
  /** On success: the index of the last entry known to match the leader's log.
   *  On rejection: the prevLogIndex that was rejected (lets the leader ignore stale rejections). */
  matchIndex: number;
  /** On rejection: hints for fast backtracking. conflictTerm is the follower's term at prevLogIndex
   *  (0 when the follower's log is too short), conflictIndex the first index it holds of that term
   *  (or its lastIndex + 1 when too short). */
  conflictIndex: number;
  conflictTerm: number;
  round: number;
}

export interface InstallSnapshot extends MessageBase {
  type: 'InstallSnapshot';
  meta: SnapshotMeta;
  /** Byte offset of this chunk within the snapshot data. */
  offset: number;
  chunk: Uint8Array;
  done: boolean;
  round: number;
  /** Made of an offered stream (Snapshot.streamed): `chunk` and `done` are still to be read from it, at
   *  `offset`, by the driver before it sends the message (never on the wire). */
  streamed?: true;
}

export interface InstallSnapshotResponse extends MessageBase {
  type: 'InstallSnapshotResponse';
  /** Snapshot index this answers for; `nextOffset` tells the leader which chunk to send next. */
  snapshotIndex: number;
  nextOffset: number;
  /** With `success`: the snapshot is installed (or the follower already had it). Without: the follower
   *  received it whole but it did not verify and was thrown away — send it again from offset 0. */
  done: boolean;
  success: boolean;
  round: number;
}

/** Leadership transfer (Raft thesis §3.10): the target starts an election at once. */
export interface TimeoutNow extends MessageBase {
  type: 'TimeoutNow';
}

/** A follower asks the leader for a read index (Raft §8 / thesis §6.4). */
export interface ReadIndexRequest extends MessageBase {
  type: 'ReadIndexRequest';
  ctx: string;
}

export interface ReadIndexResponse extends MessageBase {
  type: 'ReadIndexResponse';
  ctx: string;
  /** 0 when it could not be served: the node asked is not the leader, is outside its own configuration,
   *  or lost its leadership before the read was confirmed. (A leader that has not committed an entry of
   *  its term yet holds the read until it has: read-only.ts.) */
  index: number;
}

export type Message =
  | RequestVote
  | RequestVoteResponse
  | AppendEntries
  | AppendEntriesResponse
  | InstallSnapshot
  | InstallSnapshotResponse
  | TimeoutNow
  | ReadIndexRequest
  | ReadIndexResponse;

export type Role = 'follower' | 'pre-candidate' | 'candidate' | 'leader';

/** A read that may be served once the local applied index reaches `index`. */
export interface ReadState {
  ctx: string;
  index: number;
}

/** A ReadIndex that could not be served. 'no-leader': none is known, or this node lost its leadership
 *  before the read was confirmed. 'not-ready': the leader asked (this node, or the one a follower asked)
 *  could not serve it — not the leader (any more), or outside its own configuration. */
export interface ReadFailure {
  ctx: string;
  reason: 'no-leader' | 'not-ready';
}

export interface SoftState {
  role: Role;
  leaderId: NodeId | null;
  term: number;
}

/**
 * One batch of work for the driver. What safety needs of its order:
 *   - persist `snapshot` (if any), `entries` (replacing any stored entries with index >= entries[0].index)
 *     and `hardState` (if any) in ONE atomic, synced write before sending any message that depends on
 *     them — a leader's AppendEntries depend on none of it and may leave first (thesis §10.2.1), and so
 *     may what takeMessagesNotWaitingForDisk() hands out meanwhile;
 *   - restore the state machine from `snapshot` (if any) before applying `committedEntries`; committed
 *     entries already durable here may be applied before the write (takeDurableCommitted);
 *   - then call `advance(ready)`.
 * Do not call ready() again before advance(); step()/tick()/propose() in between are fine. The driver
 * (node.ts) says how it runs this order.
 */
export interface Ready {
  softState: SoftState | null;
  hardState: HardState | null;
  snapshot: Snapshot | null;
  entries: Entry[];
  messages: Message[];
  committedEntries: Entry[];
  readStates: ReadState[];
  readFailures: ReadFailure[];
  /** Snapshot chunks accepted (RaftConfig.snapshotChunksToDriver), in order: the driver writes them before
   *  it sends this Ready's messages (their answers), after it installs `snapshot` (an earlier one: a Ready
   *  carries a received snapshot only once the driver verified it, so chunks beside it are of a later one). */
  snapshotChunks: SnapshotChunk[];
  /** The configuration this node now acts on, when it changed (a configuration entry was appended or
   *  truncated, or a snapshot installed): the driver updates peer addresses before sending `messages`. */
  conf: ConfState | null;
}

export interface RaftConfig {
  id: NodeId;
  /** Election timeout is randomized in [electionTicks, 2*electionTicks); the first one after the core is
   *  made, with preVote and checkQuorum on, in [1, electionTicks] (Raft.fastForwardFirstElectionTimeout). */
  electionTicks: number;
  heartbeatTicks: number;
  rng: Rng;
  preVote: boolean;
  checkQuorum: boolean;
  /** Max AppendEntries messages in flight to one member (follower or learner) while it is replicating
   *  (pipelining). */
  maxInflight: number;
  /** Max entries in one AppendEntries. */
  maxEntriesPerMessage: number;
  /** Soft byte limit on the entry data in one AppendEntries. */
  maxBytesPerMessage: number;
  /** Snapshot chunk size for InstallSnapshot. */
  snapshotChunkBytes: number;
  /** A follower hands each snapshot chunk it accepts to the driver (Ready.snapshotChunks) instead of
   *  collecting them: the driver writes them where the snapshot goes (an application store) as they come,
   *  and the snapshot a Ready then carries has no data; the log takes a snapshot only once the driver says
   *  what it wrote verified (Raft.snapshotVerified / snapshotRefused). Default off: the core reassembles the
   *  data and takes it at its last chunk. */
  snapshotChunksToDriver?: boolean;
}

/** What a node restarts from: loaded from storage by the driver. `snapshot` is always present
 *  (a bootstrap snapshot at index 0 carries the initial voter set). */
export interface RestoredState {
  hardState: HardState;
  snapshot: Snapshot;
  /** Entries after snapshot.meta.index, contiguous. */
  entries: Entry[];
  /** The state machine already holds the effects of every entry up to here (a store of its own, restarted
   *  at its point: src/raft/stored-start.ts). The core hands out only entries after it; those between the
   *  snapshot and it stay in the log as a catch-up tail for followers a little behind, never applied again.
   *  Absent: the snapshot's index (the state machine is restored from the snapshot). */
  appliedIndex?: number;
}

export type ProposeResult =
  { ok: true; index: number; term: number } | { ok: false; reason: 'not-leader' | 'transferring'; leaderId: NodeId | null };

/** A membership change can also be refused for what it is or for when it comes (conf.ts). */
export type ConfChangeResult =
  ProposeResult | { ok: false; reason: 'conf-pending' | 'conf-not-ready' | 'conf-invalid'; leaderId: NodeId | null; message: string };

export interface Status {
  id: NodeId;
  role: Role;
  term: number;
  leaderId: NodeId | null;
  commitIndex: number;
  appliedIndex: number;
  lastIndex: number;
  /** Entries up to here are durable in this node's own log (a leader may apply past it: takeDurableCommitted). */
  durableIndex: number;
  firstIndex: number;
  voters: NodeId[];
  learners: NodeId[];
  /** The configuration in use and the index of the entry (or snapshot) it comes from. */
  conf: ConfState;
  confIndex: number;
}

export function emptyHardState(): HardState {
  return { term: 0, votedFor: null, commitIndex: 0 };
}

/** The initial configuration as a snapshot at index 0. An empty `voters` list is a joining node's start:
 *  it knows no cluster yet and waits to be contacted by a leader. */
export function bootstrapSnapshot(voters: NodeId[], opts: { clusterId?: string; addresses?: Record<NodeId, string> } = {}): Snapshot {
  const conf: ConfState = {
    clusterId: opts.clusterId ?? '',
    voters: [...voters].sort(),
    learners: [],
    addresses: { ...(opts.addresses ?? {}) },
    removed: [],
  };
  return { meta: { index: 0, term: 0, conf }, data: new Uint8Array(0) };
}
