// The client's Lock/Stream against a scripted in-process server: answers matched by call_id in any order,
// a deadline or an abort sends the server a cancel, a broken stream fails what is in flight as UNAVAILABLE
// (retryable with the same request_id), and a server without Stream is called unary instead.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { LockStream } from '../../../src/client/lock-stream.js';
import { EndpointPool, RpcError } from '../../../src/client/rpc.js';
import { type LockCall, type LockHandlers, lockGrpcService } from '../../../src/wire/lock.js';

type StreamHandler = LockHandlers['Stream'];

const unaryHandlers = (): Pick<LockHandlers, 'Acquire' | 'Renew' | 'Release' | 'Get'> => ({
  Acquire: (call, cb) => cb(null, { acquired: true, token: '42', holder_owner: call.request.owner }),
  Renew: (_call, cb) => cb(null, { renewed: true }),
  Release: (_call, cb) => cb(null, { released: true }),
  Get: (_call, cb) => cb(null, { held: false }),
});

const servers: grpc.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.forceShutdown();
});

async function serve(stream: StreamHandler | null): Promise<string> {
  const server = new grpc.Server();
  // Without a Stream handler grpc-js answers the method UNIMPLEMENTED, as a server from before it would.
  const handlers = { ...unaryHandlers(), ...(stream ? { Stream: stream } : {}) } as LockHandlers;
  server.addService(lockGrpcService.definition(), handlers);
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
  );
  servers.push(server);
  return `127.0.0.1:${port}`;
}

describe('LockStream (client side of Lock/Stream)', () => {
  it('matches answers to calls by call_id, in any order, and passes the leader hint', async () => {
    const seen: LockCall[] = [];
    const address = await serve((call) => {
      call.on('data', (m: LockCall) => {
        seen.push(m);
        if (seen.length < 3) return;
        // Answer the three calls in reverse order.
        for (const c of [...seen].reverse()) {
          call.write({ call_id: c.call_id, code: 0, leader: '10.0.0.1:7001', get: { held: true, owner: `owner-of-${c.get!.key}` } });
        }
      });
    });
    const s = new LockStream(lockGrpcService.client(address, grpc.credentials.createInsecure()));
    try {
      const keys = ['a', 'b', 'c'];
      const answers = await Promise.all(keys.map((key) => s.call<{ owner: string }>('Get', { key }, Date.now() + 5000)));
      expect(answers.map((a) => a.response.owner)).toEqual(['owner-of-a', 'owner-of-b', 'owner-of-c']);
      expect(answers.every((a) => a.leader === '10.0.0.1:7001')).toBe(true);
      expect(new Set(seen.map((m) => m.call_id)).size).toBe(3);
      expect(seen.every((m) => m.timeout_ms > 4000 && m.timeout_ms <= 5000)).toBe(true);
      expect(s.inFlight).toBe(0);
    } finally {
      s.close();
    }
  });

  it("an error answer rejects with the server's code and details", async () => {
    const address = await serve((call) =>
      call.on('data', (m: LockCall) =>
        call.write({ call_id: m.call_id, code: grpc.status.INVALID_ARGUMENT, details: 'key: must not be empty' }),
      ),
    );
    const s = new LockStream(lockGrpcService.client(address, grpc.credentials.createInsecure()));
    try {
      const err = await s.call('Acquire', { key: '' }, Date.now() + 5000).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RpcError);
      expect((err as RpcError).code).toBe(grpc.status.INVALID_ARGUMENT);
      expect((err as RpcError).details).toBe('key: must not be empty');
    } finally {
      s.close();
    }
  });

  it('a deadline rejects DEADLINE_EXCEEDED and tells the server to drop the call; an abort rejects CANCELLED the same way', async () => {
    const cancels: string[] = [];
    const address = await serve((call) => call.on('data', (m: LockCall) => m.cancel && cancels.push(m.call_id))); // never answers
    const s = new LockStream(lockGrpcService.client(address, grpc.credentials.createInsecure()));
    try {
      const late = await s.call('Get', { key: 'k' }, Date.now() + 100).catch((e: unknown) => e);
      expect((late as RpcError).code).toBe(grpc.status.DEADLINE_EXCEEDED);
      const ctl = new AbortController();
      const aborted = s.call('Get', { key: 'k' }, Date.now() + 10_000, ctl.signal).catch((e: unknown) => e);
      ctl.abort();
      expect(((await aborted) as RpcError).code).toBe(grpc.status.CANCELLED);
      for (let i = 0; i < 100 && cancels.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
      expect(cancels).toEqual(['1', '2']);
      expect(s.inFlight).toBe(0);
    } finally {
      s.close();
    }
  });

  it('a broken stream fails the calls in flight UNAVAILABLE (retryable), and the next call opens a new stream', async () => {
    let streams = 0;
    const address = await serve((call) => {
      streams++;
      call.on('data', (m: LockCall) => {
        if (streams === 1) call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'node shutting down' });
        else call.write({ call_id: m.call_id, code: 0, get: { held: false } });
      });
    });
    const s = new LockStream(lockGrpcService.client(address, grpc.credentials.createInsecure()));
    try {
      const err = await s.call('Get', { key: 'k' }, Date.now() + 5000).catch((e: unknown) => e);
      expect((err as RpcError).code).toBe(grpc.status.UNAVAILABLE);
      const ok = await s.call<{ held: boolean }>('Get', { key: 'k' }, Date.now() + 5000);
      expect(ok.response.held).toBe(false);
      expect(streams).toBe(2);
    } finally {
      s.close();
    }
  });

  it('EndpointPool calls a server without Lock/Stream unary (UNIMPLEMENTED stream -> unary fallback)', async () => {
    const address = await serve(null);
    const pool = new EndpointPool({ endpoints: [address] });
    try {
      const res = await pool.call<{ acquired: boolean; token: string; holder_owner: string }>(
        'Acquire',
        { key: 'k', owner: 'me', ttl_ms: '1000', request_id: 'r' },
        Date.now() + 5000,
      );
      expect(res).toMatchObject({ acquired: true, token: '42', holder_owner: 'me' });
    } finally {
      pool.close();
    }
  });

  it('EndpointPool uses the stream by default: the call reaches the Stream handler, not the unary one', async () => {
    const viaStream: string[] = [];
    const address = await serve((call) =>
      call.on('data', (m: LockCall) => {
        viaStream.push(m.request ?? '');
        call.write({ call_id: m.call_id, code: 0, acquire: { acquired: true, token: '7' } });
      }),
    );
    const pool = new EndpointPool({ endpoints: [address] });
    const unary = new EndpointPool({ endpoints: [address], lockCalls: 'unary' });
    try {
      expect(
        (await pool.call<{ token: string }>('Acquire', { key: 'k', owner: 'me', ttl_ms: '1000', request_id: 'r' }, Date.now() + 5000))
          .token,
      ).toBe('7');
      expect(viaStream).toEqual(['acquire']);
      expect(
        (await unary.call<{ token: string }>('Acquire', { key: 'k', owner: 'me', ttl_ms: '1000', request_id: 'r' }, Date.now() + 5000))
          .token,
      ).toBe('42');
      expect(viaStream).toEqual(['acquire']);
    } finally {
      pool.close();
      unary.close();
    }
  });
});
