// The object codec the Raft stream used before the hand-written one (src/wire/raft-encode.ts,
// raft-decode.ts), kept verbatim as the tests' and the codec bench's reference: the core's messages to and
// from the proto-loader object shape of leasehold.v1.RaftMessage (longs as decimal strings, enums as
// names, bytes as Buffer), which protobufjs serializes by reflection. Together with proto-loader's
// serializer and the strict decoder it is exactly what a build from before the hand-written codec writes
// and reads, so the cross-checks in raft-frame.test.ts prove both directions wire-compatible with it.
//
// Everything arriving from a peer is untrusted: messageFromWire validates every field and throws a
// CodecError that names it.
import type {
  AppendEntries,
  AppendEntriesResponse,
  Entry,
  EntryKind,
  InstallSnapshot,
  InstallSnapshotResponse,
  Message,
  ReadIndexRequest,
  ReadIndexResponse,
  RequestVote,
  RequestVoteResponse,
  SnapshotMeta,
  TimeoutNow,
} from '../../../src/raft/core/types.js';
import type * as raftpb from '../../../src/wire/raft.js';
import { CodecError, describe, type WireLong } from '../../../src/wire/scalars.js';
import { ownEntryData } from '../../../src/wire/raft-decode.js';

// ---------------------------------------------------------------------------------------------------
// The checked scalar conversions of the object codec (they lived in src/wire/scalars.ts while it ran)
// ---------------------------------------------------------------------------------------------------

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const UINT64_MAX = (1n << 64n) - 1n;

/**
 * A uint64 from the wire as a bigint (e.g. a fencing token). Accepts the decimal string proto-loader
 * produces, a safe non-negative integer number, or a bigint; anything else throws CodecError.
 */
export function uint64FromWire(value: unknown, path: string): bigint {
  let n: bigint;
  if (typeof value === 'string' && DECIMAL.test(value)) n = BigInt(value);
  else if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) n = BigInt(value);
  else if (typeof value === 'bigint') n = value;
  else throw new CodecError(path, `expected an unsigned 64-bit integer as a decimal string, got ${describe(value)}`);
  if (n < 0n || n > UINT64_MAX) throw new CodecError(path, `${n} is outside the unsigned 64-bit range`);
  return n;
}

/** A uint64 to the wire: a decimal string. Refuses negatives, fractions, NaN and unsafe numbers. */
export function uint64ToWire(value: number | bigint, path: string): WireLong {
  if (typeof value === 'number' && !(Number.isSafeInteger(value) && value >= 0)) {
    throw new CodecError(path, `expected a non-negative safe integer, got ${describe(value)}`);
  }
  if (typeof value === 'bigint' && (value < 0n || value > UINT64_MAX)) {
    throw new CodecError(path, `${value} is outside the unsigned 64-bit range`);
  }
  return String(value);
}

/**
 * A Raft index, term, offset or round from the wire as a number. These count log entries, elections and
 * bytes, and stay far below 2^53; a larger value can only be corruption, so it is refused rather than
 * rounded.
 */
export function countFromWire(value: unknown, path: string): number {
  // Fast paths (every Raft message carries several counts): a safe integer, or up to 15 decimal digits
  // (below 10^15 < 2^53), needs no bigint on the way.
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && value.length <= 15 && DECIMAL.test(value)) return Number(value);
  const n = uint64FromWire(value, path);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new CodecError(path, `${n} exceeds ${Number.MAX_SAFE_INTEGER} (2^53-1), the largest count this node can hold`);
  }
  return Number(n);
}

/** A count (index, term, offset, round) to the wire: a decimal string. */
export function countToWire(value: number, path: string): WireLong {
  return uint64ToWire(value, path);
}

export function requireObject(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    throw new CodecError(path, `expected a message, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

export function requireString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new CodecError(path, `expected a string, got ${describe(value)}`);
  return value;
}

export function requireNodeId(value: unknown, path: string): string {
  const id = requireString(value, path);
  if (id === '') throw new CodecError(path, 'expected a node id, got an empty string');
  return id;
}

export function requireBool(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') throw new CodecError(path, `expected a boolean, got ${describe(value)}`);
  return value;
}

/** Bytes from the wire, copied into a plain Uint8Array: the decoded Buffer is a view into the whole
 *  received message, and what it is kept in may live long (a snapshot chunk being written). Many values of
 *  one message are copied together instead (raft-decode.ts ownEntryData). */
export function bytesFromWire(value: unknown, path: string): Uint8Array {
  return new Uint8Array(requireBytes(value, path));
}

/** Bytes from the wire, not copied: still a view into the received message, for a caller that copies it. */
export function requireBytes(value: unknown, path: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new CodecError(path, `expected bytes, got ${describe(value)}`);
  return value;
}

/** Bytes to the wire: a Buffer view over the same memory (no copy; the serializer copies once). */
export function bytesToWire(value: Uint8Array, path: string): Buffer {
  if (!(value instanceof Uint8Array)) throw new CodecError(path, `expected a Uint8Array, got ${describe(value)}`);
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

const ENTRY_KIND_TO_WIRE: Record<EntryKind, raftpb.EntryKind> = {
  normal: 'ENTRY_KIND_NORMAL',
  noop: 'ENTRY_KIND_NOOP',
  config: 'ENTRY_KIND_CONFIG',
};

const ENTRY_KIND_FROM_WIRE: ReadonlyMap<unknown, EntryKind> = new Map(
  Object.entries(ENTRY_KIND_TO_WIRE).map(([kind, wire]) => [wire, kind as EntryKind]),
);

// ---------------------------------------------------------------------------------------------------
// Composite values
// ---------------------------------------------------------------------------------------------------

function entryToWire(entry: Entry, path: string): raftpb.Entry {
  const kind = ENTRY_KIND_TO_WIRE[entry.kind];
  if (kind === undefined) throw new CodecError(`${path}.kind`, `unknown entry kind ${describe(entry.kind)}`);
  return {
    index: countToWire(entry.index, `${path}.index`),
    term: countToWire(entry.term, `${path}.term`),
    kind,
    data: bytesToWire(entry.data, `${path}.data`),
  };
}

function entryFromWire(value: unknown, path: string): Entry {
  const w = requireObject(value, path);
  const kind = ENTRY_KIND_FROM_WIRE.get(w['kind']);
  if (kind === undefined) {
    throw new CodecError(`${path}.kind`, `expected ENTRY_KIND_NORMAL, ENTRY_KIND_NOOP or ENTRY_KIND_CONFIG, got ${describe(w['kind'])}`);
  }
  const index = countFromWire(w['index'], `${path}.index`);
  const term = countFromWire(w['term'], `${path}.term`);
  // Index 0 and term 0 belong to the bootstrap snapshot only; no real entry has them.
  if (index === 0) throw new CodecError(`${path}.index`, 'log entries start at index 1');
  if (term === 0) throw new CodecError(`${path}.term`, 'log entries have a term of at least 1');
  // The data is still a view into the received message here: ownEntryData copies it out.
  return { index, term, kind, data: requireBytes(w['data'], `${path}.data`) };
}

function snapshotMetaToWire(meta: SnapshotMeta, path: string): raftpb.SnapshotMeta {
  return {
    index: countToWire(meta.index, `${path}.index`),
    term: countToWire(meta.term, `${path}.term`),
    conf: {
      voters: meta.conf.voters.map((v, i) => requireNodeId(v, `${path}.conf.voters[${i}]`)),
      learners: meta.conf.learners.map((v, i) => requireNodeId(v, `${path}.conf.learners[${i}]`)),
      removed: meta.conf.removed.map((v, i) => requireNodeId(v, `${path}.conf.removed[${i}]`)),
      addresses: Object.entries(meta.conf.addresses).map(([id, address]) => ({ id, address })),
      cluster_id: meta.conf.clusterId,
    },
  };
}

function idList(value: unknown, path: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new CodecError(path, `expected a list, got ${describe(value)}`);
  return value.map((v, i) => requireNodeId(v, `${path}[${i}]`));
}

function snapshotMetaFromWire(value: unknown, path: string): SnapshotMeta {
  if (value === null || value === undefined) throw new CodecError(path, 'missing snapshot metadata');
  const w = requireObject(value, path);
  if (w['conf'] === null || w['conf'] === undefined) throw new CodecError(`${path}.conf`, 'missing voter configuration');
  const conf = requireObject(w['conf'], `${path}.conf`);
  const voters = conf['voters'];
  if (!Array.isArray(voters)) throw new CodecError(`${path}.conf.voters`, `expected a list, got ${describe(voters)}`);
  const addresses: Record<string, string> = {};
  const wireAddresses = conf['addresses'];
  if (wireAddresses !== undefined && wireAddresses !== null) {
    if (!Array.isArray(wireAddresses)) throw new CodecError(`${path}.conf.addresses`, `expected a list, got ${describe(wireAddresses)}`);
    wireAddresses.forEach((a: unknown, i) => {
      const o = requireObject(a, `${path}.conf.addresses[${i}]`);
      addresses[requireNodeId(o['id'], `${path}.conf.addresses[${i}].id`)] = requireString(
        o['address'],
        `${path}.conf.addresses[${i}].address`,
      );
    });
  }
  const clusterId = conf['cluster_id'];
  return {
    index: countFromWire(w['index'], `${path}.index`),
    term: countFromWire(w['term'], `${path}.term`),
    conf: {
      voters: voters.map((v, i) => requireNodeId(v, `${path}.conf.voters[${i}]`)),
      learners: idList(conf['learners'], `${path}.conf.learners`),
      removed: idList(conf['removed'], `${path}.conf.removed`),
      addresses,
      clusterId: clusterId === undefined || clusterId === null ? '' : requireString(clusterId, `${path}.conf.cluster_id`),
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------------

type Header = { from: string; to: string; term: number };
type BodyCodec<M extends Message, B extends raftpb.RaftMessageBodyName> = {
  body: B;
  toWire(msg: M, path: string): raftpb.RaftMessageBodies[B];
  fromWire(w: Record<string, unknown>, header: Header, path: string): M;
};

// One codec per core message type; `satisfies` makes a forgotten message type a compile error.
const CODECS = {
  RequestVote: {
    body: 'request_vote',
    toWire: (m, p) => ({
      pre_vote: m.preVote,
      last_log_index: countToWire(m.lastLogIndex, `${p}.last_log_index`),
      last_log_term: countToWire(m.lastLogTerm, `${p}.last_log_term`),
      transfer: m.transfer,
    }),
    fromWire: (w, h, p) => ({
      type: 'RequestVote',
      ...h,
      preVote: requireBool(w['pre_vote'], `${p}.pre_vote`),
      lastLogIndex: countFromWire(w['last_log_index'], `${p}.last_log_index`),
      lastLogTerm: countFromWire(w['last_log_term'], `${p}.last_log_term`),
      transfer: requireBool(w['transfer'], `${p}.transfer`),
    }),
  } satisfies BodyCodec<RequestVote, 'request_vote'>,

  RequestVoteResponse: {
    body: 'request_vote_response',
    toWire: (m) => ({ pre_vote: m.preVote, granted: m.granted }),
    fromWire: (w, h, p) => ({
      type: 'RequestVoteResponse',
      ...h,
      preVote: requireBool(w['pre_vote'], `${p}.pre_vote`),
      granted: requireBool(w['granted'], `${p}.granted`),
    }),
  } satisfies BodyCodec<RequestVoteResponse, 'request_vote_response'>,

  AppendEntries: {
    body: 'append_entries',
    toWire: (m, p) => ({
      prev_log_index: countToWire(m.prevLogIndex, `${p}.prev_log_index`),
      prev_log_term: countToWire(m.prevLogTerm, `${p}.prev_log_term`),
      entries: m.entries.map((e, i) => entryToWire(e, `${p}.entries[${i}]`)),
      leader_commit: countToWire(m.leaderCommit, `${p}.leader_commit`),
      round: countToWire(m.round, `${p}.round`),
    }),
    fromWire: (w, h, p) => {
      const prevLogIndex = countFromWire(w['prev_log_index'], `${p}.prev_log_index`);
      const prevLogTerm = countFromWire(w['prev_log_term'], `${p}.prev_log_term`);
      const rawEntries = w['entries'];
      if (!Array.isArray(rawEntries)) throw new CodecError(`${p}.entries`, `expected a list, got ${describe(rawEntries)}`);
      const entries = rawEntries.map((e, i) => entryFromWire(e, `${p}.entries[${i}]`));
      ownEntryData(entries);
      // The core appends these as one contiguous run after prevLogIndex; a gap or a term going backwards
      // would break the Log Matching Property (Raft §5.3), so such a message is refused whole.
      let expectedIndex = prevLogIndex + 1;
      let previousTerm = prevLogTerm;
      entries.forEach((e, i) => {
        if (e.index !== expectedIndex) {
          throw new CodecError(
            `${p}.entries[${i}].index`,
            `expected ${expectedIndex} (entries follow prev_log_index contiguously), got ${e.index}`,
          );
        }
        if (e.term < previousTerm || e.term > h.term) {
          throw new CodecError(
            `${p}.entries[${i}].term`,
            `term ${e.term} must lie between the previous entry's term ${previousTerm} and the message term ${h.term}`,
          );
        }
        expectedIndex += 1;
        previousTerm = e.term;
      });
      return {
        type: 'AppendEntries',
        ...h,
        prevLogIndex,
        prevLogTerm,
        entries,
        leaderCommit: countFromWire(w['leader_commit'], `${p}.leader_commit`),
        round: countFromWire(w['round'], `${p}.round`),
      };
    },
  } satisfies BodyCodec<AppendEntries, 'append_entries'>,

  AppendEntriesResponse: {
    body: 'append_entries_response',
    toWire: (m, p) => ({
      success: m.success,
      match_index: countToWire(m.matchIndex, `${p}.match_index`),
      conflict_index: countToWire(m.conflictIndex, `${p}.conflict_index`),
      conflict_term: countToWire(m.conflictTerm, `${p}.conflict_term`),
      round: countToWire(m.round, `${p}.round`),
    }),
    fromWire: (w, h, p) => ({
      type: 'AppendEntriesResponse',
      ...h,
      success: requireBool(w['success'], `${p}.success`),
      matchIndex: countFromWire(w['match_index'], `${p}.match_index`),
      conflictIndex: countFromWire(w['conflict_index'], `${p}.conflict_index`),
      conflictTerm: countFromWire(w['conflict_term'], `${p}.conflict_term`),
      round: countFromWire(w['round'], `${p}.round`),
    }),
  } satisfies BodyCodec<AppendEntriesResponse, 'append_entries_response'>,

  InstallSnapshot: {
    body: 'install_snapshot',
    toWire: (m, p) => ({
      meta: snapshotMetaToWire(m.meta, `${p}.meta`),
      offset: countToWire(m.offset, `${p}.offset`),
      chunk: bytesToWire(m.chunk, `${p}.chunk`),
      done: m.done,
      round: countToWire(m.round, `${p}.round`),
    }),
    fromWire: (w, h, p) => ({
      type: 'InstallSnapshot',
      ...h,
      meta: snapshotMetaFromWire(w['meta'], `${p}.meta`),
      offset: countFromWire(w['offset'], `${p}.offset`),
      chunk: bytesFromWire(w['chunk'], `${p}.chunk`),
      done: requireBool(w['done'], `${p}.done`),
      round: countFromWire(w['round'], `${p}.round`),
    }),
  } satisfies BodyCodec<InstallSnapshot, 'install_snapshot'>,

  InstallSnapshotResponse: {
    body: 'install_snapshot_response',
    toWire: (m, p) => ({
      snapshot_index: countToWire(m.snapshotIndex, `${p}.snapshot_index`),
      next_offset: countToWire(m.nextOffset, `${p}.next_offset`),
      done: m.done,
      success: m.success,
      round: countToWire(m.round, `${p}.round`),
    }),
    fromWire: (w, h, p) => ({
      type: 'InstallSnapshotResponse',
      ...h,
      snapshotIndex: countFromWire(w['snapshot_index'], `${p}.snapshot_index`),
      nextOffset: countFromWire(w['next_offset'], `${p}.next_offset`),
      done: requireBool(w['done'], `${p}.done`),
      success: requireBool(w['success'], `${p}.success`),
      round: countFromWire(w['round'], `${p}.round`),
    }),
  } satisfies BodyCodec<InstallSnapshotResponse, 'install_snapshot_response'>,

  TimeoutNow: {
    body: 'timeout_now',
    toWire: () => ({}),
    fromWire: (_w, h) => ({ type: 'TimeoutNow', ...h }),
  } satisfies BodyCodec<TimeoutNow, 'timeout_now'>,

  ReadIndexRequest: {
    body: 'read_index_request',
    toWire: (m, p) => ({ ctx: requireString(m.ctx, `${p}.ctx`) }),
    fromWire: (w, h, p) => ({ type: 'ReadIndexRequest', ...h, ctx: requireString(w['ctx'], `${p}.ctx`) }),
  } satisfies BodyCodec<ReadIndexRequest, 'read_index_request'>,

  ReadIndexResponse: {
    body: 'read_index_response',
    toWire: (m, p) => ({ ctx: requireString(m.ctx, `${p}.ctx`), index: countToWire(m.index, `${p}.index`) }),
    fromWire: (w, h, p) => ({
      type: 'ReadIndexResponse',
      ...h,
      ctx: requireString(w['ctx'], `${p}.ctx`),
      index: countFromWire(w['index'], `${p}.index`),
    }),
  } satisfies BodyCodec<ReadIndexResponse, 'read_index_response'>,
} satisfies { [T in Message['type']]: BodyCodec<Extract<Message, { type: T }>, raftpb.RaftMessageBodyName> };

const CODEC_BY_BODY: ReadonlyMap<string, BodyCodec<Message, raftpb.RaftMessageBodyName>> = new Map(
  Object.values(CODECS).map((c) => [c.body, c as unknown as BodyCodec<Message, raftpb.RaftMessageBodyName>]),
);

/** The body names the codec knows, in proto field order. */
export const RAFT_BODY_NAMES: readonly raftpb.RaftMessageBodyName[] = Object.values(CODECS).map((c) => c.body);

/** A core message as the proto-loader object for leasehold.v1.RaftMessage. Throws CodecError for a
 *  value that cannot be encoded faithfully (negative or unsafe number, unknown entry kind). */
export function messageToWire(msg: Message, clusterId = '', clusterLevel = 0): raftpb.RaftMessage {
  const codec = (CODECS as Record<string, BodyCodec<Message, raftpb.RaftMessageBodyName> | undefined>)[msg.type];
  if (codec === undefined) throw new CodecError('type', `unknown message type ${describe(msg.type)}`);
  const body = codec.toWire(msg, codec.body);
  return {
    from: requireNodeId(msg.from, 'from'),
    to: requireNodeId(msg.to, 'to'),
    term: countToWire(msg.term, 'term'),
    cluster_id: clusterId,
    cluster_level: clusterLevel,
    body: codec.body,
    [codec.body]: body,
  } as unknown as raftpb.RaftMessage;
}

/**
 * A decoded leasehold.v1.RaftMessage (untrusted: from a peer) as a core message. Throws CodecError naming
 * the first bad field: a missing or unknown body, an empty node id, a long that is not a non-negative
 * decimal integer below 2^53, an unknown entry kind, a missing snapshot meta, non-contiguous entries.
 */
export function messageFromWire(w: unknown): Message {
  const obj = requireObject(w, '');
  const bodyName = obj['body'];
  if (bodyName === undefined || bodyName === null || bodyName === '') {
    throw new CodecError('body', 'no message body (the RaftMessage.body oneof is unset)');
  }
  const codec = typeof bodyName === 'string' ? CODEC_BY_BODY.get(bodyName) : undefined;
  if (codec === undefined) throw new CodecError('body', `unknown message body ${describe(bodyName)}`);
  const header: Header = {
    from: requireNodeId(obj['from'], 'from'),
    to: requireNodeId(obj['to'], 'to'),
    term: countFromWire(obj['term'], 'term'),
  };
  const payload = obj[codec.body];
  if (payload === undefined || payload === null) {
    throw new CodecError(codec.body, `body names ${codec.body} but the field is not set`);
  }
  return codec.fromWire(requireObject(payload, codec.body), header, codec.body);
}

/**
 * Messages for one peer as one RaftMessage (proto: RaftMessage.batch): the first carries the header the
 * receiver admits by (cluster id, level), the rest follow in its `batch`, in order, each with its own from,
 * to and term. All must be from one sender to one peer. One message is encoded exactly as messageToWire.
 */
export function batchToWire(msgs: readonly Message[], clusterId = '', clusterLevel = 0): raftpb.RaftMessage {
  const first = msgs[0];
  if (first === undefined) throw new CodecError('batch', 'no messages to send');
  const head = messageToWire(first, clusterId, clusterLevel);
  if (msgs.length === 1) return head;
  const batch: raftpb.RaftMessage[] = new Array<raftpb.RaftMessage>(msgs.length - 1);
  for (let i = 1; i < msgs.length; i++) {
    const m = msgs[i]!;
    if (m.from !== first.from || m.to !== first.to) {
      throw new CodecError(`batch[${i - 1}]`, `a batch holds messages from ${first.from} to ${first.to} only, not ${m.from} to ${m.to}`);
    }
    batch[i - 1] = messageToWire(m);
  }
  head.batch = batch;
  return head;
}

/**
 * A decoded RaftMessage (untrusted) as the core messages it carries: itself, then its batch in order.
 * Throws CodecError naming the first bad field, as messageFromWire does, or a batched message from another
 * sender, to another node, or with a batch of its own.
 */
export function messagesFromWire(w: unknown): Message[] {
  const head = messageFromWire(w);
  const batch = (w as { batch?: unknown }).batch;
  if (batch === undefined || batch === null) return [head];
  if (!Array.isArray(batch)) throw new CodecError('batch', `expected a list of messages, got ${describe(batch)}`);
  const out: Message[] = new Array<Message>(batch.length + 1);
  out[0] = head;
  for (let i = 0; i < batch.length; i++) {
    const path = `batch[${i}]`;
    const inner = requireObject(batch[i], path);
    const nested = inner['batch'];
    if (Array.isArray(nested) ? nested.length > 0 : nested !== undefined && nested !== null) {
      throw new CodecError(`${path}.batch`, 'a batched message carries no batch of its own');
    }
    let m: Message;
    try {
      m = messageFromWire(inner);
    } catch (err) {
      if (err instanceof CodecError) throw new CodecError(err.path === '' ? path : `${path}.${err.path}`, err.detail);
      throw err;
    }
    if (m.from !== head.from) throw new CodecError(`${path}.from`, `a batch from ${head.from} holds a message from ${m.from}`);
    if (m.to !== head.to) throw new CodecError(`${path}.to`, `a batch to ${head.to} holds a message to ${m.to}`);
    out[i + 1] = m;
  }
  return out;
}
