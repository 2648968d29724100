// A lock call a follower forwarded to this node on its Forward stream (transport/forward-server.ts admitted
// the stream and its sender): served exactly like the same call forwarded as a unary call — validated,
// owner-checked (trusting a member's certificate, as for a forwarded unary call), never forwarded again —
// within what was left of its caller's deadline.
import * as grpc from '@grpc/grpc-js';
import type { PeerCertificate } from 'node:tls';
import { certificateCommonName } from '../../transport/peer-auth.js';
import type { WireInput } from '../../wire/scalars.js';
import type { CallSignal } from '../../wire/call-signal.js';
import type { ForwardedAnswer, ForwardedCall } from '../../wire/raft.js';
import { LOCK_METHOD, type LockCallHandling } from './lock-calls.js';

/** A lock call a follower forwarded, handled through `calls` as forwarded (owner-checked there, never
 *  forwarded again) within what was left of its caller's deadline; resolves with the Forward stream's answer.
 *  Shared with the lock simulation. */
export async function handleForwarded<P>(
  calls: LockCallHandling<P>,
  wire: ForwardedCall,
  peer: { certificate: PeerCertificate | undefined; remote: string },
  signal: CallSignal,
  nowMs: number,
): Promise<WireInput<ForwardedAnswer>> {
  const name = wire.request;
  const request = name ? wire[name] : undefined;
  if (!name || request === undefined) {
    return { call_id: wire.call_id, code: grpc.status.INVALID_ARGUMENT, details: 'forwarded call: request: no lock call in it' };
  }
  const reply = await calls.handle(LOCK_METHOD[name], request, {
    forwarded: true,
    deadlineMs: nowMs + Math.max(1, wire.timeout_ms),
    certificateCn: certificateCommonName(peer.certificate),
    remote: peer.remote,
    signal,
  });
  return {
    call_id: wire.call_id,
    code: reply.code,
    details: reply.details,
    ...(reply.code === grpc.status.OK ? { [name]: reply.response } : {}),
  } as WireInput<ForwardedAnswer>;
}
