// FIFO under load, with real timers and real processes: 300 blocking acquires arriving 1 ms apart while
// the key is held are granted in the order they were sent — directly to the leader, and through a
// follower (whose forwarded calls simply arrive at the leader's service later). Regression test for the
// race where the first requests, finding no queue, proposed an acquire and joined the queue only after
// their refusal applied, so requests arriving meanwhile overtook them (observed 0,17,18,1,2,3,4,19,5,...).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointPool } from '../../src/client/rpc.js';
import type { AcquireResponse, ReleaseResponse } from '../../src/wire/lock.js';
import { TestCluster } from './harness.js';

const WAITERS = 300;

let c: TestCluster;
let leader: string;
let follower: string;

beforeAll(async () => {
  // The claim is grant order within one leader's term; a spurious election mid-burst fails every waiter
  // with UNAVAILABLE and says nothing about order. The burst (300 calls, then 300 grants) kept the leader
  // busy past the harness's aggressive 300 ms election timeout in one CI run, so this cluster gets 1 s.
  c = await TestCluster.create({ electionTicks: 20 });
  c.startAll();
  leader = (await c.waitForLeader()).leader;
  follower = c.ids.find((id) => id !== leader)!;
});

afterAll(async () => {
  await c?.stop();
});

interface Grant {
  waiter: number;
  token: bigint;
}

/** Holds `key`, sends WAITERS blocking acquires 1 ms apart through `via`, releases the holder; every
 *  granted waiter releases at once. Returns the grants in the order they were answered. */
async function grantOrder(key: string, via: string): Promise<Grant[]> {
  // One channel for the waiters, so the send order is the order on the wire; one for the releases.
  const waiters = new EndpointPool({ endpoints: [c.endpoint(via)], attemptTimeoutMs: 90_000 });
  const control = new EndpointPool({ endpoints: [c.endpoint(leader)], attemptTimeoutMs: 5000 });
  try {
    // Warm the path first (through a follower: its forwarding channel to the leader), so the waiters
    // arrive 1 ms apart rather than in one burst once a connection comes up.
    await waiters.call('Get', { key }, Date.now() + 5000, undefined, false);
    const holder = await control.call<AcquireResponse>(
      'Acquire',
      { key, owner: 'holder', ttl_ms: '60000', request_id: `${key}-holder` },
      Date.now() + 5000,
      undefined,
      false,
    );
    expect(holder.acquired).toBe(true);
    const grants: Grant[] = [];
    const releases: Promise<unknown>[] = [];
    const answers: Promise<void>[] = [];
    for (let i = 0; i < WAITERS; i++) {
      const owner = `w${i}`;
      const req = { key, owner, ttl_ms: '60000', wait_ms: '90000', request_id: `${key}-${owner}` };
      answers.push(
        waiters.call<AcquireResponse>('Acquire', req, Date.now() + 90_000, undefined, false).then((r) => {
          expect(r.acquired, `${owner}: ${JSON.stringify(r)}`).toBe(true);
          grants.push({ waiter: i, token: BigInt(r.token) });
          releases.push(
            control.call<ReleaseResponse>(
              'Release',
              { key, owner, token: r.token, request_id: `${key}-${owner}-rel` },
              Date.now() + 5000,
              undefined,
              false,
            ),
          );
        }),
      );
      await new Promise((r) => setTimeout(r, 1));
    }
    const rel = await control.call<ReleaseResponse>(
      'Release',
      { key, owner: 'holder', token: holder.token, request_id: `${key}-holder-rel` },
      Date.now() + 5000,
      undefined,
      false,
    );
    expect(rel.released).toBe(true);
    await Promise.all(answers);
    await Promise.all(releases);
    return grants;
  } finally {
    waiters.close();
    control.close();
  }
}

function expectSendOrder(grants: Grant[]): void {
  const order = grants.map((g) => g.waiter);
  expect(order, `grant order: ${order.join(',')}`).toEqual(Array.from({ length: WAITERS }, (_, i) => i));
  for (let i = 1; i < grants.length; i++) expect(grants[i]!.token > grants[i - 1]!.token).toBe(true);
}

describe(`${WAITERS} waiters arriving 1 ms apart are granted in arrival order`, () => {
  it('sent directly to the leader', async () => {
    expectSendOrder(await grantOrder('fifo-direct', leader));
  }, 120_000);

  it('sent through a follower (forwarded to the leader)', async () => {
    expectSendOrder(await grantOrder('fifo-forwarded', follower));
  }, 120_000);
});
