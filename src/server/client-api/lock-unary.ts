// A unary lock call (Lock/Acquire, Lock/Release, ...: what grpcurl or a client in another language sends):
// its deadline, certificate and cancellation as a CallContext, handled like every lock call (lock-calls.ts),
// and its reply as gRPC — an error status, or the response with the leader hint as response metadata.
// A response the leader sent as bytes (a call this follower forwarded on its Forward stream) goes to the
// reply serializer as those bytes, which writes them as they are (lock-unary-codec.ts).
import * as grpc from '@grpc/grpc-js';
import { certificateCommonName } from '../../transport/peer-auth.js';
import { endReason } from '../../transport/call-end.js';
import { CallAbort, type CallSignal } from '../../wire/call-signal.js';
import { LEADER_METADATA } from '../../wire/lock.js';
import { FORWARDED_METADATA } from './forward-once.js';
import type { CallContext, CallReply, LockCallHandling, LockCallMethod } from './lock-calls.js';
import { statusError } from './status-error.js';

type Reply = (err: grpc.ServiceError | null, value?: unknown) => void;

/** The unary lock calls of one server, over `calls`. */
export class UnaryLockCalls<P> {
  // The leader hint of the last reply, as the metadata object sent with it: the same for nearly every
  // call, so made once per leader address, not per call. grpc-js only reads a Metadata it is given to send
  // (toHttp2Headers); this server has no interceptor that could change it.
  private leaderHint = '';
  private leaderHintMetadata: grpc.Metadata | null = null;

  constructor(private readonly calls: LockCallHandling<P>) {}

  serve(method: LockCallMethod, call: grpc.ServerUnaryCall<unknown, unknown>, cb: Reply): void {
    const ended = new CallAbort();
    // grpc-js reports 'cancelled' also after a unary call has been answered (harmless: nothing listens then).
    call.on('cancelled', (reason: unknown) => ended.abort(endReason(reason)));
    void this.calls.handle(method, call.request, new UnaryCallContext(call, ended)).then((reply) => this.answer(reply, call, cb));
  }

  private answer(reply: CallReply<P>, call: grpc.ServerUnaryCall<unknown, unknown>, cb: Reply): void {
    if (reply.code !== grpc.status.OK) return cb(statusError(reply.code, reply.details));
    if (reply.leader !== '') call.sendMetadata(this.leaderMetadata(reply.leader));
    // The leader's bytes when the call was forwarded on the Forward stream (never decoded here), else the
    // response object; the method's serializer writes either.
    cb(null, reply.responseBytes ?? reply.response);
  }

  private leaderMetadata(leader: string): grpc.Metadata {
    if (this.leaderHintMetadata === null || this.leaderHint !== leader) {
      const md = new grpc.Metadata();
      md.set(LEADER_METADATA, leader);
      this.leaderHint = leader;
      this.leaderHintMetadata = md;
    }
    return this.leaderHintMetadata;
  }
}

/**
 * A unary call as lock-calls.ts reads it. The caller's certificate CN and address are read from grpc-js
 * only when asked — owner binding, a session call's owner, the Revoke audit line — not on every call:
 * both go through the HTTP/2 session's socket proxy (and a TLS socket's certificate is parsed anew each
 * time), which a unary call's profile showed at about 2 % of the node's busy time with neither needed.
 * Everything that asks does so while the call is being handled, before it is answered.
 */
class UnaryCallContext implements CallContext {
  readonly forwarded: boolean;
  readonly deadlineMs: number;
  private cn: string | undefined | null = null;

  constructor(
    private readonly call: grpc.ServerUnaryCall<unknown, unknown>,
    readonly signal: CallSignal,
  ) {
    this.forwarded = call.metadata.get(FORWARDED_METADATA).length > 0;
    const deadline = call.getDeadline();
    this.deadlineMs = deadline instanceof Date ? deadline.getTime() : Number.isFinite(deadline) ? Number(deadline) : Infinity;
  }

  get certificateCn(): string | undefined {
    if (this.cn === null) this.cn = certificateCommonName(this.call.getAuthContext()?.sslPeerCertificate);
    return this.cn;
  }

  get remote(): string {
    return this.call.getPeer();
  }
}
