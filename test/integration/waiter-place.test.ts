// A waiter's place outlives its connection (SPEC, fourth part): 30 blocking acquires under sessions queue
// on one key through one follower; then that follower is killed (SIGKILL) and restarted, or a proxy in
// front of it resets every client connection once. Each waiter's LockClient notices the broken stream and
// retries the same request (same request_id, same session) by itself; the leader kept every place (the
// broken Forward stream, or the follower's broken Lock/Stream, is no cancel), so each retry re-attaches and
// the hand-offs grant the 30 in the order they queued. Both scenarios share one cluster.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, type LockHandle, type LockSession } from '../../src/client/index.js';
import { EndpointPool } from '../../src/client/rpc.js';
import type { AcquireResponse, GetResponse, ReleaseResponse } from '../../src/wire/lock.js';
import { FaultProxy } from '../e2e/proxy.js';
import { TestCluster, waitFor } from './harness.js';

const WAITERS = 30;

let c: TestCluster;
let control: EndpointPool;

beforeAll(async () => {
  // A 1 s election timeout: 30 waiters and a restart must not cost the leader its term.
  c = await TestCluster.create({ electionTicks: 20 });
  c.startAll();
  await c.waitForLeader();
  control = new EndpointPool({ endpoints: c.endpoints(), attemptTimeoutMs: 5000 });
});

afterAll(async () => {
  control?.close();
  await c?.stop();
});

async function waiters(key: string): Promise<number> {
  const g = await control.call<GetResponse>('Get', { key }, Date.now() + 3000);
  return g.waiters;
}

interface Waiter {
  client: LockClient;
  session: LockSession;
  granted: Promise<LockHandle>;
}

/**
 * Holds `key`, queues WAITERS session waiters on it through `endpoint` (one at a time, each in line before
 * the next is sent, so the queue order is known), runs `disrupt`, then releases the holder and checks that
 * the waiters are granted in queue order, each releasing as soon as it holds.
 */
async function queueDisruptAndGrant(key: string, endpoint: string, disrupt: () => Promise<void>): Promise<void> {
  const holder = await control.call<AcquireResponse>(
    'Acquire',
    { key, owner: 'holder', ttl_ms: '60000', request_id: `${key}-holder` },
    Date.now() + 10_000,
  );
  expect(holder.acquired).toBe(true);
  const queued: Waiter[] = [];
  const grantOrder: number[] = [];
  const tokens: bigint[] = [];
  try {
    for (let i = 0; i < WAITERS; i++) {
      // Only the follower (or its proxy) as endpoint: every call of this client goes through it, before and
      // after the fault; the retry waits for it to come back.
      const client = new LockClient({ endpoints: [endpoint], clientId: `${key}-w${i}`, timeoutMs: 10_000 });
      const session = await client.session({ ttlMs: 60_000 });
      const granted = session.acquire(key, { waitMs: 120_000 });
      granted.then(
        async (h) => {
          grantOrder.push(i);
          tokens.push(h.token);
          await h.release();
        },
        () => {},
      );
      queued.push({ client, session, granted });
      await waitFor(`waiter ${i} in line`, async () => (await waiters(key)) === i + 1, 10_000, 10);
    }
    await disrupt();
    expect(await waiters(key)).toBe(WAITERS);
    const rel = await control.call<ReleaseResponse>(
      'Release',
      { key, owner: 'holder', token: holder.token, request_id: `${key}-holder-rel` },
      Date.now() + 10_000,
    );
    expect(rel.released).toBe(true);
    const results = await Promise.allSettled(queued.map((w) => w.granted));
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [`w${i}: ${String(r.reason)}`] : []));
    expect(failed).toEqual([]);
    await waitFor('every grant seen', () => grantOrder.length === WAITERS, 10_000, 10);
    expect(grantOrder).toEqual(Array.from({ length: WAITERS }, (_, i) => i));
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
  } finally {
    await Promise.allSettled(queued.map((w) => w.session.close()));
    for (const w of queued) await w.client.close();
  }
}

describe("a waiter's place outlives its connection", () => {
  it(`${WAITERS} session waiters queued through a follower keep their order across its kill -9 and restart`, async () => {
    const { leader } = await c.waitForLeader();
    const follower = c.ids.find((id) => id !== leader)!;
    await queueDisruptAndGrant('through-killed', c.endpoint(follower), async () => {
      await c.kill(follower);
      // The leader saw the Forward stream break; no waiter left the line.
      expect(await waiters('through-killed')).toBe(WAITERS);
      c.start(follower);
      await waitFor(`${follower} serving again`, async () => (await c.status(follower)).leader_id === leader, 20_000);
    });
  }, 90_000);

  it(`${WAITERS} session waiters queued through a proxy that resets every client stream once keep their order`, async () => {
    const { leader } = await c.waitForLeader();
    const follower = c.ids.find((id) => id !== leader)!;
    const proxy = await FaultProxy.start(c.endpoint(follower));
    try {
      // The holder is released right after the reset: the first grants may come before their clients have
      // re-attached, and each retry then picks its grant up (the next waiter is granted only once the one
      // before it released, so the order still shows).
      await queueDisruptAndGrant('through-reset', proxy.address, async () => proxy.resetAll());
    } finally {
      await proxy.close();
    }
  }, 90_000);
});
