// The .proto files under proto/leasehold/v1, loaded at run time with @grpc/proto-loader, plus hand-written TypeScript
// shapes of the wire messages. test/unit/transport/proto.test.ts walks the loaded descriptors and checks
// these interfaces field by field, so they cannot drift from the .proto files silently.
//
// Loader options, chosen once for every caller (server, client, peer transport, reflection):
// - keepCase: true: field names stay as written in the .proto (`ttl_ms`, `request_vote`). proto-loader
//   also renames the fields inside the descriptors it hands out; with camelCase, server reflection would
//   advertise `ttlMs`, and grpcurl users typing `{"ttl_ms": 5000}` would be refused. One truth, snake_case.
// - longs: String: every 64-bit field is a decimal string, so a uint64 fencing token never rounds
//   through a lossy `number`. Use codec.ts helpers to convert.
// - enums: String: enum fields are their value names ('EXPIRED'). A value this build does not know
//   (from a newer peer) decodes as its number, so validate before trusting it.
// - defaults: true: every scalar and repeated field is present after decoding; an absent sub-message
//   decodes as null; members of a oneof are never defaulted.
// - oneofs: true: a decoded message carries a virtual field named after each set oneof, holding the name
//   of the member that is set (RaftMessage.body === 'append_entries').
// - bytes: left at the default: bytes fields decode as Buffer (a view into the received buffer).
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

// ---------------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------------

export const LEASEHOLD_PROTO_FILES = [
  'leasehold/v1/lock.proto',
  'leasehold/v1/cluster.proto',
  'leasehold/v1/raft.proto',
] as const;

export const LOADER_OPTIONS: Readonly<protoLoader.Options> = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

/**
 * The proto/ directory of the package: the nearest ancestor of this module that holds
 * proto/leasehold/v1/lock.proto. Works from src/transport (tests, tsx) and dist/src/transport (built).
 */
export function findProtoRoot(fromDir: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = resolve(fromDir);
  for (;;) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, LEASEHOLD_PROTO_FILES[0]))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(
        `leasehold: cannot find proto/${LEASEHOLD_PROTO_FILES[0]} in ${fromDir} or any parent directory; ` +
          'the package must ship its proto/ directory next to src/ (or dist/)',
      );
    }
    dir = parent;
  }
}

export const PROTO_ROOT: string = findProtoRoot();

/**
 * Every service, message and enum of leasehold.v1. Each entry also carries `fileDescriptorProtos`
 * (serialized FileDescriptorProto with the .proto field names), which is what server reflection
 * answers with: `new ReflectionService(packageDefinition)` from @grpc/reflection.
 */
export const packageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync(
  [...LEASEHOLD_PROTO_FILES],
  { ...LOADER_OPTIONS, includeDirs: [PROTO_ROOT] },
);

function serviceDefinition(fullName: string): grpc.ServiceDefinition {
  const def = packageDefinition[fullName];
  if (def === undefined || 'format' in def) throw new Error(`leasehold: ${fullName} is not a service in proto/`);
  return def as unknown as grpc.ServiceDefinition;
}

// ---------------------------------------------------------------------------------------------------
// Shared type helpers
// ---------------------------------------------------------------------------------------------------

/** A 64-bit integer as a decimal string (loader option longs: String). */
export type WireLong = string;

/**
 * What the serializer accepts for a message of decoded shape T: every field optional (proto3 default when
 * absent), sub-messages may be null, bytes may be any Uint8Array. Long fields stay decimal strings.
 */
export type WireInput<T> = T extends Buffer
  ? Uint8Array
  : T extends readonly (infer U)[]
    ? WireInput<U>[]
    : T extends object
      ? { [K in keyof T]?: WireInput<T[K]> }
      : T;

type UnaryMethod<Req, Res> = {
  (request: WireInput<Req>, callback: grpc.requestCallback<Res>): grpc.ClientUnaryCall;
  (request: WireInput<Req>, metadata: grpc.Metadata, callback: grpc.requestCallback<Res>): grpc.ClientUnaryCall;
  (request: WireInput<Req>, options: Partial<grpc.CallOptions>, callback: grpc.requestCallback<Res>): grpc.ClientUnaryCall;
  (
    request: WireInput<Req>,
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: grpc.requestCallback<Res>,
  ): grpc.ClientUnaryCall;
};

type ClientStreamingMethod<Req, Res> = {
  (callback: grpc.requestCallback<Res>): grpc.ClientWritableStream<WireInput<Req>>;
  (metadata: grpc.Metadata, callback: grpc.requestCallback<Res>): grpc.ClientWritableStream<WireInput<Req>>;
  (options: Partial<grpc.CallOptions>, callback: grpc.requestCallback<Res>): grpc.ClientWritableStream<WireInput<Req>>;
  (
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: grpc.requestCallback<Res>,
  ): grpc.ClientWritableStream<WireInput<Req>>;
};

/** A generated client class: `new LockClient('127.0.0.1:7001', grpc.credentials.createInsecure())`. */
export interface ClientConstructor<C extends grpc.Client, H extends grpc.UntypedServiceImplementation> {
  new (address: string, credentials: grpc.ChannelCredentials, options?: Partial<grpc.ClientOptions>): C;
  /** For `server.addService(XClient.service, handlers)`. */
  service: grpc.ServiceDefinition<H>;
  serviceName: string;
}

function clientConstructor<C extends grpc.Client, H extends grpc.UntypedServiceImplementation>(
  fullName: string,
): ClientConstructor<C, H> {
  const service = serviceDefinition(fullName);
  const shortName = fullName.slice(fullName.lastIndexOf('.') + 1);
  return grpc.makeGenericClientConstructor(service, shortName) as unknown as ClientConstructor<C, H>;
}

// ---------------------------------------------------------------------------------------------------
// leasehold.v1.Lock (lock.proto)
// ---------------------------------------------------------------------------------------------------

export const REASONS = ['UNSPECIFIED', 'NOT_HELD', 'WRONG_OWNER', 'WRONG_TOKEN', 'EXPIRED'] as const;
export type Reason = (typeof REASONS)[number];

export interface AcquireRequest {
  key: string;
  owner: string;
  ttl_ms: WireLong;
  wait_ms: WireLong;
  request_id: string;
  /** Absent = 0 (older clients). */
  lock_delay_ms?: WireLong;
  /** Absent = none. Decoded as a Buffer. */
  value?: Uint8Array;
  /** Absent = 0 (none). */
  session_id?: WireLong;
  /** Absent = 0 (a mutex). */
  limit?: number;
  /** Absent = false. */
  shared?: boolean;
}

export interface OpenSessionRequest {
  owner: string;
  ttl_ms: WireLong;
  request_id: string;
  lock_delay_ms: WireLong;
}

export interface OpenSessionResponse {
  session_id: WireLong;
  ttl_ms: WireLong;
  expires_at_ms: WireLong;
}

/** RenewSession and CloseSession requests. */
export interface SessionCallRequest {
  session_id: WireLong;
  request_id: string;
  owner: string;
}

export interface RenewSessionResponse {
  renewed: boolean;
  ttl_ms: WireLong;
  expires_at_ms: WireLong;
  reason: Reason;
}

export interface CloseSessionResponse {
  closed: boolean;
  released: string[];
  reason: Reason;
}

export interface AcquireResponse {
  acquired: boolean;
  token: WireLong;
  ttl_ms: WireLong;
  expires_at_ms: WireLong;
  holder_owner: string;
  holder_ttl_ms: WireLong;
  delay_ms_left: WireLong;
}

export interface RenewRequest {
  key: string;
  owner: string;
  token: WireLong;
  ttl_ms: WireLong;
  request_id: string;
}

export interface RenewResponse {
  renewed: boolean;
  ttl_ms: WireLong;
  expires_at_ms: WireLong;
  reason: Reason;
}

export interface ReleaseRequest {
  key: string;
  owner: string;
  token: WireLong;
  request_id: string;
}

export interface ReleaseResponse {
  released: boolean;
  reason: Reason;
}

export interface GetRequest {
  key: string;
}

export interface GetResponse {
  held: boolean;
  owner: string;
  token: WireLong;
  ttl_ms: WireLong;
  expires_at_ms: WireLong;
  last_token: WireLong;
  waiters: number;
  holders: Holder[];
  index: WireLong;
  /** The key's limit; 0 from older servers (which have only mutexes: 1). */
  limit: number;
}

export interface Holder {
  owner: string;
  token: WireLong;
  ttl_ms: WireLong;
  expires_at_ms: WireLong;
  shared: boolean;
  session_id: WireLong;
  value: Uint8Array;
}

export interface WatchRequest {
  key: string;
  prefix: string;
  after_index: WireLong;
  include_renewals: boolean;
}

/** WatchEvent.Kind value names (public contract: SPEC "Watch"). */
export const WATCH_KINDS = ['ACQUIRED', 'RELEASED', 'EXPIRED', 'REVOKED', 'RENEWED', 'QUEUED', 'DEQUEUED', 'PROGRESS'] as const;
export type WatchKind = (typeof WATCH_KINDS)[number];

export interface WatchEvent {
  index: WireLong;
  key: string;
  kind: WatchKind;
  owner: string;
  token: WireLong;
  session_id: WireLong;
  value: Uint8Array;
  shared: boolean;
}

export interface ListRequest {
  prefix: string;
  limit: number;
  page_token: string;
}

export interface ListedLock {
  key: string;
  holders: Holder[];
  waiters: number;
  last_token: WireLong;
}

export interface ListResponse {
  locks: ListedLock[];
  next_page_token: string;
  index: WireLong;
}

export interface RevokeRequest {
  key: string;
  token: WireLong;
  reason: string;
  request_id: string;
}

export interface RevokeResponse {
  revoked: WireLong[];
}

/** Which lock call a LockCall / LockAnswer (and a forwarded call) carries: the virtual oneof field. */
export type LockCallName = 'acquire' | 'renew' | 'release' | 'get' | 'open_session' | 'renew_session' | 'close_session';

/** A decoded LockCall (Lock/Stream): exactly one request set (virtual `request` names it), or a cancel. */
export interface WireLockCall {
  call_id: WireLong;
  timeout_ms: number;
  cancel: boolean;
  request?: LockCallName;
  acquire?: AcquireRequest;
  renew?: RenewRequest;
  release?: ReleaseRequest;
  get?: GetRequest;
  open_session?: OpenSessionRequest;
  renew_session?: SessionCallRequest;
  close_session?: SessionCallRequest;
}

export interface WireLockAnswer {
  call_id: WireLong;
  code: number;
  details: string;
  leader: string;
  response?: LockCallName;
  acquire?: AcquireResponse;
  renew?: RenewResponse;
  release?: ReleaseResponse;
  get?: GetResponse;
  open_session?: OpenSessionResponse;
  renew_session?: RenewSessionResponse;
  close_session?: CloseSessionResponse;
}

export interface LockClient extends grpc.Client {
  Acquire: UnaryMethod<AcquireRequest, AcquireResponse>;
  acquire: UnaryMethod<AcquireRequest, AcquireResponse>;
  Renew: UnaryMethod<RenewRequest, RenewResponse>;
  renew: UnaryMethod<RenewRequest, RenewResponse>;
  Release: UnaryMethod<ReleaseRequest, ReleaseResponse>;
  release: UnaryMethod<ReleaseRequest, ReleaseResponse>;
  Get: UnaryMethod<GetRequest, GetResponse>;
  get: UnaryMethod<GetRequest, GetResponse>;
  OpenSession: UnaryMethod<OpenSessionRequest, OpenSessionResponse>;
  RenewSession: UnaryMethod<SessionCallRequest, RenewSessionResponse>;
  CloseSession: UnaryMethod<SessionCallRequest, CloseSessionResponse>;
  Stream(options?: Partial<grpc.CallOptions>): grpc.ClientDuplexStream<WireInput<WireLockCall>, WireLockAnswer>;
  Watch(request: WireInput<WatchRequest>, options?: Partial<grpc.CallOptions>): grpc.ClientReadableStream<WatchEvent>;
  List: UnaryMethod<ListRequest, ListResponse>;
  Revoke: UnaryMethod<RevokeRequest, RevokeResponse>;
}

export interface LockHandlers extends grpc.UntypedServiceImplementation {
  Acquire: grpc.handleUnaryCall<AcquireRequest, WireInput<AcquireResponse>>;
  Renew: grpc.handleUnaryCall<RenewRequest, WireInput<RenewResponse>>;
  Release: grpc.handleUnaryCall<ReleaseRequest, WireInput<ReleaseResponse>>;
  Get: grpc.handleUnaryCall<GetRequest, WireInput<GetResponse>>;
  OpenSession: grpc.handleUnaryCall<OpenSessionRequest, WireInput<OpenSessionResponse>>;
  RenewSession: grpc.handleUnaryCall<SessionCallRequest, WireInput<RenewSessionResponse>>;
  CloseSession: grpc.handleUnaryCall<SessionCallRequest, WireInput<CloseSessionResponse>>;
  Stream: grpc.handleBidiStreamingCall<WireLockCall, WireInput<WireLockAnswer>>;
  Watch: grpc.handleServerStreamingCall<WatchRequest, WireInput<WatchEvent>>;
  List: grpc.handleUnaryCall<ListRequest, WireInput<ListResponse>>;
  Revoke: grpc.handleUnaryCall<RevokeRequest, WireInput<RevokeResponse>>;
}

export const LockClient = clientConstructor<LockClient, LockHandlers>('leasehold.v1.Lock');

/** The unary methods of service Lock. */
export type LockMethod = 'Acquire' | 'Renew' | 'Release' | 'Get' | 'OpenSession' | 'RenewSession' | 'CloseSession';

/** Each unary method's name as a Lock/Stream (and forwarded) call: the oneof field that carries it. */
export const LOCK_CALL_NAME: Readonly<Record<LockMethod, LockCallName>> = Object.freeze({
  Acquire: 'acquire',
  Renew: 'renew',
  Release: 'release',
  Get: 'get',
  OpenSession: 'open_session',
  RenewSession: 'renew_session',
  CloseSession: 'close_session',
});

/** Response metadata by which a node tells the client the current leader's address (so it can skip the
 *  follower's forwarding hop next time). */
export const LEADER_METADATA = 'x-leasehold-leader';

// ---------------------------------------------------------------------------------------------------
// leasehold.v1.Cluster (cluster.proto)
// ---------------------------------------------------------------------------------------------------

export const ROLES = ['UNKNOWN', 'LEADER', 'FOLLOWER', 'CANDIDATE'] as const;
export type WireRole = (typeof ROLES)[number];

export interface StatusRequest {}

export interface Member {
  id: string;
  address: string;
  voter: boolean;
  match_index: WireLong;
  learner: boolean;
  seen: boolean;
  /** The answering node's log records that this member has run (survives its restarts; cluster level 2). */
  ran: boolean;
}

export interface StatusResponse {
  node_id: string;
  role: WireRole;
  term: WireLong;
  leader_id: string;
  commit_index: WireLong;
  applied_index: WireLong;
  members: Member[];
  cluster_id: string;
  serving: boolean;
  health: string;
  /** The cluster level the node's applied log reached, and the highest its build reads (0: a build before
   *  the version gate). */
  cluster_level: number;
  build_level: number;
}

export interface AddMemberRequest {
  id: string;
  address: string;
  learner: boolean;
}

export interface PromoteMemberRequest {
  id: string;
}

export interface RemoveMemberRequest {
  id: string;
}

export interface MembersResponse {
  members: Member[];
}

export interface TransferLeaderRequest {
  to_id: string;
}

export interface TransferLeaderResponse {
  leader_id: string;
  term: WireLong;
}

export type ClusterMethod = 'AddMember' | 'PromoteMember' | 'RemoveMember' | 'TransferLeader';

export interface ClusterClient extends grpc.Client {
  Status: UnaryMethod<StatusRequest, StatusResponse>;
  status: UnaryMethod<StatusRequest, StatusResponse>;
  AddMember: UnaryMethod<AddMemberRequest, MembersResponse>;
  PromoteMember: UnaryMethod<PromoteMemberRequest, MembersResponse>;
  RemoveMember: UnaryMethod<RemoveMemberRequest, MembersResponse>;
  TransferLeader: UnaryMethod<TransferLeaderRequest, TransferLeaderResponse>;
}

export interface ClusterHandlers extends grpc.UntypedServiceImplementation {
  Status: grpc.handleUnaryCall<StatusRequest, WireInput<StatusResponse>>;
  AddMember: grpc.handleUnaryCall<AddMemberRequest, WireInput<MembersResponse>>;
  PromoteMember: grpc.handleUnaryCall<PromoteMemberRequest, WireInput<MembersResponse>>;
  RemoveMember: grpc.handleUnaryCall<RemoveMemberRequest, WireInput<MembersResponse>>;
  TransferLeader: grpc.handleUnaryCall<TransferLeaderRequest, WireInput<TransferLeaderResponse>>;
}

export const ClusterClient = clientConstructor<ClusterClient, ClusterHandlers>('leasehold.v1.Cluster');

// ---------------------------------------------------------------------------------------------------
// leasehold.v1.Raft (raft.proto): the peer transport. Names carry a `Wire` prefix because the core
// (src/raft/core/types.ts) owns the plain names; codec.ts converts between the two.
// ---------------------------------------------------------------------------------------------------

export const ENTRY_KINDS = ['ENTRY_KIND_UNSPECIFIED', 'ENTRY_KIND_NORMAL', 'ENTRY_KIND_NOOP', 'ENTRY_KIND_CONFIG'] as const;
export type WireEntryKind = (typeof ENTRY_KINDS)[number];

export interface WireEntry {
  index: WireLong;
  term: WireLong;
  kind: WireEntryKind;
  data: Buffer;
}

export interface WireConfState {
  voters: string[];
  learners: string[];
  removed: string[];
  addresses: WirePeerAddress[];
  cluster_id: string;
}

export interface WirePeerAddress {
  id: string;
  address: string;
}

export interface WireSnapshotMeta {
  index: WireLong;
  term: WireLong;
  conf: WireConfState | null;
}

export interface WireRequestVote {
  pre_vote: boolean;
  last_log_index: WireLong;
  last_log_term: WireLong;
  transfer: boolean;
}

export interface WireRequestVoteResponse {
  pre_vote: boolean;
  granted: boolean;
}

export interface WireAppendEntries {
  prev_log_index: WireLong;
  prev_log_term: WireLong;
  entries: WireEntry[];
  leader_commit: WireLong;
  round: WireLong;
}

export interface WireAppendEntriesResponse {
  success: boolean;
  match_index: WireLong;
  conflict_index: WireLong;
  conflict_term: WireLong;
  round: WireLong;
}

export interface WireInstallSnapshot {
  meta: WireSnapshotMeta | null;
  offset: WireLong;
  chunk: Buffer;
  done: boolean;
  round: WireLong;
}

export interface WireInstallSnapshotResponse {
  snapshot_index: WireLong;
  next_offset: WireLong;
  done: boolean;
  success: boolean;
  round: WireLong;
}

export interface WireTimeoutNow {}

export interface WireReadIndexRequest {
  ctx: string;
}

export interface WireReadIndexResponse {
  ctx: string;
  index: WireLong;
}

/** The members of RaftMessage's `body` oneof, by field name. */
export interface WireRaftBodies {
  request_vote: WireRequestVote;
  request_vote_response: WireRequestVoteResponse;
  append_entries: WireAppendEntries;
  append_entries_response: WireAppendEntriesResponse;
  install_snapshot: WireInstallSnapshot;
  install_snapshot_response: WireInstallSnapshotResponse;
  timeout_now: WireTimeoutNow;
  read_index_request: WireReadIndexRequest;
  read_index_response: WireReadIndexResponse;
}

export type WireRaftBodyName = keyof WireRaftBodies;

export interface WireRaftHeader {
  from: string;
  to: string;
  term: WireLong;
  /** The sender's cluster id ('' while a joining node has not learned it). */
  cluster_id: string;
  /** The highest cluster level the sender's build reads; 0 (absent) from a build before the gate. */
  cluster_level?: number;
}

/** A decoded RaftMessage: the header plus exactly one body, named by the virtual `body` field. */
export type WireRaftMessage = {
  [K in WireRaftBodyName]: WireRaftHeader & { body: K } & { [P in K]: WireRaftBodies[K] };
}[WireRaftBodyName];

export interface WireStreamSummary {
  received: WireLong;
}

/** Which lock call a forwarded call / answer carries (the virtual oneof field). */
export type ForwardedMethodName = LockCallName;

/** A decoded ForwardedCall: exactly one request set (virtual `request` names it), or a cancel. */
export interface WireForwardedCall {
  call_id: WireLong;
  from: string;
  cluster_id: string;
  timeout_ms: number;
  cancel: boolean;
  request?: ForwardedMethodName;
  acquire?: AcquireRequest;
  renew?: RenewRequest;
  release?: ReleaseRequest;
  get?: GetRequest;
  open_session?: OpenSessionRequest;
  renew_session?: SessionCallRequest;
  close_session?: SessionCallRequest;
}

export interface WireForwardedAnswer {
  call_id: WireLong;
  code: number;
  details: string;
  response?: ForwardedMethodName;
  acquire?: AcquireResponse;
  renew?: RenewResponse;
  release?: ReleaseResponse;
  get?: GetResponse;
  open_session?: OpenSessionResponse;
  renew_session?: RenewSessionResponse;
  close_session?: CloseSessionResponse;
}

export interface RaftClient extends grpc.Client {
  Stream: ClientStreamingMethod<WireRaftMessage, WireStreamSummary>;
  stream: ClientStreamingMethod<WireRaftMessage, WireStreamSummary>;
  Forward(options?: Partial<grpc.CallOptions>): grpc.ClientDuplexStream<WireInput<WireForwardedCall>, WireForwardedAnswer>;
}

export interface RaftHandlers extends grpc.UntypedServiceImplementation {
  Stream: grpc.handleClientStreamingCall<WireRaftMessage, WireInput<WireStreamSummary>>;
  Forward: grpc.handleBidiStreamingCall<WireForwardedCall, WireInput<WireForwardedAnswer>>;
}

export const RaftClient = clientConstructor<RaftClient, RaftHandlers>('leasehold.v1.Raft');
