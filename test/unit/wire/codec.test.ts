// The reference object codec (protobufjs-raft-codec.ts: what builds before the hand-written Raft codec
// ran, and what raft-frame.test.ts cross-checks against) and its scalar conversions, through real
// protobuf serialization.
import { describe, expect, it } from 'vitest';
import type { Entry, EntryKind, Message } from '../../../src/raft/core/types.js';
import { CodecError } from '../../../src/wire/scalars.js';
import { roleToWire } from '../../../src/wire/cluster.js';
import {
  batchToWire,
  countFromWire,
  messageFromWire,
  messagesFromWire,
  messageToWire,
  RAFT_BODY_NAMES,
  uint64FromWire,
  uint64ToWire,
} from './protobufjs-raft-codec.js';
import { packageDefinition } from '../../../src/wire/load.js';
import { SimRng } from '../../sim/rng.js';
import { encodeEntry } from '../../../src/raft/storage/codec.js';
import { encodeFrame, recordsOfEncoded, replaySegment } from '../../../src/raft/storage/wal-frame.js';

// The real serializer grpc-js uses for Raft.Stream requests: fromObject -> encode, decode -> toObject.
const streamMethod = (
  packageDefinition()['leasehold.v1.Raft'] as Record<
    string,
    {
      requestSerialize(v: unknown): Buffer;
      requestDeserialize(b: Buffer): unknown;
    }
  >
)['Stream']!;
const encode = (w: unknown): Buffer => streamMethod.requestSerialize(w);
const decode = (b: Buffer): unknown => streamMethod.requestDeserialize(b);
const throughWire = (m: Message): Message => messageFromWire(decode(encode(messageToWire(m))));

const MAX = Number.MAX_SAFE_INTEGER;
const bytes = (...xs: number[]) => new Uint8Array(xs);

/** One message of every type, with values that stress the encoding (0, 2^53-1, empty and binary bytes). */
const EVERY_TYPE: Message[] = [
  { type: 'RequestVote', from: 'n1', to: 'n2', term: 7, preVote: true, lastLogIndex: MAX, lastLogTerm: 6, transfer: true },
  { type: 'RequestVote', from: 'n1', to: 'n2', term: 0, preVote: false, lastLogIndex: 0, lastLogTerm: 0, transfer: false },
  { type: 'RequestVoteResponse', from: 'n2', to: 'n1', term: 7, preVote: true, granted: false },
  {
    type: 'AppendEntries',
    from: 'n1',
    to: 'n3',
    term: 9,
    prevLogIndex: 100,
    prevLogTerm: 8,
    leaderCommit: 101,
    round: MAX,
    entries: [
      { index: 101, term: 8, kind: 'normal', data: bytes(0, 1, 2, 255) },
      { index: 102, term: 9, kind: 'noop', data: bytes() },
      { index: 103, term: 9, kind: 'config', data: new TextEncoder().encode('{"voters":["n1","n2","n3"]}') },
    ],
  },
  { type: 'AppendEntries', from: 'n1', to: 'n3', term: 9, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [] },
  {
    type: 'AppendEntriesResponse',
    from: 'n3',
    to: 'n1',
    term: 9,
    success: true,
    matchIndex: 103,
    conflictIndex: 0,
    conflictTerm: 0,
    round: 4,
  },
  {
    type: 'AppendEntriesResponse',
    from: 'n3',
    to: 'n1',
    term: 9,
    success: false,
    matchIndex: 0,
    conflictIndex: 57,
    conflictTerm: 3,
    round: 5,
  },
  {
    type: 'InstallSnapshot',
    from: 'n1',
    to: 'n2',
    term: 4,
    meta: { index: 5000, term: 3, conf: { clusterId: '', voters: ['n1', 'n2', 'n3'], learners: [], addresses: {}, removed: [] } },
    offset: 1048576,
    chunk: bytes(9, 8, 7, 0),
    done: false,
    round: 12,
  },
  {
    type: 'InstallSnapshot',
    from: 'n1',
    to: 'n2',
    term: 4,
    meta: { index: 0, term: 0, conf: { clusterId: '', voters: [], learners: [], addresses: {}, removed: [] } },
    offset: 0,
    chunk: bytes(),
    done: true,
    round: 0,
  },
  {
    type: 'InstallSnapshotResponse',
    from: 'n2',
    to: 'n1',
    term: 4,
    snapshotIndex: 5000,
    nextOffset: 1048580,
    done: true,
    success: true,
    round: 12,
  },
  { type: 'TimeoutNow', from: 'n1', to: 'n2', term: 11 },
  { type: 'ReadIndexRequest', from: 'n2', to: 'n1', term: 11, ctx: 'n2:read:42' },
  { type: 'ReadIndexRequest', from: 'n2', to: 'n1', term: 11, ctx: '' },
  { type: 'ReadIndexResponse', from: 'n1', to: 'n2', term: 11, ctx: 'n2:read:42', index: 0 },
];

function codecError(fn: () => unknown): CodecError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CodecError);
    return err as CodecError;
  }
  throw new Error('expected a CodecError, nothing was thrown');
}

/** A valid wire AppendEntries (decoded shape) to corrupt one field at a time. */
function wireAppend(): Record<string, unknown> {
  return decode(encode(messageToWire(EVERY_TYPE[3]!))) as Record<string, unknown>;
}
function appendBody(w: Record<string, unknown>): Record<string, unknown> {
  return w['append_entries'] as Record<string, unknown>;
}

describe('codec round trip through real protobuf serialization', () => {
  it('covers every core message type and every RaftMessage body', () => {
    const types = new Set(EVERY_TYPE.map((m) => m.type));
    expect(types.size).toBe(RAFT_BODY_NAMES.length);
    expect(RAFT_BODY_NAMES).toEqual([
      'request_vote',
      'request_vote_response',
      'append_entries',
      'append_entries_response',
      'install_snapshot',
      'install_snapshot_response',
      'timeout_now',
      'read_index_request',
      'read_index_response',
    ]);
  });

  it.each(EVERY_TYPE.map((m, i) => [`${i}: ${m.type}`, m] as const))('%s encodes, decodes and comes back equal', (_name, m) => {
    const wire = messageToWire(m);
    const buf = encode(wire);
    expect(buf.length).toBeGreaterThan(0);
    expect(messageFromWire(decode(buf))).toStrictEqual(m);
  });

  it('puts longs on the wire as decimal strings and bytes as Buffers', () => {
    const wire = messageToWire(EVERY_TYPE[3]!);
    expect(wire).toMatchObject({ from: 'n1', to: 'n3', term: '9', body: 'append_entries' });
    const body = (wire as { append_entries: { round: string; entries: { index: string; kind: string; data: Buffer }[] } }).append_entries;
    expect(body.round).toBe(String(MAX));
    expect(body.entries.map((e) => e.kind)).toEqual(['ENTRY_KIND_NORMAL', 'ENTRY_KIND_NOOP', 'ENTRY_KIND_CONFIG']);
    expect(Buffer.isBuffer(body.entries[0]!.data)).toBe(true);
  });

  it('gives the core plain Uint8Arrays that do not alias the received buffer', () => {
    const received = encode(messageToWire(EVERY_TYPE[3]!));
    const decoded = decode(received) as { append_entries: { entries: { data: Buffer }[] } };
    const m = messageFromWire(decoded) as Extract<Message, { type: 'AppendEntries' }>;
    const data = m.entries[0]!.data;
    expect(Object.getPrototypeOf(data)).toBe(Uint8Array.prototype);
    received.fill(0);
    decoded.append_entries.entries[0]!.data.fill(0);
    expect(Array.from(data)).toEqual([0, 1, 2, 255]);
  });

  it('copies one message’s entries into one buffer of their bytes alone, each entry a view that outlives the message', () => {
    const sizes = [0, 3, 200, 65, 1, 4096, 64];
    const entries: Entry[] = sizes.map((size, i) => ({
      index: 41 + i,
      term: 5,
      kind: i === 0 ? 'noop' : 'normal',
      data: Uint8Array.from({ length: size }, (_, k) => (k * 31 + i * 7 + 1) & 0xff),
    }));
    const m: Message = {
      type: 'AppendEntries',
      from: 'n1',
      to: 'n2',
      term: 5,
      prevLogIndex: 40,
      prevLogTerm: 4,
      leaderCommit: 40,
      round: 3,
      entries,
    };
    const received = encode(messageToWire(m));
    const decoded = decode(received) as { append_entries: { entries: { data: Buffer }[] } };
    const got = (messageFromWire(decoded) as Extract<Message, { type: 'AppendEntries' }>).entries;
    const slab = got[0]!.data.buffer;
    const total = sizes.reduce((a, b) => a + b, 0);
    expect(slab.byteLength, 'the buffer holds the entries’ bytes and nothing else of the message').toBe(total);
    let at = 0;
    got.forEach((e, i) => {
      expect(e.data.buffer, `entry ${i} shares the message’s one buffer`).toBe(slab);
      expect(e.data.byteOffset, `entry ${i} starts where the one before it ends`).toBe(at);
      expect(Object.getPrototypeOf(e.data)).toBe(Uint8Array.prototype);
      at += e.data.length;
    });
    // The received message and its decoded Buffers are reused or freed by gRPC: the entries do not see it.
    received.fill(0xee);
    for (const e of decoded.append_entries.entries) e.data.fill(0xee);
    expect(got).toStrictEqual(entries);
    // Views at a non-zero offset of a shared buffer go through the WAL as any entry does: encoded into a
    // frame, replayed, equal.
    const frame = encodeFrame({ base: { index: 40, term: 4 }, records: recordsOfEncoded(got.map(encodeEntry)), hardState: null });
    const replayed = replaySegment(frame);
    expect(replayed.decoded.map((e) => ({ ...e, data: Array.from(e.data) }))).toEqual(
      entries.map((e) => ({ ...e, data: Array.from(e.data) })),
    );
  });

  it('encodes only the viewed window of a Uint8Array that is a slice of a larger buffer', () => {
    const backing = bytes(99, 99, 1, 2, 3, 99);
    const entry: Entry = { index: 1, term: 1, kind: 'normal', data: backing.subarray(2, 5) };
    const m: Message = {
      type: 'AppendEntries',
      from: 'a',
      to: 'b',
      term: 1,
      prevLogIndex: 0,
      prevLogTerm: 0,
      leaderCommit: 0,
      round: 0,
      entries: [entry],
    };
    const back = throughWire(m) as Extract<Message, { type: 'AppendEntries' }>;
    expect(Array.from(back.entries[0]!.data)).toEqual([1, 2, 3]);
  });

  it('round-trips 500 seeded random messages exactly', () => {
    const rng = new SimRng(0x2545f491); // seeded, so a failure reproduces
    const rnd = (n: number): number => rng.int(n);
    const num = (): number => [0, 1, rnd(1000), rnd(2 ** 31), MAX][rnd(5)]!;
    const kinds: EntryKind[] = ['normal', 'noop', 'config'];
    const blob = (): Uint8Array => Uint8Array.from({ length: rnd(40) }, () => rnd(256));
    const id = (): string => `n${rnd(5)}`;
    for (let i = 0; i < 500; i++) {
      const base = { from: id(), to: id(), term: rnd(1000) + 1 };
      let m: Message;
      switch (rnd(9)) {
        case 0:
          m = { type: 'RequestVote', ...base, preVote: rnd(2) === 1, lastLogIndex: num(), lastLogTerm: num(), transfer: rnd(2) === 1 };
          break;
        case 1:
          m = { type: 'RequestVoteResponse', ...base, preVote: rnd(2) === 1, granted: rnd(2) === 1 };
          break;
        case 2: {
          const prevLogIndex = rnd(10_000);
          let term = 1;
          const entries = Array.from({ length: rnd(6) }, (_, k) => {
            term = Math.min(base.term, term + rnd(2));
            return { index: prevLogIndex + 1 + k, term, kind: kinds[rnd(3)]!, data: blob() };
          });
          m = { type: 'AppendEntries', ...base, prevLogIndex, prevLogTerm: rnd(2), entries, leaderCommit: num(), round: num() };
          break;
        }
        case 3:
          m = {
            type: 'AppendEntriesResponse',
            ...base,
            success: rnd(2) === 1,
            matchIndex: num(),
            conflictIndex: num(),
            conflictTerm: num(),
            round: num(),
          };
          break;
        case 4:
          m = {
            type: 'InstallSnapshot',
            ...base,
            meta: { index: num(), term: num(), conf: { clusterId: '', voters: [id(), id()], learners: [], addresses: {}, removed: [] } },
            offset: num(),
            chunk: blob(),
            done: rnd(2) === 1,
            round: num(),
          };
          break;
        case 5:
          m = {
            type: 'InstallSnapshotResponse',
            ...base,
            snapshotIndex: num(),
            nextOffset: num(),
            done: rnd(2) === 1,
            success: rnd(2) === 1,
            round: num(),
          };
          break;
        case 6:
          m = { type: 'TimeoutNow', ...base };
          break;
        case 7:
          m = { type: 'ReadIndexRequest', ...base, ctx: `c${rnd(1e6)}` };
          break;
        default:
          m = { type: 'ReadIndexResponse', ...base, ctx: `c${rnd(1e6)}`, index: num() };
          break;
      }
      expect(throughWire(m)).toStrictEqual(m);
    }
  });
});

describe('messageFromWire refuses malformed peer input with a CodecError naming the field', () => {
  it('a RaftMessage with no body (oneof unset)', () => {
    const e = codecError(() => messageFromWire(decode(encode({ from: 'n1', to: 'n2', term: '3' }))));
    expect(e.path).toBe('body');
    expect(e.message).toMatch(/oneof is unset/);
  });

  it('an unknown body name, or a body marker without its field', () => {
    expect(codecError(() => messageFromWire({ from: 'a', to: 'b', term: '1', body: 'vote_please', vote_please: {} })).path).toBe('body');
    expect(codecError(() => messageFromWire({ from: 'a', to: 'b', term: '1', body: 'timeout_now' })).path).toBe('timeout_now');
    expect(codecError(() => messageFromWire({ from: 'a', to: 'b', term: '1', body: 'timeout_now', timeout_now: 'x' })).path).toBe(
      'timeout_now',
    );
  });

  it('not an object at all', () => {
    for (const junk of [null, undefined, 'RequestVote', 42, [], Buffer.from('x')]) {
      expect(codecError(() => messageFromWire(junk)).path).toBe('');
    }
  });

  it('an empty or missing node id', () => {
    const w = wireAppend();
    expect(codecError(() => messageFromWire({ ...w, from: '' })).path).toBe('from');
    expect(codecError(() => messageFromWire({ ...w, to: undefined })).path).toBe('to');
  });

  it('a negative index, as a string or a number', () => {
    for (const bad of ['-1', -1]) {
      const w = wireAppend();
      appendBody(w)['prev_log_index'] = bad;
      const e = codecError(() => messageFromWire(w));
      expect(e.path).toBe('append_entries.prev_log_index');
    }
  });

  it('a long that is not a plain decimal integer', () => {
    for (const bad of ['12abc', '', '1e3', '0x10', ' 1', '1.5', '+1', '007', 1.5, NaN, Infinity, true, null, {}]) {
      const w = wireAppend();
      appendBody(w)['leader_commit'] = bad;
      expect(codecError(() => messageFromWire(w)).path).toBe('append_entries.leader_commit');
    }
    expect(codecError(() => messageFromWire({ ...wireAppend(), term: 'seven' })).path).toBe('term');
  });

  it('a count beyond 2^53-1 arriving on the real wire (uint64 max)', () => {
    const bytesOnWire = encode({ from: 'a', to: 'b', term: '18446744073709551615', timeout_now: {} });
    const e = codecError(() => messageFromWire(decode(bytesOnWire)));
    expect(e.path).toBe('term');
    expect(e.message).toMatch(/2\^53-1/);
    expect(
      codecError(() => messageFromWire({ from: 'a', to: 'b', term: String(MAX + 1), body: 'timeout_now', timeout_now: {} })).path,
    ).toBe('term');
  });

  it('an entry kind that is unspecified or unknown to this build (decoded as a number)', () => {
    const withKind = (kind: unknown) => {
      const w = wireAppend();
      const entries = appendBody(w)['entries'] as Record<string, unknown>[];
      entries[1]!['kind'] = kind;
      return w;
    };
    expect(codecError(() => messageFromWire(withKind('ENTRY_KIND_UNSPECIFIED'))).path).toBe('append_entries.entries[1].kind');
    expect(codecError(() => messageFromWire(withKind('normal'))).path).toBe('append_entries.entries[1].kind');
    // A newer peer's kind 7 really arrives as the number 7 (enums: String keeps unknown values numeric).
    const onWire = withKind(7);
    const decoded = decode(encode(onWire)) as Record<string, unknown>;
    expect((appendBody(decoded)['entries'] as Record<string, unknown>[])[1]!['kind']).toBe(7);
    expect(codecError(() => messageFromWire(decoded)).path).toBe('append_entries.entries[1].kind');
  });

  it('entries that do not follow prev_log_index contiguously, or whose terms go backwards or ahead', () => {
    const entries = (w: Record<string, unknown>) => appendBody(w)['entries'] as Record<string, unknown>[];
    let w = wireAppend();
    entries(w)[1]!['index'] = '105';
    expect(codecError(() => messageFromWire(w)).path).toBe('append_entries.entries[1].index');
    w = wireAppend();
    appendBody(w)['prev_log_index'] = '99';
    expect(codecError(() => messageFromWire(w)).path).toBe('append_entries.entries[0].index');
    w = wireAppend();
    entries(w)[2]!['term'] = '8';
    entries(w)[1]!['term'] = '9';
    expect(codecError(() => messageFromWire(w)).path).toBe('append_entries.entries[2].term');
    w = wireAppend();
    entries(w)[2]!['term'] = '10'; // the message term is 9
    expect(codecError(() => messageFromWire(w)).path).toBe('append_entries.entries[2].term');
    w = wireAppend();
    appendBody(w)['prev_log_term'] = '9'; // first entry has term 8 < prev_log_term
    expect(codecError(() => messageFromWire(w)).path).toBe('append_entries.entries[0].term');
  });

  it('an entry with index or term 0, or data that is not bytes', () => {
    const w = decode(
      encode({ from: 'a', to: 'b', term: '1', append_entries: { entries: [{ index: '1', term: '0', kind: 'ENTRY_KIND_NOOP' }] } }),
    );
    expect(codecError(() => messageFromWire(w)).path).toBe('append_entries.entries[0].term');
    const w2 = wireAppend();
    (appendBody(w2)['entries'] as Record<string, unknown>[])[0]!['data'] = 'AAEC';
    expect(codecError(() => messageFromWire(w2)).path).toBe('append_entries.entries[0].data');
    const w3 = wireAppend();
    appendBody(w3)['entries'] = 'many';
    expect(codecError(() => messageFromWire(w3)).path).toBe('append_entries.entries');
  });

  it('an InstallSnapshot without meta or voter configuration', () => {
    const noMeta = decode(encode({ from: 'a', to: 'b', term: '1', install_snapshot: { offset: '0', done: true } }));
    expect(codecError(() => messageFromWire(noMeta)).path).toBe('install_snapshot.meta');
    const noConf = decode(encode({ from: 'a', to: 'b', term: '1', install_snapshot: { meta: { index: '5', term: '1' } } }));
    expect(codecError(() => messageFromWire(noConf)).path).toBe('install_snapshot.meta.conf');
    const emptyVoter = decode(
      encode({ from: 'a', to: 'b', term: '1', install_snapshot: { meta: { index: '5', term: '1', conf: { voters: ['n1', ''] } } } }),
    );
    expect(codecError(() => messageFromWire(emptyVoter)).path).toBe('install_snapshot.meta.conf.voters[1]');
  });

  it('a boolean field holding something else', () => {
    const w = decode(encode(messageToWire(EVERY_TYPE[2]!))) as Record<string, Record<string, unknown>>;
    w['request_vote_response']!['granted'] = 'yes';
    expect(codecError(() => messageFromWire(w)).path).toBe('request_vote_response.granted');
  });
});

describe('messageToWire refuses values that cannot be encoded faithfully', () => {
  const vote = EVERY_TYPE[0] as Extract<Message, { type: 'RequestVote' }>;
  it.each([
    ['negative term', { ...vote, term: -1 }, 'term'],
    ['fractional index', { ...vote, lastLogIndex: 1.5 }, 'request_vote.last_log_index'],
    ['NaN', { ...vote, lastLogTerm: NaN }, 'request_vote.last_log_term'],
    ['beyond 2^53-1', { ...vote, lastLogIndex: 2 ** 53 }, 'request_vote.last_log_index'],
    ['empty from', { ...vote, from: '' }, 'from'],
  ] as const)('%s', (_name, m, path) => {
    expect(codecError(() => messageToWire(m as Message)).path).toBe(path);
  });

  it('an unknown entry kind or message type', () => {
    const m = { ...EVERY_TYPE[3]!, entries: [{ index: 101, term: 8, kind: 'snapshot', data: bytes() }] } as unknown as Message;
    expect(codecError(() => messageToWire(m)).path).toBe('append_entries.entries[0].kind');
    expect(codecError(() => messageToWire({ type: 'Heartbeat', from: 'a', to: 'b', term: 1 } as unknown as Message)).path).toBe('type');
  });
});

describe('64-bit helpers', () => {
  it('uint64 tokens keep every bit, both ways', () => {
    expect(uint64FromWire('18446744073709551615', 'token')).toBe(2n ** 64n - 1n);
    expect(uint64FromWire('9007199254740993', 'token')).toBe(9007199254740993n);
    expect(uint64FromWire(17, 'token')).toBe(17n);
    expect(uint64ToWire(2n ** 64n - 1n, 'token')).toBe('18446744073709551615');
    expect(uint64ToWire(0, 'token')).toBe('0');
  });

  it('refuse what is not an unsigned 64-bit integer', () => {
    expect(codecError(() => uint64FromWire('18446744073709551616', 'token')).path).toBe('token');
    expect(codecError(() => uint64FromWire('-5', 'token')).message).toBe(
      'token: expected an unsigned 64-bit integer as a decimal string, got "-5"',
    );
    expect(codecError(() => uint64FromWire(-5n, 'token')).path).toBe('token');
    expect(codecError(() => uint64ToWire(-1n, 'token')).path).toBe('token');
    expect(codecError(() => uint64ToWire(2 ** 53, 'token')).path).toBe('token');
    expect(codecError(() => countFromWire('9007199254740992', 'index')).path).toBe('index');
    expect(countFromWire('9007199254740991', 'index')).toBe(MAX);
  });
});

describe('roleToWire', () => {
  it('maps the core roles onto the public enum; a pre-candidate is a candidate', () => {
    expect(roleToWire('leader')).toBe('LEADER');
    expect(roleToWire('follower')).toBe('FOLLOWER');
    expect(roleToWire('candidate')).toBe('CANDIDATE');
    expect(roleToWire('pre-candidate')).toBe('CANDIDATE');
  });
});

describe('batches (RaftMessage.batch): one gRPC message for what a node has for one peer', () => {
  const same = (m: Message): Message => ({ ...m, from: 'n1', to: 'n3' }) as Message;

  it('every batch size from 1 to 70 comes back as the same messages in the same order', () => {
    const pool = EVERY_TYPE.map(same);
    for (let n = 1; n <= 70; n++) {
      const msgs = Array.from({ length: n }, (_, i) => pool[(i * 7) % pool.length]!);
      const wire = batchToWire(msgs, 'c-1', 6);
      expect(wire).toMatchObject({ from: 'n1', to: 'n3', cluster_id: 'c-1', cluster_level: 6 });
      expect(messagesFromWire(decode(encode(wire)))).toStrictEqual(msgs);
    }
  });

  it('one message is encoded as messageToWire encodes it (what a build from before reads)', () => {
    for (const m of EVERY_TYPE) expect(encode(batchToWire([m], 'c-1', 6))).toEqual(encode(messageToWire(m, 'c-1', 6)));
  });

  it('refuses to batch messages for two peers, or none', () => {
    expect(codecError(() => batchToWire([same(EVERY_TYPE[0]!), { ...same(EVERY_TYPE[1]!), to: 'n2' } as Message])).path).toBe('batch[0]');
    expect(codecError(() => batchToWire([])).path).toBe('batch');
  });

  it('refuses a batched message from another sender, to another node, with a batch of its own, or malformed — naming it', () => {
    const wire = () =>
      decode(encode(batchToWire([same(EVERY_TYPE[0]!), same(EVERY_TYPE[3]!), same(EVERY_TYPE[1]!)]))) as Record<string, unknown>;
    const inner = (w: Record<string, unknown>, i: number) => (w['batch'] as Record<string, unknown>[])[i]!;

    let w = wire();
    inner(w, 1)['from'] = 'n9';
    expect(codecError(() => messagesFromWire(w)).path).toBe('batch[1].from');
    w = wire();
    inner(w, 0)['to'] = 'n2';
    expect(codecError(() => messagesFromWire(w)).path).toBe('batch[0].to');
    w = wire();
    inner(w, 0)['batch'] = [inner(wire(), 1)];
    expect(codecError(() => messagesFromWire(w)).path).toBe('batch[0].batch');
    w = wire();
    (inner(w, 0)['append_entries'] as Record<string, unknown>)['prev_log_index'] = '-1';
    expect(codecError(() => messagesFromWire(w)).path).toBe('batch[0].append_entries.prev_log_index');
    w = wire();
    w['batch'] = 'not a list';
    expect(codecError(() => messagesFromWire(w)).path).toBe('batch');
  });
});
