// Semaphores and shared holds, black-box through the public client (SPEC "Many holders"): a semaphore of
// limit 3 under 20 contending workers never has 4 holders — counted by a resource that admits a worker only
// with a token the cluster reports as one of the key's live holds — and every grant has its own token; shared
// holds run together, and an exclusive waiter is not starved by readers that came after it. Limits and
// modes that do not match the key are refused with FAILED_PRECONDITION naming the key's limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/index.js';
import { checkToken } from '../../src/fencing/index.js';
import { TestCluster, waitFor } from './harness.js';

let c: TestCluster;
const clients: LockClient[] = [];

beforeAll(async () => {
  c = await TestCluster.create({ electionTicks: 20 });
  c.startAll();
  await c.waitForLeader();
  // Semaphores need every member at cluster level 3 (versions.ts): the leader raises it once it has heard all.
  await waitFor(
    'cluster level 3 or above',
    async () => (await Promise.all(c.ids.map((id) => c.status(id)))).every((s) => s.cluster_level >= 3),
    15_000,
  );
}, 60_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await c?.stop();
});

function client(): LockClient {
  const made = new LockClient({ endpoints: c.endpoints() });
  clients.push(made);
  return made;
}

/** A resource that counts who is inside: it admits a token only if the cluster reports it as a live hold of
 *  the key (checkToken, Chubby's CheckSequencer), and records the most inside at once. */
class CountingResource {
  inside = new Set<bigint>();
  most = 0;
  admitted = 0;
  refused = 0;
  constructor(
    private readonly reader: LockClient,
    private readonly key: string,
  ) {}

  async enter(token: bigint): Promise<void> {
    const check = await checkToken(this.reader, this.key, token);
    if (!check.current) {
      this.refused++;
      throw new Error(`token ${token} refused: ${check.reason}`);
    }
    this.inside.add(token);
    this.admitted++;
    this.most = Math.max(this.most, this.inside.size);
  }

  leave(token: bigint): void {
    this.inside.delete(token);
  }
}

describe('semaphores and shared holds', () => {
  it('a semaphore of limit 3 under 20 contending workers never has 4 holders; each grant has its own token', async () => {
    const key = 'pool/render';
    const resource = new CountingResource(client(), key);
    const tokens: bigint[] = [];
    const deadline = Date.now() + 20_000;
    const worker = async (w: number) => {
      const cl = client();
      for (let round = 0; round < 3 && Date.now() < deadline; round++) {
        const lock = await cl.acquire(key, { ttlMs: 10_000, waitMs: 30_000, limit: 3, owner: `worker-${w}` });
        tokens.push(lock.token);
        await resource.enter(lock.token);
        await new Promise((r) => setTimeout(r, 20 + ((w * 7 + round * 13) % 40)));
        resource.leave(lock.token);
        await lock.release();
      }
    };
    await Promise.all(Array.from({ length: 20 }, (_, w) => worker(w)));
    expect(resource.refused).toBe(0);
    expect(resource.admitted).toBe(60);
    expect(resource.most).toBeLessThanOrEqual(3);
    // Contended for real: the three slots were full at some point (a checker that saw one at a time proves nothing).
    expect(resource.most).toBe(3);
    expect(new Set(tokens).size).toBe(tokens.length);
  }, 60_000);

  it('shared holds run together; an exclusive waiter goes before readers that came after it', async () => {
    const key = 'doc/report';
    const cl = client();
    const r1 = await cl.acquire(key, { ttlMs: 10_000, shared: true, owner: 'reader-1' });
    const r2 = await cl.acquire(key, { ttlMs: 10_000, shared: true, owner: 'reader-2' });
    expect((await cl.get(key)).holders.map((h) => [h.owner, h.shared])).toEqual([
      ['reader-1', true],
      ['reader-2', true],
    ]);
    const writer = cl.acquire(key, { ttlMs: 10_000, waitMs: 20_000, owner: 'writer' });
    await waitFor('the writer in line', async () => (await cl.get(key)).waiters === 1);
    // Readers that come after the waiting writer wait behind it (no writer starvation)...
    const late = [3, 4, 5].map((i) => cl.acquire(key, { ttlMs: 10_000, waitMs: 20_000, shared: true, owner: `reader-${i}` }));
    await waitFor('the late readers in line', async () => (await cl.get(key)).waiters === 4);
    // ...and a reader that will not wait is refused while the writer waits, though only readers hold.
    await expect(cl.acquire(key, { ttlMs: 10_000, shared: true, owner: 'reader-6' })).rejects.toThrow(/not acquired|held/i);
    await r1.release();
    await r2.release();
    const w = await writer;
    expect(w.token > r2.token).toBe(true);
    expect((await cl.get(key)).holders.map((h) => h.owner)).toEqual(['writer']);
    await w.release();
    const readers = await Promise.all(late);
    for (const r of readers) expect(r.token > w.token).toBe(true);
    // Together: all three hold at once.
    const view = await cl.get(key);
    expect(view.holders.map((h) => h.owner).sort()).toEqual(['reader-3', 'reader-4', 'reader-5']);
    for (const r of readers) await r.release();
  }, 60_000);

  it('a bad limit or shared is INVALID_ARGUMENT naming the field, and changes nothing', async () => {
    const raw = (extra: object) =>
      c.raw('n1', 'Acquire', { key: 'bad/limit', owner: 'x', ttl_ms: '5000', request_id: `r-${Math.random()}`, ...extra }).then(
        () => 'granted',
        (err: unknown) => `${(err as { code?: number }).code}: ${(err as Error).message}`,
      );
    expect(await raw({ limit: 1001 })).toMatch(/^3: .*limit must be between 0 and 1000/); // 3 = INVALID_ARGUMENT
    expect(await raw({ limit: 3, shared: true })).toMatch(/^3: .*shared holds are of a key with limit 0 or 1/);
    const cl = client();
    const view = await cl.get('bad/limit');
    expect([view.held, view.lastToken]).toEqual([false, 0n]);
  }, 30_000);

  it('a request naming another limit than the key has, or asking shared of a held mutex by its holder, is refused naming why', async () => {
    const cl = client();
    const a = await cl.acquire('pool/other', { ttlMs: 10_000, limit: 2, owner: 'a' });
    await expect(cl.acquire('pool/other', { ttlMs: 10_000, limit: 3, owner: 'b' })).rejects.toThrow(/limit 2/);
    await expect(cl.acquire('pool/other', { ttlMs: 10_000, owner: 'b' })).rejects.toThrow(/limit 2/);
    const m = await cl.acquire('plain/mutex', { ttlMs: 10_000, owner: 'm' });
    await expect(cl.acquire('plain/mutex', { ttlMs: 10_000, shared: true, owner: 'm' })).rejects.toThrow(/release that hold/);
    await a.release();
    await m.release();
  }, 30_000);
});
