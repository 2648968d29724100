// Forwarding a follower's client lock calls to the leader on the peer connection (raft.proto Forward):
// one long-lived bidi stream per leader, calls multiplexed by call_id, answers in any order. A unary
// call per forwarded request cost the follower a new HTTP/2 stream, headers, the client interceptor
// chain and a second TLS-checked call on the leader's client port, every time; etcd
// forwards proposals the same way, as MsgProp on the peer connection it already has.
//
// This file is the gRPC glue; the multiplexing and its failure rules are forward-calls.ts's.
import * as grpc from '@grpc/grpc-js';
import type { CallSignal } from '../wire/call-signal.js';
import type { AnswerEnvelope } from '../wire/call-envelope.js';
import { encodeCallEnvelope } from '../wire/call-envelope-encode.js';
import type { LockCallName } from '../wire/lock.js';
import type { InvalidForwardedAnswer, RaftStub } from '../wire/raft.js';
import type { MuxStream } from '../wire/caller-mux.js';
import { ForwardCalls, type ForwardedReply, type ForwardMessage } from './forward-calls.js';

export type { ForwardedReply } from './forward-calls.js';

export class ForwardStream {
  private readonly calls: ForwardCalls;

  constructor(
    client: RaftStub,
    /** Our id and cluster id now (the cluster id is learnt while joining). */
    self: () => { from: string; clusterId: string },
    leaderId: string,
  ) {
    this.calls = new ForwardCalls(
      (onAnswer, onBreak): MuxStream<ForwardMessage> => {
        const stream = client.Forward();
        stream.on('data', (answer: AnswerEnvelope | InvalidForwardedAnswer) => {
          // An answer this node cannot read: its call_id cannot be trusted, so the stream is given up (its
          // calls fail UNAVAILABLE and the clients retry).
          if ('__invalid' in answer) {
            stream.cancel();
            return onBreak(`leader ${leaderId} sent a malformed answer (${answer.__invalid})`);
          }
          onAnswer(answer);
        });
        stream.on('error', (err: grpc.ServiceError) => onBreak(`the stream to leader ${leaderId} failed: ${err.details || err.message}`));
        stream.on('end', () => onBreak(`the stream to leader ${leaderId} ended`));
        return {
          write: (m: ForwardMessage) => {
            const s = self();
            stream.write(encodeCallEnvelope({ ...m, from: s.from, clusterId: s.clusterId }, 'forward'));
          },
          abandon: () => {
            stream.removeAllListeners('data');
            stream.on('error', () => {}); // a late error of a stream we gave up on
            stream.cancel();
          },
        };
      },
      leaderId,
      {
        after: (ms, fn) => {
          const t = setTimeout(fn, ms);
          return { cancel: () => clearTimeout(t) };
        },
      },
    );
  }

  /** Calls waiting for an answer (tests, metrics). */
  get inFlight(): number {
    return this.calls.inFlight;
  }

  /** `body`: the request's bytes; the reply's response is the leader's response bytes. */
  call(name: LockCallName, body: Uint8Array, timeoutMs: number, signal?: CallSignal): Promise<ForwardedReply<Uint8Array>> {
    return this.calls.call(name, body, timeoutMs, signal);
  }

  /** Fail what is pending and stop (the link closed or reconnects with new credentials). */
  close(): void {
    this.calls.close();
  }
}
