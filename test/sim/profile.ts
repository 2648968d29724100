// Every knob of one simulated run, drawn from the seed. Different seeds explore different regimes —
// calm vs. lossy networks, fast vs. slow disks, frequent vs. rare snapshots, Pre-Vote and CheckQuorum
// on or off, tiny message/chunk limits — instead of one average setting that hides corner cases.
import type { RaftConfig } from '../../src/raft/core/types.js';
import { SimRng } from './rng.js';

export interface SimProfile {
  nodeCount: number;
  /** Base tick interval in virtual ms; each node runs at its own rate around it. */
  tickMs: number;
  /** Overrides applied on top of defaultRaftConfig (per seed). */
  raft: Partial<Omit<RaftConfig, 'id' | 'rng'>>;
  /** Peer network: uniform delay in [min, max] ms, plus rare long delays (reordering, stale delivery). */
  netDelayMinMs: number;
  netDelayMaxMs: number;
  spikeChance: number;
  spikeMaxMs: number;
  loss: number;
  duplicate: number;
  /** Disk: latency of one synced Ready write. */
  diskMinMs: number;
  diskMaxMs: number;
  /** Mean virtual ms between injected faults. */
  faultMeanMs: number;
  /** After each fault, the chance the nemesis pauses (no new faults; partitions and downed nodes
   *  stay as they are until their own timers) for ~calmMeanMs: progress happens in the calm, which is
   *  when a deposed leader's stale answers become detectable. */
  calmChance: number;
  calmMeanMs: number;
  /** Mean lifetime of a partition / one-way cut before it heals by itself. */
  partitionMeanMs: number;
  /** Mean downtime of a crashed node. */
  downMeanMs: number;
  /** The application snapshots (raft.compact + storage compaction) every N applied entries. */
  snapshotEvery: number;
  clients: number;
  thinkMeanMs: number;
  /** Client gives up on an attempt after this long and retries elsewhere. */
  clientTimeoutMs: number;
  /** Client <-> node one-way latency range, and the chance a response is lost (op becomes unknown). */
  clientDelayMaxMs: number;
  clientLoss: number;
  /** Probability of keeping a sent message in the replay reservoir (stale re-delivery fault). */
  reservoirChance: number;
  /** Per-node clock skew range (± ms) seen by ProposeContext.nodeNow. */
  clockSkewMs: number;
  /** With SimOptions.membership: mean virtual ms between membership-change attempts, and how many spare
   *  node ids the run may add (ids are never reused, so this bounds the adds). */
  memberMeanMs: number;
  spareNodes: number;
  /** WAL segments preallocated to this many bytes (0: none, every frame grows the file): the store's two
   *  ways a torn frame looks (zeros after it, or a file cut short). */
  walSegmentBytes: number;
}

export function profileFor(seed: number, overrides: Partial<SimProfile> = {}): SimProfile {
  const r = SimRng.derive(seed, 'profile');
  const nodeCount = r.chance(0.55) ? 3 : 5;
  const electionTicks = r.pick([5, 10, 10, 10, 20]);
  const p: SimProfile = {
    nodeCount,
    tickMs: 10,
    raft: {
      electionTicks,
      heartbeatTicks: r.pick([1, 1, 2, 3]),
      preVote: r.chance(0.6),
      checkQuorum: r.chance(0.6),
      maxInflight: r.pick([1, 2, 4, 64, 256]),
      maxEntriesPerMessage: r.pick([1, 2, 4, 64, 256]),
      maxBytesPerMessage: r.pick([16, 256, 4096, 1 << 20]),
      snapshotChunkBytes: r.pick([7, 64, 512, 1 << 20]),
    },
    netDelayMinMs: r.pick([0.1, 0.5, 1]),
    netDelayMaxMs: r.pick([2, 5, 10, 25]),
    spikeChance: r.pick([0, 0.01, 0.03, 0.1]),
    spikeMaxMs: r.pick([50, 200, 600]),
    loss: r.pick([0, 0, 0.01, 0.05, 0.15]),
    duplicate: r.pick([0, 0.01, 0.05, 0.15]),
    diskMinMs: r.pick([0.05, 0.2, 1]),
    diskMaxMs: r.pick([0.5, 2, 5, 20]),
    faultMeanMs: r.pick([30, 60, 120, 250]),
    downMeanMs: r.pick([30, 150, 600]),
    partitionMeanMs: r.pick([100, 300, 1000]),
    calmChance: r.pick([0, 0.1, 0.25]),
    calmMeanMs: r.pick([150, 500]),
    snapshotEvery: r.pick([3, 8, 25, 100, 1e9]),
    clients: r.range(1, 5),
    thinkMeanMs: r.pick([1, 5, 20, 60]),
    clientTimeoutMs: r.pick([100, 300, 800]),
    clientDelayMaxMs: r.pick([1, 3, 10]),
    clientLoss: r.pick([0, 0.02, 0.1]),
    reservoirChance: r.pick([0.01, 0.05, 0.2]),
    clockSkewMs: r.pick([0, 20, 500]),
    // Drawn last: the knobs above stay what they were for every seed.
    memberMeanMs: r.pick([25, 60, 150]),
    spareNodes: r.range(2, 6),
    walSegmentBytes: r.pick([0, 256, 4096]),
  };
  if (p.diskMaxMs < p.diskMinMs) p.diskMaxMs = p.diskMinMs;
  return { ...p, ...overrides, raft: { ...p.raft, ...(overrides.raft ?? {}) } };
}
