// The lock leader over the replicated wait line (leader.ts, waiting-calls.ts): a blocking acquire is
// proposed like any other; if the log puts it in line, its call waits for the entry that decides it — a
// release or expire that hands the key over, a dequeue at its deadline — and is answered from that entry.
// Nothing is granted or refused from the leader's memory.
import { describe, expect, it } from 'vitest';
import type { CallId } from '../../../src/lock/leader/index.js';
import { BUILD_LEVEL } from '../../../src/lock/versions.js';
import { LeaderRig } from './leader-rig.js';

/** Releases the holder, then each waiter as it is granted, until every call in `waiters` is answered;
 *  returns the owners in grant order and checks the tokens grow. */
function grantOrder(rig: LeaderRig, key: string, holder: { owner: string; token: bigint }, waiters: Map<CallId, string>): string[] {
  const order: string[] = [];
  let current = holder;
  for (let round = 0; order.length < waiters.size; round++) {
    if (round > waiters.size) throw new Error(`stuck after ${order.join(',')}`);
    rig.release(key, current.owner, current.token);
    rig.commitAll();
    const granted = [...waiters].filter(([id, owner]) => rig.answers.has(id) && !order.includes(owner));
    expect(granted.length, `one grant per release (after ${order.join(',')})`).toBe(1);
    const [id, owner] = granted[0]!;
    const r = rig.acquired(id);
    expect(r.acquired).toBe(true);
    expect(r.token > current.token).toBe(true);
    order.push(owner);
    current = { owner, token: r.token };
  }
  return order;
}

describe('lock leader: the replicated wait line', () => {
  it('arrival order is grant order for many waiters arriving 1 ms apart while the log decides slower', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const waiters = new Map<CallId, string>();
    for (let i = 0; i < 50; i++) {
      rig.nowMs += 1;
      waiters.set(rig.acquire('k', `w${i}`, { waitMs: 60_000 }), `w${i}`);
      if (i % 7 === 3 && rig.pending.length > 0) rig.commit();
    }
    rig.commitAll();
    expect(rig.machine.waiterCountOf('k')).toBe(50);
    expect(grantOrder(rig, 'k', { owner: 'h', token: h.token }, waiters)).toEqual([...waiters.values()]);
  });

  it('a blocking acquire is proposed with its wait; the release entry itself grants it (one commit per hand-off)', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000 });
    expect(rig.pending.map((p) => p.command)).toMatchObject([{ type: 'acquire', owner: 'a', waitMs: 60_000 }]);
    rig.commitAll();
    expect(rig.answers.has(a)).toBe(false); // in line: no answer yet
    rig.release('k', 'h', h.token);
    expect(rig.pending).toHaveLength(1); // the release only: no grant proposal behind it
    rig.commit();
    const granted = rig.acquired(a);
    expect(granted).toMatchObject({ acquired: true, index: rig.machine.appliedIndex, token: BigInt(rig.machine.appliedIndex) });
    expect(rig.pending).toHaveLength(0);
  });

  it('at its wait deadline the leader proposes a dequeue; the call hears "not acquired" from that entry', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 300 });
    const b = rig.acquire('k', 'b', { waitMs: 60_000 });
    rig.commitAll();
    rig.advance(299);
    expect(rig.pendingOf('dequeue')).toHaveLength(0);
    rig.advance(1);
    expect(rig.pendingOf('dequeue').map((p) => p.command)).toMatchObject([{ type: 'dequeue', key: 'k', cause: 'deadline' }]);
    rig.advance(10); // still in flight: not proposed twice
    expect(rig.pendingOf('dequeue')).toHaveLength(1);
    expect(rig.answers.has(a)).toBe(false); // no refusal from memory: only the entry answers
    rig.commitAll();
    expect(rig.acquired(a)).toMatchObject({ acquired: false, holderOwner: 'h', index: rig.machine.appliedIndex });
    expect(rig.answers.has(b)).toBe(false);
    expect(rig.machine.waiterCountOf('k')).toBe(1);
  });

  it('a deposed leader that cannot commit never answers a waiter by itself', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 300 });
    rig.commitAll();
    rig.advance(1000); // its dequeue never commits
    expect(rig.answers.has(a)).toBe(false);
    expect(rig.failures.has(a)).toBe(false);
    rig.stepDown('n2');
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable', leaderId: 'n2' });
  });

  it('a cancelled waiting call gives up its place with a dequeue (cancel); the next waiter is granted', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000 });
    const b = rig.acquire('k', 'b', { waitMs: 60_000 });
    rig.commitAll();
    rig.cancel(a);
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable' });
    expect(rig.pendingOf('dequeue').map((p) => p.command)).toMatchObject([{ type: 'dequeue', cause: 'cancel' }]);
    rig.commitAll();
    expect(rig.machine.waiterCountOf('k')).toBe(1);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(b).acquired).toBe(true);
  });

  it('a call cancelled while its acquire is in flight: if the log puts it in line, its place is given up', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000 });
    rig.cancel(a);
    rig.commit(); // the acquire: in line
    expect(rig.pendingOf('dequeue').map((p) => p.command)).toMatchObject([{ type: 'dequeue', cause: 'cancel' }]);
    rig.commitAll();
    expect(rig.machine.waiterCount).toBe(0);
  });

  it('two calls of one request share its place: one entry, both answered; cancelling one keeps the other', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const first = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'r1' });
    rig.commitAll();
    const second = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'r1' });
    expect(rig.pending).toHaveLength(0); // re-attached from the applied line, no new entry
    rig.cancel(first);
    expect(rig.pendingOf('dequeue')).toHaveLength(0);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(second)).toMatchObject({ acquired: true });
  });

  it('waiters keep their place across a leader change: a retry at the new leader re-attaches ahead of newcomers', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra' });
    rig.commitAll();
    rig.stepDown('n2');
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable', leaderId: 'n2' });
    rig.ready(); // this node leads again in a later term, with the same applied state
    const b = rig.acquire('k', 'b', { waitMs: 60_000, requestId: 'rb' });
    rig.commitAll();
    const retry = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra' });
    expect(rig.pending).toHaveLength(0);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(retry).acquired).toBe(true);
    expect(rig.answers.has(b)).toBe(false);
  });

  it("a decision applied before the waiting acquire's outcome arrived (one batch) still answers it", () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000 });
    rig.release('k', 'h', h.token);
    rig.commitBatch(); // applied: acquire (in line), release (grants a); then both outcomes
    expect(rig.acquired(a)).toMatchObject({ acquired: true });
  });

  it('a wait_ms 0 newcomer behind a line is refused by the log (no barging), with the holder named', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    rig.acquire('k', 'a', { waitMs: 60_000 });
    rig.commitAll();
    const c = rig.acquire('k', 'c');
    rig.commitAll();
    expect(rig.acquired(c)).toMatchObject({ acquired: false, holderOwner: 'h' });
    expect(rig.acquired(c).index).toBeGreaterThan(0);
  });

  it('a retry of a request already decided gets that decision back from the log', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 100, requestId: 'ra' });
    rig.commitAll();
    rig.advance(100);
    rig.commitAll();
    expect(rig.acquired(a).acquired).toBe(false);
    const retry = rig.acquire('k', 'a', { waitMs: 100, requestId: 'ra' });
    rig.commitAll();
    expect(rig.acquired(retry)).toMatchObject({ acquired: false, replayed: true });
    expect(rig.machine.waiterCount).toBe(0);
  });

  it('a retry whose remaining wait ran down to 0 still re-attaches: never "not acquired" while in line', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra' });
    const retry = rig.acquire('k', 'a', { waitMs: 0, requestId: 'ra' }); // before the first one applied
    rig.commitAll();
    expect(rig.answers.has(retry)).toBe(false);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(retry).acquired).toBe(true);
  });

  it('a lock-delay: the leader proposes undelay once it passed, and the waiter is answered from that entry', () => {
    const rig = new LeaderRig().ready();
    const h = rig.acquire('k', 'h', { ttlMs: 500, lockDelayMs: 2000 });
    rig.commitAll();
    expect(rig.acquired(h).acquired).toBe(true);
    const w = rig.acquire('k', 'w', { waitMs: 60_000 });
    rig.commitAll();
    rig.advance(500); // the lease ran out: expire, into the delay
    rig.commitAll();
    expect(rig.machine.delayLeftMs('k')).toBe(2000);
    rig.advance(1999);
    expect(rig.pendingOf('undelay')).toHaveLength(0);
    expect(rig.answers.has(w)).toBe(false);
    rig.advance(1);
    expect(rig.pendingOf('undelay').map((p) => p.command)).toEqual([{ type: 'undelay', timeMs: rig.nowMs, key: 'k' }]);
    rig.advance(5); // in flight: not proposed twice
    expect(rig.pendingOf('undelay')).toHaveLength(1);
    rig.commitAll();
    expect(rig.acquired(w)).toMatchObject({ acquired: true, index: rig.machine.appliedIndex });
  });

  it('on close every waiting call fails UNAVAILABLE', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000 });
    rig.commitAll();
    rig.step({ type: 'close' });
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable' });
    expect(rig.leader.waitingCallCount).toBe(0);
  });
});

// A request id names one request (cluster level 6, dedup.ts `acquireTerms`): a call under the same request id
// asking other terms is no retry of the waiter, so the leader does not re-attach it to that place (it would
// get the waiter's grant, under the other session); its entry is refused REQUEST_ID_REUSED by the machine.
describe('lock leader: a place in line re-attaches only the same terms (level 6)', () => {
  function atLevel6(): LeaderRig {
    const rig = new LeaderRig().ready();
    rig.step({ type: 'members', readLevel: BUILD_LEVEL, ran: [] });
    rig.advance(10).advance(10);
    rig.commitAll();
    expect(rig.machine.clusterLevel).toBe(BUILD_LEVEL);
    return rig;
  }

  function openSession(rig: LeaderRig, owner: string): number {
    const call = rig.session({ op: 'openSession', owner, ttlMs: 60_000 });
    rig.commitAll();
    const answer = rig.answers.get(call);
    if (answer === undefined || !('sessionId' in answer) || !('ttlMs' in answer)) throw new Error(`session not opened`);
    return Number(answer.sessionId);
  }

  it('a call under another session is proposed and refused as a whole; the waiter keeps its place and gets the grant', () => {
    const rig = atLevel6();
    const s1 = openSession(rig, 'a');
    const s2 = openSession(rig, 'a');
    const h = rig.hold('k', 'h');
    const first = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'r1', sessionId: s1 });
    rig.commitAll();
    const other = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'r1', sessionId: s2 });
    expect(rig.pending.map((p) => p.command)).toMatchObject([{ type: 'acquire', requestId: 'r1', sessionId: s2 }]);
    rig.commitAll();
    expect(rig.failures.get(other)).toMatchObject({
      kind: 'rejected',
      message: expect.stringContaining(`waits in line for key "k", with session ${s1}`),
    });
    const same = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'r1', sessionId: s1 });
    expect(rig.pending).toHaveLength(0); // the same request: re-attached, no entry
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(first)).toMatchObject({ acquired: true });
    expect(rig.acquired(same)).toMatchObject({ acquired: true });
  });
});
