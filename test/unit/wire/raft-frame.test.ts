// The hand-written Raft stream codec (src/wire/raft-encode.ts, raft-decode.ts) against protobufjs, both
// ways: what a build from before it (proto-loader's serializer, the strict decoder and the object codec,
// kept in protobufjs-raft-codec.ts) reads of our bytes, and what we read of its bytes and of any valid
// protobuf encoding. Then what a peer may send that must be refused, naming the field, and truncated or
// flipped bytes, which must be refused with a CodecError or read as the old decoder reads them.
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { ConfState, Entry, EntryKind, Message } from '../../../src/raft/core/types.js';
import { descriptorRegistry, strictProblem } from '../../../src/server/client-api/strict-decode.js';
import { packageDefinition } from '../../../src/wire/load.js';
import { encodeRaftFrame } from '../../../src/wire/raft-encode.js';
import { decodeRaftFrame, type RaftFrame } from '../../../src/wire/raft-decode.js';
import { RAFT_STREAM_CODEC } from '../../../src/wire/raft.js';
import { CodecError } from '../../../src/wire/scalars.js';
import { SimRng } from '../../sim/rng.js';
import { batchToWire, messagesFromWire } from './protobufjs-raft-codec.js';
import { tag, varint } from './proto-bytes.js';

// ---- the old path: proto-loader's serializer for Raft.Stream, the strict decoder, the object codec ----

const streamMethod = (
  packageDefinition()['leasehold.v1.Raft'] as Record<
    string,
    { requestSerialize(v: unknown): Buffer; requestDeserialize(b: Buffer): unknown }
  >
)['Stream']!;
const registry = descriptorRegistry(packageDefinition());
const RAFT_MESSAGE_DESCRIPTOR = registry.get('leasehold.v1.RaftMessage')!;

/** What the old build writes for these messages. */
const oldEncode = (msgs: Message[], clusterId: string, level: number): Buffer =>
  streamMethod.requestSerialize(batchToWire(msgs, clusterId, level));

/** What the old build makes of bytes from a peer: a frame, or the reason it refuses them. */
function oldDecode(buf: Buffer): RaftFrame | { refused: string } {
  const problem = strictProblem(buf, RAFT_MESSAGE_DESCRIPTOR, registry);
  if (problem !== null) return { refused: problem };
  let wire: { cluster_id?: string; cluster_level?: number };
  try {
    wire = streamMethod.requestDeserialize(buf) as typeof wire;
  } catch (err) {
    return { refused: `protobufjs: ${(err as Error).message}` };
  }
  try {
    return { messages: messagesFromWire(wire), clusterId: wire.cluster_id ?? '', clusterLevel: wire.cluster_level ?? 0 };
  } catch (err) {
    if (err instanceof CodecError) return { refused: err.message };
    throw err;
  }
}

/** Our decoder's answer: a frame, or the CodecError (anything else thrown fails the test). */
function newDecode(buf: Buffer): RaftFrame | CodecError {
  try {
    return decodeRaftFrame(buf);
  } catch (err) {
    if (err instanceof CodecError) return err;
    throw new Error(`decodeRaftFrame threw ${String(err)}, not a CodecError`);
  }
}

function refusal(buf: Buffer): CodecError {
  const got = newDecode(buf);
  if (!(got instanceof CodecError)) throw new Error(`expected a CodecError, decoded ${JSON.stringify(got.messages.map((m) => m.type))}`);
  return got;
}

// ---- seeded random messages of every body type ----

const MAX = Number.MAX_SAFE_INTEGER;
const KINDS: EntryKind[] = ['normal', 'noop', 'config'];
const BODY_TYPES: Message['type'][] = [
  'RequestVote',
  'RequestVoteResponse',
  'AppendEntries',
  'AppendEntriesResponse',
  'InstallSnapshot',
  'InstallSnapshotResponse',
  'TimeoutNow',
  'ReadIndexRequest',
  'ReadIndexResponse',
];

class Gen {
  private readonly rng: SimRng;
  constructor(seed: number) {
    this.rng = new SimRng(seed);
  }
  int(n: number): number {
    return this.rng.int(n);
  }
  bool(): boolean {
    return this.int(2) === 1;
  }
  /** A count that stresses varint widths: 0, 1, small, 2^31-ish, near 2^35, 2^49, 2^53-1. */
  count(): number {
    return [0, 1, this.int(1000), this.int(2 ** 31), 2 ** 35 - 1 + this.int(2), 2 ** 49 + this.int(1000), MAX][this.int(7)]!;
  }
  blob(max: number): Uint8Array {
    return Uint8Array.from({ length: this.int(max) }, () => this.int(256));
  }
  id(): string {
    // Mostly ASCII ids; now and then one with multi-byte UTF-8 (ids are strings on the wire, any UTF-8).
    return this.int(10) === 0 ? `nø${this.int(5)}€` : `n${this.int(5)}`;
  }
  ctx(): string {
    return ['', `c${this.int(1e6)}`, `read:${'x'.repeat(this.int(200))}`, 'ünïcødé 🔒'][this.int(4)]!;
  }
  conf(): ConfState {
    const ids = (n: number) => Array.from({ length: this.int(n) }, () => this.id());
    const addresses: Record<string, string> = {};
    for (const id of ids(4)) addresses[id] = this.int(5) === 0 ? '' : `127.0.0.1:${7000 + this.int(100)}`;
    return { clusterId: this.int(2) === 0 ? '' : `c-${this.int(100)}`, voters: ids(6), learners: ids(3), removed: ids(3), addresses };
  }
  entries(prevLogIndex: number, prevLogTerm: number, term: number, n: number): Entry[] {
    let t = Math.max(1, prevLogTerm);
    return Array.from({ length: n }, (_, k) => {
      t = Math.min(term, t + this.int(2));
      return { index: prevLogIndex + 1 + k, term: t, kind: KINDS[this.int(3)]!, data: this.blob(this.int(8) === 0 ? 3000 : 120) };
    });
  }
  message(type: Message['type'], from: string, to: string): Message {
    const term = this.int(4) === 0 ? this.count() : this.int(1000) + 1;
    const base = { from, to, term };
    switch (type) {
      case 'RequestVote':
        return { type, ...base, preVote: this.bool(), lastLogIndex: this.count(), lastLogTerm: this.count(), transfer: this.bool() };
      case 'RequestVoteResponse':
        return { type, ...base, preVote: this.bool(), granted: this.bool() };
      case 'AppendEntries': {
        const t = Math.max(1, term);
        const prevLogIndex = this.int(3) === 0 ? 0 : this.int(2 ** 40);
        const prevLogTerm = prevLogIndex === 0 ? 0 : this.int(t) + 1;
        const entries = this.entries(prevLogIndex, prevLogTerm, t, this.int(4) === 0 ? 0 : this.int(17));
        return { type, ...base, term: t, prevLogIndex, prevLogTerm, entries, leaderCommit: this.count(), round: this.count() };
      }
      case 'AppendEntriesResponse':
        return {
          type,
          ...base,
          success: this.bool(),
          matchIndex: this.count(),
          conflictIndex: this.count(),
          conflictTerm: this.count(),
          round: this.count(),
        };
      case 'InstallSnapshot':
        return {
          type,
          ...base,
          meta: { index: this.count(), term: this.count(), conf: this.conf() },
          offset: this.count(),
          chunk: this.blob(this.int(5) === 0 ? 5000 : 64),
          done: this.bool(),
          round: this.count(),
        };
      case 'InstallSnapshotResponse':
        return {
          type,
          ...base,
          snapshotIndex: this.count(),
          nextOffset: this.count(),
          done: this.bool(),
          success: this.bool(),
          round: this.count(),
        };
      case 'TimeoutNow':
        return { type, ...base };
      case 'ReadIndexRequest':
        return { type, ...base, ctx: this.ctx() };
      case 'ReadIndexResponse':
        return { type, ...base, ctx: this.ctx(), index: this.count() };
    }
  }
  /** A frame: one message of `type`, then `batched` more of random types, all from one sender to one peer. */
  frame(type: Message['type'], batched: number): { msgs: Message[]; clusterId: string; level: number } {
    const from = this.id();
    const to = this.id();
    const msgs = [this.message(type, from, to)];
    for (let i = 0; i < batched; i++) msgs.push(this.message(BODY_TYPES[this.int(BODY_TYPES.length)]!, from, to));
    return { msgs, clusterId: ['', 'cluster-1', 'ç-7'][this.int(3)]!, level: [0, 1, 6, 7, 2 ** 32 - 1][this.int(5)]! };
  }
}

/** One frame per body type with 0 to 3 batched, and frames of every batch size from 0 to 70. */
function sampleFrames(seed: number): { msgs: Message[]; clusterId: string; level: number }[] {
  const gen = new Gen(seed);
  const out = [];
  for (const type of BODY_TYPES) for (let n = 0; n <= 3; n++) out.push(gen.frame(type, n));
  for (let n = 0; n <= 70; n++) out.push(gen.frame(BODY_TYPES[n % BODY_TYPES.length]!, n));
  return out;
}

// ---- bytes by hand, for encodings protobufjs never writes ----

const sub = (field: number, bytes: number[]) => [...tag(field, 2), ...varint(BigInt(bytes.length)), ...bytes];
const text = (field: number, s: string) => sub(field, [...Buffer.from(s, 'utf8')]);
const num = (field: number, v: bigint | number) => [...tag(field, 0), ...varint(BigInt(v))];
const header = (from = 'n1', to = 'n2', term = 5) => [...text(1, from), ...text(2, to), ...num(3, term)];
const timeoutNow = sub(16, []);

/** Whether `buf` (a RaftMessage) holds a singular sub-message field twice in one message at any level:
 *  the body, a snapshot's meta or its conf (walked along the schema; valid bytes assumed). */
function repeatsSingularSubMessage(buf: Buffer): boolean {
  // message name -> field number -> sub-message name, for the singular sub-message fields and the repeated
  // ones to walk into (batch, entries, addresses hold no singular sub-message of their own but batch does).
  const singular: Record<string, Record<number, string>> = {
    RaftMessage: { 14: 'InstallSnapshot', 10: '', 11: '', 12: '', 13: '', 15: '', 16: '', 17: '', 18: '' },
    InstallSnapshot: { 1: 'SnapshotMeta' },
    SnapshotMeta: { 3: 'ConfState' },
  };
  const repeated: Record<string, Record<number, string>> = { RaftMessage: { 6: 'RaftMessage' } };
  const walk = (start: number, end: number, name: string): boolean => {
    const seen = new Set<number>();
    let bodies = 0;
    let pos = start;
    const read = (): number => {
      let v = 0;
      let scale = 1;
      for (;;) {
        const b = buf[pos++]!;
        v += (b & 0x7f) * scale;
        if (b < 0x80) return v;
        scale *= 128;
      }
    };
    while (pos < end) {
      const t = read();
      const field = Math.floor(t / 8);
      if (t % 8 === 0) {
        read();
        continue;
      }
      const len = read();
      const from = pos;
      pos += len;
      const sub = singular[name]?.[field];
      if (sub !== undefined) {
        if (name === 'RaftMessage' && ++bodies > 1) return true;
        if (seen.has(field)) return true;
        seen.add(field);
        if (sub !== '' && walk(from, from + len, sub)) return true;
      }
      const rep = repeated[name]?.[field];
      if (rep !== undefined && walk(from, from + len, rep)) return true;
    }
    return false;
  };
  return walk(0, buf.length, 'RaftMessage');
}

describe('cross-checks against protobufjs on seeded random frames (every body, batches of 0..70)', () => {
  const frames = sampleFrames(0x37c0de);

  it('covers every body type, batched and not, and every batch size up to 70', () => {
    const heads = new Set(frames.map((f) => f.msgs[0]!.type));
    const batched = new Set(frames.flatMap((f) => f.msgs.slice(1).map((m) => m.type)));
    expect([...heads].sort()).toEqual([...BODY_TYPES].sort());
    expect([...batched].sort()).toEqual([...BODY_TYPES].sort());
    expect(new Set(frames.map((f) => f.msgs.length - 1))).toEqual(new Set(Array.from({ length: 71 }, (_, n) => n)));
  });

  it('our bytes, read by a build from before (strict decoder, protobufjs, object codec), are the same messages', () => {
    for (const { msgs, clusterId, level } of frames) {
      const old = oldDecode(encodeRaftFrame(msgs, clusterId, level));
      expect(old).toStrictEqual({ messages: msgs, clusterId, clusterLevel: level });
    }
  });

  it("protobufjs's bytes (defaults written out, as it writes them), read by us, are the same messages", () => {
    for (const { msgs, clusterId, level } of frames) {
      expect(decodeRaftFrame(oldEncode(msgs, clusterId, level))).toStrictEqual({ messages: msgs, clusterId, clusterLevel: level });
    }
  });

  it('our encoding of our decoding is byte for byte what we decoded', () => {
    for (const { msgs, clusterId, level } of frames) {
      const bytes = encodeRaftFrame(msgs, clusterId, level);
      const back = decodeRaftFrame(bytes);
      expect(encodeRaftFrame(back.messages, back.clusterId, back.clusterLevel).equals(bytes)).toBe(true);
    }
  });

  it("is never larger than protobufjs's encoding (defaults are left off)", () => {
    for (const { msgs, clusterId, level } of frames) {
      expect(encodeRaftFrame(msgs, clusterId, level).length).toBeLessThanOrEqual(oldEncode(msgs, clusterId, level).length);
    }
  });

  it('goes through the gRPC method codec the peer stream is registered with', () => {
    const { msgs, clusterId, level } = frames[frames.length - 1]!;
    const bytes = RAFT_STREAM_CODEC.requestSerialize(encodeRaftFrame(msgs, clusterId, level));
    expect(RAFT_STREAM_CODEC.requestDeserialize(bytes)).toStrictEqual({ messages: msgs, clusterId, clusterLevel: level });
    expect(RAFT_STREAM_CODEC.requestDeserialize(Buffer.from([0x08, 0x01]))).toStrictEqual({
      __invalid: 'from: wrong wire type 0 for this field',
    });
  });
});

describe('entry data: one new buffer per received AppendEntries, never a view into the received bytes', () => {
  it('copies each message’s entries into one buffer of their bytes alone; snapshot chunks are copied too', () => {
    const gen = new Gen(7);
    const append = { ...gen.message('AppendEntries', 'n1', 'n2'), term: 9, prevLogIndex: 40, prevLogTerm: 4 } as Message;
    (append as { entries: Entry[] }).entries = gen.entries(40, 4, 9, 7);
    const second = { ...append, prevLogIndex: 47, prevLogTerm: 9, entries: gen.entries(47, 9, 9, 3) } as Message;
    const snap = gen.message('InstallSnapshot', 'n1', 'n2');
    const received = encodeRaftFrame([append, second, snap], 'c', 6);
    const frame = decodeRaftFrame(received);
    const expected = structuredClone(frame.messages);
    for (const m of frame.messages.slice(0, 2)) {
      const entries = (m as { entries: Entry[] }).entries;
      const slab = entries[0]!.data.buffer;
      expect(slab.byteLength).toBe(entries.reduce((a, e) => a + e.data.length, 0));
      let at = 0;
      for (const e of entries) {
        expect(e.data.buffer).toBe(slab);
        expect(e.data.byteOffset).toBe(at);
        expect(Object.getPrototypeOf(e.data)).toBe(Uint8Array.prototype);
        at += e.data.length;
      }
    }
    const slabs = frame.messages.slice(0, 2).map((m) => (m as { entries: Entry[] }).entries[0]!.data.buffer);
    expect(slabs[0]).not.toBe(slabs[1]);
    const chunk = (frame.messages[2] as { chunk: Uint8Array }).chunk;
    expect(Object.getPrototypeOf(chunk)).toBe(Uint8Array.prototype);
    expect(chunk.buffer).not.toBe(received.buffer);
    // gRPC reuses or frees the received buffer: what was decoded does not see it.
    received.fill(0xee);
    expect(frame.messages).toStrictEqual(expected);
  });
});

describe('reads every valid encoding, as any protobuf writer may produce it', () => {
  const entry = (index: number, term: number, data: number[]) => [...num(1, index), ...num(2, term), ...num(3, 1), ...sub(4, data)];

  it('fields in any order, a repeated field split around others, a scalar repeated (the last wins), defaults present', () => {
    const body = [
      ...num(5, 9), // round
      ...sub(3, entry(11, 2, [1])),
      ...num(4, 0), // leader_commit, a default written out
      ...num(1, 999), // prev_log_index, overwritten below
      ...sub(3, [...sub(4, [2, 2]), ...num(3, 1), ...num(2, 2), ...num(1, 12)]), // an entry's fields reversed
      ...num(1, 10),
      ...num(2, 1),
      ...num(4, 11),
    ];
    const bytes = Buffer.from([
      ...sub(12, body),
      ...num(3, 7),
      ...num(3, 2),
      ...text(2, 'n2'),
      ...text(4, ''),
      ...num(5, 0),
      ...text(1, 'n1'),
    ]);
    const expected: Message = {
      type: 'AppendEntries',
      from: 'n1',
      to: 'n2',
      term: 2,
      prevLogIndex: 10,
      prevLogTerm: 1,
      leaderCommit: 11,
      round: 9,
      entries: [
        { index: 11, term: 2, kind: 'normal', data: new Uint8Array([1]) },
        { index: 12, term: 2, kind: 'normal', data: new Uint8Array([2, 2]) },
      ],
    };
    expect(decodeRaftFrame(bytes)).toStrictEqual({ messages: [expected], clusterId: '', clusterLevel: 0 });
    expect(oldDecode(bytes)).toStrictEqual({ messages: [expected], clusterId: '', clusterLevel: 0 });
  });

  it('the batch before the header, and a non-minimal varint', () => {
    const bytes = Buffer.from([
      ...sub(6, [...header('a', 'b', 3), ...timeoutNow]),
      ...timeoutNow,
      ...header('a', 'b', 4),
      0x28,
      0x86,
      0x80,
      0x00,
    ]);
    const got = decodeRaftFrame(bytes);
    expect(got.clusterLevel).toBe(6);
    expect(got.messages.map((m) => [m.type, m.term])).toEqual([
      ['TimeoutNow', 4],
      ['TimeoutNow', 3],
    ]);
    expect(oldDecode(bytes)).toStrictEqual(got);
  });

  it('a sub-message repeated is merged (snapshot meta, its conf), a oneof set twice takes the last', () => {
    const meta1 = [...num(1, 5), ...sub(3, [...text(1, 'n1'), ...text(5, 'c-old')])];
    const meta2 = [...num(2, 3), ...sub(3, [...text(1, 'n2'), ...sub(4, [...text(1, 'n1'), ...text(2, 'h:1')]), ...text(5, 'c-new')])];
    const bytes = Buffer.from([...header(), ...sub(14, [...sub(1, meta1), ...num(4, 1)]), ...sub(14, [...sub(1, meta2), ...sub(3, [9])])]);
    expect(decodeRaftFrame(bytes).messages).toStrictEqual([
      {
        type: 'InstallSnapshot',
        from: 'n1',
        to: 'n2',
        term: 5,
        meta: {
          index: 5,
          term: 3,
          conf: { clusterId: 'c-new', voters: ['n1', 'n2'], learners: [], removed: [], addresses: { n1: 'h:1' } },
        },
        offset: 0,
        chunk: new Uint8Array([9]),
        done: true,
        round: 0,
      },
    ]);
    const twoBodies = Buffer.from([...header(), ...sub(11, num(2, 1)), ...timeoutNow]);
    expect(decodeRaftFrame(twoBodies).messages.map((m) => m.type)).toEqual(['TimeoutNow']);
  });
});

describe('refuses what a build from before refuses, naming the field', () => {
  const refusedPath = (bytes: number[]) => {
    const buf = Buffer.from(bytes);
    expect(oldDecode(buf)).toHaveProperty('refused');
    return refusal(buf).path;
  };

  it('unknown fields at every level, wrong wire types', () => {
    expect(refusedPath([...header(), ...timeoutNow, ...num(7, 1)])).toBe('');
    expect(refusal(Buffer.from([...header(), ...timeoutNow, ...num(7, 1)])).message).toBe('unknown field number 7');
    expect(refusedPath([...header(), ...sub(16, num(1, 1))])).toBe('timeout_now');
    expect(refusedPath([...header(), ...sub(12, [...sub(3, [...num(1, 1), ...num(2, 1), ...num(3, 1), ...num(9, 1)])])])).toBe(
      'append_entries.entries[0]',
    );
    expect(refusedPath([...num(1, 1), ...text(2, 'n2'), ...timeoutNow])).toBe('from');
    expect(refusedPath([...header(), ...sub(10, text(2, 'x'))])).toBe('request_vote.last_log_index');
    expect(refusedPath([...header(), ...num(12, 1)])).toBe('append_entries');
    expect(refusedPath([...header(), ...timeoutNow, ...tag(3, 1), 0, 0, 0, 0, 0, 0, 0, 0])).toBe('term');
    expect(refusedPath([...header(), ...timeoutNow, ...tag(3, 3)])).toBe('term'); // a group
  });

  it('varints too wide for their field: uint64 past 2^64, a count past 2^53-1, a bool of 2, a uint32 past 2^32', () => {
    expect(refusedPath([...header(), ...sub(12, num(1, 2n ** 64n + 1n))])).toBe('append_entries.prev_log_index');
    expect(refusedPath([...header(), ...sub(12, [...tag(1, 0), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])])).toBe(
      'append_entries.prev_log_index',
    );
    const big = refusal(Buffer.from([...text(1, 'a'), ...text(2, 'b'), ...num(3, 2n ** 64n - 1n), ...timeoutNow]));
    expect(big.path).toBe('term');
    expect(big.message).toMatch(/2\^53-1/);
    expect(refusal(Buffer.from([...header(), ...num(3, MAX + 1), ...timeoutNow])).path).toBe('term');
    expect(decodeRaftFrame(Buffer.from([...header('a', 'b', MAX), ...timeoutNow])).messages[0]!.term).toBe(MAX);
    expect(refusedPath([...header(), ...sub(11, num(2, 2))])).toBe('request_vote_response.granted');
    expect(refusedPath([...header(), ...num(5, 2n ** 32n), ...timeoutNow])).toBe('cluster_level');
  });

  it('invalid UTF-8 in any string', () => {
    expect(refusedPath([...sub(1, [0xc0, 0x80]), ...text(2, 'n2'), ...timeoutNow])).toBe('from');
    expect(refusedPath([...header(), ...sub(17, sub(1, [0x61, 0xff]))])).toBe('read_index_request.ctx');
    expect(refusedPath([...header(), ...sub(14, sub(1, sub(3, sub(1, [0xed, 0xa0, 0x80]))))])).toBe('install_snapshot.meta.conf.voters');
  });

  it('no body, an empty node id, an entry kind unspecified or unknown (or negative), index or term 0', () => {
    expect(refusedPath(header())).toBe('body');
    expect(refusedPath([...text(2, 'n2'), ...timeoutNow])).toBe('from');
    expect(refusedPath([...text(1, 'n1'), ...timeoutNow])).toBe('to');
    const withEntry = (e: number[]) => [...header('a', 'b', 3), ...sub(12, sub(3, e))];
    for (const kind of [0n, 4n, 7n, 2n ** 64n - 1n]) {
      expect(refusedPath(withEntry([...num(1, 1), ...num(2, 1), ...num(3, kind)]))).toBe('append_entries.entries[0].kind');
    }
    expect(refusedPath(withEntry([...num(2, 1), ...num(3, 1)]))).toBe('append_entries.entries[0].index');
    expect(refusedPath(withEntry([...num(1, 1), ...num(3, 1)]))).toBe('append_entries.entries[0].term');
  });

  it('entries that do not follow prev_log_index, or whose terms go backwards or past the message term', () => {
    const e = (index: number, term: number) => sub(3, [...num(1, index), ...num(2, term), ...num(3, 1)]);
    const append = (prev: number, prevTerm: number, ...entries: number[][]) => [
      ...header('a', 'b', 9),
      ...sub(12, [...num(1, prev), ...num(2, prevTerm), ...entries.flat()]),
    ];
    expect(refusedPath(append(100, 8, e(101, 8), e(105, 9)))).toBe('append_entries.entries[1].index');
    expect(refusedPath(append(99, 8, e(101, 8)))).toBe('append_entries.entries[0].index');
    expect(refusedPath(append(100, 8, e(101, 9), e(102, 8)))).toBe('append_entries.entries[1].term');
    expect(refusedPath(append(100, 8, e(101, 10)))).toBe('append_entries.entries[0].term');
    expect(refusedPath(append(100, 9, e(101, 8)))).toBe('append_entries.entries[0].term');
  });

  it('a snapshot without meta or conf, or with an empty id', () => {
    expect(refusedPath([...header(), ...sub(14, num(2, 1))])).toBe('install_snapshot.meta');
    expect(refusedPath([...header(), ...sub(14, sub(1, num(1, 5)))])).toBe('install_snapshot.meta.conf');
    expect(refusedPath([...header(), ...sub(14, sub(1, sub(3, [...text(1, 'n1'), ...text(1, '')])))])).toBe(
      'install_snapshot.meta.conf.voters[1]',
    );
    expect(refusedPath([...header(), ...sub(14, sub(1, sub(3, [...text(3, 'n1'), ...sub(4, text(2, 'h:1'))])))])).toBe(
      'install_snapshot.meta.conf.addresses[0].id',
    );
  });

  it('a batched message from another sender, to another node, with a batch of its own, or malformed', () => {
    const batched = (...inner: number[][]) => [...header('a', 'b'), ...timeoutNow, ...inner.map((m) => sub(6, m)).flat()];
    const ok = [...header('a', 'b'), ...timeoutNow];
    expect(refusedPath(batched(ok, [...header('x', 'b'), ...timeoutNow]))).toBe('batch[1].from');
    expect(refusedPath(batched([...header('a', 'c'), ...timeoutNow]))).toBe('batch[0].to');
    expect(refusedPath(batched(ok, [...ok, ...sub(6, ok)]))).toBe('batch[1].batch');
    expect(refusedPath(batched(ok, ok, [...header('a', 'b'), ...sub(12, num(1, 2n ** 64n))]))).toBe(
      'batch[2].append_entries.prev_log_index',
    );
    expect(refusedPath(batched(header('a', 'b')))).toBe('batch[0].body');
  });

  it('a length past the end of its message, at every level, before allocating for it', () => {
    // batch element, body, entry, entry data, string: each claims more than is left of its enclosing message.
    const inner = [...header('a', 'b'), ...timeoutNow];
    const cases: [number[], string][] = [
      [[...header(), ...timeoutNow, ...tag(6, 2), ...varint(BigInt(inner.length + 1)), ...inner], 'batch'],
      [[...header(), ...tag(12, 2), 5, ...num(1, 1)], 'append_entries'],
      [[...header(), ...sub(12, [...tag(3, 2), 9, ...num(1, 1), ...num(2, 1), ...num(3, 1)])], 'append_entries.entries'],
      [
        [...header(), ...sub(12, sub(3, [...num(1, 1), ...num(2, 1), ...num(3, 1), ...tag(4, 2), 3, 1, 2]))],
        'append_entries.entries[0].data',
      ],
      [
        [...header(), ...sub(12, [...sub(3, [...num(1, 1), ...num(2, 1), ...tag(4, 2), 3, 1, 2]), ...num(5, 1)])],
        'append_entries.entries[0].data',
      ],
      [[...header(), ...timeoutNow, ...tag(4, 2), 5, 0x61], 'cluster_id'],
    ];
    for (const [bytes, path] of cases) {
      expect(refusedPath(bytes)).toBe(path);
      expect(refusal(Buffer.from(bytes)).message).toMatch(/runs past the end/);
    }
    // A length of 2^53-1 is refused as such, not allocated for.
    expect(refusal(Buffer.from([...header(), ...tag(14, 2), ...varint(BigInt(MAX))])).path).toBe('install_snapshot');
  });
});

describe('every truncation and seeded byte flips: a CodecError, or a message the old decoder reads too', () => {
  it('every prefix of valid encodings (ours and protobufjs’s) is refused: the body, last on the wire, is cut', () => {
    const gen = new Gen(0x7e57);
    let prefixes = 0;
    for (const type of BODY_TYPES) {
      const { msgs, clusterId, level } = gen.frame(type, 2);
      for (const whole of [encodeRaftFrame(msgs, clusterId, level), oldEncode(msgs, clusterId, level)]) {
        for (let n = 0; n < whole.length; n++) {
          // A copy of exactly the prefix: nothing after it that a read past the end could find.
          const cut = Buffer.from(whole.subarray(0, n));
          expect(newDecode(cut)).toBeInstanceOf(CodecError);
          expect(oldDecode(cut)).toHaveProperty('refused');
          prefixes++;
        }
        expect(decodeRaftFrame(whole).messages).toStrictEqual(msgs);
      }
    }
    expect(prefixes).toBeGreaterThan(1000);
  });

  it('20,000 seeded random byte flips', () => {
    const gen = new Gen(0xf11b);
    const outcomes = { refused: 0, same: 0, merged: 0 };
    const wholes = BODY_TYPES.map((type) => {
      const { msgs, clusterId, level } = gen.frame(type, 2);
      return encodeRaftFrame(msgs, clusterId, level);
    });
    for (let i = 0; i < 20_000; i++) {
      const buf = Buffer.from(wholes[i % wholes.length]!);
      for (let k = 1 + gen.int(3); k > 0; k--) buf[gen.int(buf.length)] = gen.int(256);
      const got = newDecode(buf);
      if (got instanceof CodecError) {
        outcomes.refused++;
        continue;
      }
      const old = oldDecode(buf);
      expect(old, 'what we read, the old decoder reads too').not.toHaveProperty('refused');
      if (isDeepStrictEqual(old, got)) {
        outcomes.same++;
        continue;
      }
      // The one way the two may read valid bytes differently: a singular sub-message on the wire twice.
      // protobufjs keeps the last; the protobuf spec (and we) merge them. Re-encoded, ours is a frame the
      // old decoder reads exactly as we do.
      outcomes.merged++;
      expect(repeatsSingularSubMessage(buf), 'a difference comes only from a repeated singular sub-message').toBe(true);
      expect(oldDecode(encodeRaftFrame(got.messages, got.clusterId, got.clusterLevel))).toStrictEqual(got);
    }
    expect(outcomes.refused).toBeGreaterThan(outcomes.same);
    expect(outcomes.same).toBeGreaterThan(100);
  });
});

describe('encodeRaftFrame refuses what cannot be encoded faithfully, naming the field', () => {
  const gen = new Gen(3);
  const vote = gen.message('RequestVote', 'n1', 'n2');
  const append = { ...gen.message('AppendEntries', 'n1', 'n2'), term: 5, prevLogIndex: 0, prevLogTerm: 0 } as Message;
  (append as { entries: Entry[] }).entries = gen.entries(0, 0, 5, 2);
  const path = (msgs: Message[]): string => {
    try {
      encodeRaftFrame(msgs, '', 0);
    } catch (err) {
      expect(err).toBeInstanceOf(CodecError);
      return (err as CodecError).path;
    }
    throw new Error('expected a CodecError');
  };
  it.each([
    ['negative term', [{ ...vote, term: -1 }], 'term'],
    ['fractional index', [{ ...vote, lastLogIndex: 1.5 }], 'request_vote.last_log_index'],
    ['NaN', [{ ...vote, lastLogTerm: NaN }], 'request_vote.last_log_term'],
    ['beyond 2^53-1', [{ ...vote, lastLogIndex: 2 ** 53 }], 'request_vote.last_log_index'],
    ['empty from', [{ ...vote, from: '' }], 'from'],
    ['an unknown type', [{ ...vote, type: 'Heartbeat' }], 'type'],
    [
      'an unknown entry kind',
      [{ ...append, entries: [{ index: 1, term: 1, kind: 'snapshot', data: new Uint8Array() }] }],
      'append_entries.entries[0].kind',
    ],
    ['a bad count in a batched message', [vote, { ...vote, term: -1 }], 'batch[0].term'],
    ['a batched message to another peer', [vote, append, { ...vote, to: 'n3' }], 'batch[1]'],
    ['no message', [], 'batch'],
  ] as const)('%s', (_name, msgs, expected) => {
    expect(path(msgs as unknown as Message[])).toBe(expected);
  });
});
