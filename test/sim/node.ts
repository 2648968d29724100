// One simulated server: its current driver (the real RaftNode), core and state machine (gone on a
// crash), and what outlives crashes — its disk (and the durable log decoded from it), its identity, its rng and its clock.
import type { NodeId } from '../../src/raft/core/types.js';
import type { RaftNode } from '../../src/raft/node.js';
import type { PersistBatch } from '../../src/raft/storage/types.js';
import type { DurableStore } from './durable.js';
import type { SimDisk } from './sim-disk.js';
import type { SimStateMachine } from './machine.js';
import type { SimRng } from './rng.js';
import type { CrashArm, SimCore } from './types.js';

export class SimNode {
  up = false;
  /** A slot of the simulation exists as a server: the initial nodes, and a spare id once the membership
   *  nemesis had a leader accept its addition (membership.ts). An unborn slot is never booted, crashed
   *  or restarted, and no client talks to it. */
  born = true;
  /** Started with `join: true` over blank storage (a node added at runtime) instead of bootstrapping. */
  joiner = false;
  /** Index of the latest configuration entry the checks have seen in this node's core (node-checks.ts). */
  confIndexSeen = -1;
  /** The driver of a new incarnation is loading its state. */
  booting = false;
  io: import('./io.js').NodeIO | null = null;
  incarnation = 0;
  /** The real driver of this incarnation (null while it boots or after a crash). */
  rn: RaftNode<unknown> | null = null;
  /** The core the driver built (captured through the core factory): what the invariants inspect. */
  raft!: SimCore;
  sm!: SimStateMachine;
  /** Highest index applied to `sm` in this incarnation. */
  applied = 0;
  /** The batch the driver is saving (through the real store, on the disk's time); null when none is. */
  inflight: PersistBatch | null = null;
  /** The last completed write, for 'after-send' crash arms. */
  lastPersisted: PersistBatch | null = null;
  lastTerm = 0;
  lastCommit = 0;
  /** Sim time this node last became leader (for the check-quorum invariant); -1 when not leader. */
  leaderSince = -1;
  /** The voters of this node's configuration, and since when (sim time) it has had exactly those: a
   *  leader needs a quorum of the voters it has now only from the moment it has them (check-quorum). */
  votersKey = '';
  votersSince = 0;
  /** heardAt[j]: sim time of the last message from node j delivered here (any term). */
  readonly heardAt: number[];
  /** heardInTermAt[j]: ... with the message's term equal to this node's term after the step. */
  readonly heardInTermAt: number[];
  arm: CrashArm | null = null;
  tickMs: number;
  /** The node's nominal tick interval (the 'clock' fault changes tickMs; the quiet phase restores it). */
  readonly baseTickMs: number;
  clockSkewMs: number;

  constructor(
    readonly idx: number,
    readonly id: NodeId,
    /** The node's disk, and its durable log as decoded from it: both outlive crashes. */
    readonly disk: SimDisk,
    readonly durable: DurableStore,
    readonly coreRng: SimRng,
    tickMs: number,
    clockSkewMs: number,
    nodeCount: number,
  ) {
    this.tickMs = tickMs;
    this.baseTickMs = tickMs;
    this.clockSkewMs = clockSkewMs;
    this.heardAt = new Array<number>(nodeCount).fill(-Infinity);
    this.heardInTermAt = new Array<number>(nodeCount).fill(-Infinity);
  }
}
