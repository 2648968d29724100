// PrefixKeyWriter (snapshot.ts): each key as the bytes it shares with the previous key's UTF-8 and the rest.
// Its scratch arrays grow with the keys it is given; what it writes must not depend on how they grew.
import { describe, expect, it } from 'vitest';
import { ByteReader, ByteWriter } from '../../../src/lock/bytes.js';
import { PrefixKeyWriter } from '../../../src/lock/snapshot.js';

/** Reads the keys back by the format's own rule (shared-prefix length, then the rest length-prefixed). */
function readKeys(bytes: Uint8Array, count: number): string[] {
  const input = new ByteReader(bytes, (message, offset) => new Error(`at ${offset}: ${message}`));
  const keys: string[] = [];
  let previous = new Uint8Array(0);
  for (let i = 0; i < count; i++) {
    const shared = input.uint();
    expect(shared).toBeLessThanOrEqual(previous.length);
    const rest = input.lengthPrefixed(1 << 20);
    const key = new Uint8Array(shared + rest.length);
    key.set(previous.subarray(0, shared));
    key.set(rest, shared);
    keys.push(new TextDecoder('utf-8', { fatal: true }).decode(key));
    previous = key;
  }
  input.end();
  return keys;
}

function written(keys: string[], writer = new PrefixKeyWriter()): { bytes: Uint8Array; writer: PrefixKeyWriter } {
  const out = new ByteWriter(16);
  writer.restart(out);
  for (const key of keys) writer.write(key);
  return { bytes: out.finish(), writer };
}

const LONG_ASCII = 'k'.repeat(512);
const LONG_EURO = '€'.repeat(170); // 510 bytes of UTF-8 from 170 units
const ASTRAL = '\u{1F600}'.repeat(128); // 512 bytes from 256 units (surrogate pairs)

describe('PrefixKeyWriter', () => {
  it('writes short keys, then keys that outgrow its scratch, then short ones again, each read back exactly', () => {
    const keys = [
      'a',
      'ab',
      'abc',
      `${LONG_ASCII.slice(0, 100)}x`,
      LONG_ASCII,
      `${LONG_EURO}`,
      `${LONG_EURO.slice(0, 169)}€a`,
      ASTRAL,
      'b',
      'ba',
    ];
    const { bytes } = written(keys);
    expect(readKeys(bytes, keys.length)).toEqual(keys);
  });

  it('keeps the shared prefix across a growth: a long key after a short one with the same start', () => {
    const keys = ['jobs/€', `jobs/€${'x'.repeat(400)}`, `jobs/€${'x'.repeat(400)}y`];
    const { bytes } = written(keys);
    expect(readKeys(bytes, keys.length)).toEqual(keys);
    // The second key shares all 8 bytes of the first ('jobs/' + the 3 bytes of '€'); the third shares the second whole.
    const input = new ByteReader(bytes, (m) => new Error(m));
    expect(input.uint()).toBe(0);
    input.lengthPrefixed(1 << 20);
    expect(input.uint()).toBe(8);
    input.lengthPrefixed(1 << 20);
    expect(input.uint()).toBe(8 + 400);
  });

  it('writes the same bytes whether its scratch grew on the way or was already large', () => {
    const keys = ['a', LONG_EURO, 'a€b', ASTRAL, LONG_ASCII];
    const grown = written(keys).bytes;
    const warm = new PrefixKeyWriter();
    written([LONG_ASCII], warm); // grows it first
    const reused = written(keys, warm).bytes; // restart(): a fresh list, nothing shared with the warm-up key
    expect(reused).toEqual(grown);
  });
});
