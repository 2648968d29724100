// The hand-written decoder of the hot lock requests (src/wire/lock-request-decode.ts) against the path it
// replaced — the strict decoder's walk at the oneof member's depth, then protobufjs with the loader's
// options (server/client-api/call-bodies.ts decodeRequestBodyWithProtobufjs): the same object for every
// valid request (seeded random ones, non-minimal varints, fields repeated and out of order), and the same
// refusal, word for word, for every corrupted one (every prefix, 20,000 seeded byte flips, and by hand);
// inside an envelope (Lock/Stream, Forward) and as a unary call's body.
import type * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { decodeRequestBodyWithProtobufjs, encodeRequestBody } from '../../../src/server/client-api/call-bodies.js';
import { withLockUnaryCodecs } from '../../../src/server/client-api/lock-unary-codec.js';
import { descriptorRegistry, strictRequestDeserializers } from '../../../src/server/client-api/strict-decode.js';
import { packageDefinition } from '../../../src/wire/load.js';
import { lockGrpcService } from '../../../src/wire/lock.js';
import { decodeLockRequest, decodesByHand } from '../../../src/wire/lock-request-decode.js';
import type { LockCallName } from '../../../src/wire/lock.js';
import { SimRng } from '../../sim/rng.js';
import { tag, varint } from './proto-bytes.js';

const HOT: LockCallName[] = ['acquire', 'renew', 'release', 'get'];

function samples(seed: number, n: number): { name: LockCallName; bytes: Buffer }[] {
  const rng = new SimRng(seed);
  const str = () => rng.pick(['', 'k', 'owner-1', 'ключ/é', '𝄞x', 'a'.repeat(rng.int(300))]);
  const u64 = () => rng.pick(['0', '1', String(rng.int(2 ** 31)), String(2n ** 53n + 7n), String(2n ** 64n - 1n)]);
  const i64 = () => rng.pick(['0', '5000', '-1', String(-(2n ** 63n)), String(2n ** 63n - 1n), String(rng.int(1e9))]);
  const out: { name: LockCallName; bytes: Buffer }[] = [];
  for (let i = 0; i < n; i++) {
    const name = rng.pick(HOT);
    const o: Record<string, unknown> = {};
    const maybe = (k: string, v: () => unknown) => {
      if (rng.chance(0.75)) o[k] = v();
    };
    maybe('key', str);
    if (name !== 'get') {
      maybe('owner', str);
      maybe('request_id', str);
    }
    if (name === 'acquire') {
      maybe('ttl_ms', i64);
      maybe('wait_ms', i64);
      maybe('lock_delay_ms', i64);
      maybe('value', () => Buffer.from(str()));
      maybe('session_id', u64);
      maybe('limit', () => rng.pick([0, 1, 7, 0xffffffff]));
      maybe('shared', () => rng.chance(0.5));
    }
    if (name === 'renew' || name === 'release') maybe('token', u64);
    if (name === 'renew') maybe('ttl_ms', i64);
    out.push({ name, bytes: encodeRequestBody(name, o) });
  }
  return out;
}

const hand = (name: LockCallName, b: Buffer) => decodeLockRequest(name, b);
const reference = (name: LockCallName, b: Buffer) => decodeRequestBodyWithProtobufjs(name, b);

describe('the hot lock requests by hand, against the strict walk and protobufjs', () => {
  const valid = samples(0x37d, 2000);

  it('decodes acquire, renew, release and get by hand, and only those', () => {
    expect(HOT.every(decodesByHand)).toBe(true);
    expect((['open_session', 'renew_session', 'close_session'] as LockCallName[]).some(decodesByHand)).toBe(false);
  });

  it('every seeded valid request: the same object (decimal strings, a Buffer view, every default present)', () => {
    for (const { name, bytes } of valid) expect(hand(name, bytes)).toStrictEqual(reference(name, bytes));
    const some = valid.find((s) => s.name === 'acquire')!;
    expect(hand(some.name, some.bytes)).toHaveProperty('request.value');
  });

  it('non-minimal varints, fields out of order and repeated (the last wins), defaults written out', () => {
    const cases: [LockCallName, number[]][] = [
      ['acquire', [...tag(10, 0), 0x81, 0x80, 0x00, ...tag(9, 0), 0x87, 0x80, 0x80, 0x80, 0x00]], // shared = 1, limit = 7, non-minimal
      ['acquire', [...tag(3, 0), ...varint(2n ** 64n - 5n), ...tag(1, 2), 1, 0x61, ...tag(3, 0), ...varint(9n), ...tag(9, 0), 0]],
      ['renew', [...tag(3, 0), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]], // token 2^63 in ten bytes
      ['get', [...tag(1, 2), 0, ...tag(1, 2), 2, 0x6b, 0x31]],
      ['release', []],
      ['acquire', []],
      ['renew', []],
      ['get', []],
    ];
    for (const [name, bytes] of cases) {
      const b = Buffer.from(bytes);
      expect(reference(name, b)).toHaveProperty('request');
      expect(hand(name, b)).toStrictEqual(reference(name, b));
    }
  });

  it('one difference: a bool or uint32 in a valid non-minimal varint of more than five bytes is read (protobufjs threw)', () => {
    const b = Buffer.from([...tag(10, 0), 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]); // shared = 1 in 9 bytes
    expect(reference('acquire', b)).toStrictEqual({ invalid: 'acquire: cannot decode (index out of range: 10 + 10 > 10)' });
    expect(hand('acquire', b)).toHaveProperty('request.shared', true);
  });

  it('refuses what the walk refuses, in its words', () => {
    const cases: [LockCallName, number[], string][] = [
      ['acquire', [...tag(11, 0), 1], 'acquire: unknown field number 11'],
      ['get', [...tag(1, 0), 1], 'get.key: wrong wire type 0 for a string field'],
      ['renew', [...tag(3, 2), 0], 'renew.token: wrong wire type 2 for a uint64 field'],
      ['acquire', [...tag(3, 0), ...varint(2n ** 64n)], `acquire.ttl_ms: varint ${2n ** 64n} overflows a int64 field`],
      [
        'acquire',
        [...tag(3, 0), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
        `acquire.ttl_ms: varint ${2n ** 70n - 1n} overflows a int64 field`,
      ],
      ['acquire', [...tag(9, 0), ...varint(2n ** 32n)], 'acquire.limit: varint 4294967296 overflows a uint32 field'],
      ['acquire', [...tag(10, 0), 2], 'acquire.shared: varint 2 overflows a bool field'],
      ['release', [...tag(1, 2), 2, 0x6b, 0xff], 'release.key: not valid UTF-8'],
      ['release', [...tag(2, 2), 5, 0x6b], 'release.owner: truncated value'],
      ['get', [...tag(1, 2)], 'get: malformed message (truncated varint)'],
      ['get', [0xff, 0xff, 0xff, 0xff, 0x7f], 'get: malformed field tag'],
      ['get', [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], 'get: malformed message (varint longer than 10 bytes)'],
    ];
    for (const [name, bytes, reason] of cases) {
      const b = Buffer.from(bytes);
      expect(reference(name, b)).toStrictEqual({ invalid: reason });
      expect(hand(name, b)).toStrictEqual({ invalid: reason });
    }
  });

  it('every prefix and 20,000 seeded byte flips: the same object or the same refusal', () => {
    const rng = new SimRng(0x37e);
    const cases: { name: LockCallName; bytes: Buffer }[] = [];
    for (const s of valid.slice(0, 100))
      for (let n = 0; n < s.bytes.length; n++) cases.push({ name: s.name, bytes: s.bytes.subarray(0, n) });
    for (let i = 0; i < 20_000; i++) {
      const s = rng.pick(valid);
      if (s.bytes.length === 0) continue;
      const b = Buffer.from(s.bytes);
      b[rng.int(b.length)] = rng.int(256);
      if (rng.chance(0.3)) b[rng.int(b.length)] = rng.int(256);
      cases.push({ name: s.name, bytes: b });
    }
    let refused = 0;
    for (const { name, bytes } of cases) {
      const want = reference(name, bytes);
      const got = hand(name, bytes);
      if (JSON.stringify(got) !== JSON.stringify(want))
        expect({ bytes: bytes.toString('hex'), got }).toStrictEqual({ bytes: bytes.toString('hex'), got: want });
      if ('invalid' in want) refused++;
    }
    expect(refused).toBeGreaterThan(1000);
    expect(cases.length - refused).toBeGreaterThan(1000);
  });
});

// A unary call's body (Lock/Acquire, ...): the method's own deserializer (lock-unary-codec.ts) against the
// one it replaced — the strict walk at the top of the message, then protobufjs — word for word.
describe('the hot unary requests by hand, against the strict walk and protobufjs', () => {
  const definition = lockGrpcService.definition() as unknown as grpc.ServiceDefinition;
  const registry = descriptorRegistry(packageDefinition());
  const before = strictRequestDeserializers(definition, registry) as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
  const now = strictRequestDeserializers(withLockUnaryCodecs(definition), registry) as unknown as Record<
    string,
    grpc.MethodDefinition<unknown, unknown>
  >;
  const METHOD: Record<string, string> = { acquire: 'Acquire', renew: 'Renew', release: 'Release', get: 'Get' };
  const unaryHand = (name: LockCallName, b: Buffer) => now[METHOD[name]!]!.requestDeserialize(b);
  const unaryReference = (name: LockCallName, b: Buffer) => before[METHOD[name]!]!.requestDeserialize(b);
  const valid = samples(0x381, 2000);

  it('every seeded valid request: the same object', () => {
    for (const { name, bytes } of valid) expect(unaryHand(name, bytes)).toStrictEqual(unaryReference(name, bytes));
  });

  it('the one difference, as inside an envelope: a bool in a valid non-minimal varint of more than five bytes is read (protobufjs threw)', () => {
    const b = Buffer.from([...tag(10, 0), 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]); // shared = 1 in 9 bytes
    expect(unaryReference('acquire', b)).toStrictEqual({ __invalid: 'AcquireRequest: cannot decode (index out of range: 10 + 10 > 10)' });
    expect(unaryHand('acquire', b)).toHaveProperty('shared', true);
  });

  it('refuses what the walk refuses at the top of a unary call, in its words (the field alone, the message by its type)', () => {
    const cases: [LockCallName, number[], string][] = [
      ['acquire', [...tag(11, 0), 1], 'AcquireRequest: unknown field number 11'],
      ['get', [...tag(1, 0), 1], 'key: wrong wire type 0 for a string field'],
      ['renew', [...tag(3, 0), ...varint(2n ** 64n)], `token: varint ${2n ** 64n} overflows a uint64 field`],
      ['acquire', [...tag(10, 0), 2], 'shared: varint 2 overflows a bool field'],
      ['release', [...tag(1, 2), 2, 0x6b, 0xff], 'key: not valid UTF-8'],
      ['release', [...tag(2, 2), 5, 0x6b], 'owner: truncated value'],
      ['acquire', [...tag(1, 2), 0x7f, 0x61], 'key: truncated value'],
      ['get', [...tag(1, 2)], 'GetRequest: malformed message (truncated varint)'],
      ['get', [0xff, 0xff, 0xff, 0xff, 0x7f], ': malformed field tag'],
    ];
    for (const [name, bytes, reason] of cases) {
      const b = Buffer.from(bytes);
      expect(unaryReference(name, b)).toStrictEqual({ __invalid: reason });
      expect(unaryHand(name, b)).toStrictEqual({ __invalid: reason });
    }
  });

  it('every prefix and 20,000 seeded byte flips: the same object or the same refusal, and nothing thrown', () => {
    const rng = new SimRng(0x382);
    const cases: { name: LockCallName; bytes: Buffer }[] = [];
    for (const s of valid.slice(0, 100))
      for (let n = 0; n < s.bytes.length; n++) cases.push({ name: s.name, bytes: s.bytes.subarray(0, n) });
    for (let i = 0; i < 20_000; i++) {
      const s = rng.pick(valid);
      if (s.bytes.length === 0) continue;
      const b = Buffer.from(s.bytes);
      b[rng.int(b.length)] = rng.int(256);
      if (rng.chance(0.3)) b[rng.int(b.length)] = rng.int(256);
      cases.push({ name: s.name, bytes: b });
    }
    let refused = 0;
    for (const { name, bytes } of cases) {
      const want = unaryReference(name, bytes) as Record<string, unknown>;
      const got = unaryHand(name, bytes);
      if (JSON.stringify(got) !== JSON.stringify(want))
        expect({ bytes: bytes.toString('hex'), got }).toStrictEqual({ bytes: bytes.toString('hex'), got: want });
      if ('__invalid' in want) refused++;
    }
    expect(refused).toBeGreaterThan(1000);
    expect(cases.length - refused).toBeGreaterThan(1000);
  });
});
