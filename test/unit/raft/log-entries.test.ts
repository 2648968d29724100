import { describe, expect, it } from 'vitest';
import { CHUNK_BYTES, LogEntries } from '../../../src/raft/core/log-entries.js';
import { RaftLog } from '../../../src/raft/core/log.js';
import { bootstrapSnapshot, type Entry, type EntryKind } from '../../../src/raft/core/types.js';

const KINDS: EntryKind[] = ['normal', 'noop', 'config'];

function entry(index: number, term: number, size = 5 + (index % 17)): Entry {
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i++) data[i] = (index * 31 + i) & 0xff;
  return { index, term, kind: KINDS[index % 3]!, data };
}

function all(log: LogEntries, firstIndex: number): Entry[] {
  const out: Entry[] = [];
  for (let k = 0; k < log.length; k++) out.push(log.at(k, firstIndex + k));
  return out;
}

describe('LogEntries (the in-memory log, compact)', () => {
  it('gives back every entry it was given — term, kind and data — across chunks, growth and compaction', () => {
    const log = new LogEntries();
    const expected: Entry[] = [];
    let first = 1;
    for (let i = 1; i <= 20_000; i++) {
      // Empty entries (a noop), ordinary ones, and one larger than a chunk.
      const e =
        i % 1000 === 0
          ? entry(i, 1 + (i >> 12), CHUNK_BYTES + 10)
          : i % 7 === 0
            ? { ...entry(i, 1 + (i >> 12)), data: new Uint8Array(0) }
            : entry(i, 1 + (i >> 12));
      log.push(e);
      expected.push(e);
      if (i % 5000 === 0) {
        // A compaction keeping a catch-up tail, as the driver does.
        const drop = expected.length - 1500;
        log.dropFirst(drop);
        expected.splice(0, drop);
        first += drop;
      }
    }
    expect(log.length).toBe(expected.length);
    expect(all(log, first)).toEqual(expected);
    for (let k = 0; k < expected.length; k += 97) {
      expect(log.term(k)).toBe(expected[k]!.term);
      expect(log.dataLength(k)).toBe(expected[k]!.data.length);
    }
  });

  it('a cut suffix is replaced by what comes after it, and the data of the cut entries is never read again', () => {
    const log = new LogEntries();
    for (let i = 1; i <= 10; i++) log.push(entry(i, 1));
    log.truncate(6);
    const replacement = [entry(7, 2, 40), entry(8, 2, 3)];
    for (const e of replacement) log.push(e);
    expect(all(log, 1)).toEqual([...Array.from({ length: 6 }, (_, k) => entry(k + 1, 1)), ...replacement]);
    log.dropFirst(8);
    expect(log.length).toBe(0);
    log.push(entry(9, 2));
    expect(all(log, 9)).toEqual([entry(9, 2)]);
  });

  it('entries handed out before a cut keep their bytes: the replacing entries never reuse the cut space', () => {
    // A Ready handed out (and still being written, or a message still being sent) holds views of the cut
    // entries; a new leader's entries written over them would change what that write or message carries.
    const log = new LogEntries();
    for (let i = 1; i <= 10; i++) log.push(entry(i, 1, 12));
    const handedOut = [log.at(8, 9), log.at(9, 10)];
    const before = handedOut.map((e) => Array.from(e.data));
    log.truncate(8);
    for (let i = 9; i <= 12; i++) log.push({ ...entry(i, 2, 12), data: new Uint8Array(12).fill(0xee) });
    expect(handedOut.map((e) => Array.from(e.data))).toEqual(before);
  });

  it('keeps nothing of the Entry it was given: changing it afterwards changes nothing here', () => {
    const log = new LogEntries();
    const e = entry(1, 1, 8);
    log.push(e);
    e.data[0] = 99;
    expect(log.at(0, 1).data[0]).toBe(entry(1, 1, 8).data[0]);
  });

  it('refuses a cut or a drop past its entries, and an unknown kind', () => {
    const log = new LogEntries();
    log.push(entry(1, 1));
    expect(() => log.truncate(2)).toThrow(RangeError);
    expect(() => log.dropFirst(2)).toThrow(RangeError);
    expect(() => log.push({ index: 2, term: 1, kind: 'other' as EntryKind, data: new Uint8Array(1) })).toThrow(RangeError);
  });

  it('RaftLog over it: slice, term and a compaction give the entries appended', () => {
    const log = new RaftLog(bootstrapSnapshot(['a']), [], 0);
    const appended: Entry[] = [];
    for (let i = 1; i <= 300; i++) {
      const e = entry(i, 1);
      log.appendOwn(e);
      appended.push(e);
    }
    expect(log.slice(1, 300)).toEqual(appended);
    expect(log.slice(10, 20, 5)).toEqual(appended.slice(9, 14));
    log.compact({ meta: { index: 250, term: 1, conf: bootstrapSnapshot(['a']).meta.conf }, data: new Uint8Array(0) });
    expect(log.firstIndex()).toBe(251);
    expect(log.term(260)).toBe(1);
    expect(log.slice(251, 300)).toEqual(appended.slice(250));
  });
});
