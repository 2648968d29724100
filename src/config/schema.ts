// The table every settings key is validated against: its type, range and default. cluster.example.yaml
// documents the same keys (a test keeps the two in step), and types.ts gives them their TypeScript shape
// (the `satisfies` below makes a key missing from either side a compile error).
import { LOG_FORMATS, LOG_LEVELS, type ClusterSettings } from './types.js';

export interface IntRule {
  readonly kind: 'int';
  readonly default: number;
  readonly min: number;
  readonly max: number;
}
export interface BoolRule {
  readonly kind: 'bool';
  readonly default: boolean;
}
export interface EnumRule<T extends string = string> {
  readonly kind: 'enum';
  readonly default: T;
  readonly values: readonly T[];
}
/** An optional host:port; null (the default) leaves the feature off. */
export interface AddressRule {
  readonly kind: 'address';
  readonly default: null;
}
export type Rule = IntRule | BoolRule | EnumRule | AddressRule;

const int = (def: number, min: number, max: number): IntRule => ({ kind: 'int', default: def, min, max });
const bool = (def: boolean): BoolRule => ({ kind: 'bool', default: def });

const KiB = 1024;
const MiB = 1024 * KiB;
const MAX = Number.MAX_SAFE_INTEGER;

/**
 * Fixed caps of the lock command encoding (src/lock/commands.ts WIRE_LIMITS): a configured limit may be
 * stricter, never looser, or a valid request could be refused by the log codec after it was accepted.
 */
export const LOCK_WIRE_CAPS = Object.freeze({ maxKeyBytes: 512, maxOwnerBytes: 256, maxTtlMs: 2 ** 40, maxValueBytes: 64 * 1024 });

/** Room left in a gRPC message around a Raft payload (entry framing, header, snapshot meta). */
export const MESSAGE_OVERHEAD_BYTES = 64 * KiB;

type RulesFor<T> = {
  readonly [K in keyof T]: null extends T[K] ? AddressRule : T[K] extends number ? IntRule : T[K] extends boolean ? BoolRule : EnumRule;
};

export const SETTINGS_SCHEMA = {
  raft: {
    // 50 ms × 10: elections start 500-1000 ms after the last word from a leader.
    // Not shorter: with 300-600 ms a 500k-lock node's event-loop stalls (GC, a new term's lease carry-over)
    // outlasted the timeout and the cluster fell into an election storm.
    tickMs: int(50, 1, 60_000),
    electionTicks: int(10, 2, 100_000),
    heartbeatTicks: int(2, 1, 100_000),
    preVote: bool(true),
    checkQuorum: bool(true),
    maxInflight: int(64, 1, 100_000),
    maxEntriesPerMessage: int(256, 1, 1_000_000),
    maxBytesPerMessage: int(1 * MiB, 1, 1024 * MiB),
    snapshotEvery: int(10_000, 1, MAX),
    snapshotChunkBytes: int(1 * MiB, 1, 1024 * MiB),
  },
  lock: {
    minTtlMs: int(100, 1, LOCK_WIRE_CAPS.maxTtlMs),
    maxTtlMs: int(3_600_000, 1, LOCK_WIRE_CAPS.maxTtlMs),
    dedupWindowMs: int(600_000, 1, LOCK_WIRE_CAPS.maxTtlMs),
    maxWaitMs: int(300_000, 0, LOCK_WIRE_CAPS.maxTtlMs),
    maxLockDelayMs: int(60_000, 0, LOCK_WIRE_CAPS.maxTtlMs),
    maxValueBytes: int(1024, 0, LOCK_WIRE_CAPS.maxValueBytes),
    checkpointIdleMs: int(1_000, 1, MAX),
    freeKeyRetentionMs: int(600_000, 1, LOCK_WIRE_CAPS.maxTtlMs),
  },
  limits: {
    // gRPC message lengths are int32.
    maxMessageBytes: int(4 * MiB, 2 * MESSAGE_OVERHEAD_BYTES, 2 ** 31 - 1),
    peerQueueMessages: int(10_000, 1, 10_000_000),
    maxKeyBytes: int(LOCK_WIRE_CAPS.maxKeyBytes, 1, LOCK_WIRE_CAPS.maxKeyBytes),
    maxOwnerBytes: int(LOCK_WIRE_CAPS.maxOwnerBytes, 1, LOCK_WIRE_CAPS.maxOwnerBytes),
    maxWaitersPerKey: int(10_000, 1, MAX),
    maxWaiters: int(100_000, 1, MAX),
    maxHeldPerOwner: int(100_000, 1, MAX),
    maxHeld: int(1_000_000, 1, MAX),
    maxKeys: int(1_000_000, 1, MAX),
    maxSessions: int(100_000, 1, MAX),
    maxHoldsPerSession: int(10_000, 1, MAX),
  },
  watch: {
    // Events each node keeps (~200 bytes each, plus values) for resuming watches and for watchers that
    // lag: one that falls further behind is cut off (SPEC "Watch").
    historyEvents: int(10_000, 1, 10_000_000),
    // Open watches per node.
    maxWatchers: int(10_000, 1, 1_000_000),
  },
  log: {
    level: { kind: 'enum', default: 'info', values: LOG_LEVELS } satisfies EnumRule,
    format: { kind: 'enum', default: 'auto', values: LOG_FORMATS } satisfies EnumRule,
  },
  metrics: {
    address: { kind: 'address', default: null } satisfies AddressRule,
    openScrape: bool(false),
    // How often the event-loop lag histogram (leasehold_nodejs_eventloop_lag_*) samples: a timer of this
    // period wakes the loop even when the node has nothing to do. prom-client's 10 ms woke an idle node
    // 100 times a second, ~0.4 % of a core of its ~2 % (issue 37); 50 ms is the Raft tick, the finest
    // step the node's own timing works in. 10 again for a finer reading of short stalls.
    loopLagResolutionMs: int(50, 1, 60_000),
  },
} as const satisfies { readonly [S in keyof ClusterSettings]: RulesFor<ClusterSettings[S]> };

export type SectionName = keyof ClusterSettings;
export const SECTION_NAMES = Object.keys(SETTINGS_SCHEMA) as SectionName[];

/** Keys of one node entry under `nodes:`; all required but peerAddress. */
export const NODE_KEYS = ['id', 'address', 'dataDir', 'peerAddress'] as const;
/** Optional keys of a node entry (besides peerAddress). */
export const OPTIONAL_NODE_KEYS = ['listen', 'metricsAddress', 'peerDialOverrides', 'join'] as const;

export const TLS_KEYS = ['cert', 'key', 'ca', 'clientAuth'] as const;
export const AUTH_KEYS = ['ownerBinding', 'admins'] as const;

export const TOP_LEVEL_KEYS = ['nodes', ...SECTION_NAMES, 'tls', 'auth'] as const;

function defaultsOf<S extends SectionName>(section: S): ClusterSettings[S] {
  const rules = SETTINGS_SCHEMA[section] as Record<string, Rule>;
  return Object.freeze(Object.fromEntries(Object.entries(rules).map(([k, r]) => [k, r.default]))) as unknown as ClusterSettings[S];
}

/** Every setting at its default (what a file with only `nodes:` gets). */
export const DEFAULT_SETTINGS: ClusterSettings = Object.freeze({
  raft: defaultsOf('raft'),
  lock: defaultsOf('lock'),
  limits: defaultsOf('limits'),
  watch: defaultsOf('watch'),
  log: defaultsOf('log'),
  metrics: defaultsOf('metrics'),
});
