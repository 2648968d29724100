// The server side of a follower's Forward stream: the same admission as a Raft stream (certificate, `from`,
// cluster id, membership: peer-admission.ts), then every lock call goes to the client API and its answer
// back, matched by call_id. Any refusal ends the whole stream.
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { NodeId } from '../raft/core/types.js';
import { mark } from '../trace/stages.js';
import { CallMux } from './call-mux.js';
import type { PeerAdmission } from './peer-admission.js';
import type { WireInput } from '../wire/scalars.js';
import type { CallSignal } from '../wire/call-signal.js';
import type { ForwardedAnswer, ForwardedCall } from '../wire/raft.js';

/** Serves one lock call a follower forwarded to us (the client API behind it); resolves with the answer. */
export type ForwardedCallHandler = (
  call: ForwardedCall,
  peer: { certificate: PeerCertificate | undefined; remote: string },
  signal: CallSignal,
) => Promise<WireInput<ForwardedAnswer>>;

export interface ForwardStreamContext {
  selfId: NodeId;
  admission: PeerAdmission;
  /** Null until the runtime has built the client API. */
  handler(): ForwardedCallHandler | null;
}

export function serveForwardStream(
  call: grpc.ServerDuplexStream<ForwardedCall, WireInput<ForwardedAnswer>>,
  ctx: ForwardStreamContext,
): void {
  const remote = call.getPeer();
  const certificate = call.getAuthContext().sslPeerCertificate;
  // The follower's link breaking (it died, the link was cut) ends its calls as detached: no cancel — a
  // blocking acquire keeps its place for the client's retry (call-mux.ts, call-end.ts).
  const mux = new CallMux<WireInput<ForwardedAnswer>>((answer) => {
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
  call.on('data', (wire: ForwardedCall) => {
    mark('fwd.recv');
    if (!mux.isOpen) return;
    const invalid = (wire as { __invalid?: unknown }).__invalid;
    if (typeof invalid === 'string') return refuse(grpc.status.INVALID_ARGUMENT, `malformed forwarded call: ${invalid}`);
    const refused = ctx.admission.admitMessage(stream, wire.from, wire.cluster_id);
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
  mux: CallMux<WireInput<ForwardedAnswer>>,
  wire: ForwardedCall,
  handler: ForwardedCallHandler | null,
  selfId: string,
  peer: { certificate: PeerCertificate | undefined; remote: string },
): void {
  if (wire.cancel) return mux.cancel(wire.call_id);
  const started = handler === null ? null : mux.start(wire.call_id);
  if (handler === null || started === null || 'refused' in started) {
    mux.reply({
      call_id: wire.call_id,
      code: grpc.status.UNAVAILABLE,
      details: handler === null ? `${selfId} is not serving lock calls yet` : `call_id ${wire.call_id} is already in flight`,
    });
    return;
  }
  handler(wire, peer, started.signal).then(
    (answer) => mux.finish(wire.call_id, started.signal, answer),
    () => {},
  );
}
