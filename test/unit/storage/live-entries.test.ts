import { describe, expect, it } from 'vitest';
import { decodeEntry } from '../../../src/raft/storage/codec.js';
import { LiveEntries } from '../../../src/raft/storage/live-entries.js';
import { encodeEntryRecords } from '../../../src/raft/storage/wal-frame.js';
import type { Entry } from '../../../src/raft/core/types.js';
import { entries, entry } from './storage-contract.js';

/** The entries in a run of entry records ([kind][u32 length][encodeEntry bytes] each). */
function decodeRecords(records: Uint8Array): Entry[] {
  const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
  const out: Entry[] = [];
  for (let at = 0; at < records.length;) {
    const length = view.getUint32(at + 1);
    out.push(decodeEntry(records.slice(at + 5, at + 5 + length)));
    at += 5 + length;
  }
  return out;
}

describe('LiveEntries (the WAL entries kept for a rotation)', () => {
  it('gives back, from any position, the records of the entries it was given, across the blocks they came in', () => {
    const live = new LiveEntries();
    const all = [...entries(1, 3, 1), entry(4, 1, 'a much longer command than the others'), ...entries(5, 9, 2)];
    live.append(encodeEntryRecords(all.slice(0, 3)));
    live.append(encodeEntryRecords(all.slice(3, 4)));
    live.append(encodeEntryRecords(all.slice(4)));
    expect(live.count).toBe(9);
    for (let from = 0; from <= 9; from++) {
      expect(live.recordsFrom(from)).toEqual(encodeEntryRecords(all.slice(from)));
      expect(decodeRecords(live.recordsFrom(from))).toEqual(all.slice(from));
    }
  });

  it('a replaced suffix (Raft §5.3) leaves the entries before it, then the new ones, also inside one block', () => {
    const live = new LiveEntries();
    live.append(encodeEntryRecords(entries(1, 4, 1)));
    live.append(encodeEntryRecords(entries(5, 8, 1)));
    live.truncate(2); // a new leader's entries from index 3 on
    live.append(encodeEntryRecords(entries(3, 6, 2)));
    expect(decodeRecords(live.recordsFrom(0))).toEqual([...entries(1, 2, 1), ...entries(3, 6, 2)]);
    live.truncate(5);
    live.append(encodeEntryRecords([entry(6, 3, 'x')]));
    expect(decodeRecords(live.recordsFrom(1))).toEqual([...entries(2, 2, 1), ...entries(3, 5, 2), entry(6, 3, 'x')]);
  });

  it('grows past its first capacity, and reset keeps only the records it is given', () => {
    const live = new LiveEntries();
    const many = entries(1, 3000, 1);
    for (let i = 0; i < many.length; i += 7) live.append(encodeEntryRecords(many.slice(i, i + 7)));
    expect(live.count).toBe(3000);
    expect(decodeRecords(live.recordsFrom(2990))).toEqual(many.slice(2990));
    const kept = live.recordsFrom(1000);
    live.reset(kept);
    expect(live.count).toBe(2000);
    expect(decodeRecords(live.recordsFrom(0))).toEqual(many.slice(1000));
  });

  it('refuses a truncate or a start past its entries', () => {
    const live = new LiveEntries();
    live.append(encodeEntryRecords(entries(1, 2, 1)));
    expect(() => live.truncate(3)).toThrow(RangeError);
    expect(() => live.recordsFrom(3)).toThrow(RangeError);
  });
});
