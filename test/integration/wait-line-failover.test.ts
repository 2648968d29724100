// The replicated wait line, black-box (SPEC "The wait queue is replicated"): 100 blocking acquires queued on
// a held key keep their order across a kill -9 of the leader. Their calls on the dead leader fail; the
// client retries with the same request_id on another node, which re-attaches each to its place in line
// (not to the back), and the hand-offs grant them in the order they queued, with tokens increasing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointPool } from '../../src/client/rpc.js';
import type { AcquireResponse, GetResponse, ReleaseResponse } from '../../src/wire/lock.js';
import { TestCluster, waitFor } from './harness.js';

const WAITERS = 100;

let c: TestCluster;

beforeAll(async () => {
  // A 1 s election timeout, as fifo-arrival.test.ts: 100 waiters arriving must not cost the leader its term.
  c = await TestCluster.create({ electionTicks: 20 });
  c.startAll();
  await c.waitForLeader();
});

afterAll(async () => {
  await c?.stop();
});

describe('the wait line survives the leader', () => {
  it(`${WAITERS} waiters keep their order across a kill -9 of the leader`, async () => {
    const key = 'line';
    const { leader } = await c.waitForLeader();
    const others = c.ids.filter((id) => id !== leader);
    // The waiters go to the leader first; on failure the pool retries the same request on the others.
    const waiters = new EndpointPool({ endpoints: [c.endpoint(leader), ...c.endpoints(others)], attemptTimeoutMs: 120_000 });
    const control = new EndpointPool({ endpoints: c.endpoints(), attemptTimeoutMs: 5000 });
    try {
      const holder = await control.call<AcquireResponse>(
        'Acquire',
        { key, owner: 'holder', ttl_ms: '60000', request_id: 'holder' },
        Date.now() + 10_000,
      );
      expect(holder.acquired).toBe(true);
      const order: number[] = [];
      const tokens: bigint[] = [];
      const releases: Promise<unknown>[] = [];
      const answers: Promise<void>[] = [];
      for (let i = 0; i < WAITERS; i++) {
        const owner = `w${i}`;
        const req = { key, owner, ttl_ms: '60000', wait_ms: '120000', request_id: `${owner}-1` };
        answers.push(
          waiters.call<AcquireResponse>('Acquire', req, Date.now() + 120_000).then((r) => {
            expect(r.acquired, `${owner}: ${JSON.stringify(r)}`).toBe(true);
            order.push(i);
            tokens.push(BigInt(r.token));
            releases.push(
              control.call<ReleaseResponse>('Release', { key, owner, token: r.token, request_id: `${owner}-rel` }, Date.now() + 20_000),
            );
          }),
        );
        await new Promise((r) => setTimeout(r, 2));
      }
      // Every waiter is in the replicated line before the leader dies.
      await waitFor(
        'all waiters in line',
        async () => {
          const g = await control.call<GetResponse>('Get', { key }, Date.now() + 2000);
          return g.waiters === WAITERS;
        },
        20_000,
      );
      await c.kill(leader);
      const next = await c.waitForLeader(others);
      expect(next.leader).not.toBe(leader);
      // The line is still there on the new leader, whole.
      const after = await control.call<GetResponse>('Get', { key }, Date.now() + 10_000);
      expect(after.waiters).toBe(WAITERS);
      const rel = await control.call<ReleaseResponse>(
        'Release',
        { key, owner: 'holder', token: holder.token, request_id: 'holder-rel' },
        Date.now() + 10_000,
      );
      expect(rel.released).toBe(true);
      await Promise.all(answers);
      await Promise.all(releases);
      expect(order, `grant order: ${order.join(',')}`).toEqual(Array.from({ length: WAITERS }, (_, i) => i));
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!, `token ${i}`).toBe(true);
    } finally {
      waiters.close();
      control.close();
    }
  }, 180_000);
});
