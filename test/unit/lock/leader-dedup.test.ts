// Lock leader, retries are safe (README "Retries are safe"): a repeated request_id gets its first outcome
// back — grants from the replicated dedup table before any queue fast path, and refusals the leader
// decided itself (no log entry) from its own bounded memory, kept on the injected clock.
import { describe, expect, it } from 'vitest';
import { LeaderRig } from './leader-rig.js';

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
    expect(rig.acquired(retry)).toMatchObject({ acquired: true, token: granted.token, replayed: true });
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
    expect(rig.acquired(retry)).toMatchObject({ acquired: true, token: granted.token, replayed: true });
  });
});
