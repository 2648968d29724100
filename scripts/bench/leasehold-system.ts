// leasehold under test: a fresh 3-node cluster of `leasehold serve` processes on real LevelDB (the
// integration harness's TestCluster, at the product's raft timing), and raw Acquire/Renew/Release calls
// through an EndpointPool of ONE endpoint per session, so a session stays on its member.
import { appendFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { join } from 'node:path';
import { EndpointPool, newRequestId } from '../../src/client/rpc.js';
import type { TraceStamp } from '../../src/trace/stages.js';
import {
  lockGrpcService,
  type AcquireResponse,
  type LockMethod,
  type LockStub,
  type OpenSessionResponse,
  type ReleaseResponse,
  type RenewResponse,
  type RenewSessionResponse,
} from '../../src/wire/lock.js';
import { TestCluster, freePorts, waitFor } from '../../test/integration/harness.js';
import {
  LeaseLostError,
  type AcquireOptions,
  type HeldLock,
  type LockSession,
  type SessionOptions,
  type StartOptions,
  type SystemCluster,
  type SystemFactory,
} from './system.js';

/** RPC slack beyond the lock wait: a blocked acquire answers at wait_ms at the latest. */
const CALL_SLACK_MS = 5000;

/** How long a SIGTERMed node gets to shut down (and write its profile) before kill -9. */
const GRACEFUL_STOP_MS = 10_000;

let sessionSeq = 0;

/** One call of a session: the method, its request, its deadline (epoch ms), and how to retry it. */
type Caller = <Res>(method: LockMethod, request: object, deadlineMs: number, once?: { attemptTimeoutMs: number }) => Promise<Res>;

/** Through the client library's EndpointPool: every call on the endpoint's one Lock/Stream, with retries. */
function poolCaller(pool: EndpointPool): Caller {
  return (method, request, deadlineMs, once) =>
    pool.call(method, request as never, deadlineMs, undefined, once ? { retry: false, attemptTimeoutMs: once.attemptTimeoutMs } : {});
}

/** As grpcurl or a Python client calls: each call a unary RPC of service Lock (its own HTTP/2 stream), no
 *  retries (a follower forwards to the leader itself). Issue 37 asks this to reach 0.8x the stream client. */
function unaryCaller(stub: LockStub): Caller {
  return (method, request, deadlineMs) =>
    new Promise((resolve, reject) => {
      const fn = stub[method] as unknown as (
        req: object,
        opts: grpc.CallOptions,
        cb: (err: grpc.ServiceError | null, res: unknown) => void,
      ) => void;
      fn.call(stub, request, { deadline: deadlineMs }, (err, res) =>
        err ? reject(new Error(`${method}: ${err.details || err.message}`)) : resolve(res as never),
      );
    });
}

class LeaseholdSession implements LockSession {
  private readonly owner = `bench-${process.pid}-${++sessionSeq}`;

  /** The server session every lock of this client lives under ('' = none: each lock is its own lease). */
  private sessionId = '';

  constructor(
    private readonly call: Caller,
    private readonly onceTimeoutMs: number,
    private readonly closeChannel: () => void,
  ) {}

  /** Opens the server session the locks of this client will live under (SessionOptions.sessionTtlMs). */
  async openSession(ttlMs: number): Promise<void> {
    const res = await this.call<OpenSessionResponse>(
      'OpenSession',
      { owner: this.owner, ttl_ms: String(ttlMs), request_id: newRequestId() },
      Date.now() + CALL_SLACK_MS,
    );
    this.sessionId = res.session_id;
  }

  async acquire(key: string, opts: AcquireOptions): Promise<HeldLock | null> {
    const lease = this.sessionId === '' ? { ttl_ms: String(opts.ttlMs) } : { ttl_ms: '0', session_id: this.sessionId };
    const request = { key, owner: this.owner, ...lease, wait_ms: String(opts.waitMs), request_id: newRequestId() };
    const deadline = Date.now() + opts.waitMs + (opts.once ? this.onceTimeoutMs : CALL_SLACK_MS);
    const res = await this.call<AcquireResponse>(
      'Acquire',
      request,
      deadline,
      opts.once ? { attemptTimeoutMs: this.onceTimeoutMs } : undefined,
    );
    return res.acquired ? { key, ref: { token: res.token, ttlMs: opts.ttlMs } } : null;
  }

  async release(lock: HeldLock): Promise<void> {
    const { token } = lock.ref as { token: string };
    const res = await this.call<ReleaseResponse>(
      'Release',
      { key: lock.key, owner: this.owner, token, request_id: newRequestId() },
      Date.now() + CALL_SLACK_MS,
    );
    if (!res.released) throw new Error(`release of ${lock.key} refused: ${res.reason}`);
  }

  async renew(lock: HeldLock): Promise<void> {
    if (this.sessionId !== '') {
      const res = await this.call<RenewSessionResponse>(
        'RenewSession',
        { session_id: this.sessionId, owner: this.owner, request_id: newRequestId() },
        Date.now() + CALL_SLACK_MS,
      );
      if (!res.renewed) throw new LeaseLostError(`renew of session ${this.sessionId} refused: ${res.reason}`);
      return;
    }
    const { token, ttlMs } = lock.ref as { token: string; ttlMs: number };
    const res = await this.call<RenewResponse>(
      'Renew',
      { key: lock.key, owner: this.owner, token, ttl_ms: String(ttlMs), request_id: newRequestId() },
      Date.now() + CALL_SLACK_MS,
    );
    if (!res.renewed) throw new LeaseLostError(`renew of ${lock.key} refused: ${res.reason}`);
  }

  close(): void {
    this.closeChannel();
  }
}

class LeaseholdCluster implements SystemCluster {
  readonly system = 'leasehold';
  readonly blocking = true;

  constructor(
    readonly cluster: TestCluster,
    private readonly opts: StartOptions,
    private readonly metricsPorts: readonly number[],
  ) {}

  get members(): readonly string[] {
    return this.cluster.ids;
  }

  async session(member: number, opts: SessionOptions = {}): Promise<LockSession> {
    const endpoint = this.cluster.endpoint(this.members[member]!);
    let session: LeaseholdSession;
    if (opts.unary) {
      const stub = lockGrpcService.client(endpoint, grpc.credentials.createInsecure());
      session = new LeaseholdSession(unaryCaller(stub), opts.onceTimeoutMs ?? 3000, () => stub.close());
    } else {
      const pool = new EndpointPool({ endpoints: [endpoint], attemptTimeoutMs: 3000 });
      session = new LeaseholdSession(poolCaller(pool), opts.onceTimeoutMs ?? 3000, () => pool.close());
    }
    if (opts.sessionTtlMs !== undefined) await session.openSession(opts.sessionTtlMs);
    return session;
  }

  pids(): Map<string, number> {
    const out = new Map<string, number>();
    for (const id of this.members) {
      const pid = this.cluster.pid(id);
      if (pid !== undefined) out.set(id, pid);
    }
    return out;
  }

  async maxTerm(): Promise<number> {
    const sts = await Promise.all([...this.cluster.procs.keys()].map((id) => this.cluster.status(id).catch(() => null)));
    return Math.max(0, ...sts.map((s) => (s ? Number(s.term) : 0)));
  }

  async leader(timeoutMs = 20_000): Promise<number> {
    const { leader } = await this.cluster.waitForLeader(undefined, timeoutMs);
    return this.members.indexOf(leader);
  }

  /** kill -9. With --profile, SIGTERM first (as stop() does), so the killed run's CPU profile is written
   *  too — the fill of held-scale, before its restart, is where its stalls are. */
  async kill(member: number): Promise<void> {
    const id = this.members[member]!;
    if (this.opts.profileDir) {
      const pid = this.pids().get(id);
      if (pid !== undefined) appendFileSync(join(this.opts.profileDir, 'pids.txt'), `${pid}\t${id}\t${this.opts.label ?? ''} (killed)\n`);
      await Promise.race([this.cluster.kill(id, 'SIGTERM'), new Promise((r) => setTimeout(r, GRACEFUL_STOP_MS))]);
    }
    await this.cluster.kill(id);
  }

  async loopLagMaxMs(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    await Promise.all(
      this.members.map(async (id, i) => {
        if (!this.cluster.procs.has(id)) return;
        const m = /^leasehold_nodejs_eventloop_lag_max_seconds(?:\{[^}]*\})? ([0-9.e+-]+)$/m.exec(await this.metricsText(i));
        if (m) out.set(id, Number(m[1]) * 1000);
      }),
    );
    return out;
  }

  /** The member's Prometheus text (its /metrics endpoint). */
  async metricsText(member: number): Promise<string> {
    const res = await fetch(`http://127.0.0.1:${this.metricsPorts[member]}/metrics`, { signal: AbortSignal.timeout(2000) });
    return res.text();
  }

  /** The member's stage stamps since the last call (GET /debug/trace: nodes started with LEASEHOLD_TRACE=1). */
  async traceStamps(member: number): Promise<TraceStamp[]> {
    const res = await fetch(`http://127.0.0.1:${this.metricsPorts[member]}/debug/trace`, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok)
      throw new Error(`trace stamps of ${this.members[member]}: HTTP ${res.status} (was the node started with LEASEHOLD_TRACE=1?)`);
    return (await res.json()) as TraceStamp[];
  }

  logText(member: number): string {
    return this.cluster.logOf(this.members[member]!);
  }

  async restart(member: number): Promise<void> {
    this.cluster.start(this.members[member]!);
  }

  /** Every member answers Status with serving = true (what `leasehold status` shows as SERVING). */
  async waitAllServing(timeoutMs: number): Promise<void> {
    await waitFor(
      'every member SERVING',
      async () => {
        const sts = await Promise.all(this.members.map((id) => this.cluster.status(id, 500).catch(() => null)));
        return sts.every((s) => s?.serving === true);
      },
      timeoutMs,
      25,
    );
  }

  async stop(): Promise<void> {
    if (this.opts.profileDir) {
      const lines = [...this.pids()].map(([id, pid]) => `${pid}\t${id}\t${this.opts.label ?? ''}\n`).join('');
      appendFileSync(join(this.opts.profileDir, 'pids.txt'), lines);
      // SIGTERM: the node shuts down and exits, and node writes its CPU profile on the way out.
      for (const id of this.members)
        await Promise.race([this.cluster.kill(id, 'SIGTERM'), new Promise((r) => setTimeout(r, GRACEFUL_STOP_MS))]);
    }
    if (!this.opts.keep) return this.cluster.stop();
    for (const id of this.members) await this.cluster.kill(id);
    console.log(`kept leasehold data and logs in ${this.cluster.dir}`);
  }
}

export const leaseholdFactory = {
  system: 'leasehold',
  blocking: true,
  async start(opts: StartOptions): Promise<LeaseholdCluster> {
    const nodeArgs = [...(opts.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileDir}`] : []), ...(opts.nodeArgs ?? [])];
    // A metrics endpoint per node: the event-loop stall maxima come from there.
    const metricsPorts = await freePorts(3);
    const nodeYaml = (_id: string, i: number) => `metricsAddress: 127.0.0.1:${metricsPorts[i]}`;
    const lagYaml = opts.defaultLoopLag ? '' : 'metrics:\n  loopLagResolutionMs: 10\n';
    const cluster = await TestCluster.create({ productRaftTiming: true, extraYaml: lagYaml + (opts.extraYaml ?? ''), nodeArgs, nodeYaml });
    const c = new LeaseholdCluster(cluster, opts, metricsPorts);
    try {
      cluster.startAll();
      await cluster.waitForLeader();
      await c.waitAllServing(20_000);
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return c;
  },
} satisfies SystemFactory;

export type { LeaseholdCluster };
