// The server side of a follower's Forward stream: the same admission as a Raft stream (certificate, `from`,
// cluster id, membership: peer-admission.ts), then every lock call goes to the client API and its answer
// back, matched by call_id. Any refusal ends the whole stream.
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { NodeId } from '../raft/core/types.js';
import { mark } from '../trace/stages.js';
import { CallMux } from './call-mux.js';
import type { PeerAdmission } from './peer-admission.js';
import type { CallSignal } from '../wire/call-signal.js';
import type { CallEnvelope } from '../wire/call-envelope.js';
import { encodeAnswerEnvelope, type AnswerToEncode } from '../wire/call-envelope-encode.js';
import type { InvalidRaftFrame } from '../wire/raft.js';

/** A forwarded call's answer without its call_id: the stream writes it under the call's own. */
export type ForwardedCallAnswer = Omit<AnswerToEncode, 'callId' | 'leader'>;

/** Serves one lock call a follower forwarded to us (the client API behind it); resolves with the answer,
 *  its response as bytes. */
export type ForwardedCallHandler = (
  call: CallEnvelope,
  peer: { certificate: PeerCertificate | undefined; remote: string },
  signal: CallSignal,
) => Promise<ForwardedCallAnswer>;

export interface ForwardStreamContext {
  selfId: NodeId;
  admission: PeerAdmission;
  /** Null until the runtime has built the client API. */
  handler(): ForwardedCallHandler | null;
}

export function serveForwardStream(
  call: grpc.ServerDuplexStream<CallEnvelope | InvalidRaftFrame, Uint8Array>,
  ctx: ForwardStreamContext,
): void {
  const remote = call.getPeer();
  const certificate = call.getAuthContext().sslPeerCertificate;
  // The follower's link breaking (it died, the link was cut) ends its calls as detached: no cancel — a
  // blocking acquire keeps its place for the client's retry (call-mux.ts, call-end.ts).
  const mux = new CallMux<Uint8Array>((answer) => {
    mark('fwd.answer');
    call.write(answer);
  });
  const gone = (): void => mux.close();
  const refuse = (code: grpc.status, details: string): void => {
    if (!mux.isOpen) return;
    gone();
    call.emit('error', { code, details });
  };
  const stream = ctx.admission.admitStream(() => certificate, remote);
  if ('refused' in stream) return refuse(grpc.status.PERMISSION_DENIED, `forward stream refused: ${stream.refused}`);
  call.on('data', (wire: CallEnvelope | InvalidRaftFrame) => {
    mark('fwd.recv');
    if (!mux.isOpen) return;
    if ('__invalid' in wire) return refuse(grpc.status.INVALID_ARGUMENT, `malformed forwarded call: ${wire.__invalid}`);
    const refused = ctx.admission.admitMessage(stream, wire.from, wire.clusterId);
    if (refused?.kind === 'auth') return refuse(grpc.status.PERMISSION_DENIED, `forwarded call refused: ${refused.reason}`);
    if (refused) return refuse(grpc.status.PERMISSION_DENIED, `forwarded call from ${wire.from} refused: ${refused.reason}`);
    serveForwardMessage(mux, wire, ctx.handler(), ctx.selfId, { certificate, remote });
  });
  call.on('end', () => {
    gone();
    call.end();
  });
  call.on('cancelled', gone);
  call.on('error', gone);
}

/** One admitted message of a Forward stream, served through `handler` on `mux`: a cancel, a call, or the
 *  refusal of one. Shared with the lock simulation, which runs the Forward stream over simulated links. */
export function serveForwardMessage(
  mux: CallMux<Uint8Array>,
  wire: CallEnvelope,
  handler: ForwardedCallHandler | null,
  selfId: string,
  peer: { certificate: PeerCertificate | undefined; remote: string },
): void {
  const callId = wire.callId;
  if (wire.cancel) return mux.cancel(callId);
  const started = handler === null ? null : mux.start(callId);
  if (handler === null || started === null || 'refused' in started) {
    const details = handler === null ? `${selfId} is not serving lock calls yet` : `call_id ${callId} is already in flight`;
    mux.reply(encodeAnswerEnvelope({ callId, code: grpc.status.UNAVAILABLE, details }, 'forward'));
    return;
  }
  handler(wire, peer, started.signal).then(
    (answer) => mux.finish(callId, started.signal, encodeAnswerEnvelope({ ...answer, callId }, 'forward')),
    () => {},
  );
}
