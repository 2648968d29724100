// Lock/Stream: every lock call of one client as a message on one bidirectional stream, multiplexed by
// call_id (transport/call-mux.ts), each handled exactly like its unary call (lock-calls.ts).
import * as grpc from '@grpc/grpc-js';
import { certificateCommonName } from '../../transport/peer-auth.js';
import { CallMux } from '../../transport/call-mux.js';
import { encodeAnswerEnvelope } from '../../wire/call-envelope-encode.js';
import { mark } from '../../trace/stages.js';
import { LOCK_METHOD, type LockCallHandling } from './lock-calls.js';
import type { StreamCall } from './lock-stream-codec.js';
import { statusError } from './status-error.js';
import { invalidReason, type InvalidRequest } from './strict-decode.js';

/** Calls of one Lock/Stream served at once; more are refused RESOURCE_EXHAUSTED (a bound on what one
 *  client can make a node hold; the lock leader's own limits still apply to each call). */
const MAX_STREAM_CALLS_IN_FLIGHT = 10_000;

/**
 * Serves one Lock/Stream. A message the strict decoder refused ends the stream with INVALID_ARGUMENT (its
 * call_id cannot be trusted); a bad request inside a good message is that call's INVALID_ARGUMENT answer.
 * Answers wait in grpc-js's buffer only while the client reads them: when it stops, we stop reading its
 * calls (pause until drain), so a client that never reads cannot grow our memory; and at most
 * MAX_STREAM_CALLS_IN_FLIGHT calls of one stream are served at once.
 */
export function serveLockStream<P>(
  calls: LockCallHandling<P>,
  call: grpc.ServerDuplexStream<StreamCall | InvalidRequest, Uint8Array>,
): void {
  const certificateCn = certificateCommonName(call.getAuthContext()?.sslPeerCertificate);
  const remote = call.getPeer();
  const mux = new CallMux<Uint8Array>((a) => {
    mark('call.sent');
    if (!call.write(a)) {
      call.pause();
      call.once('drain', () => call.resume());
    }
  }, MAX_STREAM_CALLS_IN_FLIGHT);
  call.on('data', (wire: StreamCall | InvalidRequest) => {
    if (!mux.isOpen) return;
    const invalid = invalidReason(wire);
    if (invalid !== undefined) {
      mux.close();
      call.emit('error', statusError(grpc.status.INVALID_ARGUMENT, `malformed lock call: ${invalid}`));
      return;
    }
    serveStreamMessage(calls, mux, wire as StreamCall, { certificateCn, remote, nowMs: Date.now() });
  });
  // The stream going away (ended, reset, failed) is no cancel: its calls end detached (call-mux.ts).
  call.on('end', () => {
    mux.close();
    call.end();
  });
  call.on('cancelled', () => mux.close());
  call.on('error', () => mux.close());
}

/** A decoded Lock/Stream message, served through `calls` on `mux`: a cancel, a call, or the refusal of one.
 *  Shared with the lock simulation, which runs Lock/Stream over simulated connections. */
export function serveStreamMessage<P>(
  calls: LockCallHandling<P>,
  mux: CallMux<Uint8Array>,
  wire: StreamCall,
  peer: { certificateCn: string | undefined; remote: string; nowMs: number },
): void {
  const id = wire.callId;
  if (wire.cancel) return mux.cancel(id);
  const name = wire.name;
  const request = wire.request;
  const refuse = (code: number, details: string) => mux.reply(encodeAnswerEnvelope({ callId: id, code, details }, 'lock'));
  if (name === undefined || request === undefined) return refuse(grpc.status.INVALID_ARGUMENT, 'request: no lock call in it');
  const started = mux.start(id);
  if ('refused' in started) {
    if (started.refused === 'duplicate') return refuse(grpc.status.INVALID_ARGUMENT, `call_id: ${id} is already in flight on this stream`);
    if (started.refused === 'full')
      return refuse(
        grpc.status.RESOURCE_EXHAUSTED,
        `more than ${MAX_STREAM_CALLS_IN_FLIGHT} calls in flight on one stream; wait for answers or open another stream`,
      );
    return;
  }
  void calls
    .handle(LOCK_METHOD[name], request, {
      forwarded: false,
      deadlineMs: wire.timeoutMs > 0 ? peer.nowMs + wire.timeoutMs : Infinity,
      certificateCn: peer.certificateCn,
      remote: peer.remote,
      signal: started.signal,
      // Forwarded as they came if this node does not lead (lock-calls.ts).
      ...(wire.body !== undefined ? { requestBytes: wire.body } : {}),
    })
    .then((a) => {
      const ok = a.code === grpc.status.OK;
      // The answer under this call's own id; on OK its response's bytes — the leader's as they came when
      // the call was forwarded.
      const answer = encodeAnswerEnvelope(
        { callId: id, code: a.code, details: a.details, leader: a.leader, ...(ok ? { name, body: calls.responseBody(name, a) } : {}) },
        'lock',
      );
      mux.finish(id, started.signal, answer);
    });
}
