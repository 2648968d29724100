// leasehold.v1.Lock (proto/leasehold/v1/lock.proto): the decoded shape of each message, named as in the
// .proto, the service's client and handler types, and the wire constants of the lock calls. The client
// (src/client) and the server (src/server) both speak it; what a field means is in lock.proto and SPEC.
import type * as grpc from '@grpc/grpc-js';
import type { RefusalReason } from '../lock/types.js';
import { protoService, type UnaryMethod } from './load.js';
import type { WireInput, WireLong } from './scalars.js';

/** leasehold.v1.Reason, why a renew or release was refused: the lock machine's `RefusalReason`, whose value
 *  list (`REFUSAL_REASONS`, src/lock/types.ts) is in enum number order. A type import: the client loads no
 *  part of src/lock. */
export type Reason = RefusalReason;

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

export interface RenewSessionRequest {
  session_id: WireLong;
  request_id: string;
  owner: string;
}

export interface CloseSessionRequest {
  session_id: WireLong;
  request_id: string;
  owner: string;
}

/** Either session call: what the server reads of both alike. */
export type SessionCallRequest = RenewSessionRequest | CloseSessionRequest;

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
  owner: string;
}

export interface RevokeResponse {
  revoked: WireLong[];
}

/** Which lock call a LockCall / LockAnswer (and a forwarded call) carries: the virtual oneof field. */
export type LockCallName = 'acquire' | 'renew' | 'release' | 'get' | 'open_session' | 'renew_session' | 'close_session';

/** A decoded LockCall (Lock/Stream): exactly one request set (virtual `request` names it), or a cancel. */
export interface LockCall {
  call_id: WireLong;
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

export interface LockAnswer {
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

/** The grpc-js client stub of service Lock (not the library's LockClient, src/client/client.ts, which is built on it). */
export interface LockStub extends grpc.Client {
  Acquire: UnaryMethod<AcquireRequest, AcquireResponse>;
  acquire: UnaryMethod<AcquireRequest, AcquireResponse>;
  Renew: UnaryMethod<RenewRequest, RenewResponse>;
  renew: UnaryMethod<RenewRequest, RenewResponse>;
  Release: UnaryMethod<ReleaseRequest, ReleaseResponse>;
  release: UnaryMethod<ReleaseRequest, ReleaseResponse>;
  Get: UnaryMethod<GetRequest, GetResponse>;
  get: UnaryMethod<GetRequest, GetResponse>;
  OpenSession: UnaryMethod<OpenSessionRequest, OpenSessionResponse>;
  RenewSession: UnaryMethod<RenewSessionRequest, RenewSessionResponse>;
  CloseSession: UnaryMethod<CloseSessionRequest, CloseSessionResponse>;
  Stream(options?: Partial<grpc.CallOptions>): grpc.ClientDuplexStream<WireInput<LockCall>, LockAnswer>;
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
  RenewSession: grpc.handleUnaryCall<RenewSessionRequest, WireInput<RenewSessionResponse>>;
  CloseSession: grpc.handleUnaryCall<CloseSessionRequest, WireInput<CloseSessionResponse>>;
  /** As protobufjs's codec gives them; the node's server reads Lock/Stream with its own codec instead
   *  (server/client-api/lock-stream-codec.ts: the envelope by hand, the call inside decoded) and writes
   *  each LockAnswer as bytes. */
  Stream: grpc.handleBidiStreamingCall<LockCall, WireInput<LockAnswer>>;
  Watch: grpc.handleServerStreamingCall<WatchRequest, WireInput<WatchEvent>>;
  List: grpc.handleUnaryCall<ListRequest, WireInput<ListResponse>>;
  Revoke: grpc.handleUnaryCall<RevokeRequest, WireInput<RevokeResponse>>;
}

/** leasehold.v1.Lock for grpc-js: `lockGrpcService.client(address, credentials)`, `lockGrpcService.definition()`
 *  (the proto files are read on the first call of either). */
export const lockGrpcService = protoService<LockStub, LockHandlers>('leasehold.v1.Lock');

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
