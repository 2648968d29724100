// ANOMALIES found by the chaos runs, reproduced here deterministically with the fault proxy — both FIXED:
// the lock machine now remembers refusals too (a late duplicate replays its refusal) and only the leader's
// `queued` acquire for the head waiter may turn a remembered refusal into a grant; the lock service answers
// a decided request from the dedup table before any wait-queue fast path, and remembers refusals it
// answered itself (wait deadline, refused behind waiters). The tests below are regression tests.
// Both end the same way: the client is told an acquire was REFUSED (LockNotAcquiredError), yet the server
// granted it — an orphan lease, under an owner and token nobody holds, that blocks the key for a full ttl.
// No fencing or mutual-exclusion property breaks (the client never got the token, so it cannot write), but the
// client-visible outcome is wrong (a 'fail' that happened) and the key is unavailable for a ttl.
//
// 1. Late duplicate (chaos seed 2, 60 s: two violations, both right after a SIGSTOPped node resumed). The first
//    attempt is delayed in transit (a held proxy here; a paused node's socket buffer in the chaos run). It times
//    out on the client, whose retry (same request_id) is refused because B holds the key. B releases. The delayed
//    attempt then arrives with a fresh relative grpc-timeout, is judged afresh (refusals are not remembered by
//    the dedup table) and is granted.
// 2. Retry refused by the wait-queue fast path (chaos seed 42, 300 s: acquire "w2/600" refused naming itself as
//    the holder). The first attempt waits in the leader's FIFO queue and is granted, but its response is lost.
//    The retry (same request_id, wait_ms now 0) reaches the leader while another waiter is queued for the key:
//    LockService.acquire returns refusedNow() for "waiters queued and wait_ms 0" before the dedup table is
//    consulted, so a granted request is answered "not acquired, held by <its own owner>" — contrary to SPEC
//    "a repeated request_id returns the first outcome unchanged".
//
// Each scenario has a test that it ran as designed, and one that asserts the correct behaviour.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, LockNotAcquiredError, type LockHandle, type LockInfo } from '../../src/client/index.js';
import type { ReleaseResponse } from '../../src/wire/lock.js';
import { FaultProxy } from '../e2e/proxy.js';
import { TestCluster, waitFor } from '../integration/harness.js';

let c: TestCluster;
let leader: string;
let follower: string;
const proxies: FaultProxy[] = [];
const clients: LockClient[] = [];

beforeAll(async () => {
  c = await TestCluster.create();
  c.startAll();
  leader = (await c.waitForLeader()).leader;
  follower = c.ids.find((id) => id !== leader)!;
});

afterAll(async () => {
  for (const cl of clients) cl.close();
  for (const p of proxies) await p.close();
  await c?.stop();
});

/** A client whose FIRST endpoint is a proxy to the leader, then (optionally) a follower, which forwards. */
async function clientBehindProxy(opts: {
  attemptTimeoutMs: number;
  timeoutMs: number;
  viaFollower?: boolean;
}): Promise<{ client: LockClient; proxy: FaultProxy }> {
  const proxy = await FaultProxy.start(c.endpoint(leader));
  proxies.push(proxy);
  const endpoints = opts.viaFollower === false ? [proxy.address] : [proxy.address, c.endpoint(follower)];
  const client = new LockClient({ endpoints, attemptTimeoutMs: opts.attemptTimeoutMs, timeoutMs: opts.timeoutMs });
  clients.push(client);
  await client.get('warm-up'); // connect through the proxy before any fault
  return { client, proxy };
}

function plainClient(): LockClient {
  const client = new LockClient({ endpoints: c.endpoints() });
  clients.push(client);
  return client;
}

/** How an acquire ended, as the client saw it. "unanswered" (timeout, UNAVAILABLE) is not a refusal. */
type AcquireOutcome =
  { kind: 'granted'; handle: LockHandle } | { kind: 'refused'; holder: string } | { kind: 'unanswered'; error: unknown };

function outcomeOf(acquire: Promise<LockHandle>): Promise<AcquireOutcome> {
  return acquire.then(
    (handle): AcquireOutcome => ({ kind: 'granted', handle }),
    (error: unknown): AcquireOutcome =>
      error instanceof LockNotAcquiredError ? { kind: 'refused', holder: error.holder } : { kind: 'unanswered', error },
  );
}

const describeOutcome = (o: AcquireOutcome | undefined) =>
  o?.kind === 'unanswered'
    ? `unanswered: ${String(o.error)}`
    : JSON.stringify(o?.kind === 'granted' ? { kind: o.kind, owner: o.handle.owner } : o);

/**
 * Reads the key (linearizable Get) until someone holds it or `forMs` have passed. A failed read throws:
 * "nobody held it" is only said after reads that succeeded, never because the cluster did not answer.
 */
async function watchKey(client: LockClient, key: string, forMs: number): Promise<{ held: LockInfo } | { free: { reads: number } }> {
  const deadline = Date.now() + forMs;
  let reads = 0;
  for (;;) {
    const g = await client.get(key);
    reads++;
    if (g.held) return { held: g };
    if (Date.now() >= deadline) return { free: { reads } };
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Orders requests at the leader without sleeping: wait until the proxy has written the request on, then
 * put a write through the leader's log (a release of a key nobody holds, refused). The leader read the
 * request before it read the barrier, so when the barrier's answer is back, the request has been judged
 * and, if it had to wait, queued (its own refusal entry, if any, is ahead of the barrier in the log).
 */
async function reachedLeader(proxy: FaultProxy, requestsBefore: number, what: string): Promise<void> {
  await waitFor(`${what}: the request written on by the proxy`, () => proxy.stats.requestsUp > requestsBefore, 5000, 5);
  const barrier = await c.raw<ReleaseResponse>(leader, 'Release', {
    key: 'order-barrier',
    owner: 'barrier',
    token: '1',
    request_id: `barrier-${what}`,
  });
  expect(barrier.released).toBe(false);
}

describe('1. late duplicate of a refused acquire', () => {
  const key = 'late-dup';
  const seen: {
    ownerB?: string;
    outcomeA?: AcquireOutcome;
    heldAttemptsThrough?: number;
    freeBeforeDelivery?: LockInfo;
    afterDelivery?: Awaited<ReturnType<typeof watchKey>>;
  } = {};

  beforeAll(async () => {
    const b = plainClient();
    const { client: a, proxy } = await clientBehindProxy({ attemptTimeoutMs: 500, timeoutMs: 3000 });
    const lockB = await b.acquire(key, { ttlMs: 5000 });
    seen.ownerB = lockB.owner;
    proxy.setMode('hold');
    const requestsBefore = proxy.stats.requestsUp;
    seen.outcomeA = await outcomeOf(a.acquire(key, { ttlMs: 5000, owner: 'A-late' }));
    await lockB.release();
    seen.freeBeforeDelivery = await b.get(key);
    proxy.setMode('pass'); // A's first attempt arrives now, well past its deadline
    seen.heldAttemptsThrough = proxy.stats.requestsUp - requestsBefore;
    seen.afterDelivery = await watchKey(b, key, 2000);
  });

  it('ran as designed: the first attempt was held by the proxy (and passed on at the end), the retry refused naming B, and the key was free before the held attempt arrived', () => {
    expect(seen.heldAttemptsThrough).toBeGreaterThanOrEqual(1);
    expect(seen.outcomeA, describeOutcome(seen.outcomeA)).toEqual({ kind: 'refused', holder: seen.ownerB });
    expect(seen.freeBeforeDelivery?.held).toBe(false);
  });

  it('the held attempt does not grant the lock after the client was told "not acquired"', () => {
    expect(seen.afterDelivery).toMatchObject({ free: {} });
    if ('free' in seen.afterDelivery!) expect(seen.afterDelivery.free.reads).toBeGreaterThanOrEqual(2);
  });
});

describe('2. the retry of a granted acquire is refused while others wait', () => {
  const key = 'retry-refused';
  const seen: {
    outcomeA?: AcquireOutcome;
    answersSwallowed?: number;
    holderAfter?: Awaited<ReturnType<typeof watchKey>>;
    outcomeW?: AcquireOutcome;
  } = {};

  beforeAll(async () => {
    const b = plainClient();
    const { client: a, proxy } = await clientBehindProxy({ attemptTimeoutMs: 500, timeoutMs: 3000 });
    // W talks to the leader only, through a proxy of its own, so its arrival can be seen too.
    const { client: waiter, proxy: waiterProxy } = await clientBehindProxy({
      attemptTimeoutMs: 10_000,
      timeoutMs: 10_000,
      viaFollower: false,
    });
    const lockB = await b.acquire(key, { ttlMs: 10_000 });
    // A queues first (head of the FIFO), then W behind it: each is seen queued before the next step.
    let before = proxy.stats.requestsUp;
    const aAcquire = outcomeOf(a.acquire(key, { ttlMs: 5000, waitMs: 1500, owner: 'A-retry' }));
    await reachedLeader(proxy, before, 'A queued');
    before = waiterProxy.stats.requestsUp;
    const wAcquire = outcomeOf(waiter.acquire(key, { ttlMs: 5000, waitMs: 8000, owner: 'W' }));
    await reachedLeader(waiterProxy, before, 'W queued');
    proxy.setMode('block'); // A's answer will be swallowed
    const swallowedBefore = proxy.stats.swallowedChunks;
    await lockB.release(); // the leader grants the head waiter, A — the grant commits; A never hears of it
    seen.outcomeA = await aAcquire; // attempt 1 times out; the retry (same request_id, wait_ms 0) reaches the leader via the follower
    seen.answersSwallowed = proxy.stats.swallowedChunks - swallowedBefore;
    seen.holderAfter = await watchKey(b, key, 1000);
    proxy.setMode('pass');
    if (seen.outcomeA.kind === 'granted') await seen.outcomeA.handle.release();
    seen.outcomeW = await wAcquire;
    if (seen.outcomeW.kind === 'granted') await seen.outcomeW.handle.release();
  });

  it('ran as designed: A was granted on the server while its answer was lost, A got an answer (no timeout), and W was served after A', () => {
    expect(seen.answersSwallowed).toBeGreaterThan(0);
    expect(seen.holderAfter).toMatchObject({ held: { owner: 'A-retry' } });
    expect(seen.outcomeA?.kind, describeOutcome(seen.outcomeA)).not.toBe('unanswered');
    expect(seen.outcomeW?.kind, describeOutcome(seen.outcomeW)).toBe('granted');
  });

  it('the retry with the same request_id returns the grant, not "not acquired, held by A-retry"', () => {
    expect(seen.outcomeA?.kind, describeOutcome(seen.outcomeA)).toBe('granted');
    if (seen.outcomeA?.kind === 'granted') expect(seen.outcomeA.handle.owner).toBe('A-retry');
  });
});
