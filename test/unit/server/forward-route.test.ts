// The forward-once decision (src/server/client-api/forward-once.ts) on its own: after a "not the leader" refusal, a
// call goes on to the leader the refusal names only if it came straight from a client, names a leader, and
// that leader is another node. forward-once.test.ts and cluster-forward-once.test.ts check the servers
// follow it; the lock simulation checks no call ever takes two hops (test/sim/lock-server.ts).
import { describe, expect, it } from 'vitest';
import { routeNotLeader } from '../../../src/server/client-api/forward-once.js';

describe('routeNotLeader', () => {
  it('forwards a call straight from a client to the leader the refusal names', () => {
    expect(routeNotLeader('a', 'b', false)).toEqual({ action: 'forward', to: 'b' });
  });

  it('answers a call that arrived forwarded, whoever the refusal names', () => {
    expect(routeNotLeader('a', 'b', true)).toEqual({ action: 'answer', why: 'already-forwarded' });
    expect(routeNotLeader('a', null, true)).toEqual({ action: 'answer', why: 'already-forwarded' });
  });

  it('answers when the refusal names no leader (an election) or this node (a leader handing over)', () => {
    expect(routeNotLeader('a', null, false)).toEqual({ action: 'answer', why: 'no-leader-known' });
    expect(routeNotLeader('a', undefined, false)).toEqual({ action: 'answer', why: 'no-leader-known' });
    expect(routeNotLeader('a', '', false)).toEqual({ action: 'answer', why: 'no-leader-known' });
    expect(routeNotLeader('a', 'a', false)).toEqual({ action: 'answer', why: 'names-this-node' });
  });
});
