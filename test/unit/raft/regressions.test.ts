// Regression tests for core bugs found by the per-rule tests (each failed against the core before its
// fix). See also "retries indefinitely" in paper-5.3-replication.test.ts, fixed in d79a503.
import { describe, expect, it } from 'vitest';
import { Network, enc, ofType } from './harness.js';

describe('regressions in src/raft/core', () => {
  // Fixed: the stall counter now counts only while the follower is behind. Before the fix,
  // src/raft/core/raft.ts tickLeader incremented pr.ticksWithoutProgress on EVERY leader tick,
  // including ticks when the follower is fully caught up, and only Progress.maybeUpdate resets it. After any
  // idle period the counter is already > STALL_TICKS, so the first heartbeat after a new proposal — while
  // that append is merely in flight — takes the "appends were lost" branch in broadcastHeartbeat:
  // becomeProbe(), the in-flight entries are sent again, and pipelining is off (probe = 1 entry per
  // message) until the ack comes back. The counter's own doc says "while behind"; it counts idle time too.
  // Impact: performance only (duplicate sends, temporary loss of pipelining); no safety or liveness issue.
  it('BUG §5.3 pipelining: after an idle period, an append still in flight is resent and the follower is thrown back to probing by the next heartbeat', () => {
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    net.tickAll(10); // idle: everyone caught up, nothing in flight
    const a = net.node('a');
    a.raft.propose(enc('x'));
    const first = ofType(net.collect(), 'AppendEntries').filter((m) => m.to === 'b');
    expect(first.map((m) => m.entries.map((e) => e.index))).toEqual([[2]]);
    a.raft.tick(); // one heartbeat interval later, before b's answer arrived (it is only in flight)
    const resent = ofType(net.collect(), 'AppendEntries').filter((m) => m.to === 'b' && m.entries.length > 0);
    // b stays in replicate state and index 2 is not sent a second time (before the fix: 'probe' and a resend).
    expect(a.raft.progressSnapshot().get('b')!.state).toBe('replicate');
    expect(resent).toEqual([]);
  });
});

describe('regression: compaction racing a snapshot install (found by the simulator, seed 1177)', () => {
  it('compact(i) after a leader snapshot beyond i was installed is a no-op (null), not a throw', async () => {
    const { Raft, defaultRaftConfig } = await import('../../../src/raft/core/raft.js');
    const { bootstrapSnapshot, emptyHardState } = await import('../../../src/raft/core/types.js');
    const f = new Raft(defaultRaftConfig('b', { int: () => 0 }), {
      hardState: emptyHardState(),
      snapshot: bootstrapSnapshot(['a', 'b', 'c']),
      entries: [],
    });
    // The application is still applying (say) entry 32 when the leader's snapshot at 33 arrives.
    f.step({
      type: 'InstallSnapshot',
      from: 'a',
      to: 'b',
      term: 2,
      meta: { index: 33, term: 2, conf: { clusterId: '', voters: ['a', 'b', 'c'], learners: [], addresses: {}, removed: [] } },
      offset: 0,
      chunk: new Uint8Array([1, 2, 3]),
      done: true,
      round: 1,
    });
    expect(f.status().firstIndex).toBe(34);
    expect(f.compact(32, new Uint8Array([9]))).toBeNull();
    expect(f.compact(33, new Uint8Array([9]))).toBeNull();
    expect(f.status().firstIndex).toBe(34);
  });
});
