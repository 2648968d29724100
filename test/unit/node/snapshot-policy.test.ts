// When the driver snapshots: by entry count for a small state; for a large one, only once the log since
// the last snapshot is also a quarter of the state's size (amortised writing, issue 8).
import { describe, expect, it } from 'vitest';
import { LARGE_SNAPSHOT_BYTES, SnapshotPolicy } from '../../../src/raft/snapshot-policy.js';

describe('SnapshotPolicy', () => {
  it('a small state: every snapshotEvery entries, whatever their size', () => {
    const p = new SnapshotPolicy(100);
    p.taken(10_000);
    expect(p.due(99)).toBe(false);
    expect(p.due(100)).toBe(true);
  });

  it('a large state: the entry count AND a quarter of the state in log bytes', () => {
    const p = new SnapshotPolicy(100);
    const state = 40 * LARGE_SNAPSHOT_BYTES;
    p.taken(state);
    p.started();
    for (let i = 0; i < 1000; i++) p.noteApplied(60);
    expect(p.due(1000), '1000 entries of 76 B are far below 10 MB').toBe(false);
    let entries = 1000;
    while (!p.due(entries)) {
      p.noteApplied(60);
      entries++;
    }
    // 10 MB of log at 76 B an entry (60 of data + 16 of bookkeeping).
    expect(entries).toBe(Math.ceil(state / 4 / 76));
    p.started();
    expect(p.due(entries), 'counting restarts with the next snapshot').toBe(false);
    expect(p.lastBytes).toBe(state);
  });
});
