// The hand-written envelope codec of Lock/Stream and Forward (src/wire/call-envelope-*.ts) against
// protobufjs, which a build from before reads and writes these messages with (proto-loader's serializers,
// after the strict decoder's walk): seeded random LockCalls, ForwardedCalls, LockAnswers and
// ForwardedAnswers, every lock call inside, both ways; then what it refuses, naming the field.
import { describe, expect, it } from 'vitest';
import { decodeLockCall } from '../../../src/server/client-api/lock-stream-codec.js';
import { descriptorRegistry, strictProblem } from '../../../src/server/client-api/strict-decode.js';
import type { AnswerEnvelope, CallEnvelope, EnvelopeKind } from '../../../src/wire/call-envelope.js';
import { CALL_FIELD, FORWARDED_ANSWER, FORWARDED_CALL, LOCK_ANSWER, LOCK_CALL } from '../../../src/wire/call-envelope.js';
import { decodeAnswerEnvelope, decodeCallEnvelope } from '../../../src/wire/call-envelope-decode.js';
import { encodeAnswerEnvelope, encodeCallEnvelope } from '../../../src/wire/call-envelope-encode.js';
import { packageDefinition } from '../../../src/wire/load.js';
import type { LockCallName } from '../../../src/wire/lock.js';
import { FORWARD_CODEC } from '../../../src/wire/raft.js';
import { CodecError } from '../../../src/wire/scalars.js';
import { SimRng } from '../../sim/rng.js';
import { tag, varint } from './proto-bytes.js';

interface PbMethod {
  requestSerialize(v: unknown): Buffer;
  requestDeserialize(b: Buffer): unknown;
  responseSerialize(v: unknown): Buffer;
  responseDeserialize(b: Buffer): unknown;
}
const method = (service: string, name: string): PbMethod => (packageDefinition()[service] as unknown as Record<string, PbMethod>)[name]!;
const LOCK_STREAM = method('leasehold.v1.Lock', 'Stream');
const FORWARD = method('leasehold.v1.Raft', 'Forward');
const UNARY: Record<LockCallName, PbMethod> = {
  acquire: method('leasehold.v1.Lock', 'Acquire'),
  renew: method('leasehold.v1.Lock', 'Renew'),
  release: method('leasehold.v1.Lock', 'Release'),
  get: method('leasehold.v1.Lock', 'Get'),
  open_session: method('leasehold.v1.Lock', 'OpenSession'),
  renew_session: method('leasehold.v1.Lock', 'RenewSession'),
  close_session: method('leasehold.v1.Lock', 'CloseSession'),
};
const registry = descriptorRegistry(packageDefinition());
const descriptor = (name: string) => registry.get(`leasehold.v1.${name}`)!;
const NAMES = Object.keys(CALL_FIELD) as LockCallName[];

/** The old build's codec of each message. */
const OLD = {
  call: {
    lock: {
      encode: (v: unknown) => LOCK_STREAM.requestSerialize(v),
      decode: (b: Buffer) => LOCK_STREAM.requestDeserialize(b),
      message: 'LockCall',
    },
    forward: {
      encode: (v: unknown) => FORWARD.requestSerialize(v),
      decode: (b: Buffer) => FORWARD.requestDeserialize(b),
      message: 'ForwardedCall',
    },
  },
  answer: {
    lock: {
      encode: (v: unknown) => LOCK_STREAM.responseSerialize(v),
      decode: (b: Buffer) => LOCK_STREAM.responseDeserialize(b),
      message: 'LockAnswer',
    },
    forward: {
      encode: (v: unknown) => FORWARD.responseSerialize(v),
      decode: (b: Buffer) => FORWARD.responseDeserialize(b),
      message: 'ForwardedAnswer',
    },
  },
} as const;

// ---- seeded random messages ----

class Gen {
  private readonly rng: SimRng;
  constructor(seed: number) {
    this.rng = new SimRng(seed);
  }
  str(): string {
    const alphabets = ['abcxyz-_/.0189', 'ключ', 'é€𝄞', ''];
    const a = this.rng.pick(alphabets);
    if (a === '') return '';
    return Array.from({ length: this.rng.int(12) }, () => [...a][this.rng.int([...a].length)]).join('');
  }
  uint64(): string {
    switch (this.rng.int(5)) {
      case 0:
        return '0';
      case 1:
        return String(this.rng.int(200));
      case 2:
        return String(this.rng.int(2 ** 31));
      case 3:
        return String(BigInt(this.rng.int(2 ** 30)) * 2n ** 22n + BigInt(this.rng.int(2 ** 22)));
      default:
        return String(2n ** 64n - 1n - BigInt(this.rng.int(1000)));
    }
  }
  uint32(): number {
    return this.rng.pick([0, 1, this.rng.int(100_000), 0xffffffff]);
  }
  bool(): boolean {
    return this.rng.chance(0.5);
  }
  pick<T>(xs: readonly T[]): T {
    return this.rng.pick(xs);
  }
  /** A request object of call `name`, some fields left unset. */
  request(name: LockCallName): Record<string, unknown> {
    const o: Record<string, unknown> = {};
    const maybe = (k: string, v: () => unknown) => {
      if (this.rng.chance(0.7)) o[k] = v();
    };
    maybe('key', () => this.str());
    maybe('owner', () => this.str());
    maybe('request_id', () => this.str());
    if (name === 'acquire') {
      maybe('ttl_ms', () => this.uint64());
      maybe('wait_ms', () => this.uint64());
      maybe('value', () => Buffer.from(this.str()));
      maybe('limit', () => this.uint32());
      maybe('shared', () => this.bool());
    }
    if (name === 'renew' || name === 'release') maybe('token', () => this.uint64());
    if (name.endsWith('session')) maybe('session_id', () => this.uint64());
    return o;
  }
  /** A response object of call `name`. */
  response(name: LockCallName): Record<string, unknown> {
    switch (name) {
      case 'acquire':
        return { acquired: this.bool(), token: this.uint64(), holder_owner: this.str() };
      case 'get':
        return { held: this.bool(), owner: this.str(), holders: [{ owner: this.str(), token: this.uint64() }], waiters: this.uint32() };
      case 'close_session':
        return { closed: this.bool(), released: [this.str(), this.str()] };
      default:
        return { renewed: this.bool(), released: this.bool(), ttl_ms: this.uint64() };
    }
  }
  callName(): LockCallName | undefined {
    return this.rng.chance(0.9) ? this.pick(NAMES) : undefined;
  }
  code(): number {
    return this.pick([0, 0, 0, 1, 4, 14, 16, -1, -(2 ** 31), 2 ** 31 - 1]);
  }
}

/** A call as the old build's object (what its serializer takes) and as our envelope. */
function sampleCalls(kind: EnvelopeKind, seed: number, n: number): { object: Record<string, unknown>; envelope: CallEnvelope }[] {
  const g = new Gen(seed);
  return Array.from({ length: n }, () => {
    const name = g.callName();
    const request = name === undefined ? undefined : g.request(name);
    const envelope: CallEnvelope = {
      callId: g.uint64(),
      timeoutMs: g.uint32(),
      cancel: g.bool(),
      from: kind === 'forward' ? g.str() : '',
      clusterId: kind === 'forward' ? g.str() : '',
      name,
      body: name === undefined ? undefined : UNARY[name].requestSerialize(request),
    };
    const object: Record<string, unknown> = { call_id: envelope.callId, timeout_ms: envelope.timeoutMs, cancel: envelope.cancel };
    if (kind === 'forward') Object.assign(object, { from: envelope.from, cluster_id: envelope.clusterId });
    if (name !== undefined) object[name] = request;
    return { object, envelope };
  });
}

function sampleAnswers(kind: EnvelopeKind, seed: number, n: number): { object: Record<string, unknown>; envelope: AnswerEnvelope }[] {
  const g = new Gen(seed);
  return Array.from({ length: n }, () => {
    const name = g.callName();
    const response = name === undefined ? undefined : g.response(name);
    const envelope: AnswerEnvelope = {
      callId: g.uint64(),
      code: g.code(),
      details: g.str(),
      leader: kind === 'lock' ? g.str() : '',
      name,
      body: name === undefined ? undefined : UNARY[name].responseSerialize(response),
    };
    const object: Record<string, unknown> = { call_id: envelope.callId, code: envelope.code, details: envelope.details };
    if (kind === 'lock') object.leader = envelope.leader;
    if (name !== undefined) object[name] = response;
    return { object, envelope };
  });
}

/** The inner message as the old build decodes it (to compare bytes that may differ in field order). */
const innerOfCall = (name: LockCallName | undefined, body: Uint8Array | undefined) =>
  name === undefined ? undefined : UNARY[name].requestDeserialize(Buffer.from(body!));
const innerOfAnswer = (name: LockCallName | undefined, body: Uint8Array | undefined) =>
  name === undefined ? undefined : UNARY[name].responseDeserialize(Buffer.from(body!));

const KINDS: EnvelopeKind[] = ['lock', 'forward'];

describe.each(KINDS)('%s envelopes against protobufjs, seeded random messages', (kind) => {
  const calls = sampleCalls(kind, kind === 'lock' ? 37 : 38, 400);
  const answers = sampleAnswers(kind, kind === 'lock' ? 39 : 40, 400);
  const oldCall = OLD.call[kind];
  const oldAnswer = OLD.answer[kind];

  it('covers every lock call inside, none, cancels, call ids past 2^53 and negative codes', () => {
    expect(new Set(calls.map((c) => c.envelope.name))).toEqual(new Set([...NAMES, undefined]));
    expect(new Set(answers.map((a) => a.envelope.name))).toEqual(new Set([...NAMES, undefined]));
    expect(calls.some((c) => BigInt(c.envelope.callId) > 2n ** 53n)).toBe(true);
    expect(calls.some((c) => c.envelope.cancel)).toBe(true);
    expect(answers.some((a) => a.envelope.code < 0)).toBe(true);
  });

  it('our bytes, read by a build from before (strict decoder, protobufjs), are the same messages', () => {
    for (const { object, envelope } of calls) {
      const ours = encodeCallEnvelope(envelope, kind);
      expect(strictProblem(ours, descriptor(oldCall.message), registry)).toBeNull();
      expect(oldCall.decode(ours)).toStrictEqual(oldCall.decode(oldCall.encode(object)));
    }
    for (const { object, envelope } of answers) {
      const ours = encodeAnswerEnvelope(envelope, kind);
      expect(strictProblem(ours, descriptor(oldAnswer.message), registry)).toBeNull();
      expect(oldAnswer.decode(ours)).toStrictEqual(oldAnswer.decode(oldAnswer.encode(object)));
    }
  });

  it("protobufjs's bytes, read by us, are the same envelopes, the inner bytes exactly the inner message's", () => {
    for (const { object, envelope } of calls) {
      const got = decodeCallEnvelope(oldCall.encode(object), kind);
      expect({ ...got, body: undefined }).toStrictEqual({ ...envelope, body: undefined });
      // The bytes a follower passes on are the request's own encoding, byte for byte.
      if (envelope.body !== undefined) expect(Buffer.compare(got.body!, envelope.body)).toBe(0);
      else expect(got.body).toBeUndefined();
    }
    for (const { object, envelope } of answers) {
      const got = decodeAnswerEnvelope(oldAnswer.encode(object), kind);
      expect({ ...got, body: undefined }).toStrictEqual({ ...envelope, body: undefined });
      expect(innerOfAnswer(got.name, got.body)).toStrictEqual(innerOfAnswer(envelope.name, envelope.body));
    }
  });

  it('our encoding of our decoding is byte for byte what we decoded', () => {
    for (const { envelope } of calls) {
      const bytes = encodeCallEnvelope(envelope, kind);
      expect(encodeCallEnvelope(decodeCallEnvelope(bytes, kind), kind).equals(bytes)).toBe(true);
      expect(innerOfCall(decodeCallEnvelope(bytes, kind).name, decodeCallEnvelope(bytes, kind).body)).toStrictEqual(
        innerOfCall(envelope.name, envelope.body),
      );
    }
    for (const { envelope } of answers) {
      const bytes = encodeAnswerEnvelope(envelope, kind);
      expect(encodeAnswerEnvelope(decodeAnswerEnvelope(bytes, kind), kind).equals(bytes)).toBe(true);
    }
  });

  it('the inner bytes are a view into the received buffer, not a copy', () => {
    const { envelope } = calls.find((c) => c.envelope.body !== undefined && c.envelope.body.length > 0)!;
    const bytes = encodeCallEnvelope(envelope, kind);
    const got = decodeCallEnvelope(bytes, kind);
    expect(got.body!.buffer).toBe(bytes.buffer);
    expect(got.body!.byteOffset + got.body!.length).toBe(bytes.byteOffset + bytes.length);
  });
});

describe('the field numbers are the .proto’s', () => {
  it.each([
    ['LockCall', LOCK_CALL],
    ['ForwardedCall', FORWARDED_CALL],
    ['LockAnswer', LOCK_ANSWER],
    ['ForwardedAnswer', FORWARDED_ANSWER],
  ] as const)('%s', (message, fields) => {
    const fromProto = Object.fromEntries((descriptor(message).field ?? []).map((f) => [f.name, f.number]));
    expect(fields).toStrictEqual(fromProto);
  });
});

// ---- refusals ----

function refusal(run: () => unknown): CodecError {
  try {
    run();
  } catch (err) {
    if (err instanceof CodecError) return err;
    throw new Error(`threw ${String(err)}, not a CodecError`);
  }
  throw new Error('decoded, expected a CodecError');
}

const bytes = (...parts: number[][]): Buffer => Buffer.from(parts.flat());
const num = (field: number, v: bigint): number[] => [...tag(field, 0), ...varint(v)];
const len = (field: number, b: number[]): number[] => [...tag(field, 2), ...varint(BigInt(b.length)), ...b];

describe('refuses what a build from before refuses, naming the field', () => {
  const lockCall = (...parts: number[][]) => refusal(() => decodeCallEnvelope(bytes(...parts), 'lock')).message;
  const forwarded = (...parts: number[][]) => refusal(() => decodeCallEnvelope(bytes(...parts), 'forward')).message;
  const answer = (kind: EnvelopeKind, ...parts: number[][]) => refusal(() => decodeAnswerEnvelope(bytes(...parts), kind)).message;

  it('an unknown field, a wrong wire type', () => {
    expect(lockCall(num(1, 1n), num(99, 1n))).toBe('LockCall: unknown field number 99');
    expect(forwarded(num(19, 1n))).toBe('ForwardedCall: unknown field number 19');
    expect(lockCall(num(4, 1n))).toBe('LockCall: unknown field number 4'); // ForwardedCall's timeout_ms
    expect(answer('forward', len(4, [0x61]))).toBe('ForwardedAnswer: unknown field number 4'); // LockAnswer's leader
    expect(lockCall(len(1, [1]))).toBe('call_id: wrong wire type 2 for this field');
    expect(lockCall(num(10, 1n))).toBe('acquire: wrong wire type 0 for this field');
    expect(answer('lock', len(2, []))).toBe('code: wrong wire type 2 for this field');
  });

  it('varints too wide for their field: a call_id past 2^64, a timeout past 2^32, a bool of 2, an int32 code out of range', () => {
    expect(lockCall(num(1, 2n ** 64n))).toBe('call_id: varint wider than 64 bits');
    expect(lockCall([0x08, ...Array(10).fill(0xff), 0x01])).toBe('call_id: varint longer than 10 bytes');
    expect(lockCall(num(2, 2n ** 32n))).toBe('timeout_ms: varint 4294967296 overflows a uint32 field');
    expect(forwarded(num(5, 2n))).toBe('cancel: varint 2 overflows a bool field');
    expect(answer('lock', num(2, 2n ** 31n))).toBe('code: varint 2147483648 overflows a int32 field');
    expect(answer('lock', num(2, 2n ** 63n))).toBe(`code: varint ${2n ** 63n} overflows a int32 field`);
    expect(lockCall([0x08, 0x80])).toBe('call_id: truncated varint');
    // ...and what fits: 2^64-1, a uint32's top, a sign-extended -1.
    expect(decodeCallEnvelope(bytes(num(1, 2n ** 64n - 1n), num(2, 2n ** 32n - 1n)), 'lock')).toMatchObject({
      callId: String(2n ** 64n - 1n),
      timeoutMs: 2 ** 32 - 1,
    });
    expect(decodeAnswerEnvelope(bytes(num(2, 2n ** 64n - 1n)), 'lock').code).toBe(-1);
  });

  it('invalid UTF-8 in any string', () => {
    expect(forwarded(len(2, [0x6e, 0xff]))).toBe('from: not valid UTF-8');
    expect(forwarded(len(3, [0xc3]))).toBe('cluster_id: not valid UTF-8');
    expect(answer('lock', len(3, [0xfe]))).toBe('details: not valid UTF-8');
    expect(answer('lock', len(4, [0x80]))).toBe('leader: not valid UTF-8');
  });

  it('a length past the end of its buffer, the inner call’s and a string’s, before reading it', () => {
    const acquire = [...tag(10, 2), ...varint(5n), 0x0a, 0x01, 0x6b]; // says 5 bytes, has 3
    expect(lockCall(num(1, 7n), acquire)).toBe('acquire: length 5 runs past the end of its message (3 bytes left)');
    expect(forwarded(num(1, 7n), [...tag(16, 2), ...varint(2n ** 40n)])).toMatch(/^close_session: length 1099511627776 runs past the end/);
    expect(answer('forward', [...tag(13, 2), ...varint(1n)])).toBe('get: length 1 runs past the end of its message (0 bytes left)');
    expect(answer('lock', [...tag(4, 2), ...varint(3n), 0x61])).toBe('leader: length 3 runs past the end of its message (1 bytes left)');
  });

  it('through the gRPC method codec Forward is registered with: a refusal is the marker, never a throw', () => {
    const good = encodeCallEnvelope({ callId: '5', timeoutMs: 9, name: 'get', body: UNARY.get.requestSerialize({ key: 'k' }) }, 'forward');
    expect(FORWARD_CODEC.requestDeserialize(FORWARD_CODEC.requestSerialize(good))).toMatchObject({
      callId: '5',
      timeoutMs: 9,
      name: 'get',
    });
    expect(FORWARD_CODEC.requestDeserialize(bytes(num(19, 1n)))).toStrictEqual({ __invalid: 'ForwardedCall: unknown field number 19' });
    expect(FORWARD_CODEC.responseDeserialize!(bytes(num(2, 2n ** 40n)))).toStrictEqual({
      __invalid: `code: varint ${2 ** 40} overflows a int32 field`,
    });
  });
});

describe('reads every valid encoding, as any protobuf writer may produce it', () => {
  it('fields in any order, defaults written out, a scalar repeated (the last wins), a oneof member replaced or merged', () => {
    const keyA = len(1, [0x61]);
    const keyB = len(1, [0x62]);
    const got = decodeCallEnvelope(
      bytes(len(11, keyA), num(2, 0n), num(1, 3n), num(3, 0n), num(1, 4n), len(13, keyA), num(2, 70n), len(13, keyB)),
      'lock',
    );
    expect({ ...got, body: undefined }).toStrictEqual({
      callId: '4',
      timeoutMs: 70,
      cancel: false,
      from: '',
      clusterId: '',
      name: 'get',
      body: undefined,
    });
    // The same member twice merges, as protobufjs merges it: a repeated scalar inside takes the last.
    expect(UNARY.get.requestDeserialize(Buffer.from(got.body!))).toStrictEqual({ key: 'b' });
    expect(LOCK_STREAM.requestDeserialize(bytes(len(11, keyA), len(13, keyA), len(13, keyB)))).toMatchObject({
      request: 'get',
      get: { key: 'b' },
    });
  });
});

describe("Lock/Stream's server codec (envelope, then the call inside) agrees with the strict walk of the whole LockCall", () => {
  const samples = sampleCalls('lock', 41, 200).map((c) => encodeCallEnvelope(c.envelope, 'lock'));

  it('every prefix of valid encodings, and 20,000 seeded byte flips: refused exactly when the old build refuses', () => {
    const rng = new SimRng(0x37f);
    const cases: Buffer[] = [];
    for (const s of samples.slice(0, 60)) for (let n = 0; n < s.length; n++) cases.push(s.subarray(0, n));
    for (let i = 0; i < 20_000; i++) {
      const s = Buffer.from(rng.pick(samples));
      if (s.length === 0) continue;
      s[rng.int(s.length)] = rng.int(256);
      if (rng.chance(0.3)) s[rng.int(s.length)] = rng.int(256);
      cases.push(s);
    }
    let refused = 0;
    for (const c of cases) {
      const old = strictProblem(c, descriptor('LockCall'), registry);
      const ours = decodeLockCall(c);
      const oursRefused = '__invalid' in ours;
      if (oursRefused !== (old !== null)) throw new Error(`${c.toString('hex')}: old ${String(old)}, ours ${JSON.stringify(ours)}`);
      if (oursRefused) refused++;
      else
        expect((ours as { request: unknown }).request ?? null).toStrictEqual(
          (ours as CallEnvelope).name === undefined
            ? null
            : (LOCK_STREAM.requestDeserialize(c) as Record<string, unknown>)[(ours as CallEnvelope).name!],
        );
    }
    // Both outcomes are exercised.
    expect(refused).toBeGreaterThan(1000);
    expect(cases.length - refused).toBeGreaterThan(1000);
  });
});
