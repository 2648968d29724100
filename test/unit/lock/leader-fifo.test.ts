// Lock leader, FIFO wait queues and the grant protocol (README "Waiting for a lock"): arrival order at
// the leader is grant order; exactly the head is offered the lock, one acquire per key in flight; a
// newcomer never barges; deadlines, cancels and leader changes take waiters out.
import { describe, expect, it } from 'vitest';
import type { CallId } from '../../../src/lock/leader/index.js';
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

describe('lock leader: FIFO waiters', () => {
  it('arrival order is grant order: a waiter arriving while the first acquire is in flight is granted after it', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const waiters = new Map<CallId, string>();
    waiters.set(rig.acquire('k', 'a', { waitMs: 60_000 }), 'a'); // finds no queue: its acquire goes to the log
    waiters.set(rig.acquire('k', 'b', { waitMs: 60_000 }), 'b'); // arrives while a's acquire is in flight
    rig.commit(); // a refused (h holds): a waits
    waiters.set(rig.acquire('k', 'c', { waitMs: 60_000 }), 'c');
    rig.commitAll();
    expect(grantOrder(rig, 'k', { owner: 'h', token: h.token }, waiters)).toEqual(['a', 'b', 'c']);
  });

  it('arrival order is grant order for many waiters arriving 1 ms apart while the first decisions are in flight', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const waiters = new Map<CallId, string>();
    for (let i = 0; i < 50; i++) {
      rig.nowMs += 1;
      waiters.set(rig.acquire('k', `w${i}`, { waitMs: 60_000 }), `w${i}`);
      if (i % 7 === 3 && rig.pending.length > 0) rig.commit(); // the log decides some, slower than arrivals
    }
    rig.commitAll();
    expect(grantOrder(rig, 'k', { owner: 'h', token: h.token }, waiters)).toEqual([...waiters.values()]);
  });

  it('a waiter arriving while only the first acquire is in flight does not propose one of its own', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    rig.acquire('k', 'a', { waitMs: 1000 });
    rig.acquire('k', 'b', { waitMs: 1000 });
    expect(rig.pendingOf('acquire').map((p) => p.command.type === 'acquire' && p.command.owner)).toEqual(['a']);
  });

  it('a release wakes exactly the head waiter: one acquire per key in flight, offered as `queued`', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    rig.acquire('k', 'a', { waitMs: 1000 });
    rig.acquire('k', 'b', { waitMs: 1000 });
    rig.commitAll();
    rig.release('k', 'h', h.token);
    rig.commit(); // the release applies
    const offers = rig.pendingOf('acquire');
    expect(offers).toHaveLength(1);
    expect(offers[0]!.command).toMatchObject({ owner: 'a', queued: true });
  });

  it('a wait_ms 0 request arriving while others wait is refused at once, without a proposal (no barging)', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    rig.acquire('k', 'a', { waitMs: 1000 });
    rig.commitAll();
    const before = rig.proposed.length;
    const x = rig.acquire('k', 'x');
    expect(rig.acquired(x)).toMatchObject({ acquired: false, holderOwner: 'h' });
    expect(rig.proposed.length).toBe(before);
  });

  it('a wait_ms 0 request arriving while the head acquire is in flight is refused once it decided, naming the holder the log knows', () => {
    const rig = new LeaderRig().ready();
    rig.acquire('k', 'a', { waitMs: 1000 }); // the key is free: a's acquire will win
    const x = rig.acquire('k', 'x');
    expect(rig.answers.has(x)).toBe(false);
    rig.commitAll();
    // a was granted and the queue emptied, so x was judged like any newcomer: the log refused it.
    expect(rig.acquired(x)).toMatchObject({ acquired: false, holderOwner: 'a' });
    expect(rig.proposed.filter((p) => p.command.type === 'acquire').map((p) => p.command.type === 'acquire' && p.command.owner)).toEqual(['a', 'x']);
  });

  it('a waiter whose deadline passes leaves with a refusal naming the holder; the next one keeps waiting', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 300 });
    const b = rig.acquire('k', 'b', { waitMs: 5000 });
    rig.commitAll();
    expect(rig.wakeups).toContain(rig.nowMs + 300);
    rig.advance(300);
    expect(rig.acquired(a)).toMatchObject({ acquired: false, holderOwner: 'h' });
    expect(rig.answers.has(b)).toBe(false);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(b).acquired).toBe(true);
  });

  it('a granted waiter whose deadline passed meanwhile still gets the grant (it is real)', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 300 });
    rig.commitAll();
    rig.release('k', 'h', h.token);
    rig.commit(); // release applied; a's queued acquire is in flight
    rig.advance(1000); // a's deadline passes meanwhile
    expect(rig.answers.has(a)).toBe(false);
    rig.commitAll();
    expect(rig.acquired(a)).toMatchObject({ acquired: true });
    expect(rig.machine.get('k')).toMatchObject({ held: true, owner: 'a' });
  });

  it('a cancelled waiter leaves the queue and the next is offered', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 5000 });
    const b = rig.acquire('k', 'b', { waitMs: 5000 });
    rig.commitAll();
    rig.cancel(a);
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable', message: 'the caller went away' });
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(b).acquired).toBe(true);
  });

  it('a cancelled head whose acquire is in flight: its call fails at once, the next is offered once that acquire decided', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 5000 });
    const b = rig.acquire('k', 'b', { waitMs: 5000 });
    rig.commitAll();
    rig.release('k', 'h', h.token);
    rig.commit(); // a's queued acquire now in flight
    rig.cancel(a);
    expect(rig.failures.has(a)).toBe(true);
    expect(rig.pendingOf('acquire')).toHaveLength(1); // b is not offered while a's acquire is undecided
    rig.commit(); // a granted (nobody hears: its caller left); b waits for a's lease
    expect(rig.answers.has(b)).toBe(false);
    rig.release('k', 'a', rig.machine.get('k').token);
    rig.commitAll();
    expect(rig.acquired(b).acquired).toBe(true);
  });

  it('a release applied while the head acquire is in flight still wakes it (no lost wake-up)', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 5000 });
    rig.release('k', 'h', h.token); // proposed after a's acquire: applies right after its refusal
    rig.commitBatch(); // both apply in one batch: the release's applied event comes before a's outcome
    rig.commitAll();
    expect(rig.acquired(a).acquired).toBe(true);
  });

  it('waiters fail UNAVAILABLE on a leader change (they live in the leader only), without a leader to forward to', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 5000 });
    const b = rig.acquire('k', 'b', { waitMs: 5000 });
    rig.commitAll();
    rig.stepDown('n2');
    for (const id of [a, b]) {
      expect(rig.failures.get(id)).toEqual({ kind: 'unavailable', message: 'leadership changed while waiting for the lock; retry', leaderId: null });
    }
    expect(rig.leader.waiterCount).toBe(0);
  });

  it('waiters for other keys are untouched by a release', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    rig.hold('other', 'o');
    const a = rig.acquire('k', 'a', { waitMs: 5000 });
    const b = rig.acquire('other', 'b', { waitMs: 5000 });
    rig.commitAll();
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(a).acquired).toBe(true);
    expect(rig.answers.has(b)).toBe(false);
  });

  it('a wait_ms 0 call parked behind the head is decided when the head\'s acquire decides, not when a waiter behind it leaves', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    rig.release('k', 'h', rig.machine.get('k').token); // in flight: the key is about to be free
    const head = rig.acquire('k', 'a', { waitMs: 5000 }); // head, its acquire in flight
    const behind = rig.acquire('k', 'b', { waitMs: 5000 });
    const parked = rig.acquire('k', 'c'); // wait_ms 0 while the head's acquire is in flight: parked
    rig.cancel(behind);
    expect(() => rig.acquired(parked)).toThrow(/no acquire answer/); // still parked: the head has not decided
    rig.commitAll();
    expect(rig.acquired(head).acquired).toBe(true);
    expect(rig.acquired(parked)).toMatchObject({ acquired: false, holderOwner: 'a' });
  });
});

describe('lock leader: hand-off in one commit', () => {
  // Issue 8: a release that frees a key with waiters used to take two commits per hand-off — the
  // release, then (once it applied) the head's acquire. The head's acquire now goes right behind the
  // holder's release, in the same batch: one commit hands the lock over.
  it("the holder's release is followed by the head waiter's acquire in the same batch; one commit grants it", () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000 });
    rig.commitAll(); // a refused afresh: it waits as head
    expect(rig.answers.has(a)).toBe(false);
    rig.release('k', 'h', h.token);
    expect(rig.pending.map((p) => p.command.type)).toEqual(['release', 'acquire']);
    rig.commitBatch(2); // one Raft commit of both entries
    expect(rig.acquired(a)).toMatchObject({ acquired: true });
    expect(rig.acquired(a).token > h.token).toBe(true);
  });

  it('a release with a stale token speculates nothing, and a release that fails leaves the head waiting', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000 });
    rig.commitAll();
    rig.release('k', 'h', h.token - 1n); // not the current token: it will be refused
    expect(rig.pending.map((p) => p.command.type)).toEqual(['release']);
    rig.commitAll();
    expect(rig.answers.has(a)).toBe(false); // still waiting
    expect(rig.leader.waiterCount).toBe(1);
    // The real release hands it over.
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(a)).toMatchObject({ acquired: true });
  });
});
