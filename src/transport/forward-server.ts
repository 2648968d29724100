// The server side of a follower's Forward stream: the same admission as a Raft stream (certificate, `from`,
// cluster id, membership: peer-admission.ts), then every lock call goes to the client API and its answer
// back, matched by call_id. Any refusal ends the whole stream.
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { NodeId } from '../raft/core/types.js';
import { mark } from '../trace/stages.js';
import { CANCELLED, DETACHED } from './call-end.js';
import type { PeerAdmission } from './peer-admission.js';
import type { WireInput } from '../wire/scalars.js';
import type { ForwardedAnswer, ForwardedCall } from '../wire/raft.js';

/** Serves one lock call a follower forwarded to us (the client API behind it); resolves with the answer. */
export type ForwardedCallHandler = (
  call: ForwardedCall,
  peer: { certificate: PeerCertificate | undefined; remote: string },
  signal: AbortSignal,
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
  const inFlight = new Map<string, AbortController>();
  let open = true;
  // The follower's link broke (it died, the link was cut): its calls' connection broke, which is no
  // cancel — a blocking acquire keeps its place for the client's retry (call-end.ts).
  const gone = (): void => {
    open = false;
    for (const a of inFlight.values()) a.abort(DETACHED);
    inFlight.clear();
  };
  const refuse = (code: grpc.status, details: string): void => {
    if (!open) return;
    gone();
    call.emit('error', { code, details });
  };
  const stream = ctx.admission.admitStream(() => certificate, remote);
  if ('refused' in stream) return refuse(grpc.status.PERMISSION_DENIED, `forward stream refused: ${stream.refused}`);
  call.on('data', (wire: ForwardedCall) => {
    mark('fwd.recv');
    if (!open) return;
    const invalid = (wire as { __invalid?: unknown }).__invalid;
    if (typeof invalid === 'string') return refuse(grpc.status.INVALID_ARGUMENT, `malformed forwarded call: ${invalid}`);
    const refused = ctx.admission.admitMessage(stream, wire.from, wire.cluster_id);
    if (refused?.kind === 'auth') return refuse(grpc.status.PERMISSION_DENIED, `forwarded call refused: ${refused.reason}`);
    if (refused) return refuse(grpc.status.PERMISSION_DENIED, `forwarded call from ${wire.from} refused: ${refused.reason}`);
    if (wire.cancel) {
      inFlight.get(wire.call_id)?.abort(CANCELLED);
      inFlight.delete(wire.call_id);
      return;
    }
    const handler = ctx.handler();
    if (handler === null || inFlight.has(wire.call_id)) {
      call.write({
        call_id: wire.call_id,
        code: grpc.status.UNAVAILABLE,
        details: handler === null ? `${ctx.selfId} is not serving lock calls yet` : `call_id ${wire.call_id} is already in flight`,
      });
      return;
    }
    const abort = new AbortController();
    inFlight.set(wire.call_id, abort);
    handler(wire, { certificate, remote }, abort.signal).then(
      (answer) => {
        if (inFlight.get(wire.call_id) !== abort) return; // cancelled, or the stream went away
        inFlight.delete(wire.call_id);
        mark('fwd.answer');
        if (open) call.write(answer);
      },
      () => {},
    );
  });
  call.on('end', () => {
    gone();
    call.end();
  });
  call.on('cancelled', gone);
  call.on('error', gone);
}
