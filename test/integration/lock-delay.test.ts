// Lock-delay, black-box (SPEC "Lock-delay"): a key whose hold EXPIRED with lock_delay_ms 2 s grants nobody
// for 2 s after the lease's end — a plain acquire is refused with the time left, a blocking one is granted
// only once it has passed — while a key whose delayed hold was RELEASED grants at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EndpointPool } from '../../src/client/rpc.js';
import type { AcquireResponse, GetResponse, ReleaseResponse } from '../../src/wire/lock.js';
import { TestCluster, waitFor } from './harness.js';

let c: TestCluster;
let pool: EndpointPool;

beforeAll(async () => {
  c = await TestCluster.create();
  c.startAll();
  await c.waitForLeader();
  pool = c.pool();
});

afterAll(async () => {
  pool?.close();
  await c?.stop();
});

const call = <Res>(method: 'Acquire' | 'Release' | 'Get', req: object, timeoutMs = 10_000) =>
  pool.call<Res>(method, req, Date.now() + timeoutMs);

describe('lock-delay', () => {
  it('an expired hold with lock_delay_ms 2000 keeps its key from everyone for 2 s after its lease ended', async () => {
    const held = await call<AcquireResponse>('Acquire', {
      key: 'delayed',
      owner: 'a',
      ttl_ms: '300',
      request_id: 'a1',
      lock_delay_ms: '2000',
    });
    expect(held.acquired).toBe(true);
    const leaseEndMs = Number(held.expires_at_ms); // the leader's clock; the test runs on the same host
    await waitFor('the lease to run out', async () => !(await call<GetResponse>('Get', { key: 'delayed' })).held, 5000, 20);
    const refused = await call<AcquireResponse>('Acquire', { key: 'delayed', owner: 'b', ttl_ms: '5000', request_id: 'b1' });
    expect(refused.acquired).toBe(false);
    const leftMs = Number(refused.delay_ms_left);
    expect(leftMs).toBeGreaterThan(0);
    expect(leftMs).toBeLessThanOrEqual(2000);
    // Its own owner is refused too.
    expect((await call<AcquireResponse>('Acquire', { key: 'delayed', owner: 'a', ttl_ms: '5000', request_id: 'a2' })).acquired).toBe(false);
    // A blocking acquire waits in line through the delay and is granted when it ends.
    const granted = await call<AcquireResponse>(
      'Acquire',
      { key: 'delayed', owner: 'c', ttl_ms: '5000', wait_ms: '10000', request_id: 'c1' },
      15_000,
    );
    const grantedAtMs = Date.now();
    expect(granted.acquired).toBe(true);
    // Not before the lease's end + 2 s in log time: the grant's lease starts at its entry's log time.
    const grantLogMs = Number(granted.expires_at_ms) - 5000;
    expect(grantLogMs).toBeGreaterThanOrEqual(leaseEndMs + 2000);
    expect(grantedAtMs).toBeGreaterThanOrEqual(leaseEndMs + 2000);
  }, 30_000);

  it('a released hold with a lock-delay grants the next acquire at once', async () => {
    const held = await call<AcquireResponse>('Acquire', {
      key: 'released',
      owner: 'a',
      ttl_ms: '10000',
      request_id: 'r1',
      lock_delay_ms: '2000',
    });
    expect(held.acquired).toBe(true);
    expect((await call<ReleaseResponse>('Release', { key: 'released', owner: 'a', token: held.token, request_id: 'r2' })).released).toBe(
      true,
    );
    const next = await call<AcquireResponse>('Acquire', { key: 'released', owner: 'b', ttl_ms: '10000', request_id: 'r3' });
    expect(next.acquired).toBe(true);
    expect(Number(next.delay_ms_left)).toBe(0);
  });

  it('a value is stored with the hold and returned by Get in holders[] (from any node)', async () => {
    const held = await call<AcquireResponse>('Acquire', {
      key: 'valued',
      owner: 'a',
      ttl_ms: '10000',
      request_id: 'v1',
      value: Buffer.from('10.0.0.7:8080'),
    });
    expect(held.acquired).toBe(true);
    for (const id of c.ids) {
      const g = await c.raw<GetResponse>(id, 'Get', { key: 'valued' }, 5000);
      expect(g.holders.map((h) => [h.owner, h.token, Buffer.from(h.value).toString()])).toEqual([['a', held.token, '10.0.0.7:8080']]);
    }
    await expect(call('Acquire', { key: 'k', owner: 'a', ttl_ms: '1000', value: Buffer.alloc(1025) })).rejects.toThrow(
      /value must be at most 1024 bytes/,
    );
  });

  it('lock_delay_ms above lock.maxLockDelayMs is INVALID_ARGUMENT naming the field', async () => {
    await expect(call('Acquire', { key: 'k', owner: 'a', ttl_ms: '1000', lock_delay_ms: '60001' })).rejects.toThrow(
      /lock_delay_ms must be between 0 and 60000/,
    );
  });
});
