// The TypeScript client: `new LockClient({ endpoints })`, then `acquire`, `withLock`, `get`.
//
// Every mutating call carries a request_id and is retried with the SAME id on UNAVAILABLE,
// DEADLINE_EXCEEDED and connection errors, across endpoints, until the caller's deadline: the server's
// dedup table makes the retries exactly-once (a lost acquire response retried returns the same token).
import './dispose.js';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type * as grpc from '@grpc/grpc-js';
import type { AcquireResponse, GetResponse, Holder, ListResponse, OpenSessionResponse, RevokeResponse } from '../wire/lock.js';
import { LockSession } from './session.js';
import { status as grpcStatus } from '@grpc/grpc-js';
import { InvalidRequestError, LockLostError, LockNotAcquiredError, UnavailableError, fromRpcError } from './errors.js';
import { endpointProblems } from './endpoints.js';
import { LockHandle, type HandleContext, type LockRpc } from './handle.js';
import { silentLogger, type ClientLogger } from './logger.js';
import { EndpointPool, newRequestId, parseEndpoints } from './rpc.js';
import { clientTlsCredentials, type ClientTlsOptions } from './tls.js';
import { watchEvents, type LockEventInfo, type WatchOptions } from './watch.js';
import { campaign, observe, type CampaignOptions, type LeaderInfo, type Leadership } from './election.js';
import { manyHoldsFields } from './many-holds.js';

export interface LockClientOptions {
  /** host:port of cluster nodes (any subset; followers forward to the leader), as a list or comma-separated. */
  endpoints: readonly string[] | string;
  /** Default: insecure (plaintext) channels, or TLS from `tls`. */
  credentials?: grpc.ChannelCredentials;
  /** TLS to the cluster: `ca` to verify the nodes, `cert` + `key` to present a client certificate (mTLS,
   *  owner binding). Each is PEM contents or a path to a PEM file. */
  tls?: ClientTlsOptions;
  /** pino-compatible; silent by default. */
  logger?: ClientLogger;
  /** Owner prefix of this client; default `<hostname>:<pid>:<random>`. */
  clientId?: string;
  /** Overall deadline (ms) of acquire (on top of waitMs), release and get, retries included. Default 10 s. */
  timeoutMs?: number;
  /** Cap of one attempt on one endpoint (ms). Default 3 s. */
  attemptTimeoutMs?: number;
  /** Fraction of the ttl the local lease deadline keeps in hand for clock-rate drift. Default 0.02. */
  leaseSafetyFraction?: number;
  /** @internal tests inject a pool double. */
  rpc?: LockRpc & { close?: () => void };
  /** @internal tests inject a clock. */
  now?: () => number;
}

export interface AcquireOptions {
  /** Lease length; renewed automatically about every ttl/3 while the handle is ACTIVE. */
  ttlMs: number;
  /** 0 (default): answer at once. > 0: queue in FIFO order up to this long for the lock. */
  waitMs?: number;
  /** Default: `<clientId>/<n>`, unique per acquire, so two acquires from one process exclude each other too. */
  owner?: string;
  /** Cancels the acquire (and any wait). A lease granted at the very moment of cancelling lapses after ttl. */
  signal?: AbortSignal;
  /** Overall deadline of the acquire, retries included; default waitMs + the client's timeoutMs. */
  timeoutMs?: number;
  /** If the hold EXPIRES (this client died or stalled; a release while it lives starts none, a late one
   *  does), the key grants nobody for this long after the lease's end: for resources that cannot check
   *  fencing tokens. 0 (default) = none. */
  lockDelayMs?: number;
  /** Stored with the hold and returned by get() (a leader's address, a job id); a string is sent as UTF-8. */
  value?: Uint8Array | string;
  /** >= 2: a counting semaphore — up to `limit` holders at once, each with its own token (a job pool).
   *  Every acquire of the key must name the same limit while it has holders or waiters. Default 1. */
  limit?: number;
  /** A shared (read) hold: any number together, or one exclusive (default) hold; a shared request behind a
   *  waiting exclusive one waits (no writer starvation). */
  shared?: boolean;
}

export interface SessionOptions {
  /** The session's lease; renewed automatically about every ttl/3 while it is ACTIVE. */
  ttlMs: number;
  /** Owner of the session and of every hold under it. Default `<clientId>/s<n>`. */
  owner?: string;
  /** If the session EXPIRES (not on close), each of its keys grants nobody for this long. 0 = none. */
  lockDelayMs?: number;
  signal?: AbortSignal;
  /** Overall deadline of the open, retries included; default the client's timeoutMs. */
  timeoutMs?: number;
}

export interface LockInfo {
  key: string;
  held: boolean;
  owner: string;
  token: bigint;
  /** Remaining lease by the leader's clock when it answered. */
  ttlMs: number;
  /** The highest token ever issued for the key (0n if never); survives release. */
  lastToken: bigint;
  /** Blocking acquires waiting in the key's line. */
  waiters: number;
  /** The holder's value (empty when none or not held). */
  value: Uint8Array;
  /** The session the hold lives under (0n = none). */
  sessionId: bigint;
  /** The log index this answer was read at: `watch(key, { afterIndex: index })` continues from exactly here. */
  index: bigint;
  /** Every live hold in token order (one for a mutex; the fields above describe the first). */
  holders: HolderInfo[];
  /** The key's limit (1 for a mutex or shared/exclusive holds). */
  limit: number;
}

export interface HolderInfo {
  owner: string;
  token: bigint;
  ttlMs: number;
  sessionId: bigint;
  value: Uint8Array;
  shared: boolean;
}

/** One lock of a list() page. */
export interface ListedLockInfo {
  key: string;
  holders: HolderInfo[];
  waiters: number;
  lastToken: bigint;
}

export class LockClient {
  readonly clientId: string;
  readonly endpoints: readonly string[];
  private readonly rpc: LockRpc & { close?: () => void };
  private readonly logger: ClientLogger;
  private readonly timeoutMs: number;
  private readonly ctx: HandleContext;
  private readonly active = new Set<LockHandle>();
  private readonly sessions = new Set<LockSession>();
  private ownerSeq = 0;
  private closed = false;

  constructor(opts: LockClientOptions) {
    this.endpoints = parseEndpoints(opts.endpoints);
    if (this.endpoints.length === 0) throw invalid('LockClient: endpoints: give at least one host:port of a leasehold node');
    const problems = endpointProblems(this.endpoints);
    if (problems.length > 0) throw invalid(`LockClient: endpoints: ${problems.join('; ')}`);
    this.logger = opts.logger ?? silentLogger;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.clientId = opts.clientId ?? `${hostname().slice(0, 180)}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const credentials = opts.credentials ?? (opts.tls ? clientTlsCredentials(opts.tls) : undefined);
    this.rpc =
      opts.rpc ??
      new EndpointPool({
        endpoints: [...this.endpoints],
        ...(credentials ? { credentials } : {}),
        attemptTimeoutMs: opts.attemptTimeoutMs ?? 3000,
      });
    this.ctx = {
      rpc: this.rpc,
      logger: this.logger,
      now: opts.now ?? (() => performance.now()),
      onSettled: (h) => this.active.delete(h),
      isClosed: () => this.closed,
      releaseTimeoutMs: this.timeoutMs,
      leaseSafetyFraction: opts.leaseSafetyFraction ?? 0.02,
    };
  }

  /**
   * Takes the lock on `key`. Resolves with an ACTIVE handle carrying the fencing token; rejects with
   * LockNotAcquiredError (held by someone else), UnavailableError (no node answered in time; a lease it may
   * have granted lapses by itself), InvalidRequestError (bad key/owner/ttl), or the signal's reason.
   */
  async acquire(key: string, opts: AcquireOptions): Promise<LockHandle> {
    this.assertOpen();
    if (typeof key !== 'string' || key === '') throw invalid('acquire: key must be a non-empty string');
    if (!Number.isSafeInteger(opts.ttlMs) || opts.ttlMs <= 0)
      throw invalid(`acquire "${key}": ttlMs must be a positive integer of milliseconds (got ${opts.ttlMs})`);
    const waitMs = opts.waitMs ?? 0;
    if (!Number.isSafeInteger(waitMs) || waitMs < 0)
      throw invalid(`acquire "${key}": waitMs must be a non-negative integer of milliseconds (got ${waitMs})`);
    opts.signal?.throwIfAborted();

    const owner = opts.owner ?? `${this.clientId}/${++this.ownerSeq}`;
    const requestId = newRequestId();
    const timeoutMs = opts.timeoutMs ?? waitMs + this.timeoutMs;
    // A hold of this key by this owner is superseded by what this acquire may do, answered or not.
    for (const h of [...this.active]) if (h.key === key && h.owner === owner) h.supersededBySend();
    // Measured BEFORE the first send: the server's lease starts no earlier than this.
    const sentAt = this.ctx.now();
    const startedAtEpoch = Date.now();
    // The same request_id on every attempt; only the remaining wait shrinks (not part of the request's identity).
    const request = () => ({
      key,
      owner,
      ttl_ms: String(opts.ttlMs),
      wait_ms: String(Math.max(0, waitMs - (Date.now() - startedAtEpoch))),
      request_id: requestId,
      ...(opts.lockDelayMs !== undefined && opts.lockDelayMs > 0 ? { lock_delay_ms: String(opts.lockDelayMs) } : {}),
      ...(opts.value !== undefined ? { value: typeof opts.value === 'string' ? Buffer.from(opts.value, 'utf8') : opts.value } : {}),
      ...manyHoldsFields(opts),
    });
    this.logger.debug({ key, owner, requestId, ttlMs: opts.ttlMs, waitMs }, 'acquire sent');
    let res: AcquireResponse;
    try {
      res = await this.rpc.call<AcquireResponse>('Acquire', request, startedAtEpoch + timeoutMs, opts.signal, {
        onRetry: (r) =>
          this.logger.debug(
            { key, owner, requestId, endpoint: r.endpoint, attempt: r.attempt, code: r.error.code, error: r.error.details },
            'acquire retried with the same request_id',
          ),
      });
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw fromRpcError(err, `acquiring lock "${key}"`, this.endpoints, Date.now() - startedAtEpoch);
    }
    if (!res.acquired) {
      throw new LockNotAcquiredError(key, res.holder_owner, Number(res.holder_ttl_ms), waitMs > 0 ? Date.now() - startedAtEpoch : 0);
    }
    const handle = new LockHandle(this.ctx, {
      key,
      owner,
      token: BigInt(res.token),
      ttlMs: Number(res.ttl_ms) || opts.ttlMs,
      sentAtMs: sentAt,
    });
    this.logger.debug({ key, owner, requestId, token: res.token }, 'acquired');
    this.active.add(handle);
    await handle.start();
    if (this.closed) handle.closeByClient();
    return handle;
  }

  /**
   * Opens a session (SPEC "Sessions"): one lease, renewed by one keepalive, for many holds. Acquire under
   * it with `session.acquire(key)`; when it ends (not renewed in time, or closed) every hold of it goes in
   * one log entry, and each of its handles turns LOST (or RELEASED on close).
   */
  async session(opts: SessionOptions): Promise<LockSession> {
    this.assertOpen();
    if (!Number.isSafeInteger(opts.ttlMs) || opts.ttlMs <= 0)
      throw invalid(`session: ttlMs must be a positive integer of milliseconds (got ${opts.ttlMs})`);
    opts.signal?.throwIfAborted();
    const owner = opts.owner ?? `${this.clientId}/s${++this.ownerSeq}`;
    const requestId = newRequestId();
    const sentAt = this.ctx.now();
    const started = Date.now();
    const request = { owner, ttl_ms: String(opts.ttlMs), request_id: requestId, lock_delay_ms: String(opts.lockDelayMs ?? 0) };
    this.logger.debug({ owner, requestId, ttlMs: opts.ttlMs }, 'open session sent');
    let res: OpenSessionResponse;
    try {
      res = await this.rpc.call<OpenSessionResponse>('OpenSession', request, started + (opts.timeoutMs ?? this.timeoutMs), opts.signal, {
        onRetry: (r) =>
          this.logger.debug(
            { owner, requestId, endpoint: r.endpoint, attempt: r.attempt, code: r.error.code, error: r.error.details },
            'open session retried with the same request_id',
          ),
      });
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw fromRpcError(err, 'opening a session', this.endpoints, Date.now() - started);
    }
    const session = new LockSession(this.ctx, {
      id: BigInt(res.session_id),
      owner,
      ttlMs: Number(res.ttl_ms) || opts.ttlMs,
      sentAtMs: sentAt,
      timeoutMs: this.timeoutMs,
      onSettled: (s) => this.sessions.delete(s),
    });
    this.sessions.add(session);
    if (this.closed) session.closeByClient();
    return session;
  }

  /**
   * Runs `fn` while holding the lock: `lock.signal` aborts the moment the lock is lost; the lock is released
   * when `fn` settles (also when it throws). If the lock was lost while `fn` ran, rejects with LockLostError
   * (its `cause` is fn's own error, if any) even if fn completed: its writes may have been refused by the
   * fenced resource.
   */
  async withLock<T>(key: string, opts: AcquireOptions, fn: (lock: LockHandle) => Promise<T> | T): Promise<T> {
    const lock = await this.acquire(key, opts);
    let result: T;
    try {
      result = await fn(lock);
    } catch (err) {
      const lost = lock.lostReason;
      await lock[Symbol.asyncDispose]();
      if (lost && !(err instanceof LockLostError))
        throw new LockLostError(lost.key, lost.token, lost.reason, `${lost.detail} while the critical section ran`, { cause: err });
      throw err;
    }
    const lost = lock.lostReason;
    await lock[Symbol.asyncDispose]();
    if (lost) throw lost;
    return result;
  }

  /** Linearizable read of who holds `key` (through the leader). */
  async get(key: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<LockInfo> {
    this.assertOpen();
    const started = Date.now();
    let res: GetResponse;
    try {
      res = await this.rpc.call<GetResponse>('Get', { key }, started + (opts.timeoutMs ?? this.timeoutMs), opts.signal);
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw fromRpcError(err, `reading lock "${key}"`, this.endpoints, Date.now() - started);
    }
    return {
      key,
      held: res.held,
      owner: res.owner,
      token: BigInt(res.token),
      ttlMs: Number(res.ttl_ms),
      lastToken: BigInt(res.last_token),
      waiters: Number(res.waiters ?? 0),
      value: res.holders?.[0]?.value ?? new Uint8Array(0),
      sessionId: BigInt(res.holders?.[0]?.session_id ?? 0),
      index: BigInt(res.index ?? 0),
      holders: (res.holders ?? []).map(holderFromWire),
      limit: res.limit || 1,
    };
  }

  /**
   * Ends the hold on `key` (the one with `token`, or whatever hold it has) as an operator (SPEC "Revoke"):
   * the key goes to its line at once, with no lock-delay. Resolves with the token ended (none: no such
   * hold). Under owner binding only certificates listed in auth.admins may (PermissionDeniedError).
   * Every attempt carries one request id (`requestId`, or a new one): a retry answers the first outcome and
   * ends nothing new (SPEC "Revoke is exactly-once"). Pass the same `requestId` again to retry a revoke
   * whose answer never came (an UnavailableError) without ending a hold granted since.
   */
  async revoke(
    key: string,
    opts: { token?: bigint; reason?: string; requestId?: string; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<bigint[]> {
    this.assertOpen();
    const started = Date.now();
    const requestId = opts.requestId ?? newRequestId();
    try {
      const res = await this.rpc.call<RevokeResponse>(
        'Revoke',
        { key, token: (opts.token ?? 0n).toString(), reason: opts.reason ?? '', request_id: requestId },
        started + (opts.timeoutMs ?? this.timeoutMs),
        opts.signal,
      );
      return res.revoked.map((t) => BigInt(t));
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw fromRpcError(err, `revoking the hold on "${key}"`, this.endpoints, Date.now() - started);
    }
  }

  /**
   * One page of the locks held or waited on under `prefix` (SPEC "List"), in UTF-8 byte order; pass
   * `nextPageToken` back for the next page ('' after the last). Any node answers, after a read barrier.
   */
  async list(
    prefix: string,
    opts: { limit?: number; pageToken?: string; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<{ locks: ListedLockInfo[]; nextPageToken: string; index: bigint }> {
    this.assertOpen();
    const started = Date.now();
    let res: ListResponse;
    try {
      res = await this.rpc.call<ListResponse>(
        'List',
        { prefix, limit: opts.limit ?? 0, page_token: opts.pageToken ?? '' },
        started + (opts.timeoutMs ?? this.timeoutMs),
        opts.signal,
      );
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw fromRpcError(err, `listing locks under "${prefix}"`, this.endpoints, Date.now() - started);
    }
    const locks = res.locks.map((l) => ({
      key: l.key,
      waiters: l.waiters,
      lastToken: BigInt(l.last_token),
      holders: l.holders.map(holderFromWire),
    }));
    return { locks, nextPageToken: res.next_page_token, index: BigInt(res.index) };
  }

  /**
   * The changes to `key` (or, with `prefix: true`, to every key starting with it) as an async iterator:
   * ACQUIRED, RELEASED, EXPIRED, REVOKED, QUEUED, DEQUEUED (and RENEWED on request), each once, in log
   * order, across reconnects and failovers (watch.ts). From now by default; `afterIndex: info.index` of a
   * get() continues from exactly the state it read. End it with `break` or the signal.
   */
  watch(target: string, opts: WatchOptions = {}): AsyncGenerator<LockEventInfo, void, undefined> {
    this.assertOpen();
    if (!(this.rpc instanceof EndpointPool)) throw new Error('watch: this client was built with a test double instead of an endpoint pool');
    return watchEvents(this.rpc, target, opts);
  }

  /**
   * Campaigns for leadership of `name` (SPEC "Election"): resolves when this candidate leads, with the
   * leadership's fencing token and a signal that aborts when it is lost. Candidates are served in the
   * order they queued; when the leader's process dies, the next leads within its session's TTL.
   */
  campaign(name: string, opts: CampaignOptions = {}): Promise<Leadership> {
    this.assertOpen();
    return campaign(this, name, opts);
  }

  /** The leaders of `name` as they change: the current one first (if any), then each new one, once, in
   *  token order — never an older one than already reported. */
  observe(name: string, opts: { signal?: AbortSignal } = {}): AsyncGenerator<LeaderInfo, void, undefined> {
    this.assertOpen();
    return observe(this, name, opts);
  }

  /** Handles this client holds right now. */
  heldLocks(): LockHandle[] {
    return [...this.active].filter((h) => h.isActive());
  }

  /**
   * Stops everything: every ACTIVE handle turns LOST at once (its signal aborts) and channels close.
   * Held leases are NOT released (they lapse after their ttl); release them first, or use `await using`.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const h of [...this.active]) h.closeByClient();
    this.active.clear();
    for (const s of [...this.sessions]) s.closeByClient();
    this.sessions.clear();
    this.rpc.close?.();
  }

  /** `await using client = new LockClient(...)`: releases held locks (best effort), then closes. */
  async [Symbol.asyncDispose](): Promise<void> {
    await Promise.all([...this.active].map((h) => h[Symbol.asyncDispose]()));
    await Promise.all([...this.sessions].map((s) => s[Symbol.asyncDispose]()));
    this.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new UnavailableError('this LockClient is closed; create a new one');
  }
}

/** A request refused before anything was sent: the same error type the server's INVALID_ARGUMENT gives. */
function invalid(message: string): InvalidRequestError {
  return new InvalidRequestError(message, grpcStatus.INVALID_ARGUMENT);
}

/** One holder as get() and list() hand it out. */
function holderFromWire(h: Holder): HolderInfo {
  return {
    owner: h.owner,
    token: BigInt(h.token),
    ttlMs: Number(h.ttl_ms),
    sessionId: BigInt(h.session_id),
    value: h.value,
    shared: h.shared,
  };
}
