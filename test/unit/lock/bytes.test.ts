// The hand-written UTF-8 and varint helpers, checked against the platform's TextEncoder/TextDecoder.
import { describe, expect, it } from 'vitest';
import { ByteReader, ByteWriter, decodeUtf8, encodeUtf8, utf8ByteLength } from '../../../src/lock/bytes.js';
import { SimRng } from '../../sim/rng.js';
import { readOutcome } from './read-outcome.js';

const UNITS = [0x41, 0x7f, 0x80, 0x7ff, 0x800, 0xfeff, 0xffff, 0xd83d, 0xde00, 0xdbff, 0xdc00, 0x0];

describe('UTF-8 helpers', () => {
  it('encode exactly like TextEncoder and count bytes without allocating (random strings)', () => {
    const rng = new SimRng(3);
    const random = () => rng.float();
    const encoder = new TextEncoder();
    for (let i = 0; i < 3000; i++) {
      const text = String.fromCharCode(
        ...Array.from({ length: Math.floor(random() * 12) }, () => UNITS[Math.floor(random() * UNITS.length)]!),
      );
      const expected = encoder.encode(text);
      expect(encodeUtf8(text)).toEqual(expected);
      const wellFormed = !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
      expect(utf8ByteLength(text)).toBe(wellFormed ? expected.length : -1);
      // The ByteWriter fast path writes the same bytes as the general one.
      const out = new ByteWriter(1);
      out.string(text);
      const reader = new ByteReader(out.finish(), (m) => new Error(m));
      if (wellFormed) expect(reader.string(1000)).toBe(text);
    }
  });

  it('decode strictly: ASCII fast path and TextDecoder agree; invalid UTF-8 is null', () => {
    expect(decodeUtf8(Uint8Array.of(0x68, 0x69))).toBe('hi');
    expect(decodeUtf8(Uint8Array.of(0xef, 0xbb, 0xbf, 0x41))).toBe('\uFEFFA'); // BOM kept
    expect(decodeUtf8(Uint8Array.of(0xff))).toBeNull();
    expect(decodeUtf8(Uint8Array.of(0xc0, 0x80))).toBeNull(); // over-long NUL
    expect(decodeUtf8(Uint8Array.of(0xed, 0xa0, 0x80))).toBeNull(); // surrogate
    expect(decodeUtf8(new Uint8Array(100).fill(0x61))).toBe('a'.repeat(100));
  });

  it('varints round-trip at the edges', () => {
    const out = new ByteWriter(1);
    const numbers = [0, 1, 127, 128, 2 ** 31, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER];
    const signed = [0, -1, 1, -(2 ** 40), 2 ** 40];
    const bigs = [0n, 127n, 128n, 2n ** 63n, 2n ** 64n - 1n];
    for (const n of numbers) out.uint(n);
    for (const n of signed) out.sint(n);
    for (const n of bigs) out.bigUint(n);
    const reader = new ByteReader(out.finish(), (m) => new Error(m));
    expect(numbers.map(() => reader.uint())).toEqual(numbers);
    expect(signed.map(() => reader.sint())).toEqual(signed);
    expect(bigs.map(() => reader.bigUint())).toEqual(bigs);
    reader.end();
    // 2^53 does not fit a safe integer.
    const big = new ByteWriter();
    big.bigUint(2n ** 53n);
    expect(() => new ByteReader(big.finish(), (m) => new Error(m)).uint()).toThrow(/2\^53/);
  });
});

describe('skip readers (a restore checks fields without building them)', () => {
  const outcome = readOutcome;

  it('skipBigUint and skipString accept, stop and fail exactly where bigUint and string do', () => {
    const rng = new SimRng(7);
    const edges = [0n, 1n, 127n, 128n, 2n ** 63n, 2n ** 64n - 1n];
    const cases: Uint8Array[] = [];
    for (const n of edges) {
      const out = new ByteWriter();
      out.bigUint(n);
      cases.push(out.finish());
    }
    cases.push(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02)); // 2^64
    cases.push(Uint8Array.of(0x80, 0x00)); // over-long
    for (const text of ['', 'abc', 'ключ-🔒', '\ufeffx']) {
      const out = new ByteWriter();
      out.string(text);
      cases.push(out.finish());
    }
    cases.push(Uint8Array.of(2, 0xc0, 0x80), Uint8Array.of(3, 0xed, 0xa0, 0x80), Uint8Array.of(5, 0x61)); // overlong, surrogate, short
    for (let i = 0; i < 3000; i++)
      cases.push(Uint8Array.from({ length: 1 + rng.int(12) }, () => (rng.float() < 0.5 ? 0x80 | rng.int(128) : rng.int(256))));
    let failures = 0;
    for (const bytes of cases) {
      const big = outcome(bytes, (r) => r.bigUint());
      expect(outcome(bytes, (r) => r.skipBigUint())).toBe(big);
      const str = outcome(bytes, (r) => r.string(8));
      expect(outcome(bytes, (r) => r.skipString(8))).toBe(str);
      if (!big.startsWith('ok') || !str.startsWith('ok')) failures++;
    }
    expect(failures).toBeGreaterThan(100); // the random cases do exercise the error paths
  });
});

describe('ByteWriter.tight (results kept long)', () => {
  it('copies to size when the buffer is mostly slack, else returns a view of it', () => {
    const slack = new ByteWriter(1024);
    for (let i = 0; i < 10; i++) slack.byte(i);
    const copied = slack.tight();
    expect([...copied]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(copied.buffer.byteLength).toBe(10);
    const full = new ByteWriter(16);
    for (let i = 0; i < 15; i++) full.byte(i);
    const view = full.tight();
    expect(view.length).toBe(15);
    expect(view.buffer.byteLength).toBe(16);
  });
});
