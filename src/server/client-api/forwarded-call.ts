// A lock call a follower forwarded to this node on its Forward stream (transport/forward-server.ts admitted
// the stream and its sender): served exactly like the same call forwarded as a unary call — validated,
// owner-checked (trusting a member's certificate, as for a forwarded unary call), never forwarded again —
// within what was left of its caller's deadline. The request arrives as the client's bytes (the follower
// passed them on): decoded here as strictly as the follower did; the response leaves as bytes, which the
// follower passes back to its client as they are.
import * as grpc from '@grpc/grpc-js';
import type { PeerCertificate } from 'node:tls';
import { certificateCommonName } from '../../transport/peer-auth.js';
import type { ForwardedCallAnswer } from '../../transport/forward-server.js';
import type { CallSignal } from '../../wire/call-signal.js';
import type { CallEnvelope } from '../../wire/call-envelope.js';
import { decodeRequestBody } from './call-bodies.js';
import { LOCK_METHOD, type LockCallHandling } from './lock-calls.js';

/** A lock call a follower forwarded, handled through `calls` as forwarded (owner-checked there, never
 *  forwarded again) within what was left of its caller's deadline; resolves with the Forward stream's answer.
 *  Shared with the lock simulation. */
export async function handleForwarded<P>(
  calls: LockCallHandling<P>,
  wire: CallEnvelope,
  peer: { certificate: PeerCertificate | undefined; remote: string },
  signal: CallSignal,
  nowMs: number,
): Promise<ForwardedCallAnswer> {
  const name = wire.name;
  const body = wire.body;
  if (name === undefined || body === undefined) {
    return { code: grpc.status.INVALID_ARGUMENT, details: 'forwarded call: request: no lock call in it' };
  }
  // Never trusted for being forwarded: a bad field is this call's INVALID_ARGUMENT naming it (handle
  // refuses the strict decoder's marker before anything else), and nothing is applied.
  const decoded = decodeRequestBody(name, body);
  const request = 'invalid' in decoded ? { __invalid: decoded.invalid } : decoded.request;
  const reply = await calls.handle(LOCK_METHOD[name], request, {
    forwarded: true,
    deadlineMs: nowMs + Math.max(1, wire.timeoutMs),
    certificateCn: certificateCommonName(peer.certificate),
    remote: peer.remote,
    signal,
  });
  if (reply.code !== grpc.status.OK) return { code: reply.code, details: reply.details };
  return { code: reply.code, details: reply.details, name, body: calls.responseBody(name, reply) };
}
