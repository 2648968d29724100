// The follower's chunk reassembly alone (src/raft/core/snapshot-receiver.ts).
import { describe, expect, it } from 'vitest';
import { SnapshotReceiver } from '../../../src/raft/core/snapshot-receiver.js';
import type { InstallSnapshot } from '../../../src/raft/core/types.js';

const chunk = (index: number, offset: number, text: string, done: boolean): InstallSnapshot => ({
  type: 'InstallSnapshot',
  from: 'l',
  to: 'f',
  term: 2,
  meta: { index, term: 2, conf: { clusterId: '', voters: ['l', 'f'], learners: [], addresses: {}, removed: [] } },
  offset,
  chunk: new TextEncoder().encode(text),
  done,
  round: 1,
});
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('SnapshotReceiver', () => {
  it('takes chunks at exactly the expected offset and returns the whole data with the last', () => {
    const r = new SnapshotReceiver();
    expect(r.accept(chunk(10, 0, 'abc', false))).toEqual({ kind: 'more', nextOffset: 3 });
    expect(r.accept(chunk(10, 3, 'de', false))).toEqual({ kind: 'more', nextOffset: 5 });
    const last = r.accept(chunk(10, 5, 'f', true));
    expect(last.kind).toBe('whole');
    expect(last.kind === 'whole' && text(last.data)).toBe('abcdef');
  });

  it('a duplicate or skipped chunk is refused with the offset to resend from; nothing is taken', () => {
    const r = new SnapshotReceiver();
    r.accept(chunk(10, 0, 'abc', false));
    expect(r.accept(chunk(10, 0, 'abc', false))).toEqual({ kind: 'refused', nextOffset: 3 });
    expect(r.accept(chunk(10, 9, 'zz', false))).toEqual({ kind: 'refused', nextOffset: 3 });
    const last = r.accept(chunk(10, 3, 'd', true));
    expect(last.kind === 'whole' && text(last.data)).toBe('abcd');
  });

  it('another snapshot starts over only at offset 0; after reset a half-received one is gone', () => {
    const r = new SnapshotReceiver();
    r.accept(chunk(10, 0, 'abc', false));
    expect(r.accept(chunk(20, 3, 'xx', false))).toEqual({ kind: 'refused', nextOffset: 0 });
    expect(r.accept(chunk(20, 0, 'xy', false))).toEqual({ kind: 'more', nextOffset: 2 });
    r.reset();
    expect(r.accept(chunk(20, 2, 'z', true))).toEqual({ kind: 'refused', nextOffset: 0 });
  });
});
