// A re-acquire ends the hold it may supersede at the send (issue 38): the server's answer to an acquire of
// a key by the owner that holds it (under the same session) is a new token that supersedes the old one, and
// an answer that never comes may have done so, so the client stops trusting the old hold before it sends.
import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LockClient, UnavailableError } from '../../../src/client/index.js';
import { RpcError } from '../../../src/client/rpc.js';
import { FakeRpc, granted } from './fake-rpc.js';

const TTL = 1000;
let rpc: FakeRpc;
let client: LockClient;

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
  rpc = new FakeRpc();
  rpc.handlers.Acquire = () => granted(String(40 + rpc.of('Acquire').length), TTL);
  rpc.handlers.Renew = () => ({ renewed: true, ttl_ms: String(TTL), expires_at_ms: '0', reason: 'UNSPECIFIED' });
  rpc.handlers.OpenSession = () => ({ session_id: '17', ttl_ms: String(TTL), expires_at_ms: '0' });
  rpc.handlers.RenewSession = () => ({ renewed: true, ttl_ms: String(TTL), expires_at_ms: '0', reason: 'UNSPECIFIED' });
  client = new LockClient({ endpoints: 'fake:1', rpc, now: () => Date.now(), clientId: 'host:1:abcd', timeoutMs: 500 });
});

afterEach(() => {
  client.close();
  vi.useRealTimers();
});

describe('a re-acquire by the same owner', () => {
  it('turns the held handle LOST (SUPERSEDED) before the acquire is sent; the new handle carries the new token', async () => {
    const first = await client.acquire('k', { ttlMs: TTL, owner: 'worker' });
    let stateAtSend: string | null = null;
    rpc.handlers.Acquire = () => {
      stateAtSend = first.state;
      return granted('77', TTL);
    };
    const second = await client.acquire('k', { ttlMs: TTL, owner: 'worker' });
    expect(stateAtSend).toBe('LOST');
    expect(first.lostReason?.reason).toBe('SUPERSEDED');
    expect(first.signal.aborted).toBe(true);
    expect([second.state, second.token]).toEqual(['ACTIVE', 77n]);
  });

  it('with its outcome unknown (no node answered), the old hold stays LOST: the unknown answer may have superseded it', async () => {
    const first = await client.acquire('k', { ttlMs: TTL, owner: 'worker' });
    rpc.handlers.Acquire = () => Promise.reject(new RpcError(grpc.status.UNAVAILABLE, 'no leader'));
    const attempt = client.acquire('k', { ttlMs: TTL, owner: 'worker' });
    const outcome = expect(attempt).rejects.toBeInstanceOf(UnavailableError);
    await vi.advanceTimersByTimeAsync(1000);
    await outcome;
    expect(first.state).toBe('LOST');
    expect(first.lostReason?.reason).toBe('SUPERSEDED');
  });

  it('another owner, or another key, leaves the hold alone', async () => {
    const first = await client.acquire('k', { ttlMs: TTL, owner: 'worker' });
    await client.acquire('k', { ttlMs: TTL, owner: 'other' });
    await client.acquire('j', { ttlMs: TTL, owner: 'worker' });
    expect(first.state).toBe('ACTIVE');
  });

  it("a session's acquire of a key it holds ends that hold at the send; its other holds and the session stay", async () => {
    const session = await client.session({ ttlMs: TTL });
    const a = await session.acquire('a');
    const b = await session.acquire('b');
    let stateAtSend: string | null = null;
    rpc.handlers.Acquire = () => {
      stateAtSend = a.state;
      return granted('90', 0);
    };
    const again = await session.acquire('a');
    expect(stateAtSend).toBe('LOST');
    expect(a.lostReason?.reason).toBe('SUPERSEDED');
    expect([again.state, again.token, b.state, session.state]).toEqual(['ACTIVE', 90n, 'ACTIVE', 'ACTIVE']);
    expect(session.heldLocks()).toEqual([b, again]);
  });
});
