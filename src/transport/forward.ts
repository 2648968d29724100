// Forwarding a follower's client lock calls to the leader on the peer connection (raft.proto Forward):
// one long-lived bidi stream per leader, calls multiplexed by call_id, answers in any order. A unary
// call per forwarded request cost the follower a new HTTP/2 stream, headers, the client interceptor
// chain and a second TLS-checked call on the leader's client port, every time (issue 8); etcd
// forwards proposals the same way, as MsgProp on the peer connection it already has.
//
// Failure rules: the follower answers every call exactly once. A stream that breaks (leader killed,
// link cut) fails its calls with UNAVAILABLE at once, and the next call opens a new stream; the client
// retries with the same request_id, so an outcome lost with the stream is recovered through dedup. A
// call outlives neither its deadline (DEADLINE_EXCEEDED) nor its caller (a cancel goes to the leader).
import { mark } from '../trace/stages.js';
import * as grpc from '@grpc/grpc-js';
import type { WireInput } from '../wire/scalars.js';
import type { LockCallName } from '../wire/lock.js';
import type { ForwardedAnswer, ForwardedCall, RaftStub } from '../wire/raft.js';

/** The leader's answer to one forwarded call, as the follower hands it back to its client. */
export interface ForwardedReply {
  code: number;
  details: string;
  /** The response message when code is OK. */
  response: unknown;
}

interface PendingCall {
  settle(reply: ForwardedReply): void;
}

/** How long past the client's own deadline the follower waits for the leader's answer to arrive. */
const ANSWER_GRACE_MS = 200;

export class ForwardSession {
  private stream: grpc.ClientDuplexStream<WireInput<ForwardedCall>, ForwardedAnswer> | null = null;
  private nextCallId = 1;
  private readonly pending = new Map<string, PendingCall>();
  private closed = false;

  constructor(
    private readonly client: RaftStub,
    /** Our id and cluster id now (the cluster id is learnt while joining). */
    private readonly self: () => { from: string; clusterId: string },
    private readonly leaderId: string,
  ) {}

  /** Calls waiting for an answer (tests, metrics). */
  get inFlight(): number {
    return this.pending.size;
  }

  call(method: LockCallName, request: unknown, timeoutMs: number, signal?: AbortSignal): Promise<ForwardedReply> {
    if (this.closed) return Promise.resolve(unavailable(`the link to leader ${this.leaderId} is closed`));
    const stream = this.open();
    const callId = String(this.nextCallId++);
    return new Promise<ForwardedReply>((resolve) => {
      let done = false;
      const settle = (reply: ForwardedReply) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.pending.delete(callId);
        resolve(reply);
      };
      const timer = setTimeout(
        () =>
          settle({
            code: grpc.status.DEADLINE_EXCEEDED,
            details: `no answer from leader ${this.leaderId} within ${timeoutMs} ms`,
            response: null,
          }),
        timeoutMs + ANSWER_GRACE_MS,
      );
      const onAbort = () => {
        if (this.stream === stream) stream.write({ call_id: callId, ...this.header(), cancel: true });
        settle({ code: grpc.status.CANCELLED, details: 'cancelled by the caller', response: null });
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(callId, { settle });
      const timeout = Math.max(1, Math.min(0xffffffff, Math.floor(timeoutMs)));
      mark('call.forward');
      stream.write({ call_id: callId, ...this.header(), timeout_ms: timeout, [method]: request } as WireInput<ForwardedCall>);
    });
  }

  /** Fail what is pending and stop (the link closed or reconnects with new credentials). */
  close(): void {
    this.closed = true;
    this.reset(`the link to leader ${this.leaderId} closed`);
  }

  private header(): { from: string; cluster_id: string } {
    const s = this.self();
    return { from: s.from, cluster_id: s.clusterId };
  }

  private open(): grpc.ClientDuplexStream<WireInput<ForwardedCall>, ForwardedAnswer> {
    if (this.stream) return this.stream;
    const stream = this.client.Forward();
    this.stream = stream;
    stream.on('data', (answer: ForwardedAnswer) => {
      mark('fwd.reply');
      const p = this.pending.get(answer.call_id);
      if (!p) return; // timed out or cancelled here already
      const response = answer.code === grpc.status.OK && answer.response ? answer[answer.response] : null;
      p.settle({ code: answer.code, details: answer.details, response });
    });
    const broke = (why: string) => {
      if (this.stream !== stream) return;
      this.reset(why);
    };
    stream.on('error', (err: grpc.ServiceError) => broke(`the stream to leader ${this.leaderId} failed: ${err.details || err.message}`));
    stream.on('end', () => broke(`the stream to leader ${this.leaderId} ended`));
    return stream;
  }

  private reset(why: string): void {
    const stream = this.stream;
    this.stream = null;
    if (stream) {
      stream.removeAllListeners('data');
      stream.on('error', () => {}); // a late error of a stream we gave up on
      stream.cancel();
    }
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.settle(unavailable(`${why}; retry`));
  }
}

function unavailable(details: string): ForwardedReply {
  return { code: grpc.status.UNAVAILABLE, details, response: null };
}
