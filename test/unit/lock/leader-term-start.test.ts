// Lock leader, term start before stamping: a new leader's termStart entry carries every live lease over
// to its term (LEASES.md); a client command stamped before that applied could be judged against leases the
// term has not carried over. Calls arriving before then wait for it, bounded, then fail UNAVAILABLE.
import { describe, expect, it } from 'vitest';
import { LeaderRig } from './leader-rig.js';

describe('lock leader: term start before stamping', () => {
  it('a leader stamps no client command before its termStart applied', () => {
    const rig = new LeaderRig().elect();
    expect(rig.pending.map((p) => p.command.type)).toEqual(['termStart']);
    const a = rig.acquire('k', 'a');
    rig.release('k', 'a', 5n);
    expect(rig.pending.map((p) => p.command.type)).toEqual(['termStart']); // nothing stamped yet
    rig.nowMs += 10;
    rig.commit(); // the termStart applies
    expect(rig.pending.map((p) => p.command.type)).toEqual(['acquire', 'release']);
    rig.commitAll();
    expect(rig.acquired(a).acquired).toBe(true);
  });

  it('calls held for the term start are served in arrival order once it applies', () => {
    const rig = new LeaderRig().elect();
    const ids = ['a', 'b', 'c'].map((o) => rig.acquire('k', o, { waitMs: 1000 }));
    rig.commitAll();
    expect(rig.acquired(ids[0]!).acquired).toBe(true);
    expect(rig.answers.has(ids[1]!) || rig.answers.has(ids[2]!)).toBe(false); // b and c wait, in order
    const first = rig.acquired(ids[0]!);
    rig.release('k', 'a', first.token);
    rig.commitAll();
    expect(rig.acquired(ids[1]!).acquired).toBe(true); // b before c
    expect(rig.answers.has(ids[2]!)).toBe(false);
  });

  it('a call waits for the term start at most termStartWaitMs (and never past its own timeout), then fails UNAVAILABLE', () => {
    const rig = new LeaderRig({ termStartWaitMs: 2000 }).elect();
    const long = rig.acquire('k', 'a', { timeoutMs: 5000 });
    const short = rig.acquire('k', 'b', { timeoutMs: 300 });
    expect(rig.wakeups).toEqual([rig.nowMs + 2000, rig.nowMs + 300]);
    rig.advance(299);
    expect(rig.settled).toEqual([]);
    rig.advance(1);
    expect(rig.failures.get(short)).toMatchObject({ kind: 'unavailable', message: expect.stringContaining('still starting its term') });
    rig.advance(1700);
    expect(rig.failures.get(long)).toMatchObject({ kind: 'unavailable' });
    expect(rig.pending.map((p) => p.command.type)).toEqual(['termStart']); // neither was ever stamped
  });

  it('a failed termStart fails the held calls; the next call proposes it again', () => {
    const rig = new LeaderRig().elect();
    const a = rig.acquire('k', 'a');
    rig.failProposal('timeout');
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable' });
    const b = rig.acquire('k', 'b');
    expect(rig.pending.map((p) => p.command.type)).toEqual(['termStart']);
    rig.commitAll();
    expect(rig.acquired(b).acquired).toBe(true);
  });

  it('a termStart applied in an earlier term does not make the leader of a later term ready', () => {
    const rig = new LeaderRig().elect(2);
    rig.step({ type: 'role', role: 'leader', term: 3, leaderId: 'n1' }); // re-elected before it applied
    const [old, current] = rig.pending;
    rig.term = 2; // the term-2 entry applies
    rig.commit(old!.proposalId);
    expect(rig.leader.isReady).toBe(false);
    rig.term = 3;
    rig.commit(current!.proposalId);
    expect(rig.leader.isReady).toBe(true);
  });

  it('a follower refuses calls at once, naming the leader so the server can forward there', () => {
    const rig = new LeaderRig().stepDown('n3');
    const a = rig.acquire('k', 'a');
    expect(rig.failures.get(a)).toEqual({ kind: 'unavailable', message: expect.stringContaining('n3'), leaderId: 'n3' });
    expect(rig.pending).toEqual([]);
  });

  it('calls held for the term start fail with the new leader named when this node steps down', () => {
    const rig = new LeaderRig().elect();
    const a = rig.acquire('k', 'a');
    rig.stepDown('n2');
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable', leaderId: 'n2' });
  });

  it("a retry held for the term start keeps its request's place in line, also when the first call is cancelled", () => {
    const rig = new LeaderRig().elect(); // leader, termStart not applied yet: calls are held
    const first = rig.acquire('k', 'x', { requestId: 'x-1', waitMs: 5000 });
    const other = rig.acquire('k', 'y', { requestId: 'y-1', waitMs: 5000 });
    const retry = rig.acquire('k', 'x', { requestId: 'x-1', waitMs: 5000 });
    rig.cancel(first);
    rig.commitAll(); // the termStart applies; held calls are served in line, and x's acquire goes first
    expect(rig.acquired(retry)).toMatchObject({ acquired: true });
    expect(() => rig.acquired(other)).toThrow(/no acquire answer/); // y still waits behind x
  });
});
