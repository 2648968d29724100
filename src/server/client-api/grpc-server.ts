// The client-facing gRPC services of one node: Lock and Cluster, plus grpc.health.v1 and server
// reflection, on the same port as the peer Raft service. The glue only: how a lock call is handled —
// validation, owner binding, serving or forwarding it once to the leader with the caller's deadline — is
// lock-calls.ts's, and the multiplexing of Lock/Stream is transport/call-mux.ts's, both transport-free so
// the lock simulation runs them too.
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import * as protoLoader from '@grpc/proto-loader';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import type { LockLimits } from '../../lock/validate.js';
import type {
  AcquireResult,
  LockView,
  OpenSessionResult,
  ReleaseResult,
  RenewResult,
  RenewSessionResult,
  SessionEndResult,
} from '../../lock/types.js';
import type { NodeLogger } from '../../raft/logger.js';
import { NODE_CHANNEL_BACKOFF } from '../../transport/peer-link.js';
import { certificateCommonName } from '../../transport/peer-auth.js';
import { LOADER_OPTIONS, packageDefinition } from '../../wire/load.js';
import type { WireInput } from '../../wire/scalars.js';
import {
  type AcquireResponse,
  type CloseSessionResponse,
  type GetResponse,
  LEADER_METADATA,
  LOCK_CALL_NAME,
  type LockAnswer,
  type LockCall,
  type LockCallName,
  type LockStub,
  type LockHandlers,
  type LockMethod,
  lockService,
  type OpenSessionResponse,
  type ReleaseResponse,
  type RenewResponse,
  type RenewSessionResponse,
} from '../../wire/lock.js';
import { clusterService } from '../../wire/cluster.js';
import type { ForwardedAnswer, ForwardedCall } from '../../wire/raft.js';
import type { ForwardSession } from '../../transport/forward.js';
import type { PeerCertificate } from 'node:tls';
import type { ClusterApi } from './cluster-api.js';
import { statusError } from './status-error.js';
import { serveWatch, type WatchServing } from './watch-server.js';
import { serveList, type ListServing } from './list-server.js';
import { holderToWire, holdersOf } from './holders-view.js';
import { addStrictService, descriptorRegistry, invalidReason, strictRequestDeserializers } from './strict-decode.js';
import { FORWARDED_METADATA } from './forward-once.js';
import { CallMux } from '../../transport/call-mux.js';
import { endReason } from '../../transport/call-end.js';
import { DEFAULT_LOCK_LEADER_CONFIG } from '../../lock/leader/index.js';
import { LockCallHandling, type AnswerEncoder, type CallContext, type CallReply, type LockCallMethod } from './lock-calls.js';
import { mark } from '../../trace/stages.js';
import type { LockService } from '../../lock-on-raft/lock-service.js';

export interface ClientApiOptions {
  service: LockService;
  limits: LockLimits;
  /** Node id -> client address, for forwarding to the leader (kept current by the runtime as the
   *  membership changes). */
  members: Map<string, string>;
  /** nodes[].peerDialOverrides: forward to these members here instead (the leader hint keeps `members`). */
  dialOverrides?: ReadonlyMap<string, string>;
  /** leasehold.v1.Cluster (cluster-api.ts). */
  cluster: ClusterApi;
  defaultTimeoutMs: number;
  logger: NodeLogger;
  /** Channel credentials to forward to the leader with (TLS: this node's certificate); default plaintext. */
  forwardCredentials?: grpc.ChannelCredentials;
  /** auth.ownerBinding: the owner of Acquire/Renew/Release must equal the caller's certificate CN. */
  ownerBinding?: boolean;
  /** auth.admins: the CNs that may Revoke under owner binding. */
  admins?: readonly string[];
  /** Whether `id` is a current member: a call forwarded by a member node was owner-checked there. */
  isMember?: (id: string) => boolean;
  /** The Forward stream on our peer link to `leaderId` (transport/forward.ts); without one (no link, or
   *  a test double), calls are forwarded as unary calls to the leader's client port. */
  forwardVia?: (leaderId: string) => ForwardSession | null;
  /** Lock/Watch (watch-server.ts); without it the node answers UNIMPLEMENTED. */
  watch?: WatchServing;
  /** Lock/List (list-server.ts); without it the node answers UNIMPLEMENTED. */
  list?: ListServing;
  /** How long a waiter without a session keeps its place after its connection broke (the lock leader's
   *  detachedWaiterGraceMs; here for the calls this node forwards). */
  detachedWaiterGraceMs?: number;
  /** Counts a call refused before it reached the lock service: malformed or invalid, or not permitted
   *  (metrics: leasehold_lock_operations_total{outcome="invalid"|"denied"}). */
  countRefused?: (op: string, outcome: 'invalid' | 'denied') => void;
  /** Counts and times a call forwarded at once because this node does not lead (outcome="not_leader", as
   *  the lock service counts one it refuses so). */
  countForwarded?: (op: string, seconds: number) => void;
}

const LOCK_METHOD = Object.fromEntries(Object.entries(LOCK_CALL_NAME).map(([method, name]) => [name, method])) as Record<
  LockCallName,
  LockMethod
>;

/** Calls of one Lock/Stream served at once; more are refused RESOURCE_EXHAUSTED (a bound on what one
 *  client can make a node hold; the lock leader's own limits still apply to each call). */
const MAX_STREAM_CALLS_IN_FLIGHT = 10_000;

/** A lock call's answer as a wire message (the payload every transport carries). */
type WireAnswer = WireInput<unknown>;

const WIRE_ANSWERS: AnswerEncoder<WireAnswer> = {
  Acquire: acquireToWire,
  Renew: renewToWire,
  Release: releaseToWire,
  Get: viewToWire,
  OpenSession: openSessionToWire,
  RenewSession: renewSessionToWire,
  CloseSession: closeSessionToWire,
  Revoke: (r) => ({ revoked: r.revoked.map(String) }),
};

type Reply<T> = (err: grpc.ServiceError | null, value?: WireInput<T>) => void;

export class ClientApi {
  private forwardClients = new Map<string, LockStub>();
  readonly health = new HealthImplementation({ '': 'SERVING', 'leasehold.v1.Lock': 'SERVING', 'leasehold.v1.Cluster': 'SERVING' });

  private forwardCredentials: grpc.ChannelCredentials;
  private readonly calls: LockCallHandling<WireAnswer>;

  constructor(private readonly opts: ClientApiOptions) {
    this.forwardCredentials = opts.forwardCredentials ?? grpc.credentials.createInsecure();
    this.calls = new LockCallHandling<WireAnswer>({
      service: opts.service,
      limits: opts.limits,
      defaultTimeoutMs: opts.defaultTimeoutMs,
      encode: WIRE_ANSWERS,
      logger: opts.logger,
      nowMs: () => Date.now(),
      after: (ms, fn) => setTimeout(fn, ms).unref(),
      leaderAddress: () => this.leaderAddress(),
      ...(opts.forwardVia ? { forwardVia: opts.forwardVia } : {}),
      forwardUnary: (method, request, leaderId, deadlineMs) => this.forwardUnary(method, request, leaderId, deadlineMs),
      ...(opts.ownerBinding !== undefined ? { ownerBinding: opts.ownerBinding } : {}),
      ...(opts.admins !== undefined ? { admins: opts.admins } : {}),
      ...(opts.isMember !== undefined ? { isMember: opts.isMember } : {}),
      detachedWaiterGraceMs: opts.detachedWaiterGraceMs ?? DEFAULT_LOCK_LEADER_CONFIG.detachedWaiterGraceMs,
      ...(opts.countRefused !== undefined ? { countRefused: opts.countRefused } : {}),
      ...(opts.countForwarded !== undefined ? { countForwarded: opts.countForwarded } : {}),
    });
  }

  /** Reloaded certificates: forwarding channels are rebuilt with them on next use. */
  setForwardCredentials(credentials: grpc.ChannelCredentials): void {
    this.forwardCredentials = credentials;
    this.close();
  }

  register(server: grpc.Server): void {
    const healthDefinition = protoLoader.loadSync(healthProtoPath, { ...LOADER_OPTIONS });
    const registry = descriptorRegistry(packageDefinition(), healthDefinition);
    // Every service behind the same strict decoder: garbage is INVALID_ARGUMENT, never INTERNAL.
    server.addService(strictRequestDeserializers(lockService.definition(), registry), this.handlers);
    addStrictService(
      server,
      clusterService.definition(),
      this.opts.cluster.handlers() as unknown as grpc.UntypedServiceImplementation,
      registry,
    );
    this.health.addToServer({
      addService: (service: grpc.ServiceDefinition, impl: grpc.UntypedServiceImplementation) =>
        addStrictService(server, service, impl, registry),
    } as unknown as grpc.Server);
    // Reflection describes our services and the standard health service (grpcurl list / describe). Its
    // bidi stream keeps the library's own decoder: it only reads descriptors and changes nothing.
    new ReflectionService(
      { ...packageDefinition(), ...healthDefinition },
      { services: ['leasehold.v1.Lock', 'leasehold.v1.Cluster', 'grpc.health.v1.Health'] },
    ).addToServer(server);
  }

  close(): void {
    for (const c of this.forwardClients.values()) c.close();
    this.forwardClients.clear();
    this.opts.cluster.close();
  }

  // ------------------------------------------------------------------ Lock

  private readonly handlers: LockHandlers = {
    Acquire: (call, cb) => this.unary('Acquire', call, cb as Reply<unknown>),
    Renew: (call, cb) => this.unary('Renew', call, cb as Reply<unknown>),
    Release: (call, cb) => this.unary('Release', call, cb as Reply<unknown>),
    Get: (call, cb) => this.unary('Get', call, cb as Reply<unknown>),
    OpenSession: (call, cb) => this.unary('OpenSession', call, cb as Reply<unknown>),
    RenewSession: (call, cb) => this.unary('RenewSession', call, cb as Reply<unknown>),
    CloseSession: (call, cb) => this.unary('CloseSession', call, cb as Reply<unknown>),
    Revoke: (call, cb) => this.unary('Revoke', call, cb as Reply<unknown>),
    Stream: (call) => this.serveStream(call),
    Watch: (call) => serveWatch(call, this.opts.watch, () => this.opts.countRefused?.('watch', 'invalid')),
    List: (call, cb) => serveList(call, cb, this.opts.list, () => this.opts.countRefused?.('list', 'invalid')),
  };

  /** A unary lock call: its deadline, certificate and cancellation as a CallContext; the leader hint as
   *  response metadata on success. */
  private unary(method: LockCallMethod, call: grpc.ServerUnaryCall<unknown, unknown>, cb: Reply<unknown>): void {
    const deadline = call.getDeadline();
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : Number.isFinite(deadline) ? Number(deadline) : Infinity;
    const ended = new AbortController();
    // grpc-js reports 'cancelled' also after a unary call has been answered (harmless: nothing listens then).
    call.on('cancelled', (reason: unknown) => ended.abort(endReason(reason)));
    const ctx: CallContext = {
      forwarded: call.metadata.get(FORWARDED_METADATA).length > 0,
      deadlineMs,
      certificateCn: certificateCommonName(call.getAuthContext()?.sslPeerCertificate),
      remote: call.getPeer(),
      signal: ended.signal,
    };
    void this.calls.handle(method, call.request, ctx).then((reply) => {
      if (reply.code !== grpc.status.OK) return cb(statusError(reply.code, reply.details));
      if (reply.leader !== '') {
        const md = new grpc.Metadata();
        md.set(LEADER_METADATA, reply.leader);
        call.sendMetadata(md);
      }
      cb(null, reply.response as WireInput<unknown>);
    });
  }

  /**
   * A lock call a follower forwarded on its Forward stream (transport/grpc.ts admitted the stream and
   * its sender): served exactly like the same call forwarded as a unary call — validated, owner-checked
   * (trusting a member's certificate, as for a forwarded unary call), never forwarded again — within what
   * was left of its caller's deadline.
   */
  async serveForwarded(
    wire: ForwardedCall,
    peer: { certificate: PeerCertificate | undefined; remote: string },
    signal: AbortSignal,
  ): Promise<WireInput<ForwardedAnswer>> {
    return handleForwarded(this.calls, wire, peer, signal, Date.now());
  }

  /**
   * Lock/Stream: every lock call of one client as a message, multiplexed by call_id (transport/call-mux.ts),
   * each handled exactly like its unary call. A message the strict decoder refused ends the stream with
   * INVALID_ARGUMENT (its call_id cannot be trusted); a bad request inside a good message is that call's
   * INVALID_ARGUMENT answer. Answers wait in grpc-js's buffer only while the client reads them: when it
   * stops, we stop reading its calls (pause until drain), so a client that never reads cannot grow our
   * memory; and at most MAX_STREAM_CALLS_IN_FLIGHT calls of one stream are served at once.
   */
  private serveStream(call: grpc.ServerDuplexStream<LockCall, WireInput<LockAnswer>>): void {
    const certificateCn = certificateCommonName(call.getAuthContext()?.sslPeerCertificate);
    const remote = call.getPeer();
    const mux = new CallMux<WireInput<LockAnswer>>((a) => {
      mark('call.sent');
      if (!call.write(a)) {
        call.pause();
        call.once('drain', () => call.resume());
      }
    }, MAX_STREAM_CALLS_IN_FLIGHT);
    call.on('data', (wire: LockCall) => {
      if (!mux.isOpen) return;
      const invalid = invalidReason(wire);
      if (invalid !== undefined) {
        mux.close();
        call.emit('error', statusError(grpc.status.INVALID_ARGUMENT, `malformed lock call: ${invalid}`));
        return;
      }
      serveStreamMessage(this.calls, mux, wire, { certificateCn, remote, nowMs: Date.now() });
    });
    // The stream going away (ended, reset, failed) is no cancel: its calls end detached (call-mux.ts).
    call.on('end', () => {
      mux.close();
      call.end();
    });
    call.on('cancelled', () => mux.close());
    call.on('error', () => mux.close());
  }

  /** The leader's client address as this node knows it, or undefined. */
  private leaderAddress(): string | undefined {
    const leaderId = this.opts.service.node.leaderId;
    return leaderId ? this.opts.members.get(leaderId) : undefined;
  }

  /** Forwarding without a Forward stream (no peer link, a test double, or Revoke): a unary call to the
   *  leader's client port with the forwarded metadata and the caller's deadline. */
  private forwardUnary(method: LockCallMethod, request: unknown, leaderId: string, deadlineMs: number): Promise<CallReply<WireAnswer>> {
    const address = this.opts.dialOverrides?.get(leaderId) ?? this.opts.members.get(leaderId);
    if (!address)
      return Promise.resolve({
        code: grpc.status.UNAVAILABLE,
        details: `the leader ${leaderId} has no known client address; retry`,
        response: null,
        leader: '',
      });
    let client = this.forwardClients.get(address);
    if (!client) {
      // With TLS the leader's certificate names its id, not necessarily its address.
      client = lockService.client(address, this.forwardCredentials, {
        ...NODE_CHANNEL_BACKOFF,
        ...(this.opts.forwardCredentials ? { 'grpc.ssl_target_name_override': leaderId, 'grpc.default_authority': leaderId } : {}),
      });
      this.forwardClients.set(address, client);
    }
    const md = new grpc.Metadata();
    md.set(FORWARDED_METADATA, '1');
    const fn = client[method] as unknown as (
      req: unknown,
      md: grpc.Metadata,
      opts: Partial<grpc.CallOptions>,
      cb: (e: grpc.ServiceError | null, v?: unknown) => void,
    ) => void;
    return new Promise((resolve) => {
      fn.call(client, request, md, { deadline: new Date(deadlineMs) }, (err, value) => {
        // Keep the leader's code and message; say it came through us.
        if (err) resolve({ code: err.code, details: `${err.details} (forwarded to leader ${leaderId})`, response: null, leader: '' });
        else resolve({ code: grpc.status.OK, details: '', response: value as WireAnswer, leader: this.leaderAddress() ?? '' });
      });
    });
  }
}

/** A lock call a follower forwarded, handled through `calls` as forwarded (owner-checked there, never
 *  forwarded again) within what was left of its caller's deadline; resolves with the Forward stream's answer.
 *  Shared with the lock simulation. */
export async function handleForwarded<P>(
  calls: LockCallHandling<P>,
  wire: ForwardedCall,
  peer: { certificate: PeerCertificate | undefined; remote: string },
  signal: AbortSignal,
  nowMs: number,
): Promise<WireInput<ForwardedAnswer>> {
  const name = wire.request;
  const request = name ? wire[name] : undefined;
  if (!name || request === undefined) {
    return { call_id: wire.call_id, code: grpc.status.INVALID_ARGUMENT, details: 'forwarded call: request: no lock call in it' };
  }
  const reply = await calls.handle(LOCK_METHOD[name], request, {
    forwarded: true,
    deadlineMs: nowMs + Math.max(1, wire.timeout_ms),
    certificateCn: certificateCommonName(peer.certificate),
    remote: peer.remote,
    signal,
  });
  return {
    call_id: wire.call_id,
    code: reply.code,
    details: reply.details,
    ...(reply.code === grpc.status.OK ? { [name]: reply.response } : {}),
  } as WireInput<ForwardedAnswer>;
}

/** A decoded Lock/Stream message, served through `calls` on `mux`: a cancel, a call, or the refusal of one.
 *  Shared with the lock simulation, which runs Lock/Stream over simulated connections. */
export function serveStreamMessage<P>(
  calls: LockCallHandling<P>,
  mux: CallMux<WireInput<LockAnswer>>,
  wire: LockCall,
  peer: { certificateCn: string | undefined; remote: string; nowMs: number },
): void {
  const id = wire.call_id;
  if (wire.cancel) return mux.cancel(id);
  const name = wire.request;
  const request: unknown = name ? wire[name] : undefined;
  if (!name || request === undefined)
    return mux.reply({ call_id: id, code: grpc.status.INVALID_ARGUMENT, details: 'request: no lock call in it' });
  const started = mux.start(id);
  if ('refused' in started) {
    if (started.refused === 'duplicate')
      return mux.reply({ call_id: id, code: grpc.status.INVALID_ARGUMENT, details: `call_id: ${id} is already in flight on this stream` });
    if (started.refused === 'full')
      return mux.reply({
        call_id: id,
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: `more than ${MAX_STREAM_CALLS_IN_FLIGHT} calls in flight on one stream; wait for answers or open another stream`,
      });
    return;
  }
  void calls
    .handle(LOCK_METHOD[name], request, {
      forwarded: false,
      deadlineMs: wire.timeout_ms > 0 ? peer.nowMs + wire.timeout_ms : Infinity,
      certificateCn: peer.certificateCn,
      remote: peer.remote,
      signal: started.signal,
    })
    .then((a) =>
      mux.finish(id, started.signal, {
        call_id: id,
        code: a.code,
        details: a.details,
        leader: a.leader,
        ...(a.code === grpc.status.OK ? { [name]: a.response } : {}),
      } as WireInput<LockAnswer>),
    );
}

function acquireToWire(r: AcquireResult): WireInput<AcquireResponse> {
  return {
    acquired: r.acquired,
    token: r.token.toString(),
    ttl_ms: String(r.ttlMs),
    expires_at_ms: String(r.expiresAtMs),
    holder_owner: r.holderOwner,
    holder_ttl_ms: String(r.holderTtlMs),
    delay_ms_left: String(r.delayMsLeft ?? 0),
  };
}

function renewToWire(r: RenewResult): WireInput<RenewResponse> {
  return { renewed: r.renewed, ttl_ms: String(r.ttlMs), expires_at_ms: String(r.expiresAtMs), reason: r.reason };
}

function releaseToWire(r: ReleaseResult): WireInput<ReleaseResponse> {
  return { released: r.released, reason: r.reason };
}

function openSessionToWire(r: OpenSessionResult): WireInput<OpenSessionResponse> {
  return { session_id: r.sessionId.toString(), ttl_ms: String(r.ttlMs), expires_at_ms: String(r.expiresAtMs) };
}

function renewSessionToWire(r: RenewSessionResult): WireInput<RenewSessionResponse> {
  return { renewed: r.renewed, ttl_ms: String(r.ttlMs), expires_at_ms: String(r.expiresAtMs), reason: r.reason };
}

function closeSessionToWire(r: SessionEndResult): WireInput<CloseSessionResponse> {
  return { closed: r.ended, released: r.released, reason: r.reason };
}

const EMPTY_VALUE = new Uint8Array(0);

function viewToWire(v: LockView): WireInput<GetResponse> {
  return {
    held: v.held,
    owner: v.owner,
    token: v.token.toString(),
    ttl_ms: String(v.ttlMs),
    expires_at_ms: String(v.expiresAtMs),
    last_token: v.lastToken.toString(),
    waiters: v.waiters ?? 0,
    index: String(v.index ?? 0),
    holders: holdersOf(v, v.value).map(holderToWire),
    limit: v.limit ?? 1,
  };
}
