// The client-facing gRPC services of one node: Lock and Cluster, plus grpc.health.v1 and server
// reflection, on the same port as the peer Raft service. Any node serves any call: a follower forwards
// Lock calls to the leader with the caller's deadline (once — a forwarded call is never forwarded again:
// forward-once.ts).
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import * as protoLoader from '@grpc/proto-loader';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import {
  validateAcquire,
  validateGet,
  validateOpenSession,
  validateRelease,
  validateRenew,
  validateRevoke,
  validateSessionCall,
  type LockLimits,
  type Validated,
} from '../lock/validate.js';
import type {
  AcquireResult,
  LockView,
  OpenSessionResult,
  ReleaseResult,
  RenewResult,
  RenewSessionResult,
  SessionEndResult,
} from '../lock/types.js';
import type { NodeLogger } from '../raft/logger.js';
import { NODE_CHANNEL_BACKOFF } from '../transport/peer-link.js';
import { certificateCommonName } from '../transport/peer-auth.js';
import { LOADER_OPTIONS, packageDefinition } from '../wire/load.js';
import type { WireInput } from '../wire/scalars.js';
import {
  type AcquireRequest,
  type AcquireResponse,
  type CloseSessionResponse,
  type GetRequest,
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
  type OpenSessionRequest,
  type OpenSessionResponse,
  type ReleaseRequest,
  type ReleaseResponse,
  type RenewRequest,
  type RenewResponse,
  type RenewSessionResponse,
  type RevokeRequest,
  type RevokeResponse,
  type SessionCallRequest,
} from '../wire/lock.js';
import { clusterService } from '../wire/cluster.js';
import type { ForwardedAnswer, ForwardedCall } from '../wire/raft.js';
import type { ForwardSession } from '../transport/forward.js';
import type { PeerCertificate } from 'node:tls';
import type { ClusterApi } from './cluster-api.js';
import { statusError } from './status-error.js';
import { mark } from '../trace/stages.js';
import { serveWatch, type WatchServing } from './watch-server.js';
import { serveList, type ListServing } from './list-server.js';
import { holderToWire, holdersOf } from './holders-view.js';
import { addStrictService, descriptorRegistry, invalidReason, strictRequestDeserializers } from './strict-decode.js';
import { FORWARDED_METADATA, routeNotLeader } from './forward-once.js';
import { CANCELLED, DETACHED, endReason } from '../transport/call-end.js';
import { DEFAULT_LOCK_LEADER_CONFIG } from '../lock/leader/index.js';
import {
  AdmissionLimitError,
  ConflictingRequestError,
  LeaderUnavailableError,
  RequestRejectedError,
  type LockService,
} from './lock-service.js';

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
}

const FORWARDED_METHOD: Readonly<Record<LockMethod, LockCallName>> = LOCK_CALL_NAME;
const LOCK_METHOD = Object.fromEntries(Object.entries(FORWARDED_METHOD).map(([method, name]) => [name, method])) as Record<
  LockCallName,
  LockMethod
>;

/** The stand-in calls serveMessage builds (no metadata to send: their answers carry the leader hint). */
const messageCalls = new WeakSet<object>();

/** Calls of one Lock/Stream served at once; more are refused RESOURCE_EXHAUSTED (a bound on what one
 *  client can make a node hold; the lock leader's own limits still apply to each call). */
const MAX_STREAM_CALLS_IN_FLIGHT = 10_000;

interface MessageCallContext {
  /** Forwarded by a member follower (never forwarded again; owner checked there). */
  forwarded: boolean;
  /** The caller's deadline from now; null: none given (the server's default applies). */
  timeoutMs: number | null;
  certificate: PeerCertificate | undefined;
  remote: string;
  signal: AbortSignal;
}

interface MessageAnswer {
  code: grpc.status;
  details: string;
  response: unknown;
  /** The leader's client address (the unary call's leader metadata), or ''. */
  leader: string;
}

type Reply<T> = (err: grpc.ServiceError | null, value?: WireInput<T>) => void;

export class ClientApi {
  private forwardClients = new Map<string, LockStub>();
  readonly health = new HealthImplementation({ '': 'SERVING', 'leasehold.v1.Lock': 'SERVING', 'leasehold.v1.Cluster': 'SERVING' });

  private forwardCredentials: grpc.ChannelCredentials;

  constructor(private readonly opts: ClientApiOptions) {
    this.forwardCredentials = opts.forwardCredentials ?? grpc.credentials.createInsecure();
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

  /** The Lock handlers: registered on the server, and called directly for calls forwarded on a stream. */
  private readonly handlers: LockHandlers = this.lockHandlers();

  /**
   * A lock call a follower forwarded on its Forward stream (transport/grpc.ts admitted the stream and
   * its sender): served exactly like the same call forwarded as a unary call — validated, owner-checked
   * (trusting a member's certificate, as for a forwarded unary call), never forwarded again.
   */
  async serveForwarded(
    wire: ForwardedCall,
    peer: { certificate: PeerCertificate | undefined; remote: string },
    signal: AbortSignal,
  ): Promise<WireInput<ForwardedAnswer>> {
    const name = wire.request;
    const request = name ? wire[name] : undefined;
    if (!name || request === undefined) {
      return { call_id: wire.call_id, code: grpc.status.INVALID_ARGUMENT, details: 'forwarded call: request: no lock call in it' };
    }
    const answer = await this.serveMessage(name, request, { forwarded: true, timeoutMs: Math.max(1, wire.timeout_ms), ...peer, signal });
    return {
      call_id: wire.call_id,
      code: answer.code,
      details: answer.details,
      ...(answer.code === grpc.status.OK ? { [name]: answer.response } : {}),
    } as WireInput<ForwardedAnswer>;
  }

  /**
   * Lock/Stream: every lock call of one client as a message, multiplexed by call_id, each served exactly
   * like its unary call (the same handler runs it). A message the strict decoder refused ends the stream
   * with INVALID_ARGUMENT (its call_id cannot be trusted); a bad request inside a good message is that
   * call's INVALID_ARGUMENT answer. Answers wait in grpc-js's buffer only while the client reads them:
   * when it stops, we stop reading its calls (pause until drain), so a client that never reads cannot
   * grow our memory; and at most MAX_STREAM_CALLS_IN_FLIGHT calls of one stream are served at once.
   */
  private serveStream(call: grpc.ServerDuplexStream<LockCall, WireInput<LockAnswer>>): void {
    const certificate = call.getAuthContext()?.sslPeerCertificate;
    const remote = call.getPeer();
    const inFlight = new Map<string, AbortController>();
    let open = true;
    // The stream went away (ended, reset, failed): its calls' connection broke, which is not a cancel — a
    // waiter keeps its place for the client's retry (call-end.ts).
    const close = () => {
      if (!open) return;
      open = false;
      for (const a of inFlight.values()) a.abort(DETACHED);
      inFlight.clear();
    };
    const answer = (a: WireInput<LockAnswer>) => {
      if (!open) return;
      mark('call.sent');
      if (!call.write(a)) {
        call.pause();
        call.once('drain', () => call.resume());
      }
    };
    call.on('data', (wire: LockCall) => {
      if (!open) return;
      const invalid = invalidReason(wire);
      if (invalid !== undefined) {
        close();
        call.emit('error', statusError(grpc.status.INVALID_ARGUMENT, `malformed lock call: ${invalid}`));
        return;
      }
      const id = wire.call_id;
      if (wire.cancel) {
        inFlight.get(id)?.abort(CANCELLED);
        inFlight.delete(id);
        return;
      }
      const name = wire.request;
      const request = name ? wire[name] : undefined;
      if (!name || request === undefined)
        return answer({ call_id: id, code: grpc.status.INVALID_ARGUMENT, details: 'request: no lock call in it' });
      if (inFlight.has(id))
        return answer({ call_id: id, code: grpc.status.INVALID_ARGUMENT, details: `call_id: ${id} is already in flight on this stream` });
      if (inFlight.size >= MAX_STREAM_CALLS_IN_FLIGHT) {
        return answer({
          call_id: id,
          code: grpc.status.RESOURCE_EXHAUSTED,
          details: `more than ${MAX_STREAM_CALLS_IN_FLIGHT} calls in flight on one stream; wait for answers or open another stream`,
        });
      }
      const abort = new AbortController();
      inFlight.set(id, abort);
      void this.serveMessage(name, request, {
        forwarded: false,
        timeoutMs: wire.timeout_ms > 0 ? wire.timeout_ms : null,
        certificate,
        remote,
        signal: abort.signal,
      }).then((a) => {
        if (inFlight.get(id) !== abort) return; // cancelled, or the stream went away
        inFlight.delete(id);
        answer({
          call_id: id,
          code: a.code,
          details: a.details,
          leader: a.leader,
          ...(a.code === grpc.status.OK ? { [name]: a.response } : {}),
        } as WireInput<LockAnswer>);
      });
    });
    call.on('end', () => {
      close();
      call.end();
    });
    call.on('cancelled', close);
    call.on('error', close);
  }

  /** One lock call that arrived as a message (a Lock/Stream call or a follower's forwarded call), run
   *  through the same handler as its unary call; resolves with what the unary call would have ended with. */
  private serveMessage(name: LockCallName, request: unknown, ctx: MessageCallContext): Promise<MessageAnswer> {
    const handler = this.handlers[LOCK_METHOD[name]] as unknown as (call: unknown, cb: Reply<unknown>) => void;
    const metadata = new grpc.Metadata();
    if (ctx.forwarded) metadata.set(FORWARDED_METADATA, '1');
    const deadline = ctx.timeoutMs === null ? Infinity : Date.now() + ctx.timeoutMs;
    // The slice of grpc.ServerUnaryCall that run() and the handlers use.
    const call = {
      request,
      metadata,
      getDeadline: () => deadline,
      getPeer: () => ctx.remote,
      getAuthContext: () => ({ sslPeerCertificate: ctx.certificate }),
      sendMetadata: () => {},
      on: (event: string, fn: (reason: unknown) => void) => {
        if (event === 'cancelled') ctx.signal.addEventListener('abort', () => fn(ctx.signal.reason), { once: true });
      },
    };
    messageCalls.add(call);
    return new Promise((resolve) => {
      handler(call, (err, value) => {
        // The leader hint a unary call gets as response metadata, on a successful answer only.
        if (err) resolve({ code: err.code ?? grpc.status.UNKNOWN, details: err.details ?? err.message, response: null, leader: '' });
        else resolve({ code: grpc.status.OK, details: '', response: value, leader: this.leaderAddress() ?? '' });
      });
    });
  }

  private lockHandlers(): LockHandlers {
    return {
      Acquire: (call, cb) => {
        const r = call.request;
        const v = validateAcquire(
          {
            key: r.key,
            owner: r.owner,
            ttlMs: r.ttl_ms,
            waitMs: r.wait_ms,
            requestId: r.request_id,
            lockDelayMs: r.lock_delay_ms,
            value: r.value,
            sessionId: r.session_id,
            limit: r.limit,
            shared: r.shared,
          },
          this.opts.limits,
        );
        this.run(call, cb as Reply<AcquireResponse>, v, 'Acquire', async (req, timeoutMs, signal) =>
          acquireToWire(await this.opts.service.acquire(req, timeoutMs, signal)),
        );
      },
      Renew: (call, cb) => {
        const v = validateRenew(
          {
            key: call.request.key,
            owner: call.request.owner,
            token: call.request.token,
            ttlMs: call.request.ttl_ms,
            requestId: call.request.request_id,
          },
          this.opts.limits,
        );
        this.run(call, cb as Reply<RenewResponse>, v, 'Renew', async (req, timeoutMs) =>
          renewToWire(await this.opts.service.renew(req, timeoutMs)),
        );
      },
      Release: (call, cb) => {
        const v = validateRelease(
          { key: call.request.key, owner: call.request.owner, token: call.request.token, requestId: call.request.request_id },
          this.opts.limits,
        );
        this.run(call, cb as Reply<ReleaseResponse>, v, 'Release', async (req, timeoutMs) =>
          releaseToWire(await this.opts.service.release(req, timeoutMs)),
        );
      },
      Get: (call, cb) => {
        const v = validateGet({ key: call.request.key }, this.opts.limits);
        this.run(call, cb as Reply<GetResponse>, v, 'Get', async (req, timeoutMs) =>
          viewToWire(await this.opts.service.get(req.key, timeoutMs)),
        );
      },
      OpenSession: (call, cb) => {
        const r = call.request;
        const v = validateOpenSession(
          { owner: r.owner, ttlMs: r.ttl_ms, requestId: r.request_id, lockDelayMs: r.lock_delay_ms },
          this.opts.limits,
        );
        this.run(call, cb as Reply<OpenSessionResponse>, v, 'OpenSession', async (req, timeoutMs) =>
          openSessionToWire(await this.opts.service.openSession(req, timeoutMs)),
        );
      },
      RenewSession: (call, cb) => {
        const v = validateSessionCall(this.sessionCallInput(call), this.opts.limits);
        this.run(call, cb as Reply<RenewSessionResponse>, v, 'RenewSession', async (req, timeoutMs) =>
          renewSessionToWire(await this.opts.service.renewSession(req, timeoutMs)),
        );
      },
      CloseSession: (call, cb) => {
        const v = validateSessionCall(this.sessionCallInput(call), this.opts.limits);
        this.run(call, cb as Reply<CloseSessionResponse>, v, 'CloseSession', async (req, timeoutMs) =>
          closeSessionToWire(await this.opts.service.closeSession(req, timeoutMs)),
        );
      },
      Stream: (call) => this.serveStream(call),
      Watch: (call) => serveWatch(call, this.opts.watch, () => this.opts.countRefused?.('watch', 'invalid')),
      List: (call, cb) => serveList(call, cb, this.opts.list, () => this.opts.countRefused?.('list', 'invalid')),
      Revoke: (call, cb) => {
        const r = call.request;
        // Under owner binding the revoker is the caller's certificate CN: the namespace of its request ids,
        // written into the request so a follower forwards it (ownerDenied refuses another one).
        if (this.opts.ownerBinding && (r.owner ?? '') === '' && call.metadata.get(FORWARDED_METADATA).length === 0) {
          const cn = certificateCommonName(call.getAuthContext()?.sslPeerCertificate);
          if (cn !== undefined) r.owner = cn;
        }
        const v = validateRevoke(
          { key: r.key, token: r.token, reason: r.reason, requestId: r.request_id, owner: r.owner },
          this.opts.limits,
        );
        const denied = v.ok ? this.adminDenied(call) : null;
        if (denied !== null) {
          this.opts.countRefused?.('revoke', 'denied');
          return cb(statusError(grpc.status.PERMISSION_DENIED, denied));
        }
        // The audit trail names the caller where it entered (a forwarded call reaches the leader as the
        // follower's); the leader logs what it ended.
        if (v.ok && call.metadata.get(FORWARDED_METADATA).length === 0) {
          this.opts.logger.info(
            {
              key: v.value.key,
              token: v.value.token.toString(),
              reason: v.value.reason,
              by: certificateCommonName(call.getAuthContext().sslPeerCertificate) ?? call.getPeer(),
            },
            'revoke requested',
          );
        }
        this.run(call, cb as Reply<RevokeResponse>, v, 'Revoke', async (req, timeoutMs) => {
          const result = await this.opts.service.revoke(req, timeoutMs);
          if (result.revoked.length > 0)
            this.opts.logger.warn({ key: req.key, revoked: result.revoked.map(String), reason: req.reason }, 'hold revoked');
          return { revoked: result.revoked.map(String) };
        });
      },
    };
  }

  /**
   * A RenewSession / CloseSession names no owner unless the caller sets one. Under auth.ownerBinding the
   * caller's certificate CN becomes the owner (written into the request, so a follower forwards it and the
   * state machine refuses another owner's session: WRONG_OWNER).
   */
  private sessionCallInput(call: grpc.ServerUnaryCall<SessionCallRequest, unknown>): {
    sessionId: unknown;
    requestId: unknown;
    owner: unknown;
  } {
    const r = call.request;
    if (this.opts.ownerBinding && (r.owner ?? '') === '') {
      const cn = certificateCommonName(call.getAuthContext()?.sslPeerCertificate);
      if (cn !== undefined) r.owner = cn;
    }
    return { sessionId: r.session_id, requestId: r.request_id, owner: r.owner };
  }

  /** Validate, then serve here if leader, else forward to the leader once; map errors to gRPC codes. */
  private run<V, Res>(
    call: grpc.ServerUnaryCall<
      AcquireRequest | RenewRequest | ReleaseRequest | GetRequest | SessionCallRequest | OpenSessionRequest | RevokeRequest,
      unknown
    >,
    cb: Reply<Res>,
    validated: Validated<V>,
    method: LockMethod | 'Revoke',
    serve: (req: V, timeoutMs: number, signal: AbortSignal) => Promise<WireInput<Res>>,
  ): void {
    mark('call.recv');
    const decodeError = invalidReason(call.request);
    if (decodeError !== undefined) {
      this.opts.countRefused?.(opName(method), 'invalid');
      cb(statusError(grpc.status.INVALID_ARGUMENT, decodeError));
      return;
    }
    if (!validated.ok) {
      this.opts.countRefused?.(opName(method), 'invalid');
      cb(statusError(grpc.status.INVALID_ARGUMENT, `${validated.error.field}: ${validated.error.message}`));
      return;
    }
    const denied = this.ownerDenied(call, validated.value);
    if (denied !== null) {
      this.opts.countRefused?.(opName(method), 'denied');
      cb(statusError(grpc.status.PERMISSION_DENIED, denied));
      return;
    }
    const deadline = call.getDeadline();
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : Number.isFinite(deadline) ? Number(deadline) : Infinity;
    const timeoutMs = Math.max(1, Math.min(this.opts.defaultTimeoutMs + waitOf(validated.value), deadlineMs - Date.now()));
    const abort = new AbortController();
    // grpc-js reports 'cancelled' also after a unary call has been answered; aborting then only costs a
    // DOMException with a stack (seen in the profile on every call).
    let settled = false;
    call.on('cancelled', (reason: unknown) => {
      if (!settled) abort.abort(endReason(reason));
    });
    serve(validated.value, timeoutMs, abort.signal).then(
      (res) => {
        settled = true;
        this.sendLeaderHint(call);
        mark('call.answer');
        cb(null, res);
      },
      (err: unknown) => {
        settled = true;
        const route =
          err instanceof LeaderUnavailableError
            ? routeNotLeader(this.opts.service.node.id, err.leaderId, call.metadata.get(FORWARDED_METADATA).length > 0)
            : null;
        if (route?.action === 'forward') {
          this.forward(call, method, call.request, route.to, deadlineMs, cb);
          return;
        }
        cb(this.toStatus(err));
      },
    );
  }

  /** auth.ownerBinding: why this caller may not act as the request's owner, or null. */
  /** Revoke under owner binding: only the CNs in auth.admins (a member forwarding one checked it). */
  private adminDenied(call: grpc.ServerUnaryCall<unknown, unknown>): string | null {
    if (!this.opts.ownerBinding) return null;
    const cn = certificateCommonName(call.getAuthContext().sslPeerCertificate);
    if (cn !== undefined && call.metadata.get(FORWARDED_METADATA).length > 0 && this.opts.isMember?.(cn) === true) return null;
    if (cn === undefined)
      return 'Revoke under auth.ownerBinding needs a client certificate whose CN is in auth.admins, and this call has none';
    if (!(this.opts.admins ?? []).includes(cn))
      return `Revoke is for auth.admins; the client certificate CN ${JSON.stringify(cn)} is not one`;
    return null;
  }

  private ownerDenied(call: grpc.ServerUnaryCall<unknown, unknown>, request: unknown): string | null {
    if (!this.opts.ownerBinding) return null;
    const owner = (request as { owner?: unknown }).owner;
    if (typeof owner !== 'string') return null; // Get names no owner
    const cn = certificateCommonName(call.getAuthContext().sslPeerCertificate);
    // A follower forwarding a client's call presents its own (member) certificate; it checked the
    // client's CN before forwarding, so the leader trusts a forwarded call only from a member node.
    if (cn !== undefined && call.metadata.get(FORWARDED_METADATA).length > 0 && this.opts.isMember?.(cn) === true) return null;
    if (cn === undefined) return `owner ${JSON.stringify(owner)}: auth.ownerBinding needs a client certificate, and this call has none`;
    if (cn !== owner)
      return `owner ${JSON.stringify(owner)} does not match the client certificate CN ${JSON.stringify(cn)} (auth.ownerBinding)`;
    return null;
  }

  /** Tell the client where the leader is, so it can skip the forwarding hop next time. */
  private sendLeaderHint(call: grpc.ServerUnaryCall<unknown, unknown>): void {
    if (messageCalls.has(call)) return; // a message call's answer carries the address itself (serveMessage)
    const address = this.leaderAddress();
    if (!address) return;
    const md = new grpc.Metadata();
    md.set(LEADER_METADATA, address);
    call.sendMetadata(md);
  }

  /** The leader's client address as this node knows it, or undefined. */
  private leaderAddress(): string | undefined {
    const leaderId = this.opts.service.node.leaderId;
    return leaderId ? this.opts.members.get(leaderId) : undefined;
  }

  /** How long a forwarded call without a client deadline may take: the longest wait a call may ask for
   *  (lock.maxWaitMs) plus the default for the commit after it — the leader bounds the call the same way. */
  private noDeadlineForwardMs(): number {
    return this.opts.defaultTimeoutMs + this.opts.limits.maxWaitMs;
  }

  private forward<Res>(
    call: grpc.ServerUnaryCall<unknown, unknown>,
    method: LockMethod | 'Revoke',
    request: unknown,
    leaderId: string,
    deadlineMs: number,
    cb: Reply<Res>,
  ): void {
    // The peer link carries the lock calls of Lock/Stream; Revoke (rare, an operator's) goes unary.
    const session = method === 'Revoke' ? null : (this.opts.forwardVia?.(leaderId) ?? null);
    if (session !== null) {
      const abort = new AbortController();
      call.on('cancelled', (reason: unknown) => this.forwardedCallEnded(endReason(reason), method, request, abort));
      const timeoutMs = Number.isFinite(deadlineMs) ? deadlineMs - Date.now() : this.noDeadlineForwardMs();
      session.call(FORWARDED_METHOD[method as LockMethod], request, timeoutMs, abort.signal).then((reply) => {
        if (reply.code !== grpc.status.OK) {
          cb(statusError(reply.code, `${reply.details} (forwarded to leader ${leaderId})`));
          return;
        }
        this.sendLeaderHint(call);
        mark('call.answer');
        cb(null, reply.response as WireInput<Res>);
      });
      return;
    }
    const address = this.opts.dialOverrides?.get(leaderId) ?? this.opts.members.get(leaderId);
    if (!address) {
      cb(statusError(grpc.status.UNAVAILABLE, `the leader ${leaderId} has no known client address; retry`));
      return;
    }
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
    const deadline = Number.isFinite(deadlineMs) ? new Date(deadlineMs) : new Date(Date.now() + this.noDeadlineForwardMs());
    const fn = client[method] as unknown as (
      req: unknown,
      md: grpc.Metadata,
      opts: Partial<grpc.CallOptions>,
      cb: (e: grpc.ServiceError | null, v?: unknown) => void,
    ) => void;
    fn.call(client, request, md, { deadline }, (err, value) => {
      if (err) {
        // Keep the leader's code and message; say it came through us.
        cb(statusError(err.code, `${err.details} (forwarded to leader ${leaderId})`));
      } else {
        this.sendLeaderHint(call);
        cb(null, value as WireInput<Res>);
      }
    });
  }

  /**
   * The caller of a call forwarded on the Forward stream went away. A cancel is sent to the leader at once.
   * A broken connection is not a cancel (SPEC "A waiter's place outlives its connection"): a blocking acquire
   * under a session stays at the leader (its answer, if any, is dropped here; the client's retry re-attaches
   * to the same place); one without a session is cancelled after the grace, so a retry within it finds its
   * place. The forward stream carries only `cancel`, so the rule is applied here, where the break is seen.
   */
  private forwardedCallEnded(
    reason: typeof CANCELLED | typeof DETACHED,
    method: LockMethod | 'Revoke',
    request: unknown,
    abort: AbortController,
  ): void {
    const r = request as { wait_ms?: unknown; session_id?: unknown };
    const waits = method === 'Acquire' && Number(r.wait_ms ?? 0) > 0;
    if (reason === CANCELLED || !waits) return abort.abort(CANCELLED);
    if (Number(r.session_id ?? 0) > 0) return;
    setTimeout(() => abort.abort(CANCELLED), this.detachedWaiterGraceMs()).unref();
  }

  private detachedWaiterGraceMs(): number {
    return this.opts.detachedWaiterGraceMs ?? DEFAULT_LOCK_LEADER_CONFIG.detachedWaiterGraceMs;
  }

  private toStatus(err: unknown): grpc.ServiceError {
    if (err instanceof LeaderUnavailableError) return statusError(grpc.status.UNAVAILABLE, err.message);
    if (err instanceof RequestRejectedError) return statusError(grpc.status.FAILED_PRECONDITION, err.message);
    if (err instanceof AdmissionLimitError) return statusError(grpc.status.RESOURCE_EXHAUSTED, err.message);
    if (err instanceof ConflictingRequestError) return statusError(grpc.status.INVALID_ARGUMENT, err.message);
    this.opts.logger.error({ err: String(err) }, 'unexpected error serving a lock call');
    return statusError(grpc.status.INTERNAL, `internal error: ${(err as Error)?.message ?? String(err)}`);
  }
}

/** The op label of a method in leasehold_lock_operations_total (Acquire -> acquire, OpenSession -> open_session). */
function opName(method: LockMethod | 'Revoke'): string {
  return method === 'Revoke' ? 'revoke' : LOCK_CALL_NAME[method];
}

function waitOf(v: unknown): number {
  const w = (v as { waitMs?: number }).waitMs;
  return typeof w === 'number' ? w : 0;
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
