// The bytes of one leasehold.v1.RaftMessage (proto/leasehold/v1/raft.proto) straight to the Raft core's
// messages (src/raft/core/types.ts): the message itself, then its `batch`, with the frame's cluster id and
// level. Why by hand and not through protobufjs: see raft-encode.ts (the per-message cost of reflection and
// object graphs on the hottest path).
//
// Everything arriving from a peer is untrusted: a buggy or newer peer, or a stray client on the peer port,
// must never make the core see a NaN index, a negative term, an entry of unknown kind or a gap in the log,
// and must never make this node read past the buffer, loop or allocate beyond it. So the decoder is as
// strict as the strict decoder (src/server/client-api/strict-decode.ts) and the object codec before it
// together: an unknown field, a wrong wire type, an over-wide varint, invalid UTF-8, a count above 2^53-1,
// an unset body, an empty node id, an unknown entry kind, entries that do not follow prev_log_index, a
// snapshot without its meta or conf, a batched message from another sender or with a batch of its own —
// each throws a CodecError naming the field (`batch[2].append_entries.entries[1].term`); the transport
// drops the stream and the core never notices. Raft tolerates lost messages.
//
// It reads every valid encoding, as any protobuf writer may produce it: fields in any order, defaults
// present or left off, a repeated field split, a scalar repeated (the last wins), a sub-message repeated
// (merged, as the protobuf spec says), a oneof member set twice (the last wins).
import type {
  AppendEntries,
  AppendEntriesResponse,
  ConfState,
  Entry,
  InstallSnapshot,
  InstallSnapshotResponse,
  Message,
  ReadIndexRequest,
  ReadIndexResponse,
  RequestVote,
  RequestVoteResponse,
  SnapshotMeta,
  TimeoutNow,
} from '../raft/core/types.js';
import { ProtoReader, refuseTag, WIRE_LEN, WIRE_VARINT, within } from './proto-reader.js';
import {
  APPEND_ENTRIES,
  APPEND_ENTRIES_RESPONSE,
  CONF_STATE,
  ENTRY,
  ENTRY_KIND_BY_NUMBER,
  INSTALL_SNAPSHOT,
  INSTALL_SNAPSHOT_RESPONSE,
  PEER_ADDRESS,
  RAFT_MESSAGE,
  READ_INDEX_REQUEST,
  READ_INDEX_RESPONSE,
  REQUEST_VOTE,
  REQUEST_VOTE_RESPONSE,
  SNAPSHOT_META,
} from './raft-fields.js';
import { CodecError } from './scalars.js';

/** One decoded gRPC message of the Raft stream: the Raft messages it carries, in order, and the header
 *  the receiver admits them by. */
export interface RaftFrame {
  messages: Message[];
  /** The sender's cluster id ('' while a joining node has not learned it). */
  clusterId: string;
  /** The highest cluster level the sender's build reads; 0 from a build before the gate. */
  clusterLevel: number;
}

/** A varint field's tag. */
const v = (field: number): number => field * 8 + WIRE_VARINT;
/** A length-delimited field's tag. */
const len = (field: number): number => field * 8 + WIRE_LEN;

// ---------------------------------------------------------------------------------------------------
// Entries and snapshot metadata
// ---------------------------------------------------------------------------------------------------

const ENTRY_INDEX = v(ENTRY.index);
const ENTRY_TERM = v(ENTRY.term);
const ENTRY_KIND = v(ENTRY.kind);
const ENTRY_DATA = len(ENTRY.data);

const EMPTY = new Uint8Array(0);

/** One Entry. Its data is still a view into the received buffer: ownEntryData copies it out. */
function readEntry(r: ProtoReader): Entry {
  let index = 0;
  let term = 0;
  let kind = 0;
  let data: Uint8Array = EMPTY;
  while (r.more()) {
    const tag = r.tag('');
    if (tag === ENTRY_INDEX) index = r.varint('index');
    else if (tag === ENTRY_TERM) term = r.varint('term');
    else if (tag === ENTRY_KIND) kind = r.varint('kind');
    else if (tag === ENTRY_DATA) data = r.bytesView('data');
    else throw refuseTag(tag, ENTRY);
  }
  const known = ENTRY_KIND_BY_NUMBER[kind];
  if (known === undefined) {
    throw new CodecError('kind', `expected ENTRY_KIND_NORMAL, ENTRY_KIND_NOOP or ENTRY_KIND_CONFIG, got ${kind}`);
  }
  // Index 0 and term 0 belong to the bootstrap snapshot only; no real entry has them.
  if (index === 0) throw new CodecError('index', 'log entries start at index 1');
  if (term === 0) throw new CodecError('term', 'log entries have a term of at least 1');
  return { index, term, kind: known, data };
}

/**
 * Copies the entries' data of one received message into ONE new ArrayBuffer and hands each entry a view of
 * its bytes. The views read are into the whole received gRPC message, and the core may keep an entry for a
 * long time (the unstable log, a follower's catch-up tail), which must not pin the message. One ArrayBuffer
 * per entry would be a backing store outside the heap per entry above 64 bytes: a follower's burst of
 * thousands of entries spends 300 ms allocating them, and each is more work for the GC. The slab holds only
 * the entries' bytes and lives as long as its longest-kept entry. Entry data is a view from here on (as WAL
 * replay's is): no reader may assume it starts at byte 0 of its buffer.
 */
export function ownEntryData(entries: Entry[]): void {
  let total = 0;
  for (const e of entries) total += e.data.length;
  const slab = new Uint8Array(total);
  let at = 0;
  for (const e of entries) {
    const length = e.data.length;
    slab.set(e.data, at);
    e.data = slab.subarray(at, at + length);
    at += length;
  }
}

const ADDRESS_ID = len(PEER_ADDRESS.id);
const ADDRESS_ADDRESS = len(PEER_ADDRESS.address);

function readPeerAddress(r: ProtoReader, into: Record<string, string>): void {
  let id = '';
  let address = '';
  while (r.more()) {
    const tag = r.tag('');
    if (tag === ADDRESS_ID) id = r.string('id');
    else if (tag === ADDRESS_ADDRESS) address = r.string('address');
    else throw refuseTag(tag, PEER_ADDRESS);
  }
  if (id === '') throw new CodecError('id', 'expected a node id, got an empty string');
  into[id] = address;
}

const CONF_VOTERS = len(CONF_STATE.voters);
const CONF_LEARNERS = len(CONF_STATE.learners);
const CONF_REMOVED = len(CONF_STATE.removed);
const CONF_ADDRESSES = len(CONF_STATE.addresses);
const CONF_CLUSTER_ID = len(CONF_STATE.cluster_id);

/** A node id in a list at `name[i]`: never empty. */
function readId(r: ProtoReader, list: string[], name: string): void {
  const id = r.string(name);
  if (id === '') throw new CodecError(`${name}[${list.length}]`, 'expected a node id, got an empty string');
  list.push(id);
}

/** A ConfState, merged into `conf` (a repeated sub-message field merges: lists append, scalars replace). */
function readConf(r: ProtoReader, conf: ConfState): void {
  let addresses = 0;
  while (r.more()) {
    const tag = r.tag('');
    if (tag === CONF_VOTERS) readId(r, conf.voters, 'voters');
    else if (tag === CONF_LEARNERS) readId(r, conf.learners, 'learners');
    else if (tag === CONF_REMOVED) readId(r, conf.removed, 'removed');
    else if (tag === CONF_ADDRESSES) {
      const outer = r.enter('addresses');
      try {
        readPeerAddress(r, conf.addresses);
      } catch (err) {
        throw within(`addresses[${addresses}]`, err);
      }
      r.leave(outer);
      addresses++;
    } else if (tag === CONF_CLUSTER_ID) conf.clusterId = r.string('cluster_id');
    else throw refuseTag(tag, CONF_STATE);
  }
}

const META_INDEX = v(SNAPSHOT_META.index);
const META_TERM = v(SNAPSHOT_META.term);
const META_CONF = len(SNAPSHOT_META.conf);

/** SnapshotMeta, merged into `meta`; `conf` stays null until the field is seen (it must be). */
function readMeta(r: ProtoReader, meta: { index: number; term: number; conf: ConfState | null }): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === META_INDEX) meta.index = r.varint('index');
    else if (tag === META_TERM) meta.term = r.varint('term');
    else if (tag === META_CONF) {
      const outer = r.enter('conf');
      meta.conf ??= { clusterId: '', voters: [], learners: [], addresses: {}, removed: [] };
      try {
        readConf(r, meta.conf);
      } catch (err) {
        throw within('conf', err);
      }
      r.leave(outer);
    } else throw refuseTag(tag, SNAPSHOT_META);
  }
}

// ---------------------------------------------------------------------------------------------------
// Bodies: each reads into a draft of its core message (header filled in later), merging when repeated
// ---------------------------------------------------------------------------------------------------

const RV_PRE_VOTE = v(REQUEST_VOTE.pre_vote);
const RV_LAST_LOG_INDEX = v(REQUEST_VOTE.last_log_index);
const RV_LAST_LOG_TERM = v(REQUEST_VOTE.last_log_term);
const RV_TRANSFER = v(REQUEST_VOTE.transfer);

function readRequestVote(r: ProtoReader, m: RequestVote): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === RV_PRE_VOTE) m.preVote = r.bool('pre_vote');
    else if (tag === RV_LAST_LOG_INDEX) m.lastLogIndex = r.varint('last_log_index');
    else if (tag === RV_LAST_LOG_TERM) m.lastLogTerm = r.varint('last_log_term');
    else if (tag === RV_TRANSFER) m.transfer = r.bool('transfer');
    else throw refuseTag(tag, REQUEST_VOTE);
  }
}

const RVR_PRE_VOTE = v(REQUEST_VOTE_RESPONSE.pre_vote);
const RVR_GRANTED = v(REQUEST_VOTE_RESPONSE.granted);

function readRequestVoteResponse(r: ProtoReader, m: RequestVoteResponse): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === RVR_PRE_VOTE) m.preVote = r.bool('pre_vote');
    else if (tag === RVR_GRANTED) m.granted = r.bool('granted');
    else throw refuseTag(tag, REQUEST_VOTE_RESPONSE);
  }
}

const AE_PREV_LOG_INDEX = v(APPEND_ENTRIES.prev_log_index);
const AE_PREV_LOG_TERM = v(APPEND_ENTRIES.prev_log_term);
const AE_ENTRIES = len(APPEND_ENTRIES.entries);
const AE_LEADER_COMMIT = v(APPEND_ENTRIES.leader_commit);
const AE_ROUND = v(APPEND_ENTRIES.round);

function readAppendEntries(r: ProtoReader, m: AppendEntries): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === AE_ENTRIES) {
      const outer = r.enter('entries');
      try {
        m.entries.push(readEntry(r));
      } catch (err) {
        throw within(`entries[${m.entries.length}]`, err);
      }
      r.leave(outer);
    } else if (tag === AE_PREV_LOG_INDEX) m.prevLogIndex = r.varint('prev_log_index');
    else if (tag === AE_PREV_LOG_TERM) m.prevLogTerm = r.varint('prev_log_term');
    else if (tag === AE_LEADER_COMMIT) m.leaderCommit = r.varint('leader_commit');
    else if (tag === AE_ROUND) m.round = r.varint('round');
    else throw refuseTag(tag, APPEND_ENTRIES);
  }
}

/** The core appends the entries as one contiguous run after prevLogIndex; a gap or a term going
 *  backwards would break the Log Matching Property (Raft §5.3), so such a message is refused whole. */
function checkAppendEntries(m: AppendEntries): void {
  let expectedIndex = m.prevLogIndex + 1;
  let previousTerm = m.prevLogTerm;
  const entries = m.entries;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.index !== expectedIndex) {
      throw new CodecError(`entries[${i}].index`, `expected ${expectedIndex} (entries follow prev_log_index contiguously), got ${e.index}`);
    }
    if (e.term < previousTerm || e.term > m.term) {
      throw new CodecError(
        `entries[${i}].term`,
        `term ${e.term} must lie between the previous entry's term ${previousTerm} and the message term ${m.term}`,
      );
    }
    expectedIndex += 1;
    previousTerm = e.term;
  }
  if (entries.length > 0) ownEntryData(entries);
}

const AER_SUCCESS = v(APPEND_ENTRIES_RESPONSE.success);
const AER_MATCH_INDEX = v(APPEND_ENTRIES_RESPONSE.match_index);
const AER_CONFLICT_INDEX = v(APPEND_ENTRIES_RESPONSE.conflict_index);
const AER_CONFLICT_TERM = v(APPEND_ENTRIES_RESPONSE.conflict_term);
const AER_ROUND = v(APPEND_ENTRIES_RESPONSE.round);

function readAppendEntriesResponse(r: ProtoReader, m: AppendEntriesResponse): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === AER_SUCCESS) m.success = r.bool('success');
    else if (tag === AER_MATCH_INDEX) m.matchIndex = r.varint('match_index');
    else if (tag === AER_CONFLICT_INDEX) m.conflictIndex = r.varint('conflict_index');
    else if (tag === AER_CONFLICT_TERM) m.conflictTerm = r.varint('conflict_term');
    else if (tag === AER_ROUND) m.round = r.varint('round');
    else throw refuseTag(tag, APPEND_ENTRIES_RESPONSE);
  }
}

const IS_META = len(INSTALL_SNAPSHOT.meta);
const IS_OFFSET = v(INSTALL_SNAPSHOT.offset);
const IS_CHUNK = len(INSTALL_SNAPSHOT.chunk);
const IS_DONE = v(INSTALL_SNAPSHOT.done);
const IS_ROUND = v(INSTALL_SNAPSHOT.round);

/** An InstallSnapshot read so far: meta and conf may still be missing (null), the chunk still a view. */
type InstallSnapshotDraft = Omit<InstallSnapshot, 'meta'> & { meta: { index: number; term: number; conf: ConfState | null } | null };

function readInstallSnapshot(r: ProtoReader, m: InstallSnapshotDraft): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === IS_META) {
      const outer = r.enter('meta');
      m.meta ??= { index: 0, term: 0, conf: null };
      try {
        readMeta(r, m.meta);
      } catch (err) {
        throw within('meta', err);
      }
      r.leave(outer);
    } else if (tag === IS_OFFSET) m.offset = r.varint('offset');
    else if (tag === IS_CHUNK) m.chunk = r.bytesView('chunk');
    else if (tag === IS_DONE) m.done = r.bool('done');
    else if (tag === IS_ROUND) m.round = r.varint('round');
    else throw refuseTag(tag, INSTALL_SNAPSHOT);
  }
}

/** A snapshot needs its meta and the voter configuration in it; the chunk is copied out of the received
 *  message (it may be kept while the snapshot is written). */
function checkInstallSnapshot(m: InstallSnapshotDraft): InstallSnapshot {
  if (m.meta === null) throw new CodecError('meta', 'missing snapshot metadata');
  if (m.meta.conf === null) throw new CodecError('meta.conf', 'missing voter configuration');
  const chunk = new Uint8Array(m.chunk.length);
  chunk.set(m.chunk);
  m.chunk = chunk;
  return m as InstallSnapshot;
}

const ISR_SNAPSHOT_INDEX = v(INSTALL_SNAPSHOT_RESPONSE.snapshot_index);
const ISR_NEXT_OFFSET = v(INSTALL_SNAPSHOT_RESPONSE.next_offset);
const ISR_DONE = v(INSTALL_SNAPSHOT_RESPONSE.done);
const ISR_SUCCESS = v(INSTALL_SNAPSHOT_RESPONSE.success);
const ISR_ROUND = v(INSTALL_SNAPSHOT_RESPONSE.round);

function readInstallSnapshotResponse(r: ProtoReader, m: InstallSnapshotResponse): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === ISR_SNAPSHOT_INDEX) m.snapshotIndex = r.varint('snapshot_index');
    else if (tag === ISR_NEXT_OFFSET) m.nextOffset = r.varint('next_offset');
    else if (tag === ISR_DONE) m.done = r.bool('done');
    else if (tag === ISR_SUCCESS) m.success = r.bool('success');
    else if (tag === ISR_ROUND) m.round = r.varint('round');
    else throw refuseTag(tag, INSTALL_SNAPSHOT_RESPONSE);
  }
}

function readTimeoutNow(r: ProtoReader): void {
  if (r.more()) throw refuseTag(r.tag(''), {});
}

const RIR_CTX = len(READ_INDEX_REQUEST.ctx);

function readReadIndexRequest(r: ProtoReader, m: ReadIndexRequest): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === RIR_CTX) m.ctx = r.string('ctx');
    else throw refuseTag(tag, READ_INDEX_REQUEST);
  }
}

const RIRESP_CTX = len(READ_INDEX_RESPONSE.ctx);
const RIRESP_INDEX = v(READ_INDEX_RESPONSE.index);

function readReadIndexResponse(r: ProtoReader, m: ReadIndexResponse): void {
  while (r.more()) {
    const tag = r.tag('');
    if (tag === RIRESP_CTX) m.ctx = r.string('ctx');
    else if (tag === RIRESP_INDEX) m.index = r.varint('index');
    else throw refuseTag(tag, READ_INDEX_RESPONSE);
  }
}

/** A body read so far (the InstallSnapshot one may lack its meta). */
type BodyDraft = Exclude<Message, InstallSnapshot> | InstallSnapshotDraft;

/** A new draft for body field `field` with every field at its proto3 default; null for no body field. */
function newBody(field: number): BodyDraft | null {
  const h = { from: '', to: '', term: 0 };
  switch (field) {
    case RAFT_MESSAGE.request_vote:
      return { type: 'RequestVote', ...h, preVote: false, lastLogIndex: 0, lastLogTerm: 0, transfer: false };
    case RAFT_MESSAGE.request_vote_response:
      return { type: 'RequestVoteResponse', ...h, preVote: false, granted: false };
    case RAFT_MESSAGE.append_entries:
      return { type: 'AppendEntries', ...h, prevLogIndex: 0, prevLogTerm: 0, entries: [], leaderCommit: 0, round: 0 };
    case RAFT_MESSAGE.append_entries_response:
      return { type: 'AppendEntriesResponse', ...h, success: false, matchIndex: 0, conflictIndex: 0, conflictTerm: 0, round: 0 };
    case RAFT_MESSAGE.install_snapshot:
      return { type: 'InstallSnapshot', ...h, meta: null, offset: 0, chunk: EMPTY, done: false, round: 0 };
    case RAFT_MESSAGE.install_snapshot_response:
      return { type: 'InstallSnapshotResponse', ...h, snapshotIndex: 0, nextOffset: 0, done: false, success: false, round: 0 };
    case RAFT_MESSAGE.timeout_now:
      return { type: 'TimeoutNow', ...h } satisfies TimeoutNow;
    case RAFT_MESSAGE.read_index_request:
      return { type: 'ReadIndexRequest', ...h, ctx: '' };
    case RAFT_MESSAGE.read_index_response:
      return { type: 'ReadIndexResponse', ...h, ctx: '', index: 0 };
    default:
      return null;
  }
}

/** The .proto name of each body field, for error paths. */
const BODY_NAME: readonly (string | undefined)[] = (() => {
  const names: string[] = [];
  for (const [name, field] of Object.entries(RAFT_MESSAGE)) if (field >= RAFT_MESSAGE.request_vote) names[field] = name;
  return names;
})();

function readBody(r: ProtoReader, body: BodyDraft): void {
  switch (body.type) {
    case 'RequestVote':
      return readRequestVote(r, body);
    case 'RequestVoteResponse':
      return readRequestVoteResponse(r, body);
    case 'AppendEntries':
      return readAppendEntries(r, body);
    case 'AppendEntriesResponse':
      return readAppendEntriesResponse(r, body);
    case 'InstallSnapshot':
      return readInstallSnapshot(r, body);
    case 'InstallSnapshotResponse':
      return readInstallSnapshotResponse(r, body);
    case 'TimeoutNow':
      return readTimeoutNow(r);
    case 'ReadIndexRequest':
      return readReadIndexRequest(r, body);
    case 'ReadIndexResponse':
      return readReadIndexResponse(r, body);
  }
}

// ---------------------------------------------------------------------------------------------------
// Messages and frames
// ---------------------------------------------------------------------------------------------------

const MSG_FROM = len(RAFT_MESSAGE.from);
const MSG_TO = len(RAFT_MESSAGE.to);
const MSG_TERM = v(RAFT_MESSAGE.term);
const MSG_CLUSTER_ID = len(RAFT_MESSAGE.cluster_id);
const MSG_CLUSTER_LEVEL = v(RAFT_MESSAGE.cluster_level);
const MSG_BATCH = len(RAFT_MESSAGE.batch);

/**
 * One RaftMessage from the reader's window. `frame` is set for the frame's own message: its cluster id and
 * level are the frame's, and its batch is appended to frame.messages (after the slot kept for this one). A
 * batched message (frame null) carries no batch of its own; its cluster id and level, if any, are checked
 * and ignored (the frame's speak for all).
 */
function readMessage(r: ProtoReader, frame: RaftFrame | null): Message {
  let from = '';
  let to = '';
  let term = 0;
  let bodyField = 0;
  let body: BodyDraft | null = null;
  while (r.more()) {
    const tag = r.tag('');
    if (tag === MSG_FROM) from = r.string('from');
    else if (tag === MSG_TO) to = r.string('to');
    else if (tag === MSG_TERM) term = r.varint('term');
    else if (tag === MSG_CLUSTER_ID) {
      const id = r.string('cluster_id');
      if (frame !== null) frame.clusterId = id;
    } else if (tag === MSG_CLUSTER_LEVEL) {
      const level = r.uint32('cluster_level');
      if (frame !== null) frame.clusterLevel = level;
    } else if (tag === MSG_BATCH) {
      if (frame === null) throw new CodecError('batch', 'a batched message carries no batch of its own');
      const outer = r.enter('batch');
      const i = frame.messages.length - 1;
      try {
        frame.messages.push(readMessage(r, null));
      } catch (err) {
        throw within(`batch[${i}]`, err);
      }
      r.leave(outer);
    } else if ((tag & 7) === WIRE_LEN && BODY_NAME[tag >>> 3] !== undefined) {
      const field = tag >>> 3;
      const name = BODY_NAME[field]!;
      const outer = r.enter(name);
      // A oneof member set again merges into it; another member replaces it (the last one wins).
      if (field !== bodyField || body === null) {
        bodyField = field;
        body = newBody(field);
      }
      try {
        readBody(r, body!);
      } catch (err) {
        throw within(name, err);
      }
      r.leave(outer);
    } else throw refuseTag(tag, RAFT_MESSAGE);
  }
  if (body === null) throw new CodecError('body', 'no message body (the RaftMessage.body oneof is unset)');
  if (from === '') throw new CodecError('from', 'expected a node id, got an empty string');
  if (to === '') throw new CodecError('to', 'expected a node id, got an empty string');
  body.from = from;
  body.to = to;
  body.term = term;
  try {
    if (body.type === 'AppendEntries') checkAppendEntries(body);
    else if (body.type === 'InstallSnapshot') return checkInstallSnapshot(body);
  } catch (err) {
    throw within(BODY_NAME[bodyField]!, err);
  }
  return body as Message;
}

/**
 * The Raft messages of one received gRPC message of the Raft stream (untrusted: from a peer), in order:
 * the RaftMessage itself, then its batch. Throws CodecError naming the first bad field, or a batched
 * message from another sender, to another node, or with a batch of its own. Entry data and snapshot
 * chunks are copied out of `bytes` (one buffer per AppendEntries: ownEntryData): nothing returned aliases it.
 */
export function decodeRaftFrame(bytes: Uint8Array): RaftFrame {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const frame: RaftFrame = { messages: [], clusterId: '', clusterLevel: 0 };
  // Slot 0 is this message's; its batch follows from slot 1.
  frame.messages.push(null as unknown as Message);
  const head = readMessage(new ProtoReader(buf), frame);
  frame.messages[0] = head;
  const messages = frame.messages;
  for (let i = 1; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.from !== head.from) throw new CodecError(`batch[${i - 1}].from`, `a batch from ${head.from} holds a message from ${m.from}`);
    if (m.to !== head.to) throw new CodecError(`batch[${i - 1}].to`, `a batch to ${head.to} holds a message to ${m.to}`);
  }
  return frame;
}
