// The follower's chunk reassembly alone (src/raft/core/snapshot-receiver.ts).
import { describe, expect, it } from 'vitest';
import { Raft, defaultRaftConfig } from '../../../src/raft/core/raft.js';
import { SnapshotReceiver } from '../../../src/raft/core/snapshot-receiver.js';
import { bootstrapSnapshot, emptyHardState } from '../../../src/raft/core/types.js';
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

describe('a follower that hands snapshot chunks to the driver (RaftConfig.snapshotChunksToDriver)', () => {
  const meta = { index: 33, term: 2, conf: { clusterId: '', voters: ['a', 'b', 'c'], learners: [], addresses: {}, removed: [] } };
  const send = (f: Raft, offset: number, bytes: number[], done: boolean) =>
    f.step({ type: 'InstallSnapshot', from: 'a', to: 'b', term: 2, meta, offset, chunk: new Uint8Array(bytes), done, round: 1 });

  it('hands out each accepted chunk in the Ready that answers it, none refused, and a snapshot without data at the last', () => {
    const f = new Raft(
      { ...defaultRaftConfig('b', { int: () => 0 }), snapshotChunksToDriver: true },
      {
        hardState: emptyHardState(),
        snapshot: bootstrapSnapshot(['a', 'b', 'c']),
        entries: [],
      },
    );
    send(f, 0, [1, 2, 3], false);
    let rd = f.ready();
    expect(rd.snapshotChunks.map((c) => [c.offset, [...c.data], c.done])).toEqual([[0, [1, 2, 3], false]]);
    expect(rd.snapshot).toBeNull();
    f.advance(rd);
    send(f, 5, [9], false); // a chunk at the wrong offset: refused, not handed out
    send(f, 0, [1, 2, 3], false); // a duplicate: refused too
    send(f, 3, [4, 5], true);
    rd = f.ready();
    expect(rd.snapshotChunks.map((c) => [c.offset, [...c.data], c.done])).toEqual([[3, [4, 5], true]]);
    const answers = rd.messages.filter((m) => m.type === 'InstallSnapshotResponse');
    expect(answers.map((m) => m.type === 'InstallSnapshotResponse' && [m.success, m.nextOffset, m.done])).toEqual([
      [false, 3, false],
      [false, 3, false],
      [true, 0, true],
    ]);
    expect(rd.snapshot?.meta.index).toBe(33);
    expect(rd.snapshot?.data.length).toBe(0);
  });
});
