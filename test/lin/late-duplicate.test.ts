// KNOWN ANOMALY, found by the chaos run (seed 2, 60 s: two `refused-took-effect` violations, both right after a
// SIGSTOPped node resumed): an acquire the client was told was REFUSED takes effect later.
//
// How: the client's first attempt is delayed in transit (here: a proxy holding it; in the chaos run: the socket
// buffer of a paused node). The attempt times out on the client, which retries the same request_id on another
// node and gets a definite refusal (held by B) — LockNotAcquiredError. B then releases. When the first attempt
// finally arrives, the server judges it afresh (a refusal is not remembered by the dedup table, and gRPC's
// relative grpc-timeout gives the stale request a fresh deadline on arrival) and GRANTS it: an orphan lease,
// under an owner and token nobody holds, that blocks the key for a full ttl.
//
// No fencing or mutual-exclusion property breaks (the client never got the token, so it cannot write), but the
// client-visible outcome is wrong (a 'fail' that happened) and the key is unavailable for a ttl. The scenario
// below is deterministic. The last test is `it.fails`: it asserts the CORRECT behaviour and is expected to fail
// until the service is fixed — when it starts passing, vitest reports it, and it should become a plain `it`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, LockNotAcquiredError, type LockInfo } from '../../src/client/index.js';
import { FaultProxy } from '../e2e/proxy.js';
import { TestCluster, waitFor } from '../integration/harness.js';

let c: TestCluster;
let proxy: FaultProxy;
const clients: LockClient[] = [];
const outcome: { refusedWith?: string; freeBeforeDelivery?: LockInfo; afterDelivery?: LockInfo | null } = {};

beforeAll(async () => {
  c = await TestCluster.create();
  c.startAll();
  const { leader } = await c.waitForLeader();
  const follower = c.ids.find((id) => id !== leader)!;
  proxy = await FaultProxy.start(c.endpoint(leader));
  const b = new LockClient({ endpoints: c.endpoints() });
  // A tries the held proxy first, then a follower (which forwards to the leader).
  const a = new LockClient({ endpoints: [proxy.address, c.endpoint(follower)], attemptTimeoutMs: 500, timeoutMs: 3000 });
  clients.push(a, b);

  const lockB = await b.acquire('k', { ttlMs: 5000 });
  await a.get('k'); // the channel through the proxy is connected before we start holding
  proxy.setMode('hold');
  try {
    await a.acquire('k', { ttlMs: 5000, owner: 'A-owner' });
  } catch (err) {
    if (err instanceof LockNotAcquiredError) outcome.refusedWith = err.holder;
    else throw err;
  }
  await lockB.release();
  outcome.freeBeforeDelivery = await b.get('k');
  proxy.setMode('pass'); // A's first attempt arrives now, well past its deadline
  outcome.afterDelivery = await waitFor('A-owner to show up as the holder', async () => {
    const g = await b.get('k');
    return g.held ? g : null;
  }, 2000).catch(() => null);
});

afterAll(async () => {
  for (const cl of clients) cl.close();
  await proxy?.close();
  await c?.stop();
});

describe('late duplicate of a refused acquire', () => {
  it('the scenario ran as designed: A was refused (held by B), and the key was free before the held attempt arrived', () => {
    expect(outcome.refusedWith).toMatch(/.+/);
    expect(outcome.refusedWith).not.toBe('A-owner');
    expect(outcome.freeBeforeDelivery?.held).toBe(false);
  });

  it.fails('KNOWN ANOMALY (open): the held attempt must not grant the lock after the client was told "not acquired"', () => {
    expect(outcome.afterDelivery).toBeNull();
  });
});
