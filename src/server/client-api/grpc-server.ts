// The client-facing gRPC services of one node: Lock and Cluster, plus grpc.health.v1 and server
// reflection, on the same port as the peer Raft service. The glue only: how a lock call is handled —
// validation, owner binding, serving or forwarding it once to the leader with the caller's deadline — is
// lock-calls.ts's; a unary call lock-unary.ts's, Lock/Stream lock-stream.ts's (over transport/call-mux.ts), a follower's forwarded
// call forwarded-call.ts's, forwarding as a unary call forward-unary.ts's and the wire form of results
// answers-to-wire.ts's. Here: registration, the unary handlers, and the options that wire them.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import type { PeerCertificate } from 'node:tls';
import type { LockLimits } from '../../lock/validate.js';
import type { NodeLogger } from '../../raft/logger.js';
import type { ForwardStream } from '../../transport/forward.js';
import { LOADER_OPTIONS, packageDefinition } from '../../wire/load.js';
import type { WireInput } from '../../wire/scalars.js';
import type { CallSignal } from '../../wire/call-signal.js';
import { type LockHandlers, lockGrpcService } from '../../wire/lock.js';
import { addLazyReflection } from './lazy-reflection.js';
import { clusterGrpcService } from '../../wire/cluster.js';
import type { CallEnvelope } from '../../wire/call-envelope.js';
import type { ForwardedCallAnswer } from '../../transport/forward-server.js';
import { DEFAULT_LOCK_LEADER_CONFIG } from '../../lock/leader/index.js';
import type { LockService } from '../../lock-on-raft/lock-service.js';
import type { ClusterApi } from './cluster-api.js';
import { serveWatch, type WatchServing } from './watch-server.js';
import { serveList, type ListServing } from './list-server.js';
import { addStrictService, descriptorRegistry, strictRequestDeserializers } from './strict-decode.js';
import { LockCallHandling } from './lock-calls.js';
import { WIRE_ANSWERS, type WireAnswer } from './answers-to-wire.js';
import { serveLockStream } from './lock-stream.js';
import { withLockStreamCodec, type StreamCall } from './lock-stream-codec.js';
import { encodeRequestBody, encodeResponseBody } from './call-bodies.js';
import { withLockUnaryCodecs } from './lock-unary-codec.js';
import { UnaryLockCalls } from './lock-unary.js';
import type { InvalidRequest } from './strict-decode.js';
import { handleForwarded } from './forwarded-call.js';
import { UnaryForwarder } from './forward-unary.js';

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
  forwardVia?: (leaderId: string) => ForwardStream | null;
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
  /** Counts and times a call decided at once because this node does not lead (forwarded, or answered the
   *  lock leader's refusal): outcome not_leader or unavailable, as the lock service counts such a refusal. */
  countNotLeading?: (op: string, outcome: 'not_leader' | 'unavailable', seconds: number) => void;
}

type Reply<T> = (err: grpc.ServiceError | null, value?: WireInput<T>) => void;

export class ClientApi {
  readonly health = new HealthImplementation({ '': 'SERVING', 'leasehold.v1.Lock': 'SERVING', 'leasehold.v1.Cluster': 'SERVING' });

  private readonly forwarder: UnaryForwarder;
  private readonly calls: LockCallHandling<WireAnswer>;
  private readonly unaryCalls: UnaryLockCalls<WireAnswer>;

  constructor(private readonly opts: ClientApiOptions) {
    this.forwarder = new UnaryForwarder({
      members: opts.members,
      ...(opts.dialOverrides !== undefined ? { dialOverrides: opts.dialOverrides } : {}),
      ...(opts.forwardCredentials !== undefined ? { credentials: opts.forwardCredentials } : {}),
      leaderAddress: () => this.leaderAddress(),
    });
    this.calls = new LockCallHandling<WireAnswer>({
      service: opts.service,
      limits: opts.limits,
      defaultTimeoutMs: opts.defaultTimeoutMs,
      encode: WIRE_ANSWERS,
      bodies: { request: encodeRequestBody, response: encodeResponseBody },
      logger: opts.logger,
      nowMs: () => Date.now(),
      after: (ms, fn) => setTimeout(fn, ms).unref(),
      leaderAddress: () => this.leaderAddress(),
      ...(opts.forwardVia ? { forwardVia: opts.forwardVia } : {}),
      forwardUnary: (method, request, leaderId, deadlineMs) => this.forwarder.forward(method, request, leaderId, deadlineMs),
      ...(opts.ownerBinding !== undefined ? { ownerBinding: opts.ownerBinding } : {}),
      ...(opts.admins !== undefined ? { admins: opts.admins } : {}),
      ...(opts.isMember !== undefined ? { isMember: opts.isMember } : {}),
      detachedWaiterGraceMs: opts.detachedWaiterGraceMs ?? DEFAULT_LOCK_LEADER_CONFIG.detachedWaiterGraceMs,
      ...(opts.countRefused !== undefined ? { countRefused: opts.countRefused } : {}),
      ...(opts.countNotLeading !== undefined ? { countNotLeading: opts.countNotLeading } : {}),
    });
    this.unaryCalls = new UnaryLockCalls(this.calls);
  }

  /** Reloaded certificates: forwarding channels are rebuilt with them on next use. */
  setForwardCredentials(credentials: grpc.ChannelCredentials): void {
    this.forwarder.setCredentials(credentials);
    this.close();
  }

  register(server: grpc.Server): void {
    const healthDefinition = protoLoader.loadSync(healthProtoPath, { ...LOADER_OPTIONS });
    const registry = descriptorRegistry(packageDefinition(), healthDefinition);
    // Every service behind the same strict decoder: garbage is INVALID_ARGUMENT, never INTERNAL.
    // Lock/Stream on its own codec (lock-stream-codec.ts), and the unary lock calls on theirs
    // (lock-unary-codec.ts), which refuse what the walk would.
    const lock = lockGrpcService.definition();
    const definition = withLockUnaryCodecs({
      ...lock,
      Stream: withLockStreamCodec(lock.Stream as grpc.MethodDefinition<unknown, unknown>),
    });
    server.addService(strictRequestDeserializers(definition as typeof lock, registry), this.handlers);
    addStrictService(
      server,
      clusterGrpcService.definition(),
      this.opts.cluster.handlers() as unknown as grpc.UntypedServiceImplementation,
      registry,
    );
    this.health.addToServer({
      addService: (service: grpc.ServiceDefinition, impl: grpc.UntypedServiceImplementation) =>
        addStrictService(server, service, impl, registry),
    } as unknown as grpc.Server);
    // Reflection describes our services and the standard health service (grpcurl list / describe). Its
    // bidi stream keeps the library's own decoder: it only reads descriptors and changes nothing. Built on
    // its first call, not here: indexing the package was ~0.1 s of a node's start (lazy-reflection.ts).
    addLazyReflection(server, () => ({ ...packageDefinition(), ...healthDefinition }), {
      services: ['leasehold.v1.Lock', 'leasehold.v1.Cluster', 'grpc.health.v1.Health'],
    });
  }

  close(): void {
    this.forwarder.close();
    this.opts.cluster.close();
  }

  // ------------------------------------------------------------------ Lock

  private readonly handlers: LockHandlers = {
    Acquire: (call, cb) => this.unaryCalls.serve('Acquire', call, cb as Reply<unknown>),
    Renew: (call, cb) => this.unaryCalls.serve('Renew', call, cb as Reply<unknown>),
    Release: (call, cb) => this.unaryCalls.serve('Release', call, cb as Reply<unknown>),
    Get: (call, cb) => this.unaryCalls.serve('Get', call, cb as Reply<unknown>),
    OpenSession: (call, cb) => this.unaryCalls.serve('OpenSession', call, cb as Reply<unknown>),
    RenewSession: (call, cb) => this.unaryCalls.serve('RenewSession', call, cb as Reply<unknown>),
    CloseSession: (call, cb) => this.unaryCalls.serve('CloseSession', call, cb as Reply<unknown>),
    Revoke: (call, cb) => this.unaryCalls.serve('Revoke', call, cb as Reply<unknown>),
    // Registered with lock-stream-codec.ts's codec (register): envelopes in, answer bytes out.
    Stream: ((call: grpc.ServerDuplexStream<StreamCall | InvalidRequest, Uint8Array>) =>
      serveLockStream(this.calls, call)) as unknown as LockHandlers['Stream'],
    Watch: (call) => serveWatch(call, this.opts.watch, () => this.opts.countRefused?.('watch', 'invalid')),
    List: (call, cb) => serveList(call, cb, this.opts.list, () => this.opts.countRefused?.('list', 'invalid')),
  };

  /**
   * A lock call a follower forwarded on its Forward stream (transport/grpc.ts admitted the stream and
   * its sender): served exactly like the same call forwarded as a unary call — validated, owner-checked
   * (trusting a member's certificate, as for a forwarded unary call), never forwarded again — within what
   * was left of its caller's deadline.
   */
  async serveForwarded(
    wire: CallEnvelope,
    peer: { certificate: PeerCertificate | undefined; remote: string },
    signal: CallSignal,
  ): Promise<ForwardedCallAnswer> {
    return handleForwarded(this.calls, wire, peer, signal, Date.now());
  }

  /** The leader's client address as this node knows it, or undefined. */
  private leaderAddress(): string | undefined {
    const leaderId = this.opts.service.node.leaderId;
    return leaderId ? this.opts.members.get(leaderId) : undefined;
  }
}
