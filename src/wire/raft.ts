// leasehold.v1.Raft (proto/leasehold/v1/raft.proto), the peer service: the decoded shape of each message,
// named as in the .proto, and the service's client and handler types. Many of these names are the core's
// too (src/raft/core/types.ts: Entry, AppendEntries, ...): a file that needs both imports this one as a
// namespace, `import type * as raftpb from '../wire/raft.js'`, as etcd writes raftpb.Message.
// The Stream method's RaftMessages never take the shapes below in a node: they travel as bytes that the
// hand-written codec writes (raft-encode.ts) and reads (raft-decode.ts) straight from and to the core's
// messages. The shapes are what protobufjs makes of them: the tests check them against the .proto and
// cross-check the codec with them.
import type * as grpc from '@grpc/grpc-js';
import type {
  AcquireRequest,
  AcquireResponse,
  CloseSessionRequest,
  CloseSessionResponse,
  GetRequest,
  GetResponse,
  LockCallName,
  OpenSessionRequest,
  OpenSessionResponse,
  ReleaseRequest,
  ReleaseResponse,
  RenewRequest,
  RenewResponse,
  RenewSessionRequest,
  RenewSessionResponse,
} from './lock.js';
import { protoService, type ClientStreamingMethod, type MethodCodec } from './load.js';
import { decodeRaftFrame, type RaftFrame } from './raft-decode.js';
import type { AnswerEnvelope, CallEnvelope } from './call-envelope.js';
import { decodeAnswerEnvelope, decodeCallEnvelope } from './call-envelope-decode.js';
import { CodecError, type WireInput, type WireLong } from './scalars.js';

export const ENTRY_KINDS = ['ENTRY_KIND_UNSPECIFIED', 'ENTRY_KIND_NORMAL', 'ENTRY_KIND_NOOP', 'ENTRY_KIND_CONFIG'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

export interface Entry {
  index: WireLong;
  term: WireLong;
  kind: EntryKind;
  data: Buffer;
}

export interface ConfState {
  voters: string[];
  learners: string[];
  removed: string[];
  addresses: PeerAddress[];
  cluster_id: string;
}

export interface PeerAddress {
  id: string;
  address: string;
}

export interface SnapshotMeta {
  index: WireLong;
  term: WireLong;
  conf: ConfState | null;
}

export interface RequestVote {
  pre_vote: boolean;
  last_log_index: WireLong;
  last_log_term: WireLong;
  transfer: boolean;
}

export interface RequestVoteResponse {
  pre_vote: boolean;
  granted: boolean;
}

export interface AppendEntries {
  prev_log_index: WireLong;
  prev_log_term: WireLong;
  entries: Entry[];
  leader_commit: WireLong;
  round: WireLong;
}

export interface AppendEntriesResponse {
  success: boolean;
  match_index: WireLong;
  conflict_index: WireLong;
  conflict_term: WireLong;
  round: WireLong;
}

export interface InstallSnapshot {
  meta: SnapshotMeta | null;
  offset: WireLong;
  chunk: Buffer;
  done: boolean;
  round: WireLong;
}

export interface InstallSnapshotResponse {
  snapshot_index: WireLong;
  next_offset: WireLong;
  done: boolean;
  success: boolean;
  round: WireLong;
}

export interface TimeoutNow {}

export interface ReadIndexRequest {
  ctx: string;
}

export interface ReadIndexResponse {
  ctx: string;
  index: WireLong;
}

/** The members of RaftMessage's `body` oneof, by field name. */
export interface RaftMessageBodies {
  request_vote: RequestVote;
  request_vote_response: RequestVoteResponse;
  append_entries: AppendEntries;
  append_entries_response: AppendEntriesResponse;
  install_snapshot: InstallSnapshot;
  install_snapshot_response: InstallSnapshotResponse;
  timeout_now: TimeoutNow;
  read_index_request: ReadIndexRequest;
  read_index_response: ReadIndexResponse;
}

export type RaftMessageBodyName = keyof RaftMessageBodies;

export interface RaftMessageHeader {
  from: string;
  to: string;
  term: WireLong;
  /** The sender's cluster id ('' while a joining node has not learned it). */
  cluster_id: string;
  /** The highest cluster level the sender's build reads; 0 (absent) from a build before the gate. */
  cluster_level?: number;
  /** Further messages to the same peer, in order; absent or empty for one. */
  batch?: RaftMessage[];
}

/** A decoded RaftMessage: the header plus exactly one body, named by the virtual `body` field. */
export type RaftMessage = {
  [K in RaftMessageBodyName]: RaftMessageHeader & { body: K } & { [P in K]: RaftMessageBodies[K] };
}[RaftMessageBodyName];

export interface StreamSummary {
  received: WireLong;
}

/** A decoded ForwardedCall: exactly one request set (virtual `request` names it), or a cancel. */
export interface ForwardedCall {
  call_id: WireLong;
  from: string;
  cluster_id: string;
  timeout_ms: number;
  cancel: boolean;
  request?: LockCallName;
  acquire?: AcquireRequest;
  renew?: RenewRequest;
  release?: ReleaseRequest;
  get?: GetRequest;
  open_session?: OpenSessionRequest;
  renew_session?: RenewSessionRequest;
  close_session?: CloseSessionRequest;
}

export interface ForwardedAnswer {
  call_id: WireLong;
  code: number;
  details: string;
  response?: LockCallName;
  acquire?: AcquireResponse;
  renew?: RenewResponse;
  release?: ReleaseResponse;
  get?: GetResponse;
  open_session?: OpenSessionResponse;
  renew_session?: RenewSessionResponse;
  close_session?: CloseSessionResponse;
}

/** What the Raft stream's deserializer hands the handler for bytes it refuses (the strict decoder's marker
 *  shape, server/client-api/strict-decode.ts InvalidRequest): the reason, naming the field. */
export interface InvalidRaftFrame {
  __invalid: string;
}

/** The bytes of a gRPC message as they are: what a hand-written encoder made. */
const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** A decoder's CodecError as the marker a handler refuses (gRPC would answer a throwing deserializer INTERNAL). */
function refusal(err: unknown): { __invalid: string } {
  if (err instanceof CodecError) return { __invalid: err.message };
  return { __invalid: `cannot decode (${(err as Error).message})` };
}

/** Raft/Stream's codec: the client writes the bytes encodeRaftFrame made; the server's handler gets each
 *  gRPC message decoded (raft-decode.ts), or the reason it was refused. */
export const RAFT_STREAM_CODEC: MethodCodec<Uint8Array> = {
  requestSerialize: asBuffer,
  requestDeserialize: (bytes): RaftFrame | InvalidRaftFrame => {
    try {
      return decodeRaftFrame(bytes);
    } catch (err) {
      // gRPC would answer a throwing deserializer INTERNAL; a bad peer message is INVALID_ARGUMENT, with its field.
      return refusal(err);
    }
  },
  ownStrictDecoder: true,
};

/** A ForwardedAnswer the follower could not read (a leader's bug or a stranger): the stream is given up. */
export interface InvalidForwardedAnswer {
  __invalid: string;
}

/** Raft/Forward's codec: envelopes by hand both ways (call-envelope-*.ts), the request and response inside
 *  left as bytes — the follower passes a client's request bytes on and the leader's response bytes back.
 *  Each side writes the bytes encodeCallEnvelope / encodeAnswerEnvelope made. */
export const FORWARD_CODEC: MethodCodec<Uint8Array> = {
  requestSerialize: asBuffer,
  requestDeserialize: (bytes): CallEnvelope | InvalidRaftFrame => {
    try {
      return decodeCallEnvelope(bytes, 'forward');
    } catch (err) {
      return refusal(err);
    }
  },
  responseSerialize: asBuffer,
  responseDeserialize: (bytes): AnswerEnvelope | InvalidForwardedAnswer => {
    try {
      return decodeAnswerEnvelope(bytes, 'forward');
    } catch (err) {
      return refusal(err);
    }
  },
  ownStrictDecoder: true,
};

/** The grpc-js client stub of the peer service Raft. */
export interface RaftStub extends grpc.Client {
  /** Writes the bytes of one RaftMessage (raft-encode.ts encodeRaftFrame). */
  Stream: ClientStreamingMethod<Buffer, StreamSummary>;
  stream: ClientStreamingMethod<Buffer, StreamSummary>;
  /** Writes the bytes of ForwardedCalls (encodeCallEnvelope); reads ForwardedAnswers' envelopes. */
  Forward(options?: Partial<grpc.CallOptions>): grpc.ClientDuplexStream<Uint8Array, AnswerEnvelope | InvalidForwardedAnswer>;
}

export interface RaftHandlers extends grpc.UntypedServiceImplementation {
  Stream: grpc.handleClientStreamingCall<RaftFrame | InvalidRaftFrame, WireInput<StreamSummary>>;
  /** Reads ForwardedCalls' envelopes; writes the bytes of ForwardedAnswers (encodeAnswerEnvelope). */
  Forward: grpc.handleBidiStreamingCall<CallEnvelope | InvalidRaftFrame, Uint8Array>;
}

/** leasehold.v1.Raft for grpc-js: `raftGrpcService.client(address, credentials)`, `raftGrpcService.definition()`
 *  (the proto files are read on the first call of either), with Stream on the hand-written codec. */
export const raftGrpcService = protoService<RaftStub, RaftHandlers>('leasehold.v1.Raft', {
  Stream: RAFT_STREAM_CODEC,
  Forward: FORWARD_CODEC,
});
