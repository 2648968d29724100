// Clocks and per-seed knobs of the lock simulation.
//
// Time model. Simulation time t (virtual ms) is TRUE time. Every node and every client has its own clock
//   reading(t) = offsetMs + t * rate,   rate = 1 + drift,   |drift| <= maxDrift
// — an arbitrary offset (clocks disagree by any amount) and a bounded rate error, fixed per run (a node's
// clock survives its crashes, like a hardware clock). Leaders stamp entries with floor(reading): integer ms,
// as Date.now() does. Nothing else in the simulation reads these clocks, so code that uses the wrong clock
// (the applying node's instead of the entry's stamp, a new leader's instead of the lease's own term) shows
// up as a replica divergence or as a lease ending early in true time.
//
// The bounds both sides rely on (derivation in lock-invariants.ts, "min hold"):
//  - server: a lease granted/renewed by an entry stamped at true time r is never judged expired by an entry
//    stamped before r + (ttl - 1 - epochs) / (1 + maxDrift), where `epochs` is the number of leader changes
//    it was carried through (each term's integer stamps can overstate the time it measured by < 1 ms);
//  - client: it trusts its lease for (ttl - 1 - slack) * (1 - maxDrift) / (1 + maxDrift) of its OWN clock
//    from the moment it sent the request, which in true time is at most (ttl - 1 - slack) / (1 + maxDrift).
import type { AdmissionLimits } from '../../src/lock/leader/index.js';
import { SimRng } from './rng.js';

export interface LinearClock {
  offsetMs: number;
  rate: number;
}

export function readClock(clock: LinearClock, trueMs: number): number {
  return clock.offsetMs + trueMs * clock.rate;
}

/** Knobs of one lock run, drawn from the seed (and overridable, e.g. by scenario tests). */
export interface LockProfile {
  /** Bound on every clock's rate error (0.01 = 1%). */
  maxDrift: number;
  /** Node clock offsets are uniform in ±spread around a common base. */
  nodeOffsetSpreadMs: number;
  keys: string[];
  /** Simulated clients (overrides the harness profile's `clients`). */
  clients: number;
  /** Each client picks its TTL from these. */
  ttlChoicesMs: number[];
  /** Chance a client is a "staller": now and then it checks its lease, pauses past its TTL, then writes
   *  and renews with the old token as if no time had passed (a GC pause; fencing must stop the write). */
  stallerChance: number;
  /** Lock machine dedup window (log time). */
  dedupWindowMs: number;
  /** The leader proposes a checkpoint when leases exist and nothing was proposed for this long. */
  checkpointIdleMs: number;
  /** Extra ms every client keeps in hand (covers the per-epoch stamp rounding, see the header). */
  clientSlackMs: number;
  /** Chance per operation a client reads the lock (Get through ReadIndex) instead of writing. */
  readRatio: number;
  /** The lock service's housekeepingMs, in ticks of the simulated cluster. */
  housekeepingEveryTicks: number;
  /** Timeout of the leader's own proposals (expire, checkpoint, a waiter's grant). */
  leaderProposalTimeoutMs: number;
  /** Share of acquires that block (wait_ms > 0: FIFO at the leader, for half a TTL to three TTLs). */
  waitChance: number;
  /** Share of acquires whose hold carries a lock-delay (a fifth of a TTL to 1.2 TTLs). A fixed share, not
   *  picked per seed: drawing it would reshuffle every seed's other picks. */
  lockDelayChance: number;
  /** Share of blocking attempts the client gives up on mid-wait (cancel, then retry the same request_id). */
  giveUpChance: number;
  /** Chance a holder next wakes up right at the end of its trust window instead of renewing early. */
  lateRenewChance: number;
  /** Where a client's trust window starts: 'send' (the SPEC rule) or 'ack' — a planted CLIENT bug (the
   *  window starts when the answer arrives, later than the grant) used to show the real-time checks bite. */
  clientTrustFrom: 'send' | 'ack';
  /** The oracle's structural check that an epoch start extends every live lease to a full TTL from its
   *  start. Off only to show the end-to-end checks (true-time min hold, mutual exclusion, fencing) catch a
   *  missing extension by themselves (lock-mutants.ts). */
  oracleChecksExtension: boolean;
  /** Mean ms between nemesis faults; 0 = the harness profile's own draw (30..250 ms). Calmer runs let
   *  leases live through whole terms, so leader changes carry live leases. */
  faultMeanMs: number;
  /** Nodes (the first n) that start on a build of cluster level 1 (versions.ts) and run the current build
   *  from their first restart on: a rolling upgrade. The leader may raise the level only once every member
   *  runs the new build; an old build meeting a level-2 entry or snapshot stops (core-threw). */
  oldBuildNodes: number;
  /** Keys with many holds (holds.ts), also in `keys`: each used only by the group clients, with its own
   *  limit (a semaphore of 2-3, or 1 with shared and exclusive holds). Empty = a mutex-only run. */
  groupKeys: GroupKeySpec[];
  /** Share of acquires of a group key that deliberately name another limit (LIMIT_MISMATCH expected
   *  while the key has holders or waiters), or ask the other mode of the client's own hold. */
  groupMismatchChance: number;
  /** Every client is a group client (mutex keys unused): for mutants that must be caught on group keys. */
  groupsOnly: boolean;
  /** The last this-many of `clients` are group clients (the mutex clients before them keep their ids). */
  groupClients: number;
  /** Share of a client's asks for a new key that are an operator's Revoke instead (lock-clients.ts). A fixed
   *  share, drawn from a stream of its own: the other picks of every seed stay what they were up to the
   *  first revoke. */
  revokeChance: number;
  /** Share of seeds whose leaders admit under small limits (`limits`), decided by a stream of its own. */
  limitsShare: number;
  /** The admission limits every node's lock leader enforces (src/lock/leader/admission.ts), small enough for
   *  the workload to meet them (RESOURCE_EXHAUSTED), or null: none (NO_ADMISSION_LIMITS). Drawn for a share of the
   *  seeds (`limitsShare`) unless given. */
  limits: Readonly<AdmissionLimits> | null;
  /** The longest turn of a node's event loop (ms): a lock service's turnEnd comes up to this long after it
   *  asked (uniform), so the renews reaching a leader meanwhile travel in one `renews` entry (level 7). */
  turnMs: number;
}

/** A key with many holds in the workload: a semaphore (`limit` >= 2) or a shared/exclusive key (limit 1). */
export interface GroupKeySpec {
  key: string;
  limit: number;
}

export function lockProfileFor(seed: number, overrides: Partial<LockProfile> = {}): LockProfile {
  const r = SimRng.derive(seed, 'lock-profile');
  const keyCount = r.pick([1, 1, 2, 3]);
  const p: LockProfile = {
    maxDrift: r.pick([0, 0.0001, 0.01, 0.03]),
    nodeOffsetSpreadMs: r.pick([0, 30, 300, 3000]),
    keys: Array.from({ length: keyCount }, (_, i) => `k${i}`),
    clients: r.range(2, 7),
    ttlChoicesMs: r.pick([
      [40, 80, 160],
      [60, 120, 240],
      [25, 50, 100, 400],
      [200, 500, 1000],
    ]),
    stallerChance: r.pick([0, 0.3, 0.6]),
    dedupWindowMs: r.pick([400, 3000, 600_000]),
    checkpointIdleMs: r.pick([8, 15, 40]),
    clientSlackMs: 3,
    readRatio: r.pick([0, 0.1, 0.25]),
    housekeepingEveryTicks: r.pick([1, 1, 3, 8]),
    leaderProposalTimeoutMs: r.pick([300, 1000, 5000]),
    waitChance: r.pick([0, 0.3, 0.6, 0.9]),
    giveUpChance: r.pick([0, 0.1, 0.3]),
    lockDelayChance: 0.2,
    lateRenewChance: r.pick([0, 0.1, 0.3]),
    faultMeanMs: r.pick([0, 0, 250, 500]),
    oldBuildNodes: r.pick([0, 0, 0, 1, 2]),
    clientTrustFrom: 'send',
    oracleChecksExtension: true,
    groupKeys: [],
    groupMismatchChance: 0.03,
    groupsOnly: false,
    groupClients: 0,
    revokeChance: 0.1,
    limitsShare: 0.25,
    limits: null,
    // Drawn from a stream of its own below.
    turnMs: 0,
  };
  // Drawn from a stream of their own, so the picks above stay what they were for every seed.
  const g = SimRng.derive(seed, 'lock-groups');
  if (overrides.keys === undefined) {
    const pick = g.pick(['none', 'semaphore', 'shared', 'both', 'both']);
    if (pick === 'semaphore' || pick === 'both') p.groupKeys.push({ key: 's0', limit: g.pick([2, 3]) });
    if (pick === 'shared' || pick === 'both') p.groupKeys.push({ key: 'r0', limit: 1 });
    p.keys = [...p.keys, ...p.groupKeys.map((k) => k.key)];
    if (p.groupKeys.length > 0) {
      // Enough of them to contend for a semaphore's slots and to hold shared together.
      p.groupClients = g.range(3, 5);
      p.clients += p.groupClients;
    }
  }
  p.turnMs = SimRng.derive(seed, 'lock-turn').pick([1, 5, 10, 20]);
  const merged = { ...p, ...overrides };
  if (merged.groupsOnly && merged.groupKeys.length === 0)
    merged.groupKeys = [
      { key: 's0', limit: 2 },
      { key: 'r0', limit: 1 },
    ];
  if (merged.groupsOnly) {
    merged.keys = merged.groupKeys.map((k) => k.key);
    merged.groupClients = merged.clients;
  }
  if (overrides.limits === undefined) merged.limits = limitsFor(seed, merged);
  return merged;
}

/** Small admission limits for a share of seeds (`limitsShare`), from a stream of their own (every other pick
 *  of the seed stays what it was). Each limit is tight on its own draw, else unlimited, so a run meets some
 *  of them and not others: one reached first hides the ones behind it (admission refuses by the first). */
function limitsFor(seed: number, p: LockProfile): Readonly<AdmissionLimits> | null {
  const r = SimRng.derive(seed, 'lock-limits');
  if (!r.chance(p.limitsShare)) return null;
  const tight = (chance: number, values: number[]) => (r.chance(chance) ? r.pick(values) : Infinity);
  return {
    maxHeld: tight(0.6, [1, 2, 3]),
    maxHeldPerOwner: tight(0.6, [1, 2]),
    maxWaitersPerKey: tight(0.6, [1, 2]),
    maxWaiters: tight(0.5, [1, 2, 3]),
    // Key records are never forgotten in the simulation (no freeKeyRetentionMs): one fewer than the run's keys
    // keeps its last key refused once the others have records.
    maxKeys: tight(0.4, [Math.max(1, p.keys.length - 1)]),
    maxSessions: tight(0.6, [1, 2, 3]),
    maxHoldsPerSession: tight(0.5, [1]),
  };
}

/** The keys only mutex clients use (the profile's keys that have no group spec). */
export function mutexKeys(p: LockProfile): string[] {
  return p.keys.filter((k) => !p.groupKeys.some((g) => g.key === k));
}

/** Every node's and client's clock for one run. */
export class ClockModel {
  readonly nodes: LinearClock[] = [];
  readonly clients: LinearClock[] = [];

  constructor(
    seed: number,
    nodeCount: number,
    clientCount: number,
    readonly maxDrift: number,
    offsetSpreadMs: number,
  ) {
    const r = SimRng.derive(seed, 'lock-clocks');
    // Far from zero, so nothing can assume the log starts at time 0; clients live on another base.
    const drift = () => (r.chance(0.3) ? r.pick([-1, 1]) : r.float() * 2 - 1) * maxDrift;
    for (let i = 0; i < nodeCount; i++) this.nodes.push({ offsetMs: 1_000_000 + (r.float() * 2 - 1) * offsetSpreadMs, rate: 1 + drift() });
    for (let i = 0; i < clientCount; i++) this.clients.push({ offsetMs: 50_000 + r.float() * 10_000, rate: 1 + drift() });
  }

  /** What node i's clock reads at true time t (a float). */
  nodeReading(i: number, trueMs: number): number {
    return readClock(this.nodes[i]!, trueMs);
  }

  /** A leader's stamp: integer ms, like Date.now(). */
  nodeStamp(i: number, trueMs: number): number {
    return Math.floor(this.nodeReading(i, trueMs));
  }

  clientReading(j: number, trueMs: number): number {
    return readClock(this.clients[j]!, trueMs);
  }

  /** The true time at which client j's clock reads `localMs`. */
  clientTrueTime(j: number, localMs: number): number {
    const c = this.clients[j]!;
    return (localMs - c.offsetMs) / c.rate;
  }
}

/** Least true time between a grant/renew stamp and any entry that judges that lease expired. */
export function serverMinHoldMs(ttlMs: number, epochsCarried: number, maxDrift: number): number {
  return (ttlMs - 1 - epochsCarried) / (1 + maxDrift);
}

/** How long (on its own clock, from the send) a client trusts a lease granted/renewed with `ttlMs`. */
export function clientTrustMs(ttlMs: number, slackMs: number, maxDrift: number): number {
  return Math.max(0, ttlMs - 1 - slackMs) * ((1 - maxDrift) / (1 + maxDrift));
}
