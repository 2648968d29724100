// leasehold.v1.Cluster (proto/leasehold/v1/cluster.proto): the decoded shape of each message, named as in
// the .proto, the service's client and handler types, and the one conversion it needs: the core's role as
// the public Role enum. The client (status, membership) and the server (cluster-api.ts) both speak it.
import type * as grpc from '@grpc/grpc-js';
import type * as raft from '../raft/core/types.js';
import { protoService, type UnaryMethod } from './load.js';
import type { WireInput, WireLong } from './scalars.js';

/** leasehold.v1.Role, the role Cluster.Status reports (SPEC: LEADER, FOLLOWER or CANDIDATE). */
export const ROLES = ['UNKNOWN', 'LEADER', 'FOLLOWER', 'CANDIDATE'] as const;
export type Role = (typeof ROLES)[number];

const ROLE_TO_WIRE: Record<raft.Role, Role> = {
  leader: 'LEADER',
  follower: 'FOLLOWER',
  // Pre-Vote's pre-candidate is campaigning without a known leader: outside, it is a candidate.
  'pre-candidate': 'CANDIDATE',
  candidate: 'CANDIDATE',
};

/** The core's role as the public Cluster.Status enum. */
export function roleToWire(role: raft.Role): Role {
  return ROLE_TO_WIRE[role];
}

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
  role: Role;
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

export interface SnapshotRequest {
  /** Percent of the node's time the stream may take (1..100); 0 = the node's default (backup-pace.ts). */
  pace_percent?: number;
}

export interface SnapshotChunk {
  /** Decoded as a Buffer. */
  data: Uint8Array;
}

export type ClusterMethod = 'AddMember' | 'PromoteMember' | 'RemoveMember' | 'TransferLeader';

/** The grpc-js client stub of service Cluster. */
export interface ClusterStub extends grpc.Client {
  Status: UnaryMethod<StatusRequest, StatusResponse>;
  status: UnaryMethod<StatusRequest, StatusResponse>;
  AddMember: UnaryMethod<AddMemberRequest, MembersResponse>;
  PromoteMember: UnaryMethod<PromoteMemberRequest, MembersResponse>;
  RemoveMember: UnaryMethod<RemoveMemberRequest, MembersResponse>;
  TransferLeader: UnaryMethod<TransferLeaderRequest, TransferLeaderResponse>;
  Snapshot(request: SnapshotRequest, options?: Partial<grpc.CallOptions>): grpc.ClientReadableStream<SnapshotChunk>;
}

export interface ClusterHandlers extends grpc.UntypedServiceImplementation {
  Status: grpc.handleUnaryCall<StatusRequest, WireInput<StatusResponse>>;
  AddMember: grpc.handleUnaryCall<AddMemberRequest, WireInput<MembersResponse>>;
  PromoteMember: grpc.handleUnaryCall<PromoteMemberRequest, WireInput<MembersResponse>>;
  RemoveMember: grpc.handleUnaryCall<RemoveMemberRequest, WireInput<MembersResponse>>;
  TransferLeader: grpc.handleUnaryCall<TransferLeaderRequest, WireInput<TransferLeaderResponse>>;
  Snapshot: grpc.handleServerStreamingCall<SnapshotRequest, WireInput<SnapshotChunk>>;
}

/** leasehold.v1.Cluster for grpc-js: `clusterGrpcService.client(address, credentials)`,
 *  `clusterGrpcService.definition()` (the proto files are read on the first call of either). */
export const clusterGrpcService = protoService<ClusterStub, ClusterHandlers>('leasehold.v1.Cluster');
