// Lock leader, the version gate (versions.ts): it moves the cluster to a higher level only once every
// member is known to read it, one proposal at a time; and it judges due leases by log time projected to its
// clock, so a leader whose clock is behind log time (after a fast one) expires them on time.
import { describe, expect, it } from 'vitest';
import { LeaderRig } from './leader-rig.js';

describe('lock leader: cluster level', () => {
  it("proposes clusterLevel only when every member reads a level above the log's", () => {
    const rig = new LeaderRig().ready();
    rig.advance(10);
    expect(rig.pendingOf('clusterLevel')).toHaveLength(0); // never told: nothing
    rig.step({ type: 'members', readLevel: undefined, ran: [] });
    rig.advance(10);
    expect(rig.pendingOf('clusterLevel')).toHaveLength(0); // a member not heard from: nothing
    rig.step({ type: 'members', readLevel: 1, ran: [] });
    rig.advance(10);
    expect(rig.pendingOf('clusterLevel')).toHaveLength(0); // a member on an old build: nothing
    rig.step({ type: 'members', readLevel: 2, ran: [] });
    rig.advance(10);
    rig.advance(10);
    expect(rig.pendingOf('clusterLevel').map((p) => p.command)).toEqual([{ type: 'clusterLevel', timeMs: rig.nowMs - 10, level: 2 }]);
    rig.commitAll();
    expect(rig.machine.clusterLevel).toBe(2);
    rig.advance(10);
    expect(rig.proposed.filter((p) => p.command.type === 'clusterLevel')).toHaveLength(1); // done: no more
  });

  it('proposes again after a failed attempt, not before', () => {
    const rig = new LeaderRig().ready();
    rig.step({ type: 'members', readLevel: 2, ran: [] });
    rig.advance(10);
    rig.advance(10);
    expect(rig.pendingOf('clusterLevel')).toHaveLength(1);
    // A proposal that failed (not one that timed out with its entry in the log: that one is still in flight).
    rig.failProposal('dropped', rig.pendingOf('clusterLevel')[0]!.proposalId);
    rig.advance(10);
    expect(rig.pendingOf('clusterLevel')).toHaveLength(1);
    expect(rig.proposed.filter((p) => p.command.type === 'clusterLevel')).toHaveLength(2);
  });

  it('nothing before its termStart applied', () => {
    const rig = new LeaderRig().elect();
    rig.step({ type: 'members', readLevel: 2, ran: [] });
    rig.advance(10);
    expect(rig.pendingOf('clusterLevel')).toHaveLength(0);
  });

  it('at level 2, a leader whose clock is behind log time expires a lease when its ttl has passed on its clock', () => {
    const first = new LeaderRig();
    first.nowMs = 100_000;
    first.ready();
    first.step({ type: 'members', readLevel: 2, ran: [] });
    first.advance(10);
    first.commitAll();
    expect(first.machine.clusterLevel).toBe(2);
    // The next leader (another node: its own module and clock) is 5 s behind log time.
    const rig = new LeaderRig();
    rig.machine = first.machine;
    rig.term = first.term;
    rig.nowMs = first.nowMs - 5000;
    rig.ready(); // elected, its termStart applied
    expect(rig.machine.logNowMs).toBe(first.nowMs);
    rig.acquire('k', 'a', { ttlMs: 1000 });
    rig.commitAll();
    rig.advance(990);
    expect(rig.pendingOf('expire')).toHaveLength(0);
    rig.advance(10);
    expect(rig.pendingOf('expire')).toHaveLength(1);
    rig.commitAll();
    expect(rig.machine.leaseCount).toBe(0);
  });

  it('records each member the Raft progress shows has run, once, and only from level 2 on', () => {
    const rig = new LeaderRig().ready();
    rig.step({ type: 'members', readLevel: 1, ran: ['n1', 'n2'] });
    rig.advance(10);
    expect(rig.pendingOf('memberRan')).toHaveLength(0); // level 1: the entry would change nothing
    rig.step({ type: 'members', readLevel: 2, ran: ['n1', 'n2'] });
    rig.advance(10);
    rig.commitAll(); // clusterLevel 2
    rig.advance(10);
    rig.advance(10);
    expect(rig.pendingOf('memberRan').map((p) => (p.command as { memberId: string }).memberId)).toEqual(['n1', 'n2']);
    rig.commitAll();
    expect([rig.machine.hasRun('n1'), rig.machine.hasRun('n2'), rig.machine.hasRun('n3')]).toEqual([true, true, false]);
    rig.step({ type: 'members', readLevel: 2, ran: ['n1', 'n2', 'n3'] });
    rig.advance(10);
    expect(rig.pendingOf('memberRan').map((p) => (p.command as { memberId: string }).memberId)).toEqual(['n3']); // only the new one
    rig.failProposal('dropped', rig.pendingOf('memberRan')[0]!.proposalId);
    rig.advance(10);
    expect(rig.pendingOf('memberRan')).toHaveLength(1); // proposed again after the failure
  });
});

describe('lock leader: the revoke it proposes follows the cluster level (level 5)', () => {
  const revoke = (rig: LeaderRig, callId: number, requestId: string) =>
    rig.step({
      type: 'request',
      callId,
      request: { op: 'revoke', req: { key: 'k', token: 0n, reason: 'stuck', requestId, owner: 'ops' } },
      timeoutMs: 5000,
    });

  it('below level 5 the older entry (no request id, every member reads it); from 5 the one the machine deduplicates', () => {
    const rig = new LeaderRig().ready();
    const a = rig.hold('k', 'a');
    revoke(rig, 900, 'rv-1');
    expect(rig.pendingOf('revoke').map((p) => p.command)).toEqual([{ type: 'revoke', timeMs: rig.nowMs, key: 'k', token: 0n }]);
    rig.commitAll();
    expect(rig.answers.get(900)).toMatchObject({ type: 'revoke', revoked: [a.token] });

    rig.step({ type: 'members', readLevel: 5, ran: [] });
    rig.advance(10);
    rig.commitAll();
    expect(rig.machine.clusterLevel).toBe(5);
    const b = rig.hold('k', 'b');
    revoke(rig, 901, 'rv-2');
    expect(rig.pendingOf('revoke').map((p) => p.command)).toEqual([
      { type: 'revoke', timeMs: rig.nowMs, key: 'k', token: 0n, owner: 'ops', requestId: 'rv-2' },
    ]);
    rig.commitAll();
    expect(rig.answers.get(901)).toMatchObject({ type: 'revoke', replayed: false, revoked: [b.token] });
    // The retry, after a hold was granted in between: its first outcome, and the new hold stands.
    const c = rig.hold('k', 'c');
    revoke(rig, 902, 'rv-2');
    rig.commitAll();
    expect(rig.answers.get(902)).toMatchObject({ type: 'revoke', replayed: true, revoked: [b.token] });
    expect(rig.machine.get('k')).toMatchObject({ held: true, token: c.token });
  });
});
