// The client-side session (src/client/session.ts) against a scripted server, on fake time: one RenewSession
// per ttl/3 keeps it and every hold under it; holds never renew themselves; a refused renew or a passed
// local deadline turns the session and all its holds LOST at once; close releases them.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LockClient, SessionLostError } from '../../../src/client/index.js';
import { FakeRpc, granted, hangUntilDeadline } from './fake-rpc.js';

const TTL = 900;
let rpc: FakeRpc;
let client: LockClient;

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
  rpc = new FakeRpc();
  rpc.handlers.OpenSession = () => ({ session_id: '17', ttl_ms: String(TTL), expires_at_ms: '0' });
  rpc.handlers.Acquire = (req) => granted(String(100 + rpc.of('Acquire').length), 0);
  rpc.handlers.RenewSession = () => ({ renewed: true, ttl_ms: String(TTL), expires_at_ms: '0', reason: 'UNSPECIFIED' });
  rpc.handlers.CloseSession = () => ({ closed: true, released: ['a', 'b'], reason: 'UNSPECIFIED' });
  client = new LockClient({ endpoints: 'fake:1', rpc, now: () => Date.now(), clientId: 'host:1:abcd' });
});

afterEach(() => {
  client.close();
  vi.useRealTimers();
});

describe('client sessions', () => {
  it('acquires under the session (ttl 0, session_id), and one renew per ttl/3 keeps every hold', async () => {
    const session = await client.session({ ttlMs: TTL });
    expect(session.id).toBe(17n);
    const a = await session.acquire('a');
    const b = await session.acquire('b', { value: 'x' });
    expect(rpc.of('Acquire')[0]!.request).toMatchObject({ key: 'a', owner: session.owner, ttl_ms: '0', session_id: '17' });
    await vi.advanceTimersByTimeAsync(3 * TTL);
    expect(rpc.of('RenewSession').length).toBeGreaterThanOrEqual(8);
    expect(rpc.of('RenewSession').length).toBeLessThanOrEqual(10);
    expect(rpc.of('Renew')).toHaveLength(0); // holds never renew themselves
    expect([session.state, a.state, b.state]).toEqual(['ACTIVE', 'ACTIVE', 'ACTIVE']);
    // A hold reports its session's time left, not a deadline of its own.
    expect(a.remainingMs()).toBe(session.remainingMs());
    expect(a.remainingMs()).toBeGreaterThan(0);
    expect(a.remainingMs()).toBeLessThanOrEqual(TTL);
  });

  it('a refused renew turns the session and all its holds LOST at once', async () => {
    const session = await client.session({ ttlMs: TTL });
    const a = await session.acquire('a');
    rpc.handlers.RenewSession = () => ({ renewed: false, ttl_ms: '0', expires_at_ms: '0', reason: 'EXPIRED' });
    await vi.advanceTimersByTimeAsync(TTL / 3 + 1);
    expect(session.state).toBe('LOST');
    expect(session.lostReason).toBeInstanceOf(SessionLostError);
    expect(a.state).toBe('LOST');
    expect(a.lostReason?.reason).toBe('SESSION_LOST');
    expect(a.signal.aborted).toBe(true);
    await expect(session.acquire('c')).rejects.toBeInstanceOf(SessionLostError);
  });

  it('with the server silent, the local deadline ends it (read synchronously, before any timer runs)', async () => {
    const session = await client.session({ ttlMs: TTL });
    const a = await session.acquire('a');
    rpc.handlers.RenewSession = (_req, call, signal) => hangUntilDeadline(call, signal);
    // Jump the clock without running timers (a stalled event loop): reading the hold sees the deadline.
    vi.setSystemTime(Date.now() + TTL);
    expect(a.isActive()).toBe(false);
    expect(session.state).toBe('LOST');
    expect(session.lostReason?.reason).toBe('DEADLINE');
  });

  it('close releases every hold (RELEASED, not LOST) and reports the keys', async () => {
    const session = await client.session({ ttlMs: TTL });
    const a = await session.acquire('a');
    const result = await session.close();
    expect(result).toEqual({ closed: true, released: ['a', 'b'] });
    expect(session.state).toBe('CLOSED');
    expect(a.state).toBe('RELEASED');
    expect(rpc.of('CloseSession')[0]!.request).toMatchObject({ session_id: '17', owner: session.owner });
    expect(await a.release()).toEqual({ outcome: 'released', reason: 'UNSPECIFIED' });
    expect(rpc.of('Release')).toHaveLength(0);
  });
});
