// The hand-written encoder of the hot lock responses (src/wire/lock-response-encode.ts) against protobufjs
// with the loader's options (server/client-api/call-bodies.ts encodeResponseBodyWithProtobufjs), on seeded
// random responses with every 64-bit field given as a decimal string, a number and a bigint:
// - decode-equal: protobufjs decodes our bytes to exactly what it decodes its own bytes of the same response
//   to (what a client reads, every default present);
// - byte-identical to protobufjs's bytes of the same response with its default-valued fields left out
//   (protobufjs writes every field an object has, defaults too; canonical proto3, which we write, leaves
//   them off — the only difference);
// - both ways: what protobufjs decodes from our bytes, encoded again by hand, is the same bytes.
// And a value that cannot be written exactly is refused naming the field, never rounded.
import { describe, expect, it } from 'vitest';
import { decodeResponseBody, encodeResponseBody, encodeResponseBodyWithProtobufjs } from '../../../src/server/client-api/call-bodies.js';
import { packageDefinition } from '../../../src/wire/load.js';
import { encodeLockResponse, encodesByHand, REASON_NAMES, type Int64Input } from '../../../src/wire/lock-response-encode.js';
import type { LockCallName } from '../../../src/wire/lock.js';
import { CodecError } from '../../../src/wire/scalars.js';
import { SimRng } from '../../sim/rng.js';

type Hot = 'acquire' | 'renew' | 'release' | 'get';
const HOT: Hot[] = ['acquire', 'renew', 'release', 'get'];
type Obj = Record<string, unknown>;

const U64_EDGES = [
  '0',
  '1',
  '127',
  '128',
  String(2 ** 31),
  String(2n ** 53n - 1n),
  String(2n ** 53n),
  String(2n ** 53n + 7n),
  String(2n ** 64n - 1n),
];
const I64_EDGES = ['0', '1', '5000', '-1', '-5000', String(-(2n ** 63n)), String(2n ** 63n - 1n), String(2n ** 53n + 1n), '1765000000000'];

/** A random response of call `name` in protobufjs's shape (64-bit fields as decimal strings), some fields absent. */
function response(rng: SimRng, name: Hot): Obj {
  const str = () => rng.pick(['', 'o', 'client-7', 'ключ/é', '𝄞x', 'a'.repeat(rng.int(300))]);
  const u64 = () => (rng.chance(0.3) ? String(rng.int(2 ** 31)) : rng.pick(U64_EDGES));
  const i64 = () => (rng.chance(0.3) ? String(rng.int(1e9)) : rng.pick(I64_EDGES));
  const reason = () => rng.pick(REASON_NAMES);
  const o: Obj = {};
  const maybe = (k: string, v: () => unknown) => {
    if (rng.chance(0.8)) o[k] = v();
  };
  switch (name) {
    case 'acquire':
      maybe('acquired', () => rng.chance(0.5));
      maybe('token', u64);
      maybe('ttl_ms', i64);
      maybe('expires_at_ms', i64);
      maybe('holder_owner', str);
      maybe('holder_ttl_ms', i64);
      maybe('delay_ms_left', i64);
      break;
    case 'renew':
      maybe('renewed', () => rng.chance(0.5));
      maybe('ttl_ms', i64);
      maybe('expires_at_ms', i64);
      maybe('reason', reason);
      break;
    case 'release':
      maybe('released', () => rng.chance(0.5));
      maybe('reason', reason);
      break;
    case 'get': {
      maybe('held', () => rng.chance(0.5));
      maybe('owner', str);
      maybe('token', u64);
      maybe('ttl_ms', i64);
      maybe('expires_at_ms', i64);
      maybe('last_token', u64);
      maybe('waiters', () => rng.pick([0, 1, 300, 0xffffffff]));
      maybe('index', u64);
      maybe('limit', () => rng.pick([0, 1, 1000]));
      maybe('holders', () =>
        Array.from({ length: rng.pick([0, 1, 1, 3]) }, () => {
          const h: Obj = {};
          const hm = (k: string, v: () => unknown) => {
            if (rng.chance(0.8)) h[k] = v();
          };
          hm('owner', str);
          hm('token', u64);
          hm('ttl_ms', i64);
          hm('expires_at_ms', i64);
          hm('shared', () => rng.chance(0.5));
          hm('session_id', u64);
          hm('value', () => Buffer.from(str()));
          return h;
        }),
      );
    }
  }
  return o;
}

const LONG_FIELDS = new Set(['token', 'ttl_ms', 'expires_at_ms', 'holder_ttl_ms', 'delay_ms_left', 'last_token', 'index', 'session_id']);

/** `o` with its 64-bit fields as numbers (where exact) or bigints, as answers-to-wire.ts gives them. */
function asDomain(o: Obj, rng: SimRng): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === 'holders') out[k] = (v as Obj[]).map((h) => asDomain(h, rng));
    else if (LONG_FIELDS.has(k)) {
      const big = BigInt(v as string);
      out[k] = Number.isSafeInteger(Number(big)) && BigInt(Number(big)) === big && rng.chance(0.5) ? Number(big) : big;
    } else out[k] = v;
  }
  return out;
}

/** `o` without the fields at their proto3 default (what canonical proto3 leaves off the wire). */
function withoutDefaults(o: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === 'holders') {
      if ((v as Obj[]).length > 0) out[k] = (v as Obj[]).map(withoutDefaults);
      continue;
    }
    const isDefault = v === false || v === '' || v === 0 || v === '0' || v === 'UNSPECIFIED' || (v instanceof Uint8Array && v.length === 0);
    if (!isDefault) out[k] = v;
  }
  return out;
}

function samples(seed: number, n: number): { name: Hot; r: Obj }[] {
  const rng = new SimRng(seed);
  return Array.from({ length: n }, () => {
    const name = rng.pick(HOT);
    return { name, r: response(rng, name) };
  });
}

describe('the hot lock responses by hand, against protobufjs', () => {
  const valid = samples(0x37f, 3000);

  it('encodes acquire, renew, release and get by hand, and only those', () => {
    expect(HOT.every(encodesByHand)).toBe(true);
    expect((['open_session', 'renew_session', 'close_session'] as LockCallName[]).some(encodesByHand)).toBe(false);
  });

  it("Reason's names are lock.proto's, in number order", () => {
    const reason = packageDefinition()['leasehold.v1.Reason'] as unknown as { type: { value: { name: string; number: number }[] } };
    expect(reason.type.value.map((v) => [v.name, v.number])).toEqual(REASON_NAMES.map((n, i) => [n, i]));
  });

  it('every seeded response: decode-equal to protobufjs, byte-identical without defaults, and the same from strings, numbers and bigints', () => {
    const rng = new SimRng(0x380);
    let withDefaults = 0;
    for (const { name, r } of valid) {
      const hand = encodeResponseBody(name, r);
      const theirs = encodeResponseBodyWithProtobufjs(name, r);
      expect(decodeResponseBody(name, hand)).toStrictEqual(decodeResponseBody(name, theirs));
      expect(hand.toString('hex')).toBe(encodeResponseBodyWithProtobufjs(name, withoutDefaults(r)).toString('hex'));
      expect(encodeLockResponse(name, asDomain(r, rng)).toString('hex')).toBe(hand.toString('hex'));
      if (hand.length < theirs.length) withDefaults++;
    }
    // The seeds do hold responses where protobufjs wrote defaults and we did not.
    expect(withDefaults).toBeGreaterThan(500);
  });

  it('both ways: what protobufjs decodes from our bytes encodes by hand to the same bytes', () => {
    for (const { name, r } of valid) {
      const hand = encodeResponseBody(name, r);
      const decoded = decodeResponseBody(name, hand);
      expect(encodeResponseBody(name, decoded).toString('hex')).toBe(hand.toString('hex'));
    }
  });

  it('an empty response is no bytes; an empty holder is still one holder', () => {
    for (const name of HOT) expect(encodeResponseBody(name, {}).length).toBe(0);
    const bytes = encodeResponseBody('get', { holders: [{}] });
    expect(bytes.toString('hex')).toBe('4200');
    expect((decodeResponseBody('get', bytes) as { holders: unknown[] }).holders).toHaveLength(1);
  });

  it('a token above 2^53 is written exactly, from a bigint or a string, and a reason by name or number', () => {
    const big = 2n ** 64n - 2n;
    for (const token of [big, String(big)] as Int64Input[]) {
      const decoded = decodeResponseBody('acquire', encodeResponseBody('acquire', { acquired: true, token })) as Obj;
      expect(decoded.token).toBe(String(big));
    }
    const got = decodeResponseBody(
      'get',
      encodeResponseBody('get', { held: true, token: 2n ** 53n + 1n, last_token: '9007199254740993' }),
    ) as Obj;
    expect([got.token, got.last_token]).toEqual(['9007199254740993', '9007199254740993']);
    expect(encodeResponseBody('renew', { reason: 3 }).toString('hex')).toBe(
      encodeResponseBody('renew', { reason: 'WRONG_TOKEN' }).toString('hex'),
    );
  });

  it('refuses, naming the field, what cannot be written exactly (never through a double)', () => {
    const refusal = (name: Hot, r: Obj): string => {
      try {
        encodeLockResponse(name, r);
      } catch (err) {
        expect(err).toBeInstanceOf(CodecError);
        return (err as CodecError).message;
      }
      return 'written';
    };
    expect(refusal('acquire', { token: 2 ** 53 + 2 })).toBe(
      'token: 9007199254740994 is not an exact integer: pass a bigint or a decimal string',
    );
    expect(refusal('acquire', { ttl_ms: 1.5 })).toBe('ttl_ms: 1.5 is not an exact integer: pass a bigint or a decimal string');
    expect(refusal('acquire', { token: -1 })).toBe('token: -1 is below zero in a uint64 field');
    expect(refusal('acquire', { token: 2n ** 64n })).toBe('token: 18446744073709551616n is out of range for a uint64 field');
    expect(refusal('get', { index: '-1' })).toBe('index: "-1" is out of range for a uint64 field');
    expect(refusal('renew', { ttl_ms: String(2n ** 63n) })).toBe('ttl_ms: "9223372036854775808" is out of range for a int64 field');
    expect(refusal('renew', { ttl_ms: '12ms' })).toBe('ttl_ms: "12ms" is not a decimal integer');
    expect(refusal('release', { reason: 'GONE' })).toBe('reason: "GONE" is not a Reason');
    expect(refusal('get', { waiters: 2 ** 32 })).toBe('waiters: 4294967296 is not a uint32');
    expect(refusal('get', { holders: [{ token: '1' }, { session_id: 2 ** 60 }] })).toBe(
      'holders[1].session_id: 1152921504606847000 is not an exact integer: pass a bigint or a decimal string',
    );
  });
});
