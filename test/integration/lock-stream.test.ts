// Lock/Stream on a real 3-node cluster: many calls on one stream answered by call_id, each exactly as its
// unary call would be (validation, forwarding, the leader hint); a cancel takes a queued acquire out of
// the line; a malformed message ends the stream; a bad request fails only its own call.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WireInput } from '../../src/wire/scalars.js';
import { type LockAnswer, type LockCall, lockGrpcService } from '../../src/wire/lock.js';
import { TestCluster } from './harness.js';

type Stream = grpc.ClientDuplexStream<WireInput<LockCall>, LockAnswer>;

/** A raw Lock/Stream with a helper that waits for the answer to one call_id. */
function openStream(address: string): {
  stream: Stream;
  answers: Map<string, LockAnswer>;
  next(id: string, timeoutMs?: number): Promise<LockAnswer>;
  ended: Promise<grpc.ServiceError | null>;
  close(): void;
} {
  const client = lockGrpcService.client(address, grpc.credentials.createInsecure());
  const stream = client.Stream();
  const answers = new Map<string, LockAnswer>();
  const waiters = new Map<string, (a: LockAnswer) => void>();
  stream.on('data', (a: LockAnswer) => {
    answers.set(a.call_id, a);
    waiters.get(a.call_id)?.(a);
  });
  const ended = new Promise<grpc.ServiceError | null>((resolve) => {
    stream.on('error', (e: grpc.ServiceError) => resolve(e));
    stream.on('end', () => resolve(null));
  });
  return {
    stream,
    answers,
    next: (id, timeoutMs = 5000) =>
      new Promise((resolve, reject) => {
        const have = answers.get(id);
        if (have) return resolve(have);
        const t = setTimeout(() => reject(new Error(`no answer to call ${id} within ${timeoutMs} ms`)), timeoutMs);
        waiters.set(id, (a) => {
          clearTimeout(t);
          resolve(a);
        });
      }),
    ended,
    close: () => {
      stream.cancel();
      client.close();
    },
  };
}

describe('Lock/Stream', () => {
  let c: TestCluster;
  let leader: string;
  let follower: string;
  beforeAll(async () => {
    c = await TestCluster.create({ size: 3 });
    c.startAll();
    leader = (await c.waitForLeader()).leader;
    follower = c.ids.find((id) => id !== leader)!;
  });
  afterAll(async () => {
    await c?.stop();
  });

  it('serves many calls at once on one stream, each answered under its call_id, via a follower too', async () => {
    const s = openStream(c.endpoint(follower));
    try {
      const n = 40;
      for (let i = 1; i <= n; i++) {
        s.stream.write({
          call_id: String(i),
          timeout_ms: 5000,
          acquire: { key: `ls-${i}`, owner: `o${i}`, ttl_ms: '10000', request_id: `ls-req-${i}` },
        });
      }
      const answers = await Promise.all(Array.from({ length: n }, (_, i) => s.next(String(i + 1))));
      const tokens = new Set<string>();
      for (const a of answers) {
        expect(a.code).toBe(grpc.status.OK);
        expect(a.response).toBe('acquire');
        expect(a.acquire?.acquired).toBe(true);
        tokens.add(a.acquire!.token);
        // The follower forwarded it, and names the leader's client address for next time.
        expect(a.leader).toBe(c.endpoint(leader));
      }
      expect(tokens.size).toBe(n);
      // A Get on the same stream sees one of them held, with its token.
      s.stream.write({ call_id: '100', get: { key: 'ls-7' } });
      const got = await s.next('100');
      expect(got.get?.held).toBe(true);
      expect(got.get?.owner).toBe('o7');
      expect(got.get?.token).toBe(answers[6]!.acquire!.token);
    } finally {
      s.close();
    }
  }, 30_000);

  it('a bad request fails only its own call (INVALID_ARGUMENT naming the field); the stream goes on', async () => {
    const s = openStream(c.endpoint(leader));
    try {
      s.stream.write({ call_id: '1', acquire: { key: '', owner: 'o', ttl_ms: '1000', request_id: 'bad-1' } });
      s.stream.write({ call_id: '2' }); // no request at all
      s.stream.write({ call_id: '3', acquire: { key: 'ok-after-bad', owner: 'o', ttl_ms: '1000', request_id: 'ok-3' } });
      const [bad, empty, ok] = await Promise.all([s.next('1'), s.next('2'), s.next('3')]);
      expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(bad.details).toMatch(/^key:/);
      expect(empty.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(empty.details).toMatch(/request/);
      expect(ok.code).toBe(grpc.status.OK);
      expect(ok.acquire?.acquired).toBe(true);
    } finally {
      s.close();
    }
  }, 30_000);

  it('a call_id already in flight is refused without touching the first call', async () => {
    const holder = openStream(c.endpoint(leader));
    const s = openStream(c.endpoint(leader));
    try {
      holder.stream.write({ call_id: '1', acquire: { key: 'dup-id', owner: 'h', ttl_ms: '10000', request_id: 'dup-h' } });
      expect((await holder.next('1')).acquire?.acquired).toBe(true);
      s.stream.write({
        call_id: '7',
        timeout_ms: 3000,
        acquire: { key: 'dup-id', owner: 'w', ttl_ms: '10000', wait_ms: '2000', request_id: 'dup-w' },
      });
      s.stream.write({ call_id: '7', get: { key: 'dup-id' } });
      const refused = await s.next('7');
      expect(refused.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(refused.details).toMatch(/call_id: 7 is already in flight/);
    } finally {
      holder.close();
      s.close();
    }
  }, 30_000);

  it('a cancel takes a queued acquire out of the line: the lock goes to the waiter behind it', async () => {
    const s = openStream(c.endpoint(leader));
    try {
      s.stream.write({ call_id: '1', acquire: { key: 'cancel-me', owner: 'h', ttl_ms: '10000', request_id: 'c-h' } });
      const held = await s.next('1');
      expect(held.acquire?.acquired).toBe(true);
      s.stream.write({
        call_id: '2',
        timeout_ms: 20_000,
        acquire: { key: 'cancel-me', owner: 'first', ttl_ms: '10000', wait_ms: '15000', request_id: 'c-first' },
      });
      // Let the first waiter reach the queue before the second.
      await new Promise((r) => setTimeout(r, 200));
      s.stream.write({
        call_id: '3',
        timeout_ms: 20_000,
        acquire: { key: 'cancel-me', owner: 'second', ttl_ms: '10000', wait_ms: '15000', request_id: 'c-second' },
      });
      await new Promise((r) => setTimeout(r, 200));
      s.stream.write({ call_id: '2', cancel: true });
      s.stream.write({ call_id: '4', release: { key: 'cancel-me', owner: 'h', token: held.acquire!.token, request_id: 'c-rel' } });
      expect((await s.next('4')).release?.released).toBe(true);
      const second = await s.next('3');
      expect(second.acquire?.acquired).toBe(true);
      expect(s.answers.has('2')).toBe(false); // a cancelled call gets no answer
    } finally {
      s.close();
    }
  }, 30_000);

  it('a malformed message (an unknown field) ends the stream with INVALID_ARGUMENT', async () => {
    const client = lockGrpcService.client(c.endpoint(leader), grpc.credentials.createInsecure());
    // A raw stream with a pass-through serializer, so we can send bytes no well-behaved client would.
    const raw = client.makeBidiStreamRequest(
      '/leasehold.v1.Lock/Stream',
      (b: Buffer) => b,
      (b: Buffer) => b,
    );
    try {
      const ended = new Promise<grpc.ServiceError>((resolve) => raw.on('error', resolve));
      raw.on('data', () => {});
      // call_id = 1, then field 99 (varint): unknown in LockCall.
      raw.write(Buffer.from([0x08, 0x01, 0x98, 0x06, 0x01]));
      const err = await ended;
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toMatch(/malformed lock call: .*unknown field number 99/);
    } finally {
      raw.cancel();
      client.close();
    }
  }, 30_000);
});
