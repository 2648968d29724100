// One fully populated sample per request/response type of every service in proto/, typed with the
// hand-written interfaces of src/wire/{lock,cluster,raft}.ts. Each sample is checked twice in proto.test.ts:
//   - by the compiler: an annotated object literal must have every field of its interface and no other;
//   - at run time: its keys and value kinds against the loaded descriptor, and a serialize -> deserialize
//     round trip must give it back exactly (so the shape is the one proto-loader really produces).
// Together they pin interface == .proto. A new field in a .proto fails the coverage check until it is
// added to the interface and to a sample here.
import type {
  AcquireRequest,
  AcquireResponse,
  CloseSessionRequest,
  CloseSessionResponse,
  GetRequest,
  GetResponse,
  ListRequest,
  ListResponse,
  LockAnswer,
  LockCall,
  OpenSessionRequest,
  OpenSessionResponse,
  ReleaseRequest,
  ReleaseResponse,
  RenewRequest,
  RenewResponse,
  RenewSessionRequest,
  RenewSessionResponse,
  RevokeRequest,
  RevokeResponse,
  WatchEvent,
  WatchRequest,
} from '../../../src/wire/lock.js';
import type {
  AddMemberRequest,
  MembersResponse,
  PromoteMemberRequest,
  RemoveMemberRequest,
  StatusRequest,
  StatusResponse,
  TransferLeaderRequest,
  TransferLeaderResponse,
  SnapshotRequest,
  SnapshotChunk,
} from '../../../src/wire/cluster.js';
import type { ForwardedAnswer, ForwardedCall, RaftMessage, StreamSummary } from '../../../src/wire/raft.js';

export interface WireSample {
  /** Fully-qualified service name, e.g. leasehold.v1.Lock. */
  service: string;
  method: string;
  side: 'request' | 'response';
  value: object;
}

const UINT64_MAX = '18446744073709551615';
const INT64_MIN = '-9223372036854775808';

// ---- leasehold.v1.Lock ----
const acquireRequest: AcquireRequest = {
  key: 'orders/42',
  owner: 'worker-7',
  ttl_ms: '30000',
  wait_ms: '5000',
  request_id: 'req-1',
  lock_delay_ms: '2000',
  value: Buffer.from('job-42'),
  session_id: '9007199254740993',
  limit: 3,
  shared: true,
};
const acquireResponse: AcquireResponse = {
  acquired: true,
  token: UINT64_MAX,
  ttl_ms: '30000',
  expires_at_ms: '1732900000000',
  holder_owner: 'worker-3',
  holder_ttl_ms: '1200',
  delay_ms_left: '0',
};
const renewRequest: RenewRequest = {
  key: 'orders/42',
  owner: 'worker-7',
  token: '9007199254740993', // 2^53 + 1: not representable as a number
  ttl_ms: '30000',
  request_id: 'req-2',
};
const renewResponse: RenewResponse = { renewed: false, ttl_ms: '0', expires_at_ms: INT64_MIN, reason: 'EXPIRED' };
const releaseRequest: ReleaseRequest = { key: 'orders/42', owner: 'worker-7', token: '17', request_id: 'req-3' };
const releaseResponse: ReleaseResponse = { released: false, reason: 'WRONG_TOKEN' };
const getRequest: GetRequest = { key: 'orders/42' };
const revokeRequest: RevokeRequest = { key: 'orders/42', token: '17', reason: 'stuck worker', request_id: 'r-1', owner: 'ops' };
const revokeResponse: RevokeResponse = { revoked: ['17'] };
const listRequest: ListRequest = { prefix: 'orders/', limit: 100, page_token: 'orders/41' };
const listResponse: ListResponse = {
  locks: [
    {
      key: 'orders/42',
      holders: [
        {
          owner: 'worker-7',
          token: '17',
          ttl_ms: '2500',
          expires_at_ms: '1732900000000',
          shared: false,
          session_id: '0',
          value: Buffer.from('x'),
        },
      ],
      waiters: 2,
      last_token: '17',
    },
  ],
  next_page_token: 'orders/42',
  index: '19',
};
const watchRequest: WatchRequest = { key: '', prefix: 'orders/', after_index: '120', include_renewals: true };
const watchEvent: WatchEvent = {
  index: '121',
  key: 'orders/42',
  kind: 'ACQUIRED',
  owner: 'worker-7',
  token: '121',
  session_id: '96',
  value: Buffer.from('10.0.0.7:8080'),
  shared: false,
};
const getResponse: GetResponse = {
  held: true,
  owner: 'worker-7',
  token: '17',
  ttl_ms: '2500',
  expires_at_ms: '1732900000000',
  last_token: '17',
  waiters: 3,
  holders: [
    {
      owner: 'worker-7',
      token: '17',
      ttl_ms: '2500',
      expires_at_ms: '1732900000000',
      shared: false,
      session_id: '0',
      value: Buffer.from('10.0.0.7:8080'),
    },
  ],
  index: '18',
  limit: 4,
};

const openSessionRequest: OpenSessionRequest = { owner: 'worker-7', ttl_ms: '10000', request_id: 'req-4', lock_delay_ms: '1000' };
const openSessionResponse: OpenSessionResponse = { session_id: UINT64_MAX, ttl_ms: '10000', expires_at_ms: '1732900000000' };
const renewSessionRequest: RenewSessionRequest = { session_id: '41', request_id: 'req-5', owner: 'worker-7' };
const renewSessionResponse: RenewSessionResponse = { renewed: false, ttl_ms: '0', expires_at_ms: '0', reason: 'EXPIRED' };
const closeSessionRequest: CloseSessionRequest = { session_id: '41', request_id: 'req-6', owner: '' };
const closeSessionResponse: CloseSessionResponse = { closed: true, released: ['orders/42', 'orders/43'], reason: 'UNSPECIFIED' };

// ---- leasehold.v1.Cluster ----
const statusRequest: StatusRequest = {};
const statusResponse: StatusResponse = {
  node_id: 'n1',
  role: 'LEADER',
  term: '7',
  leader_id: 'n1',
  commit_index: '120',
  applied_index: '119',
  members: [
    { id: 'n1', address: '127.0.0.1:7001', voter: true, learner: false, match_index: '120', seen: true, ran: true },
    { id: 'n2', address: '127.0.0.1:7002', voter: false, learner: true, match_index: '0', seen: false, ran: false },
  ],
  cluster_id: 'c-1',
  serving: true,
  health: 'leader with a quorum',
  cluster_level: 2,
  build_level: 3,
};

// ---- leasehold.v1.Raft: one RaftMessage per body ----
const header = { from: 'n1', to: 'n2', term: '5', cluster_id: 'c-1', cluster_level: 2, batch: [] as RaftMessage[] } as const;
/** A message in a batch: its own header, the batch's cluster id and level (proto: RaftMessage.batch). */
const batched = { from: 'n1', to: 'n2', term: '6', cluster_id: '', cluster_level: 0, batch: [] as RaftMessage[] } as const;
const raftMessages: RaftMessage[] = [
  {
    ...header,
    body: 'request_vote',
    request_vote: { pre_vote: true, last_log_index: '10', last_log_term: '4', transfer: true },
  },
  { ...header, body: 'request_vote_response', request_vote_response: { pre_vote: true, granted: true } },
  {
    ...header,
    body: 'append_entries',
    append_entries: {
      prev_log_index: '10',
      prev_log_term: '4',
      entries: [
        { index: '11', term: '5', kind: 'ENTRY_KIND_NOOP', data: Buffer.alloc(0) },
        { index: '12', term: '5', kind: 'ENTRY_KIND_NORMAL', data: Buffer.from([1, 2, 3, 255]) },
        { index: '13', term: '5', kind: 'ENTRY_KIND_CONFIG', data: Buffer.from('voters') },
      ],
      leader_commit: '11',
      round: '3',
    },
  },
  {
    ...header,
    body: 'append_entries_response',
    append_entries_response: { success: false, match_index: '0', conflict_index: '8', conflict_term: '3', round: '3' },
  },
  {
    ...header,
    body: 'install_snapshot',
    install_snapshot: {
      meta: {
        index: '100',
        term: '4',
        conf: {
          voters: ['n1', 'n2', 'n3'],
          learners: ['n4'],
          removed: ['n0'],
          addresses: [{ id: 'n1', address: '127.0.0.1:7001' }],
          cluster_id: 'c-1',
        },
      },
      offset: '1048576',
      chunk: Buffer.from([9, 8, 7]),
      done: true,
      round: '2',
    },
  },
  {
    ...header,
    body: 'install_snapshot_response',
    install_snapshot_response: { snapshot_index: '100', next_offset: '1048579', done: true, success: true, round: '2' },
  },
  { ...header, body: 'timeout_now', timeout_now: {} },
  { ...header, body: 'read_index_request', read_index_request: { ctx: 'read-1' } },
  { ...header, body: 'read_index_response', read_index_response: { ctx: 'read-1', index: '120' } },
  {
    ...header,
    body: 'read_index_response',
    read_index_response: { ctx: 'read-2', index: '121' },
    batch: [
      { ...batched, body: 'timeout_now', timeout_now: {} },
      { ...batched, body: 'read_index_request', read_index_request: { ctx: 'read-3' } },
    ],
  },
];
const streamSummary: StreamSummary = { received: '42' };
const forwardHeader = { call_id: UINT64_MAX, from: 'n2', cluster_id: 'c-1', timeout_ms: 4294967295, cancel: false };
const forwardedCalls: ForwardedCall[] = [
  { ...forwardHeader, request: 'acquire', acquire: acquireRequest },
  { ...forwardHeader, request: 'renew', renew: renewRequest },
  { ...forwardHeader, request: 'release', release: releaseRequest },
  { ...forwardHeader, request: 'get', get: getRequest },
  { ...forwardHeader, request: 'open_session', open_session: openSessionRequest },
  { ...forwardHeader, request: 'renew_session', renew_session: renewSessionRequest },
  { ...forwardHeader, request: 'close_session', close_session: closeSessionRequest },
  { ...forwardHeader, timeout_ms: 0, cancel: true },
];
const forwardedAnswers: ForwardedAnswer[] = [
  { call_id: '7', code: 0, details: '', response: 'acquire', acquire: acquireResponse },
  { call_id: '8', code: 0, details: '', response: 'renew', renew: renewResponse },
  { call_id: '9', code: 0, details: '', response: 'release', release: releaseResponse },
  { call_id: '10', code: 0, details: '', response: 'get', get: getResponse },
  { call_id: '12', code: 0, details: '', response: 'open_session', open_session: openSessionResponse },
  { call_id: '13', code: 0, details: '', response: 'renew_session', renew_session: renewSessionResponse },
  { call_id: '14', code: 0, details: '', response: 'close_session', close_session: closeSessionResponse },
  { call_id: '11', code: 14, details: 'no leader' },
];

const lockCalls: LockCall[] = [
  { call_id: UINT64_MAX, timeout_ms: 4294967295, cancel: false, request: 'acquire', acquire: acquireRequest },
  { call_id: '2', timeout_ms: 0, cancel: false, request: 'renew', renew: renewRequest },
  { call_id: '3', timeout_ms: 100, cancel: false, request: 'release', release: releaseRequest },
  { call_id: '4', timeout_ms: 100, cancel: false, request: 'get', get: getRequest },
  { call_id: '6', timeout_ms: 100, cancel: false, request: 'open_session', open_session: openSessionRequest },
  { call_id: '7', timeout_ms: 100, cancel: false, request: 'renew_session', renew_session: renewSessionRequest },
  { call_id: '8', timeout_ms: 100, cancel: false, request: 'close_session', close_session: closeSessionRequest },
  { call_id: '1', timeout_ms: 0, cancel: true },
];
const lockAnswers: LockAnswer[] = [
  { call_id: UINT64_MAX, code: 0, details: '', leader: '127.0.0.1:7001', response: 'acquire', acquire: acquireResponse },
  { call_id: '2', code: 0, details: '', leader: '', response: 'renew', renew: renewResponse },
  { call_id: '3', code: 0, details: '', leader: '', response: 'release', release: releaseResponse },
  { call_id: '4', code: 0, details: '', leader: '', response: 'get', get: getResponse },
  { call_id: '6', code: 0, details: '', leader: '', response: 'open_session', open_session: openSessionResponse },
  { call_id: '7', code: 0, details: '', leader: '', response: 'renew_session', renew_session: renewSessionResponse },
  { call_id: '8', code: 0, details: '', leader: '', response: 'close_session', close_session: closeSessionResponse },
  { call_id: '5', code: 3, details: 'key: must not be empty', leader: '' },
];

function many(service: string, method: string, side: WireSample['side'], values: object[]): WireSample[] {
  return values.map((value) => ({ service, method, side, value }));
}

const members = statusResponse.members;
const addMemberRequest: AddMemberRequest = { id: 'n4', address: '127.0.0.1:7004', learner: true };
const promoteMemberRequest: PromoteMemberRequest = { id: 'n4' };
const removeMemberRequest: RemoveMemberRequest = { id: 'n2' };
const membersResponse: MembersResponse = { members };
const transferLeaderRequest: TransferLeaderRequest = { to_id: 'n3' };
const transferLeaderResponse: TransferLeaderResponse = { leader_id: 'n3', term: '8' };
const snapshotRequest: SnapshotRequest = { pace_percent: 40 };
const snapshotChunk: SnapshotChunk = { data: Buffer.from('LHBK\x01', 'latin1') };

export const WIRE_SAMPLES: readonly WireSample[] = [
  ...many('leasehold.v1.Lock', 'Stream', 'request', lockCalls),
  ...many('leasehold.v1.Lock', 'Stream', 'response', lockAnswers),
  ...many('leasehold.v1.Lock', 'Acquire', 'request', [acquireRequest]),
  ...many('leasehold.v1.Lock', 'Acquire', 'response', [acquireResponse]),
  ...many('leasehold.v1.Lock', 'Renew', 'request', [renewRequest]),
  ...many('leasehold.v1.Lock', 'Renew', 'response', [renewResponse]),
  ...many('leasehold.v1.Lock', 'Release', 'request', [releaseRequest]),
  ...many('leasehold.v1.Lock', 'Release', 'response', [releaseResponse]),
  ...many('leasehold.v1.Lock', 'Get', 'request', [getRequest]),
  ...many('leasehold.v1.Lock', 'Get', 'response', [getResponse]),
  ...many('leasehold.v1.Lock', 'Revoke', 'request', [revokeRequest]),
  ...many('leasehold.v1.Lock', 'Revoke', 'response', [revokeResponse]),
  ...many('leasehold.v1.Lock', 'List', 'request', [listRequest]),
  ...many('leasehold.v1.Lock', 'List', 'response', [listResponse]),
  ...many('leasehold.v1.Lock', 'Watch', 'request', [watchRequest]),
  ...many('leasehold.v1.Lock', 'Watch', 'response', [watchEvent]),
  ...many('leasehold.v1.Lock', 'OpenSession', 'request', [openSessionRequest]),
  ...many('leasehold.v1.Lock', 'OpenSession', 'response', [openSessionResponse]),
  ...many('leasehold.v1.Lock', 'RenewSession', 'request', [renewSessionRequest]),
  ...many('leasehold.v1.Lock', 'RenewSession', 'response', [renewSessionResponse]),
  ...many('leasehold.v1.Lock', 'CloseSession', 'request', [closeSessionRequest]),
  ...many('leasehold.v1.Lock', 'CloseSession', 'response', [closeSessionResponse]),
  ...many('leasehold.v1.Cluster', 'Status', 'request', [statusRequest]),
  ...many('leasehold.v1.Cluster', 'Status', 'response', [statusResponse]),
  ...many('leasehold.v1.Cluster', 'AddMember', 'request', [addMemberRequest]),
  ...many('leasehold.v1.Cluster', 'AddMember', 'response', [membersResponse]),
  ...many('leasehold.v1.Cluster', 'PromoteMember', 'request', [promoteMemberRequest]),
  ...many('leasehold.v1.Cluster', 'PromoteMember', 'response', [membersResponse]),
  ...many('leasehold.v1.Cluster', 'RemoveMember', 'request', [removeMemberRequest]),
  ...many('leasehold.v1.Cluster', 'RemoveMember', 'response', [membersResponse]),
  ...many('leasehold.v1.Cluster', 'TransferLeader', 'request', [transferLeaderRequest]),
  ...many('leasehold.v1.Cluster', 'TransferLeader', 'response', [transferLeaderResponse]),
  ...many('leasehold.v1.Cluster', 'Snapshot', 'request', [snapshotRequest]),
  ...many('leasehold.v1.Cluster', 'Snapshot', 'response', [snapshotChunk]),
  ...many('leasehold.v1.Raft', 'Stream', 'request', raftMessages),
  ...many('leasehold.v1.Raft', 'Stream', 'response', [streamSummary]),
  ...many('leasehold.v1.Raft', 'Forward', 'request', forwardedCalls),
  ...many('leasehold.v1.Raft', 'Forward', 'response', forwardedAnswers),
];
