// The field numbers of proto/leasehold/v1/raft.proto's Raft messages and the EntryKind values, for the
// hand-written codec (raft-encode.ts, raft-decode.ts). They must match the .proto: test/unit/wire/proto.test.ts
// checks every one against the loaded descriptors.
import type { EntryKind } from '../raft/core/types.js';

export const RAFT_MESSAGE = {
  from: 1,
  to: 2,
  term: 3,
  cluster_id: 4,
  cluster_level: 5,
  batch: 6,
  request_vote: 10,
  request_vote_response: 11,
  append_entries: 12,
  append_entries_response: 13,
  install_snapshot: 14,
  install_snapshot_response: 15,
  timeout_now: 16,
  read_index_request: 17,
  read_index_response: 18,
} as const;

export const ENTRY = { index: 1, term: 2, kind: 3, data: 4 } as const;
export const CONF_STATE = { voters: 1, learners: 2, removed: 3, addresses: 4, cluster_id: 5 } as const;
export const PEER_ADDRESS = { id: 1, address: 2 } as const;
export const SNAPSHOT_META = { index: 1, term: 2, conf: 3 } as const;
export const REQUEST_VOTE = { pre_vote: 1, last_log_index: 2, last_log_term: 3, transfer: 4 } as const;
export const REQUEST_VOTE_RESPONSE = { pre_vote: 1, granted: 2 } as const;
export const APPEND_ENTRIES = { prev_log_index: 1, prev_log_term: 2, entries: 3, leader_commit: 4, round: 5 } as const;
export const APPEND_ENTRIES_RESPONSE = { success: 1, match_index: 2, conflict_index: 3, conflict_term: 4, round: 5 } as const;
export const INSTALL_SNAPSHOT = { meta: 1, offset: 2, chunk: 3, done: 4, round: 5 } as const;
export const INSTALL_SNAPSHOT_RESPONSE = { snapshot_index: 1, next_offset: 2, done: 3, success: 4, round: 5 } as const;
export const READ_INDEX_REQUEST = { ctx: 1 } as const;
export const READ_INDEX_RESPONSE = { ctx: 1, index: 2 } as const;

/** Every message's field table by its .proto name (the proto test walks this). */
export const RAFT_FIELD_TABLES: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  RaftMessage: RAFT_MESSAGE,
  Entry: ENTRY,
  ConfState: CONF_STATE,
  PeerAddress: PEER_ADDRESS,
  SnapshotMeta: SNAPSHOT_META,
  RequestVote: REQUEST_VOTE,
  RequestVoteResponse: REQUEST_VOTE_RESPONSE,
  AppendEntries: APPEND_ENTRIES,
  AppendEntriesResponse: APPEND_ENTRIES_RESPONSE,
  InstallSnapshot: INSTALL_SNAPSHOT,
  InstallSnapshotResponse: INSTALL_SNAPSHOT_RESPONSE,
  TimeoutNow: {},
  ReadIndexRequest: READ_INDEX_REQUEST,
  ReadIndexResponse: READ_INDEX_RESPONSE,
};

/** EntryKind on the wire (ENTRY_KIND_UNSPECIFIED = 0 is no kind: refused). */
export const ENTRY_KIND_NUMBER: Readonly<Record<EntryKind, number>> = { normal: 1, noop: 2, config: 3 };
export const ENTRY_KIND_BY_NUMBER: readonly (EntryKind | undefined)[] = [undefined, 'normal', 'noop', 'config'];
