// The follower's chunk reassembly alone (src/raft/core/snapshot-receiver.ts).
import { describe, expect, it } from 'vitest';
import { Raft, defaultRaftConfig } from '../../../src/raft/core/raft.js';
import { SnapshotReceiver } from '../../../src/raft/core/snapshot-receiver.js';
import { bootstrapSnapshot, emptyHardState } from '../../../src/raft/core/types.js';
import type { InstallSnapshot, Message } from '../../../src/raft/core/types.js';

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

describe('SnapshotReceiver handing chunks out: the last one waits for the driver to check what it wrote', () => {
  it('the last chunk is taken for checking; chunks that come meanwhile are ignored; verified, it is taken once', () => {
    const r = new SnapshotReceiver(true);
    expect(r.accept(chunk(10, 0, 'abc', false))).toEqual({ kind: 'more', nextOffset: 3 });
    expect(r.accept(chunk(10, 3, 'de', true))).toEqual({ kind: 'checking' });
    expect(r.accept(chunk(10, 3, 'de', true))).toEqual({ kind: 'ignored' }); // a resend of the last
    expect(r.accept(chunk(20, 0, 'x', false))).toEqual({ kind: 'ignored' }); // even a newer snapshot
    expect(r.takeChecked(10, 1)).toBeNull(); // another term: not the one waiting
    expect(r.takeChecked(10, 2)).toMatchObject({ meta: { index: 10, term: 2 }, leader: 'l', round: 1 });
    expect(r.takeChecked(10, 2)).toBeNull();
    expect(r.accept(chunk(20, 0, 'x', false))).toEqual({ kind: 'more', nextOffset: 1 });
  });

  it('refused (drop), at the last chunk or before it, the snapshot is forgotten: only offset 0 is taken next', () => {
    const r = new SnapshotReceiver(true);
    r.accept(chunk(10, 0, 'abc', false));
    r.accept(chunk(10, 3, 'de', true));
    expect(r.drop(10, 2)).toEqual({ leader: 'l', round: 1 });
    expect(r.drop(10, 2)).toBeNull();
    expect(r.accept(chunk(10, 3, 'de', true))).toEqual({ kind: 'refused', nextOffset: 0 });
    // Before the last chunk: the one being received.
    expect(r.accept(chunk(10, 0, 'abc', false))).toEqual({ kind: 'more', nextOffset: 3 });
    expect(r.drop(11, 2)).toBeNull();
    expect(r.drop(10, 2)).toEqual({ leader: 'l', round: 1 });
    expect(r.accept(chunk(10, 3, 'de', false))).toEqual({ kind: 'refused', nextOffset: 0 });
    // A role change (reset) drops the one waiting: the driver's word then finds nobody to answer.
    r.accept(chunk(10, 0, 'abc', true));
    r.reset();
    expect(r.takeChecked(10, 2)).toBeNull();
    expect(r.drop(10, 2)).toBeNull();
  });
});

describe('a follower that hands snapshot chunks to the driver (RaftConfig.snapshotChunksToDriver)', () => {
  // The snapshot's configuration has a learner the follower's does not: taking it changes the configuration.
  const conf = { clusterId: '', voters: ['a', 'b', 'c'], learners: ['d'], addresses: {}, removed: [] };
  const meta = { index: 33, term: 2, conf };
  const send = (f: Raft, offset: number, bytes: number[], done: boolean, term = 2) =>
    f.step({
      type: 'InstallSnapshot',
      from: 'a',
      to: 'b',
      term,
      meta: { ...meta, term },
      offset,
      chunk: new Uint8Array(bytes),
      done,
      round: 1,
    });
  /** Follower b with entries 1..3 of term 1 in its log, committed up to 2. */
  const follower = () =>
    new Raft(
      { ...defaultRaftConfig('b', { int: () => 0 }), snapshotChunksToDriver: true },
      {
        hardState: { term: 2, votedFor: null, commitIndex: 2 },
        snapshot: bootstrapSnapshot(['a', 'b', 'c']),
        entries: [1, 2, 3].map((index) => ({ index, term: 1, kind: 'normal' as const, data: new Uint8Array([index]) })),
      },
    );
  const answers = (rd: { messages: Message[] }) =>
    rd.messages.flatMap((m) => (m.type === 'InstallSnapshotResponse' ? [[m.snapshotIndex, m.success, m.nextOffset, m.done]] : []));
  const logOf = (f: Raft) => {
    const s = f.status();
    return {
      firstIndex: s.firstIndex,
      lastIndex: s.lastIndex,
      commitIndex: s.commitIndex,
      durableIndex: s.durableIndex,
      voters: s.voters,
      learners: s.learners,
    };
  };

  it('hands out each accepted chunk; the last one changes nothing until the driver says it verified, then the snapshot is installed', () => {
    const f = follower();
    f.advance(f.ready());
    const before = logOf(f);
    send(f, 0, [1, 2, 3], false);
    let rd = f.ready();
    expect(rd.snapshotChunks.map((c) => [c.offset, [...c.data], c.done])).toEqual([[0, [1, 2, 3], false]]);
    expect(rd.snapshot).toBeNull();
    f.advance(rd);
    send(f, 5, [9], false); // a chunk at the wrong offset: refused, not handed out
    send(f, 0, [1, 2, 3], false); // a duplicate: refused too
    send(f, 3, [4, 5], true);
    send(f, 3, [4, 5], true); // the leader's heartbeat resends the last chunk while the driver checks it: no answer
    rd = f.ready();
    expect(rd.snapshotChunks.map((c) => [c.offset, [...c.data], c.done])).toEqual([[3, [4, 5], true]]);
    expect(answers(rd)).toEqual([
      [33, false, 3, false],
      [33, false, 3, false],
    ]);
    expect(rd.snapshot, 'the log takes nothing before the driver checked what it wrote').toBeNull();
    f.advance(rd);
    expect(logOf(f)).toEqual(before);

    expect(f.snapshotVerified(meta)).toBe(true);
    rd = f.ready();
    expect(rd.snapshot?.meta.index).toBe(33);
    expect(rd.snapshot?.data.length).toBe(0);
    expect(answers(rd)).toEqual([[33, true, 0, true]]);
    f.advance(rd);
    expect(f.status()).toMatchObject({ firstIndex: 34, lastIndex: 33, commitIndex: 33, learners: ['d'] });
    expect(f.snapshotVerified(meta), 'said twice: nothing more to install').toBe(false);
  });

  it('a last chunk the driver refuses leaves the log, commit index and configuration untouched, and asks the leader to start again', () => {
    const f = follower();
    f.advance(f.ready());
    const before = logOf(f);
    send(f, 0, [1, 2, 3], false);
    f.advance(f.ready());
    send(f, 3, [4, 5], true);
    f.advance(f.ready());
    f.snapshotRefused(meta);
    const rd = f.ready();
    expect(rd.snapshot).toBeNull();
    expect(answers(rd), 'done, not taken: send it again from offset 0').toEqual([[33, false, 0, true]]);
    f.advance(rd);
    expect(logOf(f)).toEqual(before);
    expect(
      [1, 2, 3].map((i) => f.inspect().entryAt(i)?.data[0]),
      'the entries it held are still there',
    ).toEqual([1, 2, 3]);
    // Forgotten: the chunk after the first is refused with "from 0"; a new stream from 0 is taken whole.
    send(f, 3, [4, 5], true);
    expect(answers(f.ready())).toEqual([[33, false, 0, false]]);
    send(f, 0, [1, 2, 3, 4, 5], true);
    expect(f.ready().snapshotChunks.map((c) => [c.offset, c.done])).toEqual([[0, true]]);
    expect(f.snapshotVerified(meta)).toBe(true);
    expect(f.ready().snapshot?.meta.index).toBe(33);
  });

  it('refused before its last chunk: forgotten, the leader told to start again; acknowledged chunks of it change nothing', () => {
    const f = follower();
    f.advance(f.ready());
    send(f, 0, [1, 2, 3], false);
    f.advance(f.ready());
    f.snapshotRefused(meta);
    expect(answers(f.ready())).toEqual([[33, false, 0, true]]);
    send(f, 3, [4], false);
    expect(answers(f.ready())).toEqual([[33, false, 0, false]]);
    f.snapshotRefused({ ...meta, index: 40 }); // not the one received: nobody to answer
    expect(f.hasReady()).toBe(false);
  });

  it('refused, what it had answered of the snapshot and not yet sent is void: the leader hears only "from offset 0"', () => {
    const f = follower();
    f.advance(f.ready());
    send(f, 0, [1, 2, 3], false);
    f.advance(f.ready()); // the driver writes chunk 0 ...
    send(f, 0, [1, 2, 3], false); // ... while a duplicate of it is refused "from 3"
    f.snapshotRefused(meta); // and then the store refuses the stream
    expect(answers(f.ready())).toEqual([[33, false, 0, true]]);
  });

  it('a role change while the driver checks drops the snapshot: its word finds nothing to install', () => {
    const f = follower();
    f.advance(f.ready());
    send(f, 0, [1, 2, 3], true);
    f.advance(f.ready());
    send(f, 0, [1], false, 3); // a new leader's term: the follower resets, what it was checking is gone
    f.advance(f.ready());
    expect(f.snapshotVerified(meta)).toBe(false);
    f.snapshotRefused(meta);
    expect(answers(f.ready())).toEqual([]);
    expect(f.status().commitIndex).toBe(2);
  });
});
