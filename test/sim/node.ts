// One simulated server: its current Raft core and state machine (gone on a crash), and what outlives
// crashes — its durable store, its identity and its clock.
import type { Ready } from '../../src/raft/core/types.js';
import type { NodeId } from '../../src/raft/core/types.js';
import type { Attempt } from './clients.js';
import type { DurableStore } from './durable.js';
import type { StateMachine } from './machine.js';
import type { SimRng } from './rng.js';
import type { CrashArm, RaftCore } from './types.js';

export class SimNode {
  up = true;
  incarnation = 0;
  raft!: RaftCore;
  sm!: StateMachine;
  /** Highest index applied to `sm` in this incarnation. */
  applied = 0;
  /** The Ready being persisted (disk latency); null when the disk is idle. */
  inflight: Ready | null = null;
  /** Writes proposed here: index -> client attempt waiting for that index to apply. */
  readonly waiters = new Map<number, Attempt>();
  /** ReadIndex requests issued here, by ctx, until their ReadState / ReadFailure arrives. */
  readonly pendingReads = new Map<string, Attempt>();
  /** ReadStates waiting for `applied` to reach their index. */
  servable: { attempt: Attempt; index: number }[] = [];
  lastTerm = 0;
  lastCommit = 0;
  arm: CrashArm | null = null;
  tickMs: number;
  /** The node's nominal tick interval (the 'clock' fault changes tickMs; the quiet phase restores it). */
  readonly baseTickMs: number;
  clockSkewMs: number;

  constructor(
    readonly idx: number,
    readonly id: NodeId,
    readonly durable: DurableStore,
    readonly coreRng: SimRng,
    tickMs: number,
    clockSkewMs: number,
  ) {
    this.tickMs = tickMs;
    this.baseTickMs = tickMs;
    this.clockSkewMs = clockSkewMs;
  }
}
