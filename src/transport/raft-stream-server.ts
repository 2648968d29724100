// The server side of a peer's Raft stream (etcd's rafthttp stream handler): admit the stream, decode each
// gRPC message — one Raft message or a batch of them (RaftMessage.batch) — (a malformed one ends the stream
// with INVALID_ARGUMENT and none of it reaches the core), admit it (peer-admission.ts), and deliver each.
import * as grpc from '@grpc/grpc-js';
import type { Message, NodeId } from '../raft/core/types.js';
import { mark } from '../trace/stages.js';
import { messagesFromWire } from '../wire/raft-codec.js';
import type { PeerAdmission } from './peer-admission.js';
import type { RaftMessage } from '../wire/raft.js';

export interface RaftStreamContext {
  selfId: NodeId;
  admission: PeerAdmission;
  /** A message from `from` arrived on inbound stream `stream` (PeerLink.markAlive). */
  heard(from: NodeId, stream: number, clusterLevel: number): void;
  deliver(m: Message): void;
}

export function serveRaftStream(
  call: grpc.ServerReadableStream<RaftMessage, unknown>,
  callback: grpc.sendUnaryData<{ received: string }>,
  streamNumber: number,
  ctx: RaftStreamContext,
): void {
  let received = 0;
  let failed = false;
  const end = (code: grpc.status, details: string): void => {
    failed = true;
    callback({ code, details });
  };
  const stream = ctx.admission.admitStream(() => call.getAuthContext().sslPeerCertificate, call.getPeer());
  if ('refused' in stream) return end(grpc.status.PERMISSION_DENIED, `peer stream refused: ${stream.refused}`);
  call.on('data', (wire: RaftMessage) => {
    mark('peer.read');
    if (failed) return;
    // The server registers this service behind the strict decoder (src/server/client-api/strict-decode.ts),
    // which turns an undecodable message into this marker instead of a half-decoded object.
    const invalid = (wire as { __invalid?: unknown }).__invalid;
    if (typeof invalid === 'string') return end(grpc.status.INVALID_ARGUMENT, `malformed raft message: ${invalid}`);
    let batch: Message[];
    try {
      batch = messagesFromWire(wire);
    } catch (err) {
      return end(grpc.status.INVALID_ARGUMENT, `malformed raft message: ${(err as Error).message}`);
    }
    // A batch is from one sender to one node (messagesFromWire checks): the head speaks for all of them.
    const m = batch[0]!;
    const refused = ctx.admission.admitMessage(stream, m.from, typeof wire.cluster_id === 'string' ? wire.cluster_id : '');
    if (refused?.kind === 'auth') return end(grpc.status.PERMISSION_DENIED, `peer message refused: ${refused.reason}`);
    if (m.to !== ctx.selfId) return end(grpc.status.INVALID_ARGUMENT, `raft message for ${m.to} reached ${ctx.selfId}`);
    if (refused) return; // another cluster, or not a member: dropped, logged once per sender
    received += batch.length;
    ctx.heard(m.from, streamNumber, typeof wire.cluster_level === 'number' ? wire.cluster_level : 0);
    for (const each of batch) ctx.deliver(each);
  });
  call.on('end', () => {
    if (!failed) callback(null, { received: String(received) });
  });
  call.on('error', () => {});
}
