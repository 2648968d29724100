import { describe, expect, it } from 'vitest';
import type { Entry, HardState, SnapshotMeta } from '../../../src/raft/core/types.js';
import {
  ENTRY_RANGE,
  crc32,
  decodeEntry,
  decodeHardState,
  decodeSnapshotData,
  decodeSnapshotMeta,
  encodeEntry,
  encodeHardState,
  encodeSnapshotData,
  encodeSnapshotMeta,
  entryKey,
  entryKeyIndex,
} from '../../../src/raft/storage/codec.js';
import { CorruptRecordError } from '../../../src/raft/storage/errors.js';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

const ENTRY: Entry = { index: 2 ** 40 + 7, term: 3, kind: 'config', data: utf8('acquire k1 owner-a ✓') };
const HARD: HardState = { term: 12, votedFor: 'nöde-2', commitIndex: 99 };
const META: SnapshotMeta = {
  index: 500,
  term: 4,
  conf: { clusterId: '', voters: ['n1', 'n2', 'n3'], learners: [], addresses: {}, removed: [] },
};

/** Every record kind with its decoder, so each corruption check runs on all of them. */
const RECORDS: Array<[string, Uint8Array, (v: Uint8Array) => unknown]> = [
  ['entry', encodeEntry(ENTRY), decodeEntry],
  ['hard state', encodeHardState(HARD), decodeHardState],
  ['snapshot meta', encodeSnapshotMeta(META), decodeSnapshotMeta],
  ['snapshot data', encodeSnapshotData(500, utf8('state')), decodeSnapshotData],
];

describe('crc32', () => {
  it('matches the IEEE check value and the empty input', () => {
    expect(crc32(utf8('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
    expect(crc32(utf8('The quick brown fox jumps over the lazy dog'))).toBe(0x414fa339);
  });
});

describe('keys', () => {
  it('entry keys sort bytewise in index order, across byte boundaries', () => {
    const idx = [0, 1, 9, 10, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1];
    const keys = [...idx].reverse().map(entryKey).sort(compareBytes);
    expect(keys.map(entryKeyIndex)).toEqual(idx);
  });

  it('entry keys lie inside ENTRY_RANGE and other keys outside it', () => {
    for (const i of [0, 1, 2 ** 53 - 1]) {
      const k = entryKey(i);
      expect(compareBytes(k, ENTRY_RANGE.gte)).toBeGreaterThanOrEqual(0);
      expect(compareBytes(k, ENTRY_RANGE.lt)).toBeLessThan(0);
    }
    for (const other of ['h', 's/meta', 's/data']) {
      const k = utf8(other);
      expect(compareBytes(k, ENTRY_RANGE.gte) < 0 || compareBytes(k, ENTRY_RANGE.lt) >= 0).toBe(true);
    }
    expect(entryKeyIndex(utf8('h'))).toBeNull();
  });

  it('refuses an index that is not a non-negative safe integer', () => {
    expect(() => entryKey(-1)).toThrow(RangeError);
    expect(() => entryKey(1.5)).toThrow(RangeError);
    expect(() => entryKey(2 ** 53)).toThrow(RangeError);
  });
});

describe('records round-trip', () => {
  it('entry, with every kind and empty data', () => {
    expect(decodeEntry(encodeEntry(ENTRY))).toEqual(ENTRY);
    for (const kind of ['normal', 'noop', 'config'] as const) {
      const e: Entry = { index: 1, term: 1, kind, data: new Uint8Array(0) };
      expect(decodeEntry(encodeEntry(e))).toEqual(e);
    }
  });

  it('entry overhead is a fixed 22 bytes (no JSON)', () => {
    expect(encodeEntry(ENTRY).length).toBe(ENTRY.data.length + 22);
  });

  it('hard state, with votedFor null, empty and non-ASCII', () => {
    for (const votedFor of [null, '', 'nöde-2']) {
      const hs: HardState = { ...HARD, votedFor };
      expect(decodeHardState(encodeHardState(hs))).toEqual(hs);
    }
  });

  it('snapshot meta and data', () => {
    expect(decodeSnapshotMeta(encodeSnapshotMeta(META))).toEqual(META);
    expect(
      decodeSnapshotMeta(
        encodeSnapshotMeta({ index: 0, term: 0, conf: { clusterId: '', voters: [], learners: [], addresses: {}, removed: [] } }),
      ),
    ).toEqual({
      index: 0,
      term: 0,
      conf: { clusterId: '', voters: [], learners: [], addresses: {}, removed: [] },
    });
    expect(decodeSnapshotData(encodeSnapshotData(500, utf8('state')))).toEqual({ index: 500, data: utf8('state') });
  });

  it('decoded data does not alias the stored buffer', () => {
    const raw = encodeEntry(ENTRY);
    const decoded = decodeEntry(raw);
    raw.fill(0);
    expect(decoded.data).toEqual(ENTRY.data);
  });
});

describe('corruption is detected, never decoded', () => {
  for (const [what, record, decode] of RECORDS) {
    it(`${what}: a flipped bit anywhere (payload or CRC) fails`, () => {
      for (let byte = 0; byte < record.length; byte++) {
        for (const bit of [0, 7]) {
          const bad = record.slice();
          bad[byte]! ^= 1 << bit;
          expect(() => decode(bad), `byte ${byte} bit ${bit}`).toThrow(CorruptRecordError);
        }
      }
    });

    it(`${what}: every truncation (a torn write) fails`, () => {
      for (let len = 0; len < record.length; len++) {
        expect(() => decode(record.subarray(0, len)), `length ${len}`).toThrow(CorruptRecordError);
      }
    });
  }

  it('a valid record of another type is refused by its tag', () => {
    expect(() => decodeHardState(encodeEntry(ENTRY))).toThrow(/tag/);
    expect(() => decodeEntry(encodeSnapshotData(1, new Uint8Array(0)))).toThrow(/tag/);
  });

  it('the CRC error names the record and both checksums, so a log line is actionable', () => {
    const bad = encodeHardState(HARD);
    bad[3]! ^= 0xff;
    expect(() => decodeHardState(bad)).toThrow(/hard state record fails its CRC32 check \(stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}\)/);
  });
});
