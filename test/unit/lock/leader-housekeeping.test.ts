// Lock leader, its own proposals: proactive expiry (waiters proceed without polling) and idle
// checkpoints (a chain of short terms cannot freeze a dead lease; LEASES.md), never piled up.
import { describe, expect, it } from 'vitest';
import { LeaderRig } from './leader-rig.js';

describe('lock leader: expiry and checkpoints', () => {
  it('an expire is proposed once per lease, again only if that proposal failed', () => {
    const rig = new LeaderRig().ready();
    rig.acquire('k', 'a', { ttlMs: 1000 });
    rig.commitAll();
    rig.advance(1000);
    rig.advance(10);
    rig.advance(10);
    expect(rig.pendingOf('expire')).toHaveLength(1);
    rig.failProposal('dropped', rig.pendingOf('expire')[0]!.proposalId);
    rig.advance(10);
    expect(rig.pendingOf('expire')).toHaveLength(1);
    rig.commitAll();
    rig.advance(10);
    expect(rig.proposed.filter((p) => p.command.type === 'expire')).toHaveLength(2);
    expect(rig.machine.leaseCount).toBe(0);
  });

  it('a timed-out proposal whose entry stays in our log is still in flight: nothing is proposed again until it applies', () => {
    // Seed 240 with 30 ms proposal timeouts: settled at each timeout, every due expireSession and checkpoint
    // was proposed again at every tick, and the log grew 500 entries past what the followers could take.
    const rig = new LeaderRig({ checkpointIdleMs: 100 }).ready();
    rig.acquire('k', 'a', { ttlMs: 1000 });
    rig.commitAll();
    rig.advance(1000);
    const expire = rig.pendingOf('expire')[0]!.proposalId;
    rig.reportTimeout(expire);
    for (let i = 0; i < 20; i++) rig.advance(100);
    expect(rig.proposed.filter((p) => p.command.type === 'expire')).toHaveLength(1);
    rig.commitAll();
    expect(rig.machine.leaseCount).toBe(0);
    rig.advance(10);
    expect(rig.proposed.filter((p) => p.command.type === 'expire')).toHaveLength(1);
  });

  it('a timed-out proposal is settled when the leadership ends: the next term proposes what is still due', () => {
    const rig = new LeaderRig().ready();
    rig.step({ type: 'members', readLevel: 2, ran: [] });
    rig.advance(10);
    rig.failProposal('timeout', rig.pendingOf('clusterLevel')[0]!.proposalId); // its entry goes with the term
    for (let i = 0; i < 5; i++) rig.advance(10);
    expect(rig.pendingOf('clusterLevel')).toHaveLength(0); // still in flight as far as this term knows
    rig.stepDown().elect();
    rig.commitAll();
    rig.advance(10);
    expect(rig.pendingOf('clusterLevel')).toHaveLength(1);
  });

  it('a timed-out checkpoint is settled at once: its old stamp records none of its wait, so a fresh one may follow', () => {
    const rig = new LeaderRig({ checkpointIdleMs: 100 }).ready();
    rig.acquire('k', 'a', { ttlMs: 60_000 });
    rig.commitAll();
    rig.advance(100);
    rig.reportTimeout(rig.pendingOf('checkpoint')[0]!.proposalId);
    rig.advance(100);
    expect(rig.pendingOf('checkpoint')).toHaveLength(2);
  });

  it('an applied expire wakes the head waiter', () => {
    const rig = new LeaderRig().ready();
    rig.acquire('k', 'h', { ttlMs: 1000 });
    const a = rig.acquire('k', 'a', { waitMs: 5000 });
    rig.commitAll();
    rig.advance(1000);
    rig.commitAll(); // expire, then a's queued acquire
    expect(rig.acquired(a).acquired).toBe(true);
  });

  it('at most one checkpoint in flight', () => {
    const rig = new LeaderRig({ checkpointIdleMs: 100 }).ready();
    rig.acquire('k', 'a', { ttlMs: 60_000 });
    rig.commitAll();
    for (let i = 0; i < 20; i++) rig.advance(100); // a leader that cannot commit
    expect(rig.pendingOf('checkpoint')).toHaveLength(1);
    rig.commitAll();
    rig.advance(100);
    expect(rig.pendingOf('checkpoint')).toHaveLength(1); // the next one only after the first settled
  });

  it('a checkpoint only after checkpointIdleMs without any proposal, and only while leases exist', () => {
    const rig = new LeaderRig({ checkpointIdleMs: 100 }).ready();
    rig.advance(500);
    expect(rig.pendingOf('checkpoint')).toHaveLength(0); // no leases
    rig.acquire('k', 'a', { ttlMs: 60_000 });
    rig.commitAll();
    rig.advance(99);
    expect(rig.pendingOf('checkpoint')).toHaveLength(0);
    rig.advance(1);
    expect(rig.pendingOf('checkpoint')).toHaveLength(1);
  });

  it('no housekeeping before the termStart applied', () => {
    const rig = new LeaderRig({ checkpointIdleMs: 100 });
    rig.ready();
    rig.acquire('k', 'a', { ttlMs: 100 });
    rig.commitAll();
    rig.elect(); // a new term: not ready until its termStart applies
    rig.advance(1000);
    expect(rig.pending.map((p) => p.command.type)).toEqual(['termStart']);
  });
});
