// The client-side lock state machine (SPEC "Client-side state") against a scripted server, on fake time.
import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  LockClient,
  LockLostError,
  LockNotAcquiredError,
  LockReleasedError,
  UnavailableError,
  InvalidRequestError,
} from '../../../src/client/index.js';
import { RpcError } from '../../../src/client/rpc.js';
import { FakeRpc, granted, hangUntilDeadline, refused, renewed } from './fake-rpc.js';

const TTL = 1000;
const MARGIN = 20; // 2% of the ttl

let rpc: FakeRpc;
let client: LockClient;

function newClient(extra: Partial<ConstructorParameters<typeof LockClient>[0]> = {}) {
  return new LockClient({ endpoints: 'fake:1', rpc, now: () => Date.now(), clientId: 'host:1:abcd', ...extra });
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
  rpc = new FakeRpc();
  rpc.handlers.Acquire = () => granted('42', TTL);
  client = newClient();
});

afterEach(() => {
  client.close();
  vi.useRealTimers();
});

describe('acquire', () => {
  it('returns an ACTIVE handle with a bigint token, the key and a default owner unique per acquire', async () => {
    const a = await client.acquire('k', { ttlMs: TTL });
    const b = await client.acquire('other', { ttlMs: TTL });
    expect(a.state).toBe('ACTIVE');
    expect(a.token).toBe(42n);
    expect(a.key).toBe('k');
    expect(a.owner).toBe('host:1:abcd/1');
    expect(b.owner).toBe('host:1:abcd/2');
    expect(a.signal.aborted).toBe(false);
    const req = rpc.of('Acquire')[0]!.request;
    expect(req).toMatchObject({ key: 'k', owner: 'host:1:abcd/1', ttl_ms: '1000', wait_ms: '0' });
    expect(typeof req['request_id']).toBe('string');
  });

  it('keeps one request_id across attempts and shrinks only wait_ms', async () => {
    rpc.handlers.Acquire = () => new Promise((r) => setTimeout(() => r(granted('7')), 10));
    const p = client.acquire('k', { ttlMs: TTL, waitMs: 5000 });
    await vi.advanceTimersByTimeAsync(10);
    await p;
    const source = rpc.of('Acquire')[0]!.source as (attempt: number) => Record<string, unknown>;
    const first = source(0);
    vi.advanceTimersByTime(1200);
    const retry = source(1);
    expect(retry['request_id']).toBe(first['request_id']);
    expect(retry['owner']).toBe(first['owner']);
    expect(Number(first['wait_ms'])).toBe(4990);
    expect(Number(retry['wait_ms'])).toBe(3790);
  });

  it('a refusal is LockNotAcquiredError naming the holder and its remaining ttl', async () => {
    rpc.handlers.Acquire = () => ({
      acquired: false,
      token: '0',
      ttl_ms: '0',
      expires_at_ms: '0',
      holder_owner: 'worker-b',
      holder_ttl_ms: '750',
    });
    const err = await client.acquire('k', { ttlMs: TTL }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    expect(err).toMatchObject({ key: 'k', holder: 'worker-b', holderTtlMs: 750 });
    expect((err as Error).message).toMatch(/held by "worker-b" for up to another 750 ms.*waitMs/);
  });

  it('maps transport failures to UnavailableError and bad input to InvalidRequestError', async () => {
    rpc.handlers.Acquire = () => Promise.reject(new RpcError(grpc.status.UNAVAILABLE, 'no leader is elected right now'));
    const un = await client.acquire('k', { ttlMs: TTL }).catch((e: unknown) => e);
    expect(un).toBeInstanceOf(UnavailableError);
    expect((un as Error).message).toMatch(/no leasehold node answered.*fake:1.*majority/);
    rpc.handlers.Acquire = () => Promise.reject(new RpcError(grpc.status.INVALID_ARGUMENT, 'ttl_ms: must be at least 100'));
    const bad = await client.acquire('k', { ttlMs: 5 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidRequestError);
    expect((bad as Error).message).toContain('ttl_ms');
    await expect(client.acquire('', { ttlMs: TTL })).rejects.toThrow(/key must be a non-empty string/);
    await expect(client.acquire('k', { ttlMs: -1 })).rejects.toThrow(/ttlMs must be a positive integer/);
  });

  it('a grant that came back late is confirmed with a renew before the handle is handed out', async () => {
    // Response after 500 ms of a 1000 ms ttl: the deadline counted from the send would leave < 2/3 of it.
    rpc.handlers.Acquire = () => new Promise((r) => setTimeout(() => r(granted('9')), 500));
    rpc.handlers.Renew = () => renewed();
    const p = client.acquire('k', { ttlMs: TTL, waitMs: 2000 });
    await vi.advanceTimersByTimeAsync(500);
    const h = await p;
    expect(rpc.of('Renew')).toHaveLength(1);
    const renewAt = rpc.of('Renew')[0]!.at;
    // Re-anchored on the renew's send time: still ACTIVE until renewAt + ttl - margin (renewals hang from now on).
    rpc.handlers.Renew = (_q, call, signal) => hangUntilDeadline(call, signal);
    await vi.advanceTimersByTimeAsync(renewAt + TTL - MARGIN - 1 - Date.now());
    expect(h.state).toBe('ACTIVE');
    await vi.advanceTimersByTimeAsync(1);
    expect(h.state).toBe('LOST');
  });

  it('a late grant whose confirming renew is refused is reported as LockLostError', async () => {
    rpc.handlers.Acquire = () => new Promise((r) => setTimeout(() => r(granted('9')), 600));
    rpc.handlers.Renew = () => refused('EXPIRED');
    const p = client.acquire('k', { ttlMs: TTL, waitMs: 2000 }).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(600);
    const err = await p;
    expect(err).toBeInstanceOf(LockLostError);
    expect(err).toMatchObject({ reason: 'EXPIRED', token: 9n });
    expect(client.heldLocks()).toHaveLength(0);
  });
});

describe('auto-renew and LOST', () => {
  it('renews about every ttl/3, each renew with a new request_id, and emits renewed', async () => {
    rpc.handlers.Renew = () => renewed();
    const h = await client.acquire('k', { ttlMs: TTL });
    const events: number[] = [];
    h.on('renewed', (e) => events.push(e.ttlMs));
    await vi.advanceTimersByTimeAsync(3 * TTL);
    const renews = rpc.of('Renew');
    expect(renews.length).toBeGreaterThanOrEqual(8);
    expect(renews.length).toBeLessThanOrEqual(10);
    for (let i = 1; i < renews.length; i++) expect(renews[i]!.at - renews[i - 1]!.at).toBe(333);
    expect(new Set(renews.map((r) => r.request['request_id'])).size).toBe(renews.length);
    expect(renews[0]!.request).toMatchObject({ key: 'k', owner: h.owner, token: '42', ttl_ms: '1000' });
    expect(events.length).toBe(renews.length);
    expect(h.state).toBe('ACTIVE');
  });

  it('a refused renew turns the handle LOST at once: signal aborted with the reason, lost emitted once, renewals stop', async () => {
    rpc.handlers.Renew = () => refused('WRONG_TOKEN');
    const h = await client.acquire('k', { ttlMs: TTL });
    const lost: LockLostError[] = [];
    h.on('lost', (e) => lost.push(e));
    await vi.advanceTimersByTimeAsync(333);
    expect(h.state).toBe('LOST');
    expect(lost).toHaveLength(1);
    expect(lost[0]!.reason).toBe('WRONG_TOKEN');
    expect(h.signal.aborted).toBe(true);
    expect(h.signal.reason).toBe(lost[0]);
    expect(() => h.assertActive()).toThrow(LockLostError);
    await vi.advanceTimersByTimeAsync(5 * TTL);
    expect(rpc.of('Renew')).toHaveLength(1);
    expect(lost).toHaveLength(1);
  });

  it('without a confirmed renew the handle is LOST at (acquire SENT time + ttl - margin), not later', async () => {
    rpc.handlers.Acquire = () => new Promise((r) => setTimeout(() => r(granted('5')), 200)); // slow response
    rpc.handlers.Renew = (_q, call, signal) => hangUntilDeadline(call, signal);
    const sentAt = Date.now();
    const p = client.acquire('k', { ttlMs: TTL });
    await vi.advanceTimersByTimeAsync(200);
    const h = await p;
    let lostAt = 0;
    h.on('lost', (e) => {
      lostAt = Date.now();
      expect(e.reason).toBe('DEADLINE');
    });
    await vi.advanceTimersByTimeAsync(sentAt + TTL - MARGIN - 1 - Date.now());
    expect(h.state).toBe('ACTIVE');
    await vi.advanceTimersByTimeAsync(1);
    expect(lostAt).toBe(sentAt + TTL - MARGIN);
    // The renew sent at sentAt + 333 was still retrying (same request): it is cancelled.
    expect(rpc.of('Renew')).toHaveLength(1);
  });

  it('a renew confirmed only after the deadline passed does not revive the handle (LOST is final)', async () => {
    let answer: ((v: unknown) => void) | null = null;
    rpc.handlers.Renew = () => new Promise((r) => (answer = r));
    const h = await client.acquire('k', { ttlMs: TTL });
    await vi.advanceTimersByTimeAsync(TTL);
    expect(h.state).toBe('LOST');
    answer!(renewed());
    await vi.advanceTimersByTimeAsync(TTL);
    expect(h.state).toBe('LOST');
  });

  it('after a pause (timers not run yet) reading state/signal/assertActive turns it LOST before any write', async () => {
    rpc.handlers.Renew = () => renewed();
    const h = await client.acquire('k', { ttlMs: TTL });
    const lost = vi.fn();
    h.on('lost', lost);
    // The process was frozen: the clock jumped, no timer has fired.
    vi.setSystemTime(Date.now() + 5 * TTL);
    expect(lost).not.toHaveBeenCalled();
    expect(() => h.assertActive()).toThrow(LockLostError);
    expect(h.signal.aborted).toBe(true);
    expect(h.state).toBe('LOST');
    expect(lost).toHaveBeenCalledTimes(1);
  });

  it('close() turns every ACTIVE handle LOST (CLIENT_CLOSED) and closes the channels', async () => {
    rpc.handlers.Renew = () => renewed();
    const h = await client.acquire('k', { ttlMs: TTL });
    client.close();
    expect(h.state).toBe('LOST');
    expect(h.lostReason?.reason).toBe('CLIENT_CLOSED');
    expect(rpc.closed).toBe(true);
    await expect(client.acquire('k', { ttlMs: TTL })).rejects.toBeInstanceOf(UnavailableError);
  });
});

describe('release', () => {
  it('RELEASED at once (signal aborted, renewals stop); idempotent: a second call sends nothing', async () => {
    rpc.handlers.Renew = () => renewed();
    rpc.handlers.Release = () => ({ released: true, reason: 'UNSPECIFIED' });
    const h = await client.acquire('k', { ttlMs: TTL });
    const r1 = await h.release();
    expect(r1.outcome).toBe('released');
    expect(h.state).toBe('RELEASED');
    expect(h.signal.aborted).toBe(true);
    expect(h.signal.reason).toBeInstanceOf(LockReleasedError);
    expect(() => h.assertActive()).toThrow(LockReleasedError);
    expect(await h.release()).toEqual(r1);
    expect(rpc.of('Release')).toHaveLength(1);
    expect(rpc.of('Release')[0]!.request).toMatchObject({ key: 'k', owner: h.owner, token: '42' });
    await vi.advanceTimersByTimeAsync(3 * TTL);
    expect(rpc.of('Renew')).toHaveLength(0);
  });

  it('retrying after a failure reuses the same request_id; NOT_HELD counts as clean', async () => {
    const h = await client.acquire('k', { ttlMs: TTL });
    rpc.handlers.Release = () => Promise.reject(new RpcError(grpc.status.UNAVAILABLE, 'connection reset'));
    await expect(h.release()).rejects.toBeInstanceOf(UnavailableError);
    expect(h.state).toBe('RELEASED');
    rpc.handlers.Release = () => ({ released: false, reason: 'NOT_HELD' });
    const r = await h.release();
    expect(r).toEqual({ outcome: 'not-held', reason: 'NOT_HELD' });
    const ids = rpc.of('Release').map((c) => c.request['request_id']);
    expect(ids).toHaveLength(2);
    expect(ids[0]).toBe(ids[1]);
  });

  it('a lock that moved on is reported held-by-another, not thrown', async () => {
    const h = await client.acquire('k', { ttlMs: TTL });
    rpc.handlers.Release = () => ({ released: false, reason: 'WRONG_OWNER' });
    expect(await h.release()).toEqual({ outcome: 'held-by-another', reason: 'WRONG_OWNER' });
  });

  it('await using releases at the end of the scope, and never throws from dispose', async () => {
    rpc.handlers.Release = () => ({ released: true, reason: 'UNSPECIFIED' });
    let token = 0n;
    {
      await using lock = await client.acquire('k', { ttlMs: TTL });
      token = lock.assertActive();
    }
    expect(token).toBe(42n);
    expect(rpc.of('Release')).toHaveLength(1);
    rpc.handlers.Release = () => Promise.reject(new RpcError(grpc.status.UNAVAILABLE, 'down'));
    {
      await using _lock = await client.acquire('k2', { ttlMs: TTL });
    }
    expect(rpc.of('Release')).toHaveLength(2);
  });
});

describe('withLock', () => {
  beforeEach(() => {
    rpc.handlers.Renew = () => renewed();
    rpc.handlers.Release = () => ({ released: true, reason: 'UNSPECIFIED' });
  });

  it('runs the function with an ACTIVE lock and releases after it returns', async () => {
    const out = await client.withLock('k', { ttlMs: TTL }, async (lock) => {
      expect(lock.state).toBe('ACTIVE');
      return lock.token * 2n;
    });
    expect(out).toBe(84n);
    expect(rpc.of('Release')).toHaveLength(1);
  });

  it('releases when the function throws and rethrows its error', async () => {
    await expect(
      client.withLock('k', { ttlMs: TTL }, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(rpc.of('Release')).toHaveLength(1);
  });

  it('aborts the signal on loss; rejects with LockLostError (cause: the function error) and still releases', async () => {
    rpc.handlers.Renew = () => refused('EXPIRED');
    const p = client
      .withLock(
        'k',
        { ttlMs: TTL },
        (lock) => new Promise((_, reject) => lock.signal.addEventListener('abort', () => reject(new Error('stopped: lock gone')))),
      )
      .catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(400);
    const err = (await p) as LockLostError;
    expect(err).toBeInstanceOf(LockLostError);
    expect(err.reason).toBe('EXPIRED');
    expect((err.cause as Error).message).toBe('stopped: lock gone');
    expect(rpc.of('Release')).toHaveLength(1);
  });

  it('rejects with LockLostError even if the function ignored the signal and completed', async () => {
    rpc.handlers.Renew = () => refused('WRONG_OWNER');
    const p = client.withLock('k', { ttlMs: TTL }, () => new Promise((r) => setTimeout(() => r('done'), 500))).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(500);
    expect(await p).toBeInstanceOf(LockLostError);
  });
});
