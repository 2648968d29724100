// SPEC scenarios 9 (the token counter survives failover) and 8 (the whole service restarts), end to end with
// the LockClient and a fenced store. Both kill processes, so they get a cluster of their own.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, type LockHandle } from '../../src/client/index.js';
import { LevelFencedStore, writeWithLock } from '../../src/fencing/index.js';
import type { GetResponse } from '../../src/wire/lock.js';
import { TestCluster, waitFor } from '../integration/harness.js';

let c: TestCluster;
let level: LevelFencedStore<string>;
const clients: LockClient[] = [];

function newClient(): LockClient {
  const client = new LockClient({ endpoints: c.endpoints(), attemptTimeoutMs: 1000 });
  clients.push(client);
  return client;
}

beforeAll(async () => {
  c = await TestCluster.create();
  c.startAll();
  await c.waitForLeader();
  level = await LevelFencedStore.open<string>(join(c.dir, 'fenced-level'));
});

afterAll(async () => {
  for (const cl of clients) cl.close();
  await level?.close();
  await c?.stop();
});

/** Resolves at the next confirmed renew of `lock`; rejects if it is lost instead. */
function nextRenew(lock: LockHandle): Promise<void> {
  return new Promise((resolve, reject) => {
    const onLost = (e: Error) => reject(e);
    lock.once('lost', onLost);
    lock.once('renewed', () => {
      lock.off('lost', onLost);
      resolve();
    });
  });
}

/** Acquire-and-release on each key; returns the tokens issued. */
async function churn(client: LockClient, keys: string[]): Promise<bigint[]> {
  const tokens: bigint[] = [];
  for (const key of keys) {
    const l = await client.acquire(key, { ttlMs: 2000 });
    tokens.push(l.token);
    await l.release();
  }
  return tokens;
}

const max = (xs: bigint[]) => xs.reduce((m, x) => (x > m ? x : m), 0n);

describe('failover and restart', () => {
  it('9. kill -9 the leader: the new leader’s tokens are all greater; the holder rides through; the node rejoins', async () => {
    const { leader } = await c.waitForLeader();
    const client = newClient();
    const holder = await client.acquire('s9-held', { ttlMs: 3000 });
    expect((await writeWithLock(holder, level, 's9-held', 'before failover')).accepted).toBe(true);
    const before = [...(await churn(client, ['s9-a', 's9-b', 's9-c'])), holder.token];
    const highestBefore = max(before);

    await c.kill(leader);
    const killedAt = performance.now();
    const survivors = c.ids.filter((id) => id !== leader);
    const { leader: newLeader } = await c.waitForLeader(survivors);
    expect(newLeader).not.toBe(leader);
    // The holder's renewals failed over with it: the next confirmed renew was served by the new leader
    // (the old one is dead), and the lock never stopped being ACTIVE.
    await nextRenew(holder);
    expect(holder.state).toBe('ACTIVE');
    const failoverMs = performance.now() - killedAt;
    expect(failoverMs).toBeLessThan(holder.ttlMs);
    // Owner and token unchanged (the lease was carried over, not cut short); last tokens survive.
    expect(await client.get('s9-held')).toMatchObject({ held: true, owner: holder.owner, token: holder.token });
    for (const [i, key] of ['s9-a', 's9-b', 's9-c'].entries()) expect((await client.get(key)).lastToken).toBe(before[i]);
    // Every token issued after the failover is greater than every token issued before it.
    const after = await churn(client, ['s9-a', 's9-b', 's9-c', 's9-new']);
    for (const t of after) expect(t).toBeGreaterThan(highestBefore);
    // The holder can still write: no newer token exists for its key.
    expect((await writeWithLock(holder, level, 's9-held', 'after failover')).accepted).toBe(true);
    // Recovery: the killed node restarts from its LevelDB, catches up, and serves the same state.
    c.start(leader);
    const target = await c.status(newLeader);
    await waitFor('the old leader to catch up', async () => BigInt((await c.status(leader)).applied_index) >= BigInt(target.commit_index));
    const viaRestarted = await c.raw<GetResponse>(leader, 'Get', { key: 's9-held' });
    expect(viaRestarted).toMatchObject({ held: true, owner: holder.owner, token: String(holder.token) });
    expect((await holder.release()).outcome).toBe('released');
  });

  it('8. every node restarts (kill -9 all): state and counters survive, tokens keep increasing, the holder rides through', async () => {
    await c.waitForLeader();
    const client = newClient();
    // A long lease, so the holder can ride through the outage on renew retries alone.
    const holder = await client.acquire('s8-held', { ttlMs: 10_000 });
    expect((await writeWithLock(holder, level, 's8-held', 'before restart')).accepted).toBe(true);
    const [freeToken] = await churn(client, ['s8-free']);
    const before = { held: await client.get('s8-held'), free: await client.get('s8-free') };

    const downAt = performance.now();
    for (const id of c.ids) await c.kill(id);
    c.startAll();
    await c.waitForLeader();
    // The holder's renew retries (same request_id each) reached the restarted cluster in time.
    await nextRenew(holder);
    expect(holder.state).toBe('ACTIVE');
    expect(performance.now() - downAt).toBeLessThan(holder.ttlMs);

    const after = { held: await client.get('s8-held'), free: await client.get('s8-free') };
    expect(after.held).toMatchObject({ held: true, owner: before.held.owner, token: before.held.token, lastToken: before.held.lastToken });
    expect(after.free).toMatchObject({ held: false, lastToken: freeToken });
    // The old holder can still write; it is still the newest token.
    expect((await writeWithLock(holder, level, 's8-held', 'after restart')).accepted).toBe(true);
    // Tokens keep increasing: the next grant on each key beats everything issued before the restart.
    expect((await holder.release()).outcome).toBe('released');
    const [heldNext, freeNext] = await churn(client, ['s8-held', 's8-free']);
    expect(heldNext).toBeGreaterThan(holder.token);
    expect(freeNext).toBeGreaterThan(freeToken!);
    expect(heldNext).toBeGreaterThan(freeToken!);
    // The fenced store keeps the pre-restart token's successors only: an old token is refused.
    expect((await level.write('s8-held', heldNext!, 'new holder')).accepted).toBe(true);
    expect((await level.write('s8-held', holder.token, 'stale')).accepted).toBe(false);
  });
});
