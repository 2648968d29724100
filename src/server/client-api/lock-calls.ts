// The server's handling of one lock call, with no transport in it: validate, check owner binding
// (call-auth.ts), serve it here if this node leads, else forward it to the leader once (forward-once.ts)
// with what is left of the caller's deadline, and map the outcome to a gRPC status code (call-errors.ts).
// grpc-server.ts, lock-stream.ts and forwarded-call.ts turn unary calls, Lock/Stream messages
// (transport/call-mux.ts) and a follower's forwarded calls into `handle` and its reply back into gRPC;
// the simulator (test/sim/call-paths.ts) runs this same code over simulated connections. Time comes from
// `nowMs` and `after` (the node's clock and scheduler), so the simulator runs it on virtual time.
import { status } from '@grpc/grpc-js';
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
} from '../../lock/validate.js';
import type {
  AcquireResult,
  LockView,
  OpenSessionResult,
  ReleaseResult,
  RenewResult,
  RenewSessionResult,
  RevokeResult,
  SessionEndResult,
} from '../../lock/types.js';
import type { NodeLogger } from '../../raft/logger.js';
import { CANCELLED, DETACHED, endReason } from '../../transport/call-end.js';
import { expiredBeforeForwardingDetails, pastDeadline, type ForwardedReply } from '../../transport/forward-calls.js';
import { LOCK_CALL_NAME, type LockCallName, type LockMethod } from '../../wire/lock.js';
import { CallAbort, type CallSignal } from '../../wire/call-signal.js';
import { mark } from '../../trace/stages.js';
import { routeNotLeader } from './forward-once.js';
import { LeaderUnavailableError, type LockService } from '../../lock-on-raft/lock-service.js';
import { CallAuth, type CallAuthOptions } from './call-auth.js';
import { callFailure } from './call-errors.js';
import { invalidReason } from './strict-decode.js';

/** Every lock call this module handles: the Lock service's unary methods (Stream, Watch and List aside). */
export type LockCallMethod = LockMethod | 'Revoke';

/** A call's name in a Lock/Stream or Forward message (acquire, open_session) -> its method (Acquire, OpenSession). */
export const LOCK_METHOD = Object.fromEntries(Object.entries(LOCK_CALL_NAME).map(([method, name]) => [name, method])) as Record<
  LockCallName,
  LockMethod
>;

/** The detail of the DEADLINE_EXCEEDED a call past its caller's deadline is answered when it reaches the
 *  leader: nothing was proposed for it. */
export const EXPIRED_BEFORE_SERVED = 'deadline expired before the call could be served; nothing was done';

/** What a call ended with: a gRPC status code, and the response on OK. */
export interface CallReply<P> {
  code: number;
  details: string;
  response: P | null;
  /** On OK: the leader's client address as this node knows it ('' unknown): the client's next hop. */
  leader: string;
  /** On OK of a call forwarded on the Forward stream: the leader's response as its bytes (`response` is
   *  null then), passed on to a Lock/Stream client as they came (responseBody). */
  responseBytes?: Uint8Array;
}

/** Where a call came from, as the transport saw it. */
export interface CallContext {
  /** Forwarded by another node (a Forward stream message, or the forwarded-call metadata). */
  forwarded: boolean;
  /** The caller's deadline on this node's clock (`nowMs`); Infinity: none given. */
  deadlineMs: number;
  /** The CN of the caller's client certificate, if it presented one. */
  certificateCn: string | undefined;
  /** For the audit trail: who called, when there is no CN. */
  remote: string;
  /** Aborted when the caller goes away, with CANCELLED or DETACHED as its reason (transport/call-end.ts;
   *  every transport maps its own event with endReason): the service reads it as given. */
  signal: CallSignal;
  /** The request's bytes as the caller sent them (a Lock/Stream call): forwarded to the leader as they
   *  are, never re-encoded. */
  requestBytes?: Uint8Array;
}

/** What serving needs of the follower's Forward stream to one leader: its call() (transport/forward.ts
 *  ForwardStream, or forward-calls.ts ForwardCalls in the simulator). */
export interface ForwardCaller {
  /** `body`: the request's bytes; the reply's response is the leader's response bytes. */
  call(name: LockCallName, body: Uint8Array, timeoutMs: number, signal: CallSignal): Promise<ForwardedReply<Uint8Array>>;
}

/** A call's request and response as the bytes inside a Lock/Stream or Forward envelope
 *  (call-bodies.ts; the simulator's own). */
export interface CallBodies<P> {
  /** A request object as its bytes: a unary call forwarded on the Forward stream. */
  request(name: LockCallName, request: unknown): Uint8Array;
  /** A response (the encoder's payload) as its bytes. */
  response(name: LockCallName, response: P): Uint8Array;
}

/** Domain results of each method, as the payload the transport sends (grpc-server.ts: the wire message). */
export interface AnswerEncoder<P> {
  Acquire(r: AcquireResult): P;
  Renew(r: RenewResult): P;
  Release(r: ReleaseResult): P;
  Get(r: LockView): P;
  OpenSession(r: OpenSessionResult): P;
  RenewSession(r: RenewSessionResult): P;
  CloseSession(r: SessionEndResult): P;
  Revoke(r: RevokeResult): P;
}

/** With the owner-binding settings (call-auth.ts). */
export interface LockCallHandlingOptions<P> extends CallAuthOptions {
  service: LockService;
  limits: LockLimits;
  defaultTimeoutMs: number;
  encode: AnswerEncoder<P>;
  bodies: CallBodies<P>;
  logger: NodeLogger;
  /** This node's clock (ms) and a timer on it. */
  nowMs: () => number;
  after: (ms: number, fn: () => void) => void;
  /** The leader's client address as this node knows it. */
  leaderAddress: () => string | undefined;
  /** The Forward stream to `leaderId`, or null (no link: then `forwardUnary`). Revoke never uses it. */
  forwardVia?: (leaderId: string) => ForwardCaller | null;
  /** Forwarding without a Forward stream (a unary call to the leader's client port). */
  forwardUnary?: (method: LockCallMethod, request: unknown, leaderId: string, deadlineMs: number) => Promise<CallReply<P>>;
  /** How long a waiter without a session keeps its place after its connection broke (lock leader's
   *  detachedWaiterGraceMs), for the calls this node forwards. */
  detachedWaiterGraceMs: number;
  countRefused?: (op: string, outcome: 'invalid' | 'denied') => void;
  /** A call decided at the boundary because this node does not lead — forwarded at once, or answered the
   *  lock leader's refusal without entering it — once its reply is in, with the outcome the lock service
   *  counts such a refusal by (not_leader when a leader is named, else unavailable) and the seconds it
   *  took (the forwarded round trip's): lock ops and their latency, which such a call no longer enters. */
  countNotLeading?: (op: string, outcome: 'not_leader' | 'unavailable', seconds: number) => void;
}

type Serve<V> = (req: V, timeoutMs: number, signal: CallSignal) => Promise<unknown>;

interface Prepared<V> {
  validated: Validated<V>;
  serve: Serve<V>;
  /** Revoke: its own permission rule (admins) instead of the owner's. */
  denied?: (v: V) => string | null;
  /** The owner was bound here (call-auth.ts bindOwner): the caller's bytes are not what is forwarded. */
  rewritten?: boolean;
}

export class LockCallHandling<P> {
  private readonly auth: CallAuth;

  constructor(private readonly opts: LockCallHandlingOptions<P>) {
    this.auth = new CallAuth(opts);
  }

  /** Serves one call; resolves with what the caller is answered (never rejects). */
  handle(method: LockCallMethod, request: unknown, ctx: CallContext): Promise<CallReply<P>> {
    mark('call.recv');
    const decodeError = invalidReason(request);
    if (decodeError !== undefined) return Promise.resolve(this.refused(method, 'invalid', status.INVALID_ARGUMENT, decodeError));
    const prepared = this.prepare(method, request as Record<string, unknown>, ctx);
    const v = prepared.validated;
    if (!v.ok) return Promise.resolve(this.refused(method, 'invalid', status.INVALID_ARGUMENT, `${v.error.field}: ${v.error.message}`));
    const denied = prepared.denied ? prepared.denied(v.value) : this.auth.ownerDenied(ctx, v.value);
    if (denied !== null) return Promise.resolve(this.refused(method, 'denied', status.PERMISSION_DENIED, denied));
    if (method === 'Revoke' && !ctx.forwarded) {
      // The audit trail names the caller where it entered (a forwarded call reaches the leader as the
      // follower's); the leader logs what it ended.
      const r = v.value as unknown as { key: string; token: bigint; reason: string };
      this.opts.logger.info(
        { key: r.key, token: r.token.toString(), reason: r.reason, by: ctx.certificateCn ?? ctx.remote },
        'revoke requested',
      );
    }
    // Decided here, at the boundary, before the call enters the lock leader: a node that does not lead
    // forwards the call at once, or, when it may not (forward-once.ts: it arrived forwarded, no leader is
    // known, the leader named is this node), answers the lock leader's refusal in its words. Serving it would
    // only end in that refusal. A leader that loses its office while serving a call refuses it, and the route
    // is taken from the error below.
    const away = this.opts.service.notLeading;
    if (away !== undefined) {
      const route = routeNotLeader(this.opts.service.node.id, away, ctx.forwarded);
      let reply: Promise<CallReply<P>>;
      let outcome: 'not_leader' | 'unavailable' = 'not_leader';
      if (route.action === 'forward') reply = this.forward(method, request, route.to, ctx, prepared.rewritten === true);
      else {
        const refusal = this.opts.service.notLeadingError();
        if (!refusal.leaderId) outcome = 'unavailable';
        reply = Promise.resolve(this.failure(refusal));
      }
      const count = this.opts.countNotLeading;
      if (count === undefined) return reply;
      const startedMs = this.opts.nowMs();
      return reply.then((r) => {
        count(opName(method), outcome, (this.opts.nowMs() - startedMs) / 1000);
        return r;
      });
    }
    // A caller whose deadline is now or past is answered DEADLINE_EXCEEDED and nothing is proposed: served
    // with the 1 ms the clamp below would give it, an acquire would still be granted (a release committed)
    // behind the back of a caller that can no longer learn of it — a hold nobody knows it has, until its
    // lease runs out. The rule of a forwarded call's (forward-calls.ts pastDeadline).
    const timeLeftMs = ctx.deadlineMs - this.opts.nowMs();
    if (pastDeadline(timeLeftMs))
      return Promise.resolve({ code: status.DEADLINE_EXCEEDED, details: EXPIRED_BEFORE_SERVED, response: null, leader: '' });
    const timeoutMs = Math.max(1, Math.min(this.opts.defaultTimeoutMs + waitOf(v.value), timeLeftMs));
    // The caller's own signal goes to the service: its reason says how the call ended (call-end.ts), and the
    // service stops listening once the call is answered — no controller of our own per call.
    return prepared.serve(v.value, timeoutMs, ctx.signal).then(
      (result) => {
        mark('call.answer');
        return { code: status.OK, details: '', response: this.encode(method, result), leader: this.opts.leaderAddress() ?? '' };
      },
      (err: unknown) => {
        const route = err instanceof LeaderUnavailableError ? routeNotLeader(this.opts.service.node.id, err.leaderId, ctx.forwarded) : null;
        if (route?.action === 'forward') return this.forward(method, request, route.to, ctx, prepared.rewritten === true);
        return this.failure(err);
      },
    );
  }

  /** An OK reply's response as the bytes a Lock/Stream or Forward answer carries: the leader's bytes as
   *  they came when it was forwarded, else this node's result encoded. */
  responseBody(name: LockCallName, reply: CallReply<P>): Uint8Array {
    return reply.responseBytes ?? this.opts.bodies.response(name, reply.response as P);
  }

  private failure(err: unknown): CallReply<P> {
    return { ...callFailure(err, this.opts.logger), response: null, leader: '' };
  }

  private encode(method: LockCallMethod, result: unknown): P {
    return (this.opts.encode[method] as (r: unknown) => P)(result);
  }

  private refused(method: LockCallMethod, outcome: 'invalid' | 'denied', code: number, details: string): CallReply<P> {
    this.opts.countRefused?.(opName(method), outcome);
    return { code, details, response: null, leader: '' };
  }

  /** The validated request and how to serve it here, per method. */
  private prepare(method: LockCallMethod, r: Record<string, unknown>, ctx: CallContext): Prepared<unknown> {
    const s = this.opts.service;
    const limits = this.opts.limits;
    switch (method) {
      case 'Acquire':
        return {
          validated: validateAcquire(
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
            limits,
          ),
          serve: (req, timeoutMs, signal) => s.acquire(req as never, timeoutMs, signal),
        };
      case 'Renew':
        return {
          validated: validateRenew({ key: r.key, owner: r.owner, token: r.token, ttlMs: r.ttl_ms, requestId: r.request_id }, limits),
          serve: (req, timeoutMs) => s.renew(req as never, timeoutMs),
        };
      case 'Release':
        return {
          validated: validateRelease({ key: r.key, owner: r.owner, token: r.token, requestId: r.request_id }, limits),
          serve: (req, timeoutMs) => s.release(req as never, timeoutMs),
        };
      case 'Get':
        return {
          validated: validateGet({ key: r.key }, limits),
          serve: (req, timeoutMs) => s.get((req as { key: string }).key, timeoutMs),
        };
      case 'OpenSession':
        return {
          validated: validateOpenSession(
            { owner: r.owner, ttlMs: r.ttl_ms, requestId: r.request_id, lockDelayMs: r.lock_delay_ms },
            limits,
          ),
          serve: (req, timeoutMs) => s.openSession(req as never, timeoutMs),
        };
      case 'RenewSession':
      case 'CloseSession': {
        const rewritten = this.auth.bindOwner(r, ctx);
        const validated = validateSessionCall({ sessionId: r.session_id, requestId: r.request_id, owner: r.owner }, limits);
        return {
          validated,
          rewritten,
          serve: (req, timeoutMs) =>
            method === 'RenewSession' ? s.renewSession(req as never, timeoutMs) : s.closeSession(req as never, timeoutMs),
        };
      }
      case 'Revoke': {
        // Under owner binding the revoker is the caller's certificate CN: the namespace of its request ids,
        // written into the request so a follower forwards it (ownerDenied refuses another one).
        if (!ctx.forwarded) this.auth.bindOwner(r, ctx);
        return {
          validated: validateRevoke({ key: r.key, token: r.token, reason: r.reason, requestId: r.request_id, owner: r.owner }, limits),
          serve: async (req, timeoutMs) => {
            const result = await s.revoke(req as never, timeoutMs);
            const v = req as { key: string; reason: string };
            if (result.revoked.length > 0)
              this.opts.logger.warn({ key: v.key, revoked: result.revoked.map(String), reason: v.reason }, 'hold revoked');
            return result;
          },
          denied: (v) => this.auth.adminDenied(ctx) ?? this.auth.ownerDenied(ctx, v),
        };
      }
    }
  }

  /** How long a forwarded call without a client deadline may take: the longest wait a call may ask for
   *  (lock.maxWaitMs) plus the default for the commit after it — the leader bounds the call the same way. */
  private noDeadlineForwardMs(): number {
    return this.opts.defaultTimeoutMs + this.opts.limits.maxWaitMs;
  }

  /** Once to the leader, on the Forward stream (Revoke, rare and an operator's, goes unary), with what is
   *  left of the caller's deadline. */
  private async forward(
    method: LockCallMethod,
    request: unknown,
    leaderId: string,
    ctx: CallContext,
    rewritten: boolean,
  ): Promise<CallReply<P>> {
    const timeoutMs = Number.isFinite(ctx.deadlineMs) ? ctx.deadlineMs - this.opts.nowMs() : this.noDeadlineForwardMs();
    // The caller's deadline can be past by now (grpc-js's own deadline timer has not run yet, or the call
    // spent its time before it got here: in this node's service until its refusal, say): such a call is
    // answered here and nothing goes to the leader, on either way (forward-calls.ts pastDeadline: why 0 ms).
    if (pastDeadline(timeoutMs))
      return { code: status.DEADLINE_EXCEEDED, details: expiredBeforeForwardingDetails(leaderId), response: null, leader: '' };
    const stream = method === 'Revoke' ? null : (this.opts.forwardVia?.(leaderId) ?? null);
    if (stream === null) {
      if (this.opts.forwardUnary === undefined)
        return { code: status.UNAVAILABLE, details: `no link to the leader ${leaderId}; retry`, response: null, leader: '' };
      const deadlineMs = Number.isFinite(ctx.deadlineMs) ? ctx.deadlineMs : this.opts.nowMs() + this.noDeadlineForwardMs();
      return this.opts.forwardUnary(method, request, leaderId, deadlineMs);
    }
    const abort = new CallAbort();
    const onEnd = () => this.forwardedCallEnded(endReason(ctx.signal.reason), method, request, abort);
    if (ctx.signal.aborted) onEnd();
    else ctx.signal.addEventListener('abort', onEnd, { once: true });
    const name = LOCK_CALL_NAME[method as LockMethod];
    // The caller's bytes go on as they came (validated and checked above from their decoding); a unary
    // call has none, and one whose owner was bound here says something else now: encoded from the object.
    const body = (rewritten ? undefined : ctx.requestBytes) ?? this.opts.bodies.request(name, request);
    const reply = await stream.call(name, body, timeoutMs, abort);
    ctx.signal.removeEventListener('abort', onEnd);
    if (reply.code !== status.OK)
      return { code: reply.code, details: `${reply.details} (forwarded to leader ${leaderId})`, response: null, leader: '' };
    mark('call.answer');
    return {
      code: status.OK,
      details: '',
      response: null,
      responseBytes: reply.response ?? EMPTY,
      leader: this.opts.leaderAddress() ?? '',
    };
  }

  /**
   * The caller of a call forwarded on the Forward stream went away. A cancel is sent to the leader at once.
   * A broken connection is not a cancel (SPEC "A waiter's place outlives its connection"): a blocking acquire
   * under a session stays at the leader (its answer, if any, is dropped here; the client's retry re-attaches
   * to the same place); one without a session is cancelled after the grace, so a retry within it finds its
   * place. The forward stream carries only `cancel`, so the rule is applied here, where the break is seen.
   */
  private forwardedCallEnded(reason: typeof CANCELLED | typeof DETACHED, method: LockCallMethod, request: unknown, abort: CallAbort): void {
    const r = request as { wait_ms?: unknown; session_id?: unknown };
    const waits = method === 'Acquire' && Number(r.wait_ms ?? 0) > 0;
    if (reason === CANCELLED || !waits) return abort.abort(CANCELLED);
    if (Number(r.session_id ?? 0) > 0) return;
    this.opts.after(this.opts.detachedWaiterGraceMs, () => abort.abort(CANCELLED));
  }
}

const EMPTY = new Uint8Array(0);

/** The op label of a method in leasehold_lock_operations_total (Acquire -> acquire, OpenSession -> open_session). */
function opName(method: LockCallMethod): string {
  return method === 'Revoke' ? 'revoke' : LOCK_CALL_NAME[method];
}

function waitOf(v: unknown): number {
  const w = (v as { waitMs?: number }).waitMs;
  return typeof w === 'number' ? w : 0;
}
