// Lock leader, retries are safe (README "Retries are safe"): a repeated request_id gets its first outcome
// back — grants from the replicated dedup table before any queue fast path, and refusals the leader
// decided itself (no log entry) from its own bounded memory, kept on the injected clock.
import { describe, expect, it } from 'vitest';
import { LeaderRig } from './leader-rig.js';

/** 'h' holds k; x-1's acquire waits, its deadline passes while its first acquire is in flight, and the log
 *  refuses it (answered). Returns the next leader: the same replicated machine, a fresh lock leader. */
function nextLeaderAfterLogRefusal(): { rig: LeaderRig; h: ReturnType<LeaderRig['hold']> } {
  const old = new LeaderRig().ready();
  const h = old.hold('k', 'h');
  const a = old.acquire('k', 'x', { waitMs: 100, requestId: 'x-1' });
  old.advance(100);
  old.commitAll();
  expect(old.acquired(a)).toMatchObject({ acquired: false, holderOwner: 'h' });
  const rig = new LeaderRig();
  rig.machine = old.machine;
  rig.nowMs = old.nowMs;
  rig.term = old.term;
  rig.ready();
  return { rig, h };
}

describe('lock leader: dedup before any fast path', () => {
  it('a refusal decided at the leader is remembered: a late duplicate is answered refused, not granted', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    rig.acquire('k', 'w', { waitMs: 5000 });
    rig.commitAll();
    const first = rig.acquire('k', 'x', { requestId: 'x-1' }); // refused behind w, no log entry
    expect(rig.acquired(first)).toMatchObject({ acquired: false });
    rig.release('k', 'h', h.token);
    rig.commitAll(); // w granted
    rig.release('k', 'w', rig.machine.get('k').token);
    rig.commitAll(); // the key is free now
    const proposedBefore = rig.proposed.length;
    const late = rig.acquire('k', 'x', { requestId: 'x-1' }); // the same request, delivered late
    expect(rig.acquired(late)).toMatchObject({ acquired: false, replayed: true });
    expect(rig.proposed.length).toBe(proposedBefore);
    expect(rig.machine.get('k').held).toBe(false);
  });

  it('a refusal at a wait deadline is remembered: a late duplicate with wait_ms is answered refused, not queued', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const first = rig.acquire('k', 'x', { waitMs: 200, requestId: 'x-1' });
    rig.commitAll();
    rig.advance(200);
    expect(rig.acquired(first).acquired).toBe(false);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    const late = rig.acquire('k', 'x', { waitMs: 200, requestId: 'x-1' });
    expect(rig.acquired(late)).toMatchObject({ acquired: false, replayed: true });
    expect(rig.leader.waiterCount).toBe(0);
    expect(rig.machine.get('k').held).toBe(false);
  });

  it('the remembered-refusal clock is the injected clock (forgotten after maxAge of injected time)', () => {
    const rig = new LeaderRig({ refusalMemoryMs: 1000 }).ready();
    rig.hold('k', 'h');
    rig.acquire('k', 'w', { waitMs: 60_000 });
    rig.commitAll();
    expect(rig.acquired(rig.acquire('k', 'x', { requestId: 'x-1' })).replayed).toBe(false);
    rig.nowMs += 1000; // no real time passes in this test: only the injected clock moves
    expect(rig.acquired(rig.acquire('k', 'x', { requestId: 'x-1' })).replayed).toBe(true); // still remembered
    rig.nowMs += 1;
    expect(rig.acquired(rig.acquire('k', 'x', { requestId: 'x-1' })).replayed).toBe(false); // forgotten: judged afresh
  });

  it('the retry of a granted waiter (wait_ms 0, others waiting) gets its grant back, not "held by itself"', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 5000, requestId: 'a-1' });
    rig.acquire('k', 'w', { waitMs: 5000 });
    rig.commitAll();
    rig.release('k', 'h', h.token);
    rig.commitAll();
    const granted = rig.acquired(a);
    expect(granted.acquired).toBe(true);
    const retry = rig.acquire('k', 'a', { requestId: 'a-1' }); // w still waits
    // (It now shares its first call's acquire in flight, so it gets that very result rather than a replay.)
    expect(rig.acquired(retry)).toMatchObject({ acquired: true, token: granted.token });
  });

  it('a refusal the log decided for a waiter at its deadline is remembered too', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 100, requestId: 'a-1' });
    rig.advance(100); // deadline passes while a's first acquire is in flight
    rig.commitAll(); // refused by the log: a is answered with that refusal
    expect(rig.acquired(a)).toMatchObject({ acquired: false, holderOwner: 'h' });
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(rig.acquire('k', 'a', { waitMs: 100, requestId: 'a-1' }))).toMatchObject({ acquired: false, replayed: true });
  });

  // Found by the lock simulation (seed 12): a forwarded call and its duplicate both queued; the first was
  // refused at its deadline, the second was then granted — an orphan lock its client was told it did not get.
  it('a duplicate of a waiting request joins it: one place in the queue, one answer for every call', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const first = rig.acquire('k', 'x', { waitMs: 200, requestId: 'x-1' });
    rig.commitAll();
    rig.advance(5);
    const dup = rig.acquire('k', 'x', { waitMs: 200, requestId: 'x-1' }); // the same request, a little later
    expect(rig.leader.waiterCount).toBe(1);
    rig.advance(195); // the request's wait (counted from its first call) is over
    expect(rig.acquired(first)).toMatchObject({ acquired: false });
    expect(rig.acquired(dup)).toMatchObject({ acquired: false });
    expect(rig.leader.waiterCount).toBe(0);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.machine.get('k').held).toBe(false); // nobody is granted a lock nobody waits for
  });

  it('a duplicate that joined a waiter gets the grant too; cancelling one call leaves the other waiting', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const first = rig.acquire('k', 'x', { waitMs: 5000, requestId: 'x-1' });
    rig.commitAll();
    const retry = rig.acquire('k', 'x', { waitMs: 5000, requestId: 'x-1' });
    rig.cancel(first); // the first call's client went away; its retry still waits
    expect(rig.leader.waiterCount).toBe(1);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    const got = rig.acquired(retry);
    expect(got).toMatchObject({ acquired: true });
    expect(rig.machine.get('k')).toMatchObject({ held: true, owner: 'x', token: got.token });
  });

  it('a wait_ms 0 retry parked while its own first acquire is in flight gets that grant back, not a refusal', () => {
    const rig = new LeaderRig().ready();
    const first = rig.acquire('k', 'x', { requestId: 'x-1' }); // wait_ms 0: a plain acquire, in flight
    rig.acquire('k', 'w', { waitMs: 5000 }); // a waiter behind it, its own acquire in flight too
    const retry = rig.acquire('k', 'x', { requestId: 'x-1' }); // parked behind the waiter's decision
    rig.commitAll();
    const granted = rig.acquired(first);
    expect(granted).toMatchObject({ acquired: true });
    // (It now shares its first call's acquire in flight, so it gets that very result rather than a replay.)
    expect(rig.acquired(retry)).toMatchObject({ acquired: true, token: granted.token });
  });

  // Issue 22: the test above never reaches the parked-replay rule (decideParked, seed 377) — its retry joins
  // the first call's acquire in flight before the park branch. Here the first acquire timed out (the rig
  // reports the timeout while its entry stays in the log), so nothing is in flight to join: the retry is
  // parked behind a waiter, the timed-out entry commits after all, and the parked call must get that grant.
  // Three lookups now guard it (decideParked's replay, refuseHere's grant check, the refusal barrier's grant
  // check): this test fails only with all three removed, which is how it was checked.
  it('a wait_ms 0 retry parked after its first acquire timed out gets the grant that entry made, not a refusal', () => {
    const rig = new LeaderRig().ready();
    const first = rig.acquire('k', 'x', { requestId: 'x-1' }); // wait_ms 0: a plain acquire
    rig.reportTimeout(rig.pending[0]!.proposalId); // its caller hears "unknown"; the entry may still commit
    expect(rig.failures.has(first)).toBe(true);
    rig.acquire('k', 'w', { waitMs: 5000 }); // a waiter, head of the queue, its acquire in flight
    const retry = rig.acquire('k', 'x', { requestId: 'x-1' }); // parked behind the waiter's decision
    expect(rig.answers.has(retry)).toBe(false);
    rig.commitAll(); // x's timed-out acquire commits first: x holds k; w's acquire is refused and w waits
    expect(rig.machine.get('k')).toMatchObject({ held: true, owner: 'x' });
    expect(rig.acquired(retry)).toMatchObject({ acquired: true, token: rig.machine.get('k').token });
  });

  // Found by the lock simulation (seed 102359): the retry was refused while its own first acquire, still in
  // flight, then granted the lock — a grant its client had been told it did not get.
  it('a duplicate of a plain acquire still in flight gets that acquire\'s outcome, not a judgement of its own', () => {
    const rig = new LeaderRig().ready();
    const first = rig.acquire('k', 'x', { requestId: 'x-1' }); // wait_ms 0, in flight
    const dup = rig.acquire('k', 'x', { requestId: 'x-1', waitMs: 5000 }); // its retry, before it decided
    expect(rig.pendingOf('acquire').length).toBe(1); // one request, one acquire: the duplicate proposes nothing
    expect(rig.leader.waiterCount).toBe(0); // and takes no place in a queue
    rig.commitAll();
    const got = rig.acquired(first);
    expect(got.acquired).toBe(true);
    expect(rig.acquired(dup)).toMatchObject({ acquired: true, token: got.token });
  });

  // Found by the lock simulation (seed 100183): the first acquire timed out with its entry still in the log;
  // the retry waited, reached its deadline and was refused — then the old entry committed and granted the
  // request: a lock its client had been told it did not get.
  it('while an acquire of the request timed out with its entry unapplied, the leader does not refuse the request on its own', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    const first = rig.acquire('k', 'x', { requestId: 'x-1', waitMs: 100 }); // head, its acquire in flight
    const entry = rig.pendingOf('acquire')[0]!;
    rig.failProposal('timeout', entry.proposalId, 50); // outcome unknown: the entry sits at index 50, unapplied
    expect(rig.failures.get(first)?.kind).toBe('unavailable');
    rig.acquire('k', 'w', { waitMs: 5000 }); // a new head, refused by the log: it keeps waiting
    rig.commitAll();
    const retry = rig.acquire('k', 'x', { requestId: 'x-1', waitMs: 100 }); // queued behind w
    rig.advance(100); // the retry's wait ends while that entry is still undecided
    expect(() => rig.acquired(retry)).toThrow(/no acquire answer/);
    expect(rig.failures.get(retry)).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/may still commit/) });
  });

  // Found by the lock simulation (seed 100116): the grant offered to a waiter timed out here but committed;
  // the request's retry, queued behind another waiter, was then refused "held by" the very grant.
  it('a refusal the leader would decide itself defers to the log: a request the log granted meanwhile gets that grant', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    rig.acquire('k', 'x', { requestId: 'x-1', waitMs: 100 }); // head; its first acquire is refused by the log
    rig.commitAll();
    rig.release('k', 'h', h.token);
    rig.commit(); // the release applies: the grant is offered to x-1
    const offer = rig.pendingOf('acquire')[0]!;
    rig.reportTimeout(offer.proposalId); // the driver gave up waiting; the entry stays in the log
    rig.acquire('k', 'w', { waitMs: 5000 }); // a new head behind the pending grant
    const retry = rig.acquire('k', 'x', { requestId: 'x-1', waitMs: 50 }); // queued behind w
    rig.commitAll(); // the grant to x-1 commits after all; w is refused by the log and keeps waiting
    expect(rig.machine.get('k')).toMatchObject({ held: true, owner: 'x' });
    rig.advance(50); // the retry's wait ends behind w
    expect(rig.acquired(retry)).toMatchObject({ acquired: true, token: rig.machine.get('k').token, replayed: true });
  });

  // Found by the lock simulation (seed 1492): a plain acquire was refused by the log and answered; a late
  // duplicate of the same request's earlier waiting call then queued, its acquire replayed the refusal, it
  // stayed head, and the `queued` offer on the next expiry granted it — an orphan lock at the very leader
  // that had answered "not acquired".
  it('a request the log already refused is answered with that refusal, not queued and later granted', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const first = rig.acquire('k', 'x', { requestId: 'x-1' }); // wait_ms 0: a plain acquire, refused by the log
    rig.commitAll();
    expect(rig.acquired(first)).toMatchObject({ acquired: false, holderOwner: 'h' });
    const late = rig.acquire('k', 'x', { requestId: 'x-1', waitMs: 5000 }); // a late duplicate that waits
    rig.commitAll(); // its acquire replays the log's refusal
    expect(rig.acquired(late)).toMatchObject({ acquired: false, replayed: true });
    expect(rig.leader.waiterCount).toBe(0);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.machine.get('k').held).toBe(false); // nobody is granted a lock its client was told it did not get
    expect(rig.pendingOf('acquire').length).toBe(0);
  });

  // Found by the lock simulation (seed 2711): the log refused a waiter at its deadline under the term-1
  // leader; a late duplicate reached the term-2 leader (no memory of its own), queued, and was granted.
  it('a refusal decided by the log binds a new leader too: a late duplicate there is not queued and granted', () => {
    const { rig, h } = nextLeaderAfterLogRefusal();
    const late = rig.acquire('k', 'x', { waitMs: 5000, requestId: 'x-1' });
    rig.commitAll();
    expect(rig.acquired(late)).toMatchObject({ acquired: false, replayed: true });
    expect(rig.leader.waiterCount).toBe(0);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.machine.get('k').held).toBe(false);
  });

  // Found by the lock simulation (seed 763, with the failover work's new network draws): as above, but at
  // the new leader someone else already waits for the key, so the late duplicate queued behind them with
  // no acquire of its own to replay the refusal — and was granted later with a `queued` acquire.
  it('a late duplicate of a request the log refused is answered with that refusal even when others wait', () => {
    const { rig, h } = nextLeaderAfterLogRefusal();
    const w = rig.acquire('k', 'w', { waitMs: 5000, requestId: 'w-1' }); // head of the queue at the new leader
    rig.commitAll();
    const late = rig.acquire('k', 'x', { waitMs: 5000, requestId: 'x-1' }); // the late duplicate, behind w
    expect(rig.acquired(late)).toMatchObject({ acquired: false, replayed: true });
    expect(rig.leader.waiterCount).toBe(1); // only w waits
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(w)).toMatchObject({ acquired: true });
    rig.release('k', 'w', rig.machine.get('k').token);
    rig.commitAll();
    expect(rig.machine.get('k').held).toBe(false); // x-1 was never granted
  });

  it('a waiter refused afresh while it waits still keeps its place and is granted when the lock frees', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'x', { waitMs: 5000, requestId: 'x-1' });
    rig.commitAll(); // refused by the log (held), not replayed: it waits
    expect(rig.leader.waiterCount).toBe(1);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(a)).toMatchObject({ acquired: true });
  });
});
