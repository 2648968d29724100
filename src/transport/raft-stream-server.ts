// The server side of a peer's Raft stream (etcd's rafthttp stream handler): admit the stream, take each
// gRPC message as the service's deserializer decoded it — one Raft message or a batch of them
// (RaftMessage.batch; wire/raft-decode.ts) — (a malformed one ends the stream with INVALID_ARGUMENT and
// none of it reaches the core), admit it (peer-admission.ts), and deliver each.
import * as grpc from '@grpc/grpc-js';
import type { Message, NodeId } from '../raft/core/types.js';
import { mark } from '../trace/stages.js';
import type { PeerAdmission } from './peer-admission.js';
import type { InvalidRaftFrame } from '../wire/raft.js';
import type { RaftFrame } from '../wire/raft-decode.js';

export interface RaftStreamContext {
  selfId: NodeId;
  admission: PeerAdmission;
  /** A message from `from` arrived on inbound stream `stream` (PeerLink.markAlive). */
  heard(from: NodeId, stream: number, clusterLevel: number): void;
  deliver(m: Message): void;
}

export function serveRaftStream(
  call: grpc.ServerReadableStream<RaftFrame | InvalidRaftFrame, unknown>,
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
  call.on('data', (frame: RaftFrame | InvalidRaftFrame) => {
    mark('peer.read');
    if (failed) return;
    // The service's deserializer (wire/raft.ts RAFT_STREAM_CODEC) decodes each gRPC message strictly and
    // turns an undecodable one into this marker, naming the field, instead of a half-decoded batch.
    if ('__invalid' in frame) return end(grpc.status.INVALID_ARGUMENT, `malformed raft message: ${frame.__invalid}`);
    const batch = frame.messages;
    // A batch is from one sender to one node (decodeRaftFrame checks): the head speaks for all of them.
    const m = batch[0]!;
    const refused = ctx.admission.admitMessage(stream, m.from, frame.clusterId);
    if (refused?.kind === 'auth') return end(grpc.status.PERMISSION_DENIED, `peer message refused: ${refused.reason}`);
    if (m.to !== ctx.selfId) return end(grpc.status.INVALID_ARGUMENT, `raft message for ${m.to} reached ${ctx.selfId}`);
    if (refused) return; // another cluster, or not a member: dropped, logged once per sender
    received += batch.length;
    ctx.heard(m.from, streamNumber, frame.clusterLevel);
    for (const each of batch) ctx.deliver(each);
  });
  call.on('end', () => {
    if (!failed) callback(null, { received: String(received) });
  });
  call.on('error', () => {});
}
