// What a workload needs from a system under test (leasehold, or etcd through v3lock or Txn): a 3-member
// cluster of real processes, and lock sessions pinned to one member each.

/** A renew the system refused because the lease is gone (lapsed, or the key moved on): final for that lock. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

/** A lock this session holds; `ref` is the system's own handle (leasehold's token, etcd's lock key). */
export interface HeldLock {
  key: string;
  ref: unknown;
}

export interface AcquireOptions {
  waitMs: number;
  ttlMs: number;
  /** One attempt of at most SessionOptions.onceTimeoutMs, no retries (the failover probe times the
   *  first success itself; a retry back-off would blur it). */
  once?: boolean;
}

/** One client, pinned to ONE member (a follower forwards what it cannot do itself, as users see it). */
export interface LockSession {
  /** Blocks up to waitMs for the lock; null when the wait ran out. Throws on RPC errors. */
  acquire(key: string, opts: AcquireOptions): Promise<HeldLock | null>;
  release(lock: HeldLock): Promise<void>;
  /** Extends the lease of `lock` by its ttl (etcd: a keep-alive of the lease that owns it). */
  renew(lock: HeldLock): Promise<void>;
  close(): void;
}

export interface SessionOptions {
  /** etcd: grant a lease per acquired lock instead of one per session (the renew workload needs each held
   *  lock to renew on its own, as a leasehold lease does). */
  leasePerLock?: boolean;
  /** Cap (ms) of a `once` acquire; other calls keep their usual deadlines and retries. */
  onceTimeoutMs?: number;
  /** Hold every lock of this client under ONE session lease of this ttl, and renew(lock) renews that lease
   *  (leasehold: OpenSession + Acquire.session_id + RenewSession; etcd: the client's session lease, as
   *  clientv3's concurrency.Session). */
  sessionTtlMs?: number;
  /** leasehold: every call a unary Lock RPC (Lock/Acquire, Lock/Release), as grpcurl or a client in another
   *  language makes it, instead of the client library's Lock/Stream. etcd: no difference (its v3lock calls
   *  are unary). */
  unary?: boolean;
}

export interface SystemCluster {
  /** Row label: 'leasehold', 'etcd-v3lock', 'etcd-txn'. */
  readonly system: string;
  readonly members: readonly string[];
  /** Whether acquire can wait for a held key (etcd-txn is a try-lock: it cannot). */
  readonly blocking: boolean;
  session(member: number, opts?: SessionOptions): Promise<LockSession>;
  /** PID of each running member's process. */
  pids(): Map<string, number>;
  /** Highest raft term any reachable member reports. */
  maxTerm(): Promise<number>;
  /** Index of the member every reachable member agrees is leader; waits up to timeoutMs. */
  leader(timeoutMs?: number): Promise<number>;
  kill(member: number): Promise<void>;
  restart(member: number): Promise<void>;
  stop(): Promise<void>;
  /** leasehold: the member's log so far (pino JSON), for role changes during a run. */
  logText?(member: number): string;
  /** leasehold: each running member's longest event-loop stall (ms) since the last call (its metrics'
   *  nodejs_eventloop_lag_max_seconds, which every scrape resets). */
  loopLagMaxMs?(): Promise<Map<string, number>>;
}

export interface StartOptions {
  /** leasehold only: more cluster.yaml (e.g. raised limits for the held-scale fill). */
  extraYaml?: string;
  /** Leave data dirs and logs on disk (their path is printed). */
  keep?: boolean;
  /** --profile: leasehold members run with --cpu-prof into this dir and are stopped with SIGTERM (a
   *  profile is written at exit; kill -9 would lose it); `label` names the run in its pids.txt. */
  profileDir?: string;
  label?: string;
  /** leasehold only: more node flags for every member (e.g. --heapsnapshot-signal for scripts/held-memory.ts). */
  nodeArgs?: string[];
  /** leasehold only: the node's default event-loop lag sampling (metrics.loopLagResolutionMs, 50 ms), for the
   *  idle workload, which measures what a node costs as shipped. Every other run samples at 10 ms, as every
   *  node did before that default: the "loop stall max" column (a stall reads as its length plus up to one
   *  period) stays comparable with earlier runs and with issue 36's <= 100 ms goal. */
  defaultLoopLag?: boolean;
}

export interface SystemFactory {
  readonly system: string;
  readonly blocking: boolean;
  start(opts: StartOptions): Promise<SystemCluster>;
}
