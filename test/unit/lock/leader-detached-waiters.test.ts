// A waiter's place outlives its connection (SPEC; detached-waiters.ts): when the last call waiting for a
// waiter ends because its connection broke, a waiter under a session keeps its place while the session
// lives, one without a session for detachedWaiterGraceMs; a retry of the same request re-attaches to that
// place and is granted in its turn. An explicit cancel still gives the place up at once.
import { describe, expect, it } from 'vitest';
import type { CallId } from '../../../src/lock/leader/index.js';
import type { OpenSessionResult } from '../../../src/lock/types.js';
import { LeaderRig } from './leader-rig.js';

function open(rig: LeaderRig, owner: string, ttlMs = 60_000): number {
  const id = rig.session({ op: 'openSession', owner, ttlMs });
  rig.commitAll();
  return Number((rig.answers.get(id) as OpenSessionResult).sessionId);
}

/** Releases each holder in turn; returns the owners in grant order (each call in `calls` answered once). */
function grantOrder(rig: LeaderRig, key: string, holder: { owner: string; token: bigint }, calls: Map<CallId, string>): string[] {
  const order: string[] = [];
  let current = holder;
  for (let round = 0; order.length < calls.size; round++) {
    if (round > calls.size) throw new Error(`stuck after ${order.join(',')}`);
    rig.release(key, current.owner, current.token);
    rig.commitAll();
    const granted = [...calls].filter(([id, owner]) => rig.answers.has(id) && !order.includes(owner));
    expect(granted.length, `one grant per release (after ${order.join(',')})`).toBe(1);
    const [id, owner] = granted[0]!;
    const r = rig.acquired(id);
    expect(r.acquired).toBe(true);
    order.push(owner);
    current = { owner, token: r.token };
  }
  return order;
}

describe('lock leader: a waiter whose connection broke', () => {
  it('under a session keeps its place: no dequeue, ever; every retry re-attaches in the original order', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const owners = ['a', 'b', 'c', 'd'];
    const sessions = new Map(owners.map((o) => [o, open(rig, o)]));
    const first = owners.map((o) => rig.acquire('k', o, { waitMs: 600_000, requestId: `r-${o}`, sessionId: sessions.get(o)! }));
    rig.commitAll();
    for (const id of first) rig.detach(id);
    rig.advance(30_000); // far past any grace
    expect(rig.pendingOf('dequeue')).toEqual([]);
    expect(rig.machine.waiterCountOf('k')).toBe(4);
    // The retries come back in reverse order: they still get their original places.
    const retries = new Map<CallId, string>();
    for (const o of [...owners].reverse())
      retries.set(rig.acquire('k', o, { waitMs: 500_000, requestId: `r-${o}`, sessionId: sessions.get(o)! }), o);
    expect(rig.pendingOf('acquire')).toEqual([]); // re-attached, no new entry
    expect(grantOrder(rig, 'k', { owner: 'h', token: h.token }, retries)).toEqual(owners);
  });

  it('without a session keeps its place for the grace: a retry within it re-attaches ahead of a later waiter', () => {
    const rig = new LeaderRig({ detachedWaiterGraceMs: 2000 }).ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra' });
    const b = rig.acquire('k', 'b', { waitMs: 60_000, requestId: 'rb' });
    rig.commitAll();
    rig.detach(a);
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable' });
    expect(rig.wakeups).toContain(rig.nowMs + 2000);
    rig.advance(1999);
    expect(rig.pendingOf('dequeue')).toEqual([]);
    const retry = rig.acquire('k', 'a', { waitMs: 58_000, requestId: 'ra' });
    rig.advance(5000); // the grace ended while a call waits again: nothing to give up
    expect(rig.pendingOf('dequeue')).toEqual([]);
    expect(
      grantOrder(
        rig,
        'k',
        { owner: 'h', token: h.token },
        new Map([
          [retry, 'a'],
          [b, 'b'],
        ]),
      ),
    ).toEqual(['a', 'b']);
  });

  it('without a session and without a retry, gives its place up when the grace ends (dequeue, cause cancel)', () => {
    const rig = new LeaderRig({ detachedWaiterGraceMs: 2000 }).ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra' });
    const b = rig.acquire('k', 'b', { waitMs: 60_000, requestId: 'rb' });
    rig.commitAll();
    rig.detach(a);
    rig.advance(1999);
    expect(rig.pendingOf('dequeue')).toEqual([]);
    rig.advance(1);
    expect(rig.pendingOf('dequeue').map((p) => p.command)).toMatchObject([{ type: 'dequeue', key: 'k', cause: 'cancel' }]);
    rig.commitAll();
    expect(rig.machine.waiterCountOf('k')).toBe(1);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(b).acquired).toBe(true);
  });

  it('its wait deadline bounds the grace: it ends at the deadline, answered by that entry if a retry waits', () => {
    const rig = new LeaderRig({ detachedWaiterGraceMs: 10_000 }).ready();
    rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 3000, requestId: 'ra' });
    rig.commitAll();
    rig.detach(a);
    rig.advance(3000);
    expect(rig.pendingOf('dequeue').map((p) => p.command)).toMatchObject([{ type: 'dequeue', cause: 'deadline' }]);
    rig.commitAll();
    expect(rig.machine.waiterCount).toBe(0);
    rig.advance(10_000);
    expect(rig.pendingOf('dequeue')).toEqual([]); // no second dequeue for a waiter gone
  });

  it('an explicit cancel still gives the place up at once, under a session too', () => {
    const rig = new LeaderRig().ready();
    rig.hold('k', 'h');
    const sid = open(rig, 'a');
    const a = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra', sessionId: sid });
    rig.commitAll();
    rig.cancel(a);
    expect(rig.pendingOf('dequeue').map((p) => p.command)).toMatchObject([{ type: 'dequeue', cause: 'cancel' }]);
  });

  it('broken while its acquire was in flight: a session waiter keeps the place the log gives it; a retry is granted', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const sid = open(rig, 'a');
    const a = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra', sessionId: sid });
    rig.detach(a);
    rig.commitAll(); // the acquire: in line
    rig.advance(20_000);
    expect(rig.pendingOf('dequeue')).toEqual([]);
    expect(rig.machine.waiterCountOf('k')).toBe(1);
    const retry = rig.acquire('k', 'a', { waitMs: 30_000, requestId: 'ra', sessionId: sid });
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(retry)).toMatchObject({ acquired: true });
  });

  it('granted while nobody is attached: the retry picks the grant up; unclaimed, the hold ends with its lease', () => {
    const rig = new LeaderRig({ detachedWaiterGraceMs: 60_000 }).ready();
    const h = rig.hold('k', 'h');
    const a = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra', ttlMs: 1000 });
    rig.commitAll();
    rig.detach(a);
    rig.release('k', 'h', h.token);
    rig.commitAll();
    const grantIndex = rig.machine.appliedIndex;
    expect(rig.machine.get('k')).toMatchObject({ held: true, owner: 'a' });
    const retry = rig.acquire('k', 'a', { waitMs: 59_000, requestId: 'ra', ttlMs: 1000 });
    rig.commitAll();
    expect(rig.acquired(retry)).toMatchObject({ acquired: true, token: BigInt(grantIndex) });
    // Nobody claims it now: it ends with its own lease.
    rig.advance(1000);
    rig.commitAll();
    expect(rig.machine.get('k').held).toBe(false);
  });
});

describe("lock leader: a waiting call ends at its caller's deadline", () => {
  it('fails UNAVAILABLE at the deadline the call came with, and gives its place up as its caller would', () => {
    const rig = new LeaderRig().ready();
    const h = rig.hold('k', 'h');
    const sid = open(rig, 'a');
    // A short caller deadline (a client attempt that gives up before its wait): 3 s of a 60 s wait.
    const a = rig.acquire('k', 'a', { waitMs: 60_000, requestId: 'ra', sessionId: sid, timeoutMs: 3000 });
    const b = rig.acquire('k', 'b', { waitMs: 60_000, requestId: 'rb' });
    rig.commitAll();
    expect(rig.wakeups).toContain(rig.nowMs + 3000);
    rig.advance(2999);
    expect(rig.failures.has(a)).toBe(false);
    rig.advance(1);
    expect(rig.failures.get(a)).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/deadline passed/) });
    expect(rig.failures.has(b)).toBe(false);
    expect(rig.pendingOf('dequeue').map((p) => p.command)).toMatchObject([{ type: 'dequeue', key: 'k', cause: 'cancel' }]);
    rig.commitAll();
    rig.release('k', 'h', h.token);
    rig.commitAll();
    expect(rig.acquired(b)).toMatchObject({ acquired: true });
  });
});
