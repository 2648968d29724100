// Low-level calls with endpoint failover, shared by the CLI and the LockClient. A mutating call carries a
// request_id and is retried with the SAME id on UNAVAILABLE / DEADLINE_EXCEEDED / connection errors until
// the caller's deadline: the server's dedup table turns those retries into exactly-once.
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { WireInput } from '../wire/scalars.js';
import { LEADER_METADATA, type LockStub, type LockMethod, lockGrpcService, type WatchEvent, type WatchRequest } from '../wire/lock.js';
import { type ClusterStub, type ClusterMethod, clusterGrpcService, type StatusResponse } from '../wire/cluster.js';
import { LockStream } from './lock-stream.js';
import { RpcError } from './rpc-error.js';

export { RpcError } from './rpc-error.js';

export type { LockMethod } from '../wire/lock.js';

const RETRYABLE = new Set([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED, grpc.status.CANCELLED, grpc.status.RESOURCE_EXHAUSTED]);

/** Codes EndpointPool.call retries on: the cluster did not answer (yet); the outcome is unknown. A
 *  RESOURCE_EXHAUSTED that names a configured limit (`limits.maxHeld` ...) is a decision, not a transient
 *  overload: retrying until the deadline would only add load, so it is final. */
export function isRetryable(code: grpc.status, details = ''): boolean {
  if (code === grpc.status.RESOURCE_EXHAUSTED && LIMIT_NAMED.test(details)) return false;
  return RETRYABLE.has(code);
}

const LIMIT_NAMED = /\blimits\.max[A-Za-z]+\b/;

/** `host:port` endpoints from a comma-separated list (or a list), trimmed, empties dropped. */
export function parseEndpoints(endpoints: readonly string[] | string): string[] {
  const list = typeof endpoints === 'string' ? endpoints.split(',') : endpoints;
  return list.map((e) => e.trim()).filter(Boolean);
}

/** What EndpointPool.call carries: the lock calls (on the stream), and List (unary: any node answers it). */
export type PoolMethod = LockMethod | 'List' | 'Revoke';

/** Per-call knobs of EndpointPool.call (the boolean form `retry` is still accepted). */
export interface CallOptions {
  /** Retry retryable errors (UNAVAILABLE, DEADLINE_EXCEEDED, ...) on the next endpoint until the deadline. Default true. */
  retry?: boolean;
  /** Cap of one attempt (ms) for this call; default: the pool's attemptTimeoutMs (+ wait_ms of the request). */
  attemptTimeoutMs?: number;
  /** Told about every failed attempt that will be retried: the endpoint, the error, and how many attempts failed so far. */
  onRetry?: (info: { endpoint: string; error: RpcError; attempt: number }) => void;
}

/** A request, or a function building it for each attempt (same request_id, e.g. a shrinking wait_ms). */
export type RequestSource = object | ((attempt: number) => object);

export interface EndpointPoolOptions {
  endpoints: string[];
  credentials?: grpc.ChannelCredentials;
  /** Per-attempt timeout cap (ms); the overall deadline is given per call. */
  attemptTimeoutMs?: number;
  /** 'stream' (default): lock calls ride one Lock/Stream per endpoint (lock-stream.ts), falling back to
   *  unary calls on a server without it; 'unary': one unary RPC per call. */
  lockCalls?: 'stream' | 'unary';
}

/** Channels to every endpoint, kept warm; remembers which endpoint answered last (likely the leader). */
export class EndpointPool {
  private readonly lock = new Map<string, LockStub>();
  private readonly cluster = new Map<string, ClusterStub>();
  private readonly streams = new Map<string, LockStream>();
  private readonly useStreams: boolean;
  private preferred = 0;
  /** The leader's address as the last answering node reported it (response metadata). */
  private leaderHint: string | null = null;
  readonly endpoints: string[];
  private readonly creds: grpc.ChannelCredentials;
  private readonly attemptTimeoutMs: number;

  constructor(opts: EndpointPoolOptions) {
    if (opts.endpoints.length === 0) throw new Error('endpoints: give at least one host:port');
    this.endpoints = opts.endpoints;
    this.creds = opts.credentials ?? grpc.credentials.createInsecure();
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? 3000;
    this.useStreams = (opts.lockCalls ?? 'stream') === 'stream';
  }

  /** The endpoint's Lock/Stream, or null: unary calls configured, or the server has no Stream. */
  private lockStream(ep: string): LockStream | null {
    if (!this.useStreams) return null;
    let s = this.streams.get(ep);
    if (!s) {
      s = new LockStream(this.lockClient(ep));
      this.streams.set(ep, s);
    }
    return s.unsupported ? null : s;
  }

  /** One attempt on `ep`: on its stream, or as a unary call. */
  private async attempt<Res>(ep: string, method: PoolMethod, request: object, deadline: number, signal?: AbortSignal): Promise<Res> {
    // List (any node serves it) and Revoke (rare) are not on the stream.
    if (method === 'List' || method === 'Revoke') return this.unary<Res>(this.lockClient(ep), method, request, deadline, signal);
    const stream = this.lockStream(ep);
    if (stream === null) return this.unary<Res>(this.lockClient(ep), method, request, deadline, signal);
    try {
      const a = await stream.call<Res>(method, request, deadline, signal);
      if (a.leader !== '') this.leaderHint = a.leader;
      return a.response;
    } catch (err) {
      // A server from before Lock/Stream refuses the stream before it sees any call: go unary there.
      if (stream.unsupported) return this.unary<Res>(this.lockClient(ep), method, request, deadline, signal);
      throw err;
    }
  }

  private lockClient(ep: string): LockStub {
    let c = this.lock.get(ep);
    if (!c) {
      c = lockGrpcService.client(ep, this.creds);
      this.lock.set(ep, c);
    }
    return c;
  }

  private clusterClient(ep: string): ClusterStub {
    let c = this.cluster.get(ep);
    if (!c) {
      c = clusterGrpcService.client(ep, this.creds);
      this.cluster.set(ep, c);
    }
    return c;
  }

  /**
   * One call, retried across endpoints on retryable errors until `deadline` (epoch ms). `request` may be a
   * function of the attempt number so a retry can adjust fields that are not part of the request's identity
   * (wait_ms) while keeping its request_id.
   */
  async call<Res>(
    method: PoolMethod,
    request: RequestSource,
    deadline: number,
    signal?: AbortSignal,
    options: boolean | CallOptions = true,
  ): Promise<Res> {
    const opts: CallOptions = typeof options === 'boolean' ? { retry: options } : options;
    const retry = opts.retry ?? true;
    let lastErr: RpcError | null = null;
    let attempt = 0;
    while (Date.now() < deadline) {
      if (signal?.aborted) throw new RpcError(grpc.status.CANCELLED, 'cancelled by the caller');
      const idx = (this.preferred + attempt) % this.endpoints.length;
      const ep = this.endpoints[idx]!;
      const req = typeof request === 'function' ? request(attempt) : request;
      const attemptDeadline = Math.min(deadline, Date.now() + (opts.attemptTimeoutMs ?? this.attemptTimeoutMs) + waitMsOf(req));
      try {
        const res = await this.attempt<Res>(ep, method, req, attemptDeadline, signal);
        this.preferred = idx;
        // The node named the leader: go there directly next time (saves the follower's forwarding hop).
        const hinted = this.leaderHint === null ? -1 : this.endpoints.indexOf(this.leaderHint);
        if (hinted >= 0) this.preferred = hinted;
        return res;
      } catch (err) {
        const e = err instanceof RpcError ? err : new RpcError(grpc.status.UNKNOWN, String(err));
        if (!retry || !isRetryable(e.code, e.details) || signal?.aborted) throw e;
        lastErr = e;
        attempt++;
        opts.onRetry?.({ endpoint: ep, error: e, attempt });
        // Back off a little once we have tried every endpoint: an election takes a few hundred ms. Short
        // and jittered (20 ms per round, at most 100 ms): a longer pause lands after the new leader is
        // already serving and is pure failover time; the jitter keeps many clients from retrying in step.
        if (attempt % this.endpoints.length === 0) {
          const round = attempt / this.endpoints.length;
          await sleep(Math.min(20 * round, 100) * (0.5 + Math.random()), signal);
        }
      }
    }
    throw lastErr ?? new RpcError(grpc.status.DEADLINE_EXCEEDED, 'deadline passed before any endpoint answered');
  }

  private unary<Res>(client: LockStub, method: PoolMethod, request: object, deadline: number, signal?: AbortSignal): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const fn = client[method] as unknown as (
        req: object,
        opts: Partial<grpc.CallOptions>,
        cb: (e: grpc.ServiceError | null, v?: Res) => void,
      ) => grpc.ClientUnaryCall;
      const call = fn.call(client, request, { deadline: new Date(deadline) }, (err, value) => {
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(new RpcError(err.code, err.details));
        else resolve(value as Res);
      });
      call.on('metadata', (md: grpc.Metadata) => {
        const leader = md.get(LEADER_METADATA)[0];
        if (typeof leader === 'string' && leader !== '') this.leaderHint = leader;
      });
      const onAbort = () => call.cancel();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** The endpoints in the order to try them: the one that answered last (likely the leader) first. */
  endpointOrder(): string[] {
    const n = this.endpoints.length;
    return Array.from({ length: n }, (_, i) => this.endpoints[(this.preferred + i) % n]!);
  }

  /** Opens Lock/Watch on `ep` (watch.ts drives it: resume, failover). */
  openWatch(ep: string, request: WireInput<WatchRequest>): grpc.ClientReadableStream<WatchEvent> {
    return this.lockClient(ep).Watch(request);
  }

  /** Cluster.Status of one endpoint. */
  status(endpoint: string, deadline: number): Promise<StatusResponse> {
    return new Promise((resolve, reject) => {
      this.clusterClient(endpoint).Status({}, { deadline: new Date(deadline) }, (err, value) => {
        if (err) reject(new RpcError(err.code, err.details));
        else resolve(value as StatusResponse);
      });
    });
  }

  /**
   * One Cluster membership call. Tried on the next endpoint only when this one could not be reached or
   * had no leader to forward to (UNAVAILABLE: nothing was changed); any other answer is final, because
   * a membership change is not idempotent (a retry of an add that did commit says "already a member").
   */
  async clusterCall<Res>(method: ClusterMethod, request: object, deadline: number): Promise<Res> {
    let lastErr: RpcError | null = null;
    for (let round = 0; Date.now() < deadline; round++) {
      for (const ep of this.endpoints) {
        if (Date.now() >= deadline) break;
        try {
          return await new Promise<Res>((resolve, reject) => {
            const client = this.clusterClient(ep);
            const fn = client[method] as unknown as (
              req: object,
              o: Partial<grpc.CallOptions>,
              cb: (e: grpc.ServiceError | null, v?: unknown) => void,
            ) => void;
            fn.call(client, request, { deadline: new Date(deadline) }, (err, value) =>
              err ? reject(new RpcError(err.code, err.details)) : resolve(value as Res),
            );
          });
        } catch (err) {
          if (!(err instanceof RpcError) || err.code !== grpc.status.UNAVAILABLE) throw err;
          lastErr = err;
        }
      }
      await sleep(Math.min(200 * (round + 1), 1000));
    }
    throw (
      lastErr ??
      new RpcError(grpc.status.DEADLINE_EXCEEDED, `no endpoint answered before the deadline (tried ${this.endpoints.join(', ')})`)
    );
  }

  close(): void {
    for (const s of this.streams.values()) s.close();
    this.streams.clear();
    for (const c of this.lock.values()) c.close();
    for (const c of this.cluster.values()) c.close();
    this.lock.clear();
    this.cluster.clear();
  }
}

function waitMsOf(request: object): number {
  const w = Number((request as { wait_ms?: unknown }).wait_ms ?? 0);
  return Number.isFinite(w) ? w : 0;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(t);
      resolve();
    };
    // Detach when the timer fires: a long-lived caller signal must not collect one listener per back-off.
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A fresh request id: unique per logical operation, reused across its retries. */
export function newRequestId(): string {
  return randomUUID();
}
