// The strict decoder every service on the port sits behind: each refusal below is a request the plain
// protobuf decoder accepted (and silently changed) before — see issue 11.
import { describe, expect, it } from 'vitest';
import { descriptorRegistry, strictProblem, strictRequestDeserializers } from '../../../src/server/client-api/strict-decode.js';
import { packageDefinition } from '../../../src/wire/load.js';
import { raftGrpcService } from '../../../src/wire/raft.js';
import { lockGrpcService } from '../../../src/wire/lock.js';
import { tag, varint } from '../wire/proto-bytes.js';

const registry = descriptorRegistry(packageDefinition());
const message = (name: string) => registry.get(`leasehold.v1.${name}`)!;

const str = (field: number, bytes: number[]) => [...tag(field, 2), ...varint(BigInt(bytes.length)), ...bytes];
const text = (field: number, s: string) => str(field, [...Buffer.from(s, 'utf8')]);
const num = (field: number, v: bigint) => [...tag(field, 0), ...varint(v)];
/** A varint of exactly `bytes` bytes whose low 64 bits are v (the high bits set past 2^64 when asked). */
function wideVarint(field: number, v: bigint): number[] {
  return [...tag(field, 0), ...varint(v)];
}

describe('strict request decoding', () => {
  it('accepts a well-formed AcquireRequest', () => {
    const buf = Buffer.from([...text(1, 'orders'), ...text(2, 'alice'), ...num(3, 5000n), ...text(5, 'r1')]);
    expect(strictProblem(buf, message('AcquireRequest'), registry)).toBeNull();
  });

  it('refuses invalid UTF-8: k\\xff and k\\xfe are not both "k\\ufffd"', () => {
    for (const bad of [0xff, 0xfe]) {
      const buf = Buffer.from([...str(1, [0x6b, bad]), ...text(2, 'alice'), ...num(3, 5000n)]);
      expect(strictProblem(buf, message('AcquireRequest'), registry)).toBe('key: not valid UTF-8');
    }
    // A truncated multi-byte sequence in owner is refused too.
    expect(strictProblem(Buffer.from([...text(1, 'k'), ...str(2, [0xe2, 0x82])]), message('AcquireRequest'), registry)).toBe(
      'owner: not valid UTF-8',
    );
  });

  it('refuses a 10-byte varint beyond 2^64 in ttl_ms (it used to wrap to 10000)', () => {
    const buf = Buffer.from([...text(1, 'k'), ...text(2, 'o'), ...wideVarint(3, 2n ** 64n + 10000n)]);
    expect(wideVarint(3, 2n ** 64n + 10000n).length).toBe(11); // tag + 10 bytes
    expect(strictProblem(buf, message('AcquireRequest'), registry)).toMatch(
      /^ttl_ms: varint 18446744073709561616 overflows a int64 field$/,
    );
  });

  it('refuses Renew with token 2^64 + a real token, accepts 2^64 - 1', () => {
    const bad = Buffer.from([...text(1, 'k'), ...text(2, 'o'), ...wideVarint(3, 2n ** 64n + 7n), ...num(4, 5000n)]);
    expect(strictProblem(bad, message('RenewRequest'), registry)).toMatch(/^token: varint \d+ overflows a uint64 field$/);
    const max = Buffer.from([...text(1, 'k'), ...text(2, 'o'), ...num(3, 2n ** 64n - 1n), ...num(4, 5000n)]);
    expect(strictProblem(max, message('RenewRequest'), registry)).toBeNull();
  });

  it('refuses unknown fields, wrong wire types and garbage for Cluster.Status too', () => {
    expect(strictProblem(Buffer.from(num(19, 1n)), message('AcquireRequest'), registry)).toBe('AcquireRequest: unknown field number 19');
    expect(strictProblem(Buffer.from(num(1, 1n)), message('AcquireRequest'), registry)).toBe('key: wrong wire type 0 for a string field');
    expect(strictProblem(Buffer.from([0xff, 0xff, 0xff]), message('StatusRequest'), registry)).toMatch(/^StatusRequest: malformed message/);
    expect(strictProblem(Buffer.from(text(1, 'x')), message('StatusRequest'), registry)).toBe('StatusRequest: unknown field number 1');
    expect(strictProblem(Buffer.alloc(0), message('StatusRequest'), registry)).toBeNull();
  });

  it('walks sub-messages: a Raft message with an overflowing term inside append_entries is refused', () => {
    const inner = [...wideVarint(1, 2n ** 64n + 1n)]; // prev_log_index
    const buf = Buffer.from([...text(1, 'n1'), ...text(2, 'n2'), ...num(3, 1n), ...str(12, inner)]);
    expect(strictProblem(buf, message('RaftMessage'), registry)).toMatch(
      /^append_entries\.prev_log_index: varint \d+ overflows a uint64 field$/,
    );
    const ok = Buffer.from([...text(1, 'n1'), ...text(2, 'n2'), ...num(3, 1n), ...str(12, num(1, 3n))]);
    expect(strictProblem(ok, message('RaftMessage'), registry)).toBeNull();
    const badFrom = Buffer.from([...str(1, [0xc0, 0x80]), ...text(2, 'n2')]); // overlong encoding of NUL
    expect(strictProblem(badFrom, message('RaftMessage'), registry)).toBe('from: not valid UTF-8');
  });

  it('refuses a length that runs past the end', () => {
    const buf = Buffer.from([...tag(1, 2), ...varint(100n), 0x61]);
    expect(strictProblem(buf, message('GetRequest'), registry)).toBe('key: truncated value');
  });

  it('leaves a method with its own strict decoder as it is (the Raft stream, Forward), and walks the others (Lock)', () => {
    const service = raftGrpcService.definition();
    const strict = strictRequestDeserializers(service, registry);
    expect(strict.Stream.requestDeserialize).toBe(service.Stream.requestDeserialize);
    expect(strict.Forward.requestDeserialize).toBe(service.Forward.requestDeserialize);
    const lock = lockGrpcService.definition();
    expect(strictRequestDeserializers(lock, registry).Acquire.requestDeserialize).not.toBe(lock.Acquire.requestDeserialize);
    // The Raft stream's own decoder refuses what the walk would, naming the field.
    expect(strict.Stream.requestDeserialize(Buffer.from([...num(19, 1n)]))).toStrictEqual({ __invalid: 'unknown field number 19' });
    expect(strict.Forward.requestDeserialize(Buffer.from([...num(19, 1n)]))).toStrictEqual({
      __invalid: 'ForwardedCall: unknown field number 19',
    });
  });
});
