// The client's side of Lock/Stream: every lock call to one endpoint as a message on one long-lived bidi
// stream, matched to its answer by call_id. A unary call costs an HTTP/2 stream, request headers, a
// deadline timer inside grpc-js, response headers and trailers on both sides, every time; on a stream a
// call is one DATA frame each way (the bench's waterfall: the client's hops took 2.5 ms of a 5.3 ms acquire
// where a bare unary round trip takes 0.95 ms). The multiplexing is wire/caller-mux.ts's, the same as the
// followers' Forward stream (transport/forward-calls.ts); this file is the gRPC glue.
import * as grpc from '@grpc/grpc-js';
import { CallerMux, type MuxStream, type MuxTimers } from '../wire/caller-mux.js';
import type { WireInput } from '../wire/scalars.js';
import { LOCK_CALL_NAME, type LockAnswer, type LockCall, type LockCallName, type LockStub, type LockMethod } from '../wire/lock.js';
import { RpcError } from './rpc-error.js';

const CALL_NAME = LOCK_CALL_NAME;

/** Most milliseconds a LockCall's timeout_ms (uint32) can say. */
const MAX_TIMEOUT_MS = 0xffffffff;

export interface StreamAnswer<Res> {
  response: Res;
  /** The leader's client address as the answering node knows it ('' if unknown). */
  leader: string;
}

type LockStreamMessage = WireInput<LockCall>;

export class LockStream {
  private readonly mux: CallerMux<LockStreamMessage, LockAnswer, RpcError, RpcError | StreamAnswer<unknown>>;
  /** The server answered UNIMPLEMENTED: it predates Lock/Stream (the caller goes unary from now on). */
  unsupported = false;

  constructor(client: LockStub) {
    this.mux = new CallerMux(
      (onAnswer, onBreak) => openStream(client, onAnswer, onBreak),
      nodeTimers,
      (callId) => ({ call_id: callId, cancel: true }),
      (err) => err,
      (err) => {
        if (err.code === grpc.status.UNIMPLEMENTED) this.unsupported = true;
      },
    );
  }

  /** Calls waiting for their answer. */
  get inFlight(): number {
    return this.mux.inFlight;
  }

  /**
   * One call; resolves with the response, or rejects with an RpcError carrying the code the unary call
   * would have ended with. At `deadlineMs` (epoch ms) it rejects DEADLINE_EXCEEDED and tells the server to
   * drop it, as a unary call's deadline would; `signal` cancels it the same way (CANCELLED).
   */
  call<Res>(method: LockMethod, request: object, deadlineMs: number, signal?: AbortSignal): Promise<StreamAnswer<Res>> {
    if (signal?.aborted) return Promise.reject(new RpcError(grpc.status.CANCELLED, 'cancelled by the caller'));
    const name = CALL_NAME[method];
    const remainingMs = Math.max(1, Math.ceil(deadlineMs - Date.now()));
    return this.mux
      .call({
        message: (callId) => ({ call_id: callId, timeout_ms: Math.min(MAX_TIMEOUT_MS, remainingMs), [name]: request }) as LockStreamMessage,
        signal,
        limitMs: remainingMs,
        timedOut: () => new RpcError(grpc.status.DEADLINE_EXCEEDED, `no answer within ${remainingMs} ms`),
        cancelAtLimit: true,
        cancelled: () => new RpcError(grpc.status.CANCELLED, 'cancelled by the caller'),
        answered: (a) => answerOf(a, name),
      })
      .then((r) => {
        if (r instanceof RpcError) throw r;
        return r as StreamAnswer<Res>;
      });
  }

  /** Fail what is pending and close the stream. */
  close(): void {
    this.mux.reset(new RpcError(grpc.status.CANCELLED, 'the client was closed'));
  }
}

const nodeTimers: MuxTimers = {
  after: (ms, fn) => {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
};

function answerOf(a: LockAnswer, name: LockCallName): RpcError | StreamAnswer<unknown> {
  if (a.code !== grpc.status.OK) return new RpcError(a.code, a.details);
  const response = a.response === name ? a[name] : undefined;
  if (response === undefined) return new RpcError(grpc.status.INTERNAL, `the answer to call ${a.call_id} carries no ${name} response`);
  return { response, leader: a.leader };
}

function openStream(
  client: LockStub,
  onAnswer: (callId: string, answer: LockAnswer) => void,
  onBreak: (err: RpcError) => void,
): MuxStream<LockStreamMessage> {
  const stream: grpc.ClientDuplexStream<LockStreamMessage, LockAnswer> = client.Stream();
  stream.on('data', (answer: LockAnswer) => onAnswer(answer.call_id, answer));
  stream.on('error', (err: grpc.ServiceError) =>
    // The calls in flight may or may not have been applied: the same uncertainty as a unary call cut
    // off mid-way, and the same code (UNAVAILABLE unless the server said otherwise), so a caller
    // retries with the same request_id.
    onBreak(
      new RpcError(
        err.code === grpc.status.CANCELLED ? grpc.status.UNAVAILABLE : err.code,
        `the stream to the server broke: ${err.details || err.message}`,
      ),
    ),
  );
  stream.on('end', () => onBreak(new RpcError(grpc.status.UNAVAILABLE, 'the server ended the stream')));
  return {
    write: (m) => stream.write(m),
    abandon: () => {
      stream.removeAllListeners('data');
      stream.on('error', () => {}); // a late error of a stream we gave up on
      stream.cancel();
    },
  };
}
