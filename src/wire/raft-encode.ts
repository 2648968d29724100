// The Raft core's messages (src/raft/core/types.ts) straight to the bytes of one leasehold.v1.RaftMessage
// (proto/leasehold/v1/raft.proto): the first message with the frame's cluster id and level, the rest in its
// `batch`. raft-decode.ts reads them back.
//
// Why by hand (the project's rule is to use the library unless no good package does the job): this is
// the hottest path of the cluster — every Raft message, several per lock operation on every node. Through
// proto-loader each one became an object graph of decimal strings, enum names and Buffers, which
// protobufjs then walked by reflection: about 6 % of the leader's busy time at 16 clients, and much of its
// GC work. Here a message is measured, then written into one buffer of exactly its size, with no
// intermediate object. protobufjs stays for every other message (the client API, Forward, Cluster). The
// bytes are plain proto3 (defaults left off, fields in number order), so any protobuf reader of raft.proto,
// a build from before this codec included, reads them; test/unit/wire/raft-frame.test.ts checks that
// against protobufjs on seeded random messages.
//
// Values that cannot be encoded faithfully (a negative, fractional or unsafe count, an unknown entry kind,
// an empty node id) throw CodecError naming the field, as the object codec did, before anything is written.
import type { AppendEntries, Entry, InstallSnapshot, Message, SnapshotMeta } from '../raft/core/types.js';
import { lenFieldSize, ProtoWriter, tagSize, utf8Size, varintFieldSize, varintSize } from './proto-writer.js';
import {
  APPEND_ENTRIES,
  APPEND_ENTRIES_RESPONSE,
  CONF_STATE,
  ENTRY,
  ENTRY_KIND_NUMBER,
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
import { within } from './proto-reader.js';
import { CodecError, describe } from './scalars.js';

/** The body field (RaftMessage.body oneof) of each core message type. */
const BODY_FIELD: Readonly<Record<Message['type'], number>> = {
  RequestVote: RAFT_MESSAGE.request_vote,
  RequestVoteResponse: RAFT_MESSAGE.request_vote_response,
  AppendEntries: RAFT_MESSAGE.append_entries,
  AppendEntriesResponse: RAFT_MESSAGE.append_entries_response,
  InstallSnapshot: RAFT_MESSAGE.install_snapshot,
  InstallSnapshotResponse: RAFT_MESSAGE.install_snapshot_response,
  TimeoutNow: RAFT_MESSAGE.timeout_now,
  ReadIndexRequest: RAFT_MESSAGE.read_index_request,
  ReadIndexResponse: RAFT_MESSAGE.read_index_response,
};

/** The .proto name of each body, for error paths. */
const BODY_NAME: Readonly<Record<Message['type'], string>> = {
  RequestVote: 'request_vote',
  RequestVoteResponse: 'request_vote_response',
  AppendEntries: 'append_entries',
  AppendEntriesResponse: 'append_entries_response',
  InstallSnapshot: 'install_snapshot',
  InstallSnapshotResponse: 'install_snapshot_response',
  TimeoutNow: 'timeout_now',
  ReadIndexRequest: 'read_index_request',
  ReadIndexResponse: 'read_index_response',
};

// ---------------------------------------------------------------------------------------------------
// Checks (encode refuses what the receiver would refuse, or what would not come back equal)
// ---------------------------------------------------------------------------------------------------

// Paths are built only when a check fails: a message is measured on every send, and a path string per
// field would be an allocation per field.
const at = (prefix: string, name: string): string => (prefix === '' ? name : `${prefix}.${name}`);

/** Bytes of a uint64 count field holding `v`, after checking it is a non-negative safe integer. */
function countSize(v: number, prefix: string, name: string): number {
  if (!(Number.isSafeInteger(v) && v >= 0))
    throw new CodecError(at(prefix, name), `expected a non-negative safe integer, got ${describe(v)}`);
  return v === 0 ? 0 : varintFieldSize(v);
}

function nodeIdSize(id: unknown, prefix: string, name: string): number {
  if (typeof id !== 'string') throw new CodecError(at(prefix, name), `expected a string, got ${describe(id)}`);
  if (id === '') throw new CodecError(at(prefix, name), 'expected a node id, got an empty string');
  return lenFieldSize(utf8Size(id));
}

/** Bytes of an optional string field (left off when empty). */
function stringSize(s: unknown, prefix: string, name: string): number {
  if (typeof s !== 'string') throw new CodecError(at(prefix, name), `expected a string, got ${describe(s)}`);
  return s === '' ? 0 : lenFieldSize(utf8Size(s));
}

function bytesSize(b: unknown, prefix: string, name: string): number {
  if (!(b instanceof Uint8Array)) throw new CodecError(at(prefix, name), `expected a Uint8Array, got ${describe(b)}`);
  return b.length === 0 ? 0 : lenFieldSize(b.length);
}

// ---------------------------------------------------------------------------------------------------
// Sizes (checked): what each message takes on the wire
// ---------------------------------------------------------------------------------------------------

/** Bytes of entry `i` of an AppendEntries body at `prefix`. */
function entrySize(e: Entry, prefix: string, i: number): number {
  if (ENTRY_KIND_NUMBER[e.kind] === undefined)
    throw new CodecError(`${prefix}.entries[${i}].kind`, `unknown entry kind ${describe(e.kind)}`);
  if (!(Number.isSafeInteger(e.index) && e.index >= 0 && Number.isSafeInteger(e.term) && e.term >= 0 && e.data instanceof Uint8Array)) {
    const path = `${prefix}.entries[${i}]`;
    countSize(e.index, path, 'index');
    countSize(e.term, path, 'term');
    bytesSize(e.data, path, 'data');
  }
  // The kind is never 0 (unspecified), so it is always on the wire: tag and one byte.
  return (
    (e.index === 0 ? 0 : varintFieldSize(e.index)) +
    (e.term === 0 ? 0 : varintFieldSize(e.term)) +
    2 +
    (e.data.length === 0 ? 0 : lenFieldSize(e.data.length))
  );
}

function addressSize(id: string, address: string): number {
  return (id === '' ? 0 : lenFieldSize(utf8Size(id))) + (address === '' ? 0 : lenFieldSize(utf8Size(address)));
}

function idListSize(ids: readonly string[], prefix: string, name: string): number {
  if (!Array.isArray(ids)) throw new CodecError(at(prefix, name), `expected a list, got ${describe(ids)}`);
  let size = 0;
  for (let i = 0; i < ids.length; i++) size += nodeIdSize(ids[i], prefix, `${name}[${i}]`);
  return size;
}

function confSize(meta: SnapshotMeta, prefix: string): number {
  const conf = meta.conf;
  const p = at(prefix, 'conf');
  let size =
    idListSize(conf.voters, p, 'voters') +
    idListSize(conf.learners, p, 'learners') +
    idListSize(conf.removed, p, 'removed') +
    stringSize(conf.clusterId, p, 'cluster_id');
  for (const id in conf.addresses) {
    const address = conf.addresses[id];
    if (typeof address !== 'string')
      throw new CodecError(`${p}.addresses`, `expected a string address for ${id}, got ${describe(address)}`);
    size += lenFieldSize(addressSize(id, address));
  }
  return size;
}

/** SnapshotMeta and its conf are always on the wire, even empty: a receiver refuses an InstallSnapshot
 *  without them (an absent sub-message is not an empty one). */
function metaSize(meta: SnapshotMeta, prefix: string): number {
  const p = at(prefix, 'meta');
  if (typeof meta !== 'object' || meta === null) throw new CodecError(p, 'missing snapshot metadata');
  if (typeof meta.conf !== 'object' || meta.conf === null) throw new CodecError(`${p}.conf`, 'missing voter configuration');
  return countSize(meta.index, p, 'index') + countSize(meta.term, p, 'term') + lenFieldSize(confSize(meta, p));
}

function bodySize(m: Message, p: string): number {
  switch (m.type) {
    case 'RequestVote':
      return (
        (m.preVote ? 2 : 0) +
        countSize(m.lastLogIndex, p, 'last_log_index') +
        countSize(m.lastLogTerm, p, 'last_log_term') +
        (m.transfer ? 2 : 0)
      );
    case 'RequestVoteResponse':
      return (m.preVote ? 2 : 0) + (m.granted ? 2 : 0);
    case 'AppendEntries': {
      let size =
        countSize(m.prevLogIndex, p, 'prev_log_index') +
        countSize(m.prevLogTerm, p, 'prev_log_term') +
        countSize(m.leaderCommit, p, 'leader_commit') +
        countSize(m.round, p, 'round');
      const entries = m.entries;
      if (!Array.isArray(entries)) throw new CodecError(`${p}.entries`, `expected a list, got ${describe(entries)}`);
      for (let i = 0; i < entries.length; i++) size += lenFieldSize(entrySize(entries[i]!, p, i));
      return size;
    }
    case 'AppendEntriesResponse':
      return (
        (m.success ? 2 : 0) +
        countSize(m.matchIndex, p, 'match_index') +
        countSize(m.conflictIndex, p, 'conflict_index') +
        countSize(m.conflictTerm, p, 'conflict_term') +
        countSize(m.round, p, 'round')
      );
    case 'InstallSnapshot':
      return (
        lenFieldSize(metaSize(m.meta, p)) +
        countSize(m.offset, p, 'offset') +
        bytesSize(m.chunk, p, 'chunk') +
        (m.done ? 2 : 0) +
        countSize(m.round, p, 'round')
      );
    case 'InstallSnapshotResponse':
      return (
        countSize(m.snapshotIndex, p, 'snapshot_index') +
        countSize(m.nextOffset, p, 'next_offset') +
        (m.done ? 2 : 0) +
        (m.success ? 2 : 0) +
        countSize(m.round, p, 'round')
      );
    case 'TimeoutNow':
      return 0;
    case 'ReadIndexRequest':
      return stringSize(m.ctx, p, 'ctx');
    case 'ReadIndexResponse':
      return stringSize(m.ctx, p, 'ctx') + countSize(m.index, p, 'index');
  }
}

/** Bytes of one RaftMessage without cluster id, level and batch: header and body (body size given). */
function messageSize(m: Message, body: number, prefix: string): number {
  const header = nodeIdSize(m.from, prefix, 'from') + nodeIdSize(m.to, prefix, 'to') + countSize(m.term, prefix, 'term');
  // Bodies 16 and up (timeout_now, read_index_*) have two-byte tags.
  return header + tagSize(BODY_FIELD[m.type]) + varintSize(body) + body;
}

// ---------------------------------------------------------------------------------------------------
// Writing (the values were checked while measuring)
// ---------------------------------------------------------------------------------------------------

function writeEntry(w: ProtoWriter, e: Entry): void {
  w.varintField(ENTRY.index, e.index);
  w.varintField(ENTRY.term, e.term);
  w.varintField(ENTRY.kind, ENTRY_KIND_NUMBER[e.kind]);
  w.bytesField(ENTRY.data, e.data);
}

function writeAppendEntries(w: ProtoWriter, m: AppendEntries): void {
  w.varintField(APPEND_ENTRIES.prev_log_index, m.prevLogIndex);
  w.varintField(APPEND_ENTRIES.prev_log_term, m.prevLogTerm);
  const entries = m.entries;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    w.lenPrefix(APPEND_ENTRIES.entries, entrySize(e, '', i));
    writeEntry(w, e);
  }
  w.varintField(APPEND_ENTRIES.leader_commit, m.leaderCommit);
  w.varintField(APPEND_ENTRIES.round, m.round);
}

function writeMeta(w: ProtoWriter, meta: SnapshotMeta): void {
  w.varintField(SNAPSHOT_META.index, meta.index);
  w.varintField(SNAPSHOT_META.term, meta.term);
  const conf = meta.conf;
  w.lenPrefix(SNAPSHOT_META.conf, confSize(meta, ''));
  for (const id of conf.voters) w.stringField(CONF_STATE.voters, id, utf8Size(id));
  for (const id of conf.learners) w.stringField(CONF_STATE.learners, id, utf8Size(id));
  for (const id of conf.removed) w.stringField(CONF_STATE.removed, id, utf8Size(id));
  for (const id in conf.addresses) {
    const address = conf.addresses[id]!;
    w.lenPrefix(CONF_STATE.addresses, addressSize(id, address));
    w.stringField(PEER_ADDRESS.id, id, utf8Size(id));
    w.stringField(PEER_ADDRESS.address, address, utf8Size(address));
  }
  w.stringField(CONF_STATE.cluster_id, conf.clusterId, utf8Size(conf.clusterId));
}

function writeInstallSnapshot(w: ProtoWriter, m: InstallSnapshot): void {
  w.lenPrefix(INSTALL_SNAPSHOT.meta, metaSize(m.meta, ''));
  writeMeta(w, m.meta);
  w.varintField(INSTALL_SNAPSHOT.offset, m.offset);
  w.bytesField(INSTALL_SNAPSHOT.chunk, m.chunk);
  w.boolField(INSTALL_SNAPSHOT.done, m.done);
  w.varintField(INSTALL_SNAPSHOT.round, m.round);
}

function writeBody(w: ProtoWriter, m: Message, size: number): void {
  w.lenPrefix(BODY_FIELD[m.type], size);
  switch (m.type) {
    case 'RequestVote':
      w.boolField(REQUEST_VOTE.pre_vote, m.preVote);
      w.varintField(REQUEST_VOTE.last_log_index, m.lastLogIndex);
      w.varintField(REQUEST_VOTE.last_log_term, m.lastLogTerm);
      w.boolField(REQUEST_VOTE.transfer, m.transfer);
      return;
    case 'RequestVoteResponse':
      w.boolField(REQUEST_VOTE_RESPONSE.pre_vote, m.preVote);
      w.boolField(REQUEST_VOTE_RESPONSE.granted, m.granted);
      return;
    case 'AppendEntries':
      return writeAppendEntries(w, m);
    case 'AppendEntriesResponse':
      w.boolField(APPEND_ENTRIES_RESPONSE.success, m.success);
      w.varintField(APPEND_ENTRIES_RESPONSE.match_index, m.matchIndex);
      w.varintField(APPEND_ENTRIES_RESPONSE.conflict_index, m.conflictIndex);
      w.varintField(APPEND_ENTRIES_RESPONSE.conflict_term, m.conflictTerm);
      w.varintField(APPEND_ENTRIES_RESPONSE.round, m.round);
      return;
    case 'InstallSnapshot':
      return writeInstallSnapshot(w, m);
    case 'InstallSnapshotResponse':
      w.varintField(INSTALL_SNAPSHOT_RESPONSE.snapshot_index, m.snapshotIndex);
      w.varintField(INSTALL_SNAPSHOT_RESPONSE.next_offset, m.nextOffset);
      w.boolField(INSTALL_SNAPSHOT_RESPONSE.done, m.done);
      w.boolField(INSTALL_SNAPSHOT_RESPONSE.success, m.success);
      w.varintField(INSTALL_SNAPSHOT_RESPONSE.round, m.round);
      return;
    case 'TimeoutNow':
      return;
    case 'ReadIndexRequest':
      w.stringField(READ_INDEX_REQUEST.ctx, m.ctx, utf8Size(m.ctx));
      return;
    case 'ReadIndexResponse':
      w.stringField(READ_INDEX_RESPONSE.ctx, m.ctx, utf8Size(m.ctx));
      w.varintField(READ_INDEX_RESPONSE.index, m.index);
      return;
  }
}

/** from, to and term: every message's header. */
function writeHeader(w: ProtoWriter, m: Message): void {
  w.stringField(RAFT_MESSAGE.from, m.from, utf8Size(m.from));
  w.stringField(RAFT_MESSAGE.to, m.to, utf8Size(m.to));
  w.varintField(RAFT_MESSAGE.term, m.term);
}

// ---------------------------------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------------------------------

/** Body sizes of the frame being encoded, by message (reused: encoding is synchronous). */
const bodySizes: number[] = [];

/**
 * Messages for one peer as the bytes of one RaftMessage: the first carries the header the receiver admits
 * by (cluster id, level), the rest follow in its `batch`, in order, each with its own from, to and term
 * (proto: RaftMessage.batch; send a batch only to a peer that announced it reads them). All must be from
 * one sender to one peer. One message is a plain RaftMessage, what every build reads.
 */
export function encodeRaftFrame(msgs: readonly Message[], clusterId: string, clusterLevel: number): Buffer {
  const first = msgs[0];
  if (first === undefined) throw new CodecError('batch', 'no messages to send');
  if (!(Number.isInteger(clusterLevel) && clusterLevel >= 0 && clusterLevel <= 0xffffffff)) {
    throw new CodecError('cluster_level', `expected a uint32, got ${describe(clusterLevel)}`);
  }
  bodySizes.length = msgs.length;
  let size = stringSize(clusterId, '', 'cluster_id') + (clusterLevel === 0 ? 0 : varintFieldSize(clusterLevel));
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i]!;
    if (i > 0 && (m.from !== first.from || m.to !== first.to)) {
      throw new CodecError(`batch[${i - 1}]`, `a batch holds messages from ${first.from} to ${first.to} only, not ${m.from} to ${m.to}`);
    }
    let one: number;
    try {
      const name = (BODY_NAME as Record<string, string | undefined>)[m.type];
      if (name === undefined) throw new CodecError('type', `unknown message type ${describe(m.type)}`);
      const body = bodySize(m, name);
      bodySizes[i] = body;
      one = messageSize(m, body, '');
    } catch (err) {
      // Paths are relative to the message; a batched one's get its place in the batch.
      throw i === 0 ? err : within(`batch[${i - 1}]`, err);
    }
    size += i === 0 ? one : lenFieldSize(one);
  }

  const w = new ProtoWriter(size);
  writeHeader(w, first);
  w.stringField(RAFT_MESSAGE.cluster_id, clusterId, utf8Size(clusterId));
  w.varintField(RAFT_MESSAGE.cluster_level, clusterLevel);
  for (let i = 1; i < msgs.length; i++) {
    const m = msgs[i]!;
    const body = bodySizes[i]!;
    w.lenPrefix(RAFT_MESSAGE.batch, messageSize(m, body, ''));
    writeHeader(w, m);
    writeBody(w, m, body);
  }
  writeBody(w, first, bodySizes[0]!);
  // A size function and its writer disagreeing is a bug here, never bad input: fail loudly.
  if (w.pos !== size) throw new Error(`raft-encode: wrote ${w.pos} bytes of a ${size}-byte message`);
  return w.buf;
}
