// Log time at cluster level 2 (machine.ts `time`, versions.ts): within a term it advances by the progress of
// the leader's stamps, so a leader on a true clock after one whose clock ran ahead moves log time on at
// once (issue 22: under max(log time, stamp) a 1 s lease was still held 4 s later). And the gate's machine
// side: the level only rises, and a build that reads a lower level stops at the entry or snapshot.
import { describe, expect, it } from 'vitest';
import {
  BUILD_LEVEL,
  encodeCommand,
  LockMachine,
  SnapshotDecodeError,
  UnknownCommandError,
  type LockCommand,
} from '../../../src/lock/index.js';
import { Feed } from './feed.js';

const AHEAD_MS = 5_000;

/** Term 2 led by a node whose clock is AHEAD_MS fast, then term 3 by one on the true clock. True time t is
 *  1_000_000 + elapsed; the fast leader stamps t + AHEAD_MS. */
function fastThenTrue(level: 1 | 2): Feed {
  const feed = new Feed();
  feed.at(1_000_000).termStart();
  if (level === 2) feed.raiseLevel(2);
  feed.termStart(1_000_100 + AHEAD_MS); // term 2: the fast leader
  feed.checkpoint(1_000_400 + AHEAD_MS);
  feed.termStart(1_000_600); // term 3: a true clock, 4.8 s behind log time
  return feed;
}

describe('log time at cluster level 2', () => {
  it('a 1 s lease taken under a true-clock leader after a fast one ends 1 s later in true time', () => {
    const feed = fastThenTrue(2);
    const a = feed.at(1_000_700).acquire('k', 'a', 1000);
    expect(a.acquired).toBe(true);
    feed.checkpoint(1_001_650); // 950 ms of the leader's clock later
    expect(feed.machine.get('k').held).toBe(true);
    feed.checkpoint(1_001_700); // 1000 ms later
    expect(feed.machine.get('k').held).toBe(false);
    expect(feed.at(1_001_700).acquire('k', 'b', 1000).acquired).toBe(true);
  });

  it('the same history at level 1 keeps the lease until the true clock catches up with log time (the stall)', () => {
    const feed = fastThenTrue(1);
    feed.at(1_000_700).acquire('k', 'a', 1000);
    feed.checkpoint(1_001_700);
    expect(feed.machine.get('k').held).toBe(true); // log time stood still at the fast leader's last stamp
    feed.checkpoint(1_000_400 + AHEAD_MS + 1000);
    expect(feed.machine.get('k').held).toBe(false);
  });

  it('a lease carried from the fast term into the true one ends within its ttl of the new term', () => {
    const feed = new Feed();
    feed.at(1_000_000).termStart();
    feed.raiseLevel(2);
    feed.termStart(1_000_100 + AHEAD_MS);
    feed.at(1_000_200 + AHEAD_MS).acquire('k', 'a', 1000);
    feed.termStart(1_000_300); // the true-clock leader takes office: the lease is carried (a full ttl from here)
    feed.checkpoint(1_001_299);
    expect(feed.machine.get('k').held).toBe(true);
    feed.checkpoint(1_001_300);
    expect(feed.machine.get('k').held).toBe(false);
  });

  it("within a term log time moves by the stamps' progress; a stamp that steps back adds nothing", () => {
    const feed = new Feed();
    feed.at(10_000).termStart();
    feed.raiseLevel(2, 10_000);
    feed.termStart(20_000); // log time 20,000
    feed.checkpoint(20_300);
    expect(feed.machine.logNowMs).toBe(20_300);
    feed.checkpoint(20_100); // stepped back: no progress, and the next progress is measured from 20,300
    expect(feed.machine.logNowMs).toBe(20_300);
    feed.checkpoint(20_400);
    expect(feed.machine.logNowMs).toBe(20_400);
  });

  it('the level entry starts the progress count from its own stamp', () => {
    const feed = new Feed();
    feed.at(50_000).termStart();
    feed.termStart(40_000); // a slow leader: log time stays 50,000 under max()
    feed.checkpoint(40_500);
    expect(feed.machine.logNowMs).toBe(50_000);
    feed.raiseLevel(2, 41_000);
    expect(feed.machine.logNowMs).toBe(50_000);
    feed.checkpoint(41_250);
    expect(feed.machine.logNowMs).toBe(50_250); // 250 ms past the level entry's stamp, not past any earlier one
  });

  it('the level only rises', () => {
    const feed = new Feed();
    feed.at(1000).termStart();
    expect(feed.machine.clusterLevel).toBe(1);
    expect(feed.raiseLevel(2).level).toBe(2);
    expect(feed.raiseLevel(2).level).toBe(2);
    expect(feed.machine.clusterLevel).toBe(2);
  });

  it("projects log time to the leader's clock: from the term's last stamp at level 2, max() at level 1", () => {
    const feed = fastThenTrue(2);
    expect(feed.machine.logNowMs).toBe(1_000_400 + AHEAD_MS);
    expect(feed.machine.projectedNowMs(1_000_800)).toBe(1_000_400 + AHEAD_MS + 200);
    expect(feed.machine.projectedNowMs(1_000_500)).toBe(1_000_400 + AHEAD_MS); // before its last stamp: log time
    const old = fastThenTrue(1);
    expect(old.machine.projectedNowMs(1_000_800)).toBe(1_000_400 + AHEAD_MS);
    expect(old.machine.projectedNowMs(1_000_400 + AHEAD_MS + 7)).toBe(1_000_400 + AHEAD_MS + 7);
  });

  it("a snapshot keeps the level and the term's last stamp: a restored replica goes on exactly alike", () => {
    const feed = fastThenTrue(2);
    feed.at(1_000_700).acquire('k', 'a', 1000);
    const bytes = feed.machine.snapshot();
    expect(bytes[3]).toBe(7); // snapshot version 7: written from level 2 on
    const restored = LockMachine.restore(bytes);
    expect(restored.clusterLevel).toBe(2);
    const next = encodeCommand({ type: 'checkpoint', timeMs: 1_001_200 });
    feed.machine.apply(feed.nextIndex, feed.term, next);
    restored.apply(restored.appliedIndex + 1, feed.term, next);
    expect(restored.logNowMs).toBe(feed.machine.logNowMs);
    expect(restored.digest()).toBe(feed.machine.digest());
  });

  it('a level-1 state still writes the snapshot version it wrote before (an older build reads it)', () => {
    const feed = fastThenTrue(1);
    feed.at(1_000_700).acquire('k', 'a', 1000);
    expect(feed.machine.snapshot()[3]).toBe(3);
  });
});

describe('members that ran (machine.ts `ran`)', () => {
  it('are recorded from level 2 on, once; below level 2 the entry changes nothing', () => {
    const feed = new Feed();
    feed.at(1000).termStart();
    expect(feed.expect('memberRan', feed.apply({ type: 'memberRan', timeMs: 1000, memberId: 'n2' })).recorded).toBe(false);
    expect(feed.machine.hasRun('n2')).toBe(false);
    expect(feed.machine.snapshot()[3]).toBe(3); // nothing a level-1 snapshot could not carry
    feed.raiseLevel(2);
    expect(feed.expect('memberRan', feed.apply({ type: 'memberRan', timeMs: 1000, memberId: 'n2' })).recorded).toBe(true);
    expect(feed.expect('memberRan', feed.apply({ type: 'memberRan', timeMs: 1000, memberId: 'n2' })).recorded).toBe(false);
    expect(feed.machine.hasRun('n2')).toBe(true);
    expect(feed.machine.hasRun('n3')).toBe(false);
  });

  it('survive a snapshot (version 7): a restarted peer still knows who ran', () => {
    const feed = new Feed();
    feed.at(1000).termStart();
    feed.raiseLevel(2);
    for (const id of ['n3', 'n1', 'node-10']) feed.apply({ type: 'memberRan', timeMs: 1000, memberId: id });
    const restored = LockMachine.restore(feed.machine.snapshot());
    expect(['n1', 'n3', 'node-10', 'n2'].map((id) => restored.hasRun(id))).toEqual([true, true, true, false]);
    expect(restored.snapshot()).toEqual(feed.machine.snapshot());
  });
});

describe('the gate, in the machine', () => {
  it('a build that reads level 1 stops at a clusterLevel entry, naming what it reads', () => {
    const old = new LockMachine({ readLevel: 1 });
    old.apply(1, 1, encodeCommand({ type: 'termStart', timeMs: 1000 }));
    const raise = encodeCommand({ type: 'clusterLevel', timeMs: 1000, level: 2 });
    expect(() => old.apply(2, 1, raise)).toThrow(UnknownCommandError);
    expect(() => old.apply(2, 1, raise)).toThrow(/tag 19 is newer than this build reads \(cluster level 1, command tags up to 18\)/);
    // and applyCommand (the tests' decoded path) refuses the tag exactly as the decoder does
    expect(() => old.applyCommand(2, 1, { type: 'clusterLevel', timeMs: 1000, level: 2 })).toThrow(
      /tag 19 is newer than this build reads \(cluster level 1, command tags up to 18\)/,
    );
  });

  it('a build of level 2 stops at an entry raising the cluster to 3, and this build at one raising it past its own level', () => {
    const old = Feed.withOptions({ readLevel: 2 });
    old.at(1000).termStart();
    expect(() => old.apply({ type: 'clusterLevel', timeMs: 1000, level: 3 })).toThrow(
      /cluster level 3 .* is newer than this build reads \(cluster level 2/,
    );
    const feed = new Feed();
    feed.at(1000).termStart();
    const next = BUILD_LEVEL + 1;
    expect(() => feed.apply({ type: 'clusterLevel', timeMs: 1000, level: next })).toThrow(
      new RegExp(`cluster level ${next} .* is newer than this build reads \\(cluster level ${BUILD_LEVEL}`),
    );
  });

  it('a build that reads level 1 refuses a version 7 snapshot as newer than it reads', () => {
    const bytes = fastThenTrue(2).machine.snapshot();
    expect(() => LockMachine.restore(bytes, { readLevel: 1 })).toThrow(SnapshotDecodeError);
    expect(() => LockMachine.restore(bytes, { readLevel: 1 })).toThrow(
      /unsupported snapshot version 7: this build reads versions 1-6; a newer leasehold wrote it/,
    );
  });
});

describe('applyCommand and the level a machine reads', () => {
  it('refuses a tag above its level as the decoder does (renews, tag 24, on a level-6 machine)', () => {
    const at6 = new LockMachine({ readLevel: 6 });
    at6.apply(1, 1, encodeCommand({ type: 'termStart', timeMs: 1000 }));
    const renews: LockCommand = { type: 'renews', timeMs: 1000, renews: [{ key: 'k', owner: 'o', token: 1n, ttlMs: 1000 }] };
    expect(() => at6.applyCommand(2, 1, renews)).toThrow(/tag 24 is newer than this build reads \(cluster level 6/);
    expect(() => at6.apply(2, 1, encodeCommand(renews))).toThrow(/tag 24 is newer than this build reads \(cluster level 6/);
    expect(at6.appliedIndex).toBe(1);
    const at7 = new LockMachine({ readLevel: 7 });
    at7.apply(1, 1, encodeCommand({ type: 'termStart', timeMs: 1000 }));
    expect(() => at7.applyCommand(2, 1, renews)).not.toThrow();
    expect(at7.appliedIndex).toBe(2);
  });
});
