// A unary lock call on the server (lock-unary.ts over lock-calls.ts, with lock-unary-codec.ts's codecs):
// a follower that forwarded two unary calls on its Forward stream answers each with the leader's bytes for
// that call, written as they came (issue 37: no decode and re-encode), whatever order the leader answers
// in; the leader hint goes with each reply; the reply serializer writes bytes as they are and objects by
// the one response encoder; only the hot calls' requests leave the strict walk.
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LOCK_LIMITS } from '../../../src/lock/validate.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import { LeaderUnavailableError, type LockService } from '../../../src/lock-on-raft/lock-service.js';
import {
  decodeRequestBody,
  decodeResponseBody,
  encodeRequestBody,
  encodeResponseBody,
  encodeResponseBodyWithProtobufjs,
} from '../../../src/server/client-api/call-bodies.js';
import { LockCallHandling, type AnswerEncoder, type LockCallMethod } from '../../../src/server/client-api/lock-calls.js';
import { withLockUnaryCodecs } from '../../../src/server/client-api/lock-unary-codec.js';
import { UnaryLockCalls } from '../../../src/server/client-api/lock-unary.js';
import { descriptorRegistry, strictRequestDeserializers } from '../../../src/server/client-api/strict-decode.js';
import { ForwardStream } from '../../../src/transport/forward.js';
import type { CallEnvelope } from '../../../src/wire/call-envelope.js';
import { decodeAnswerEnvelope, decodeCallEnvelope } from '../../../src/wire/call-envelope-decode.js';
import { encodeAnswerEnvelope } from '../../../src/wire/call-envelope-encode.js';
import { packageDefinition } from '../../../src/wire/load.js';
import { LEADER_METADATA, lockGrpcService, type LockCallName } from '../../../src/wire/lock.js';
import type { RaftStub } from '../../../src/wire/raft.js';

type Methods = Record<string, grpc.MethodDefinition<unknown, unknown> & { ownStrictDecoder?: true }>;
const definition = lockGrpcService.definition() as unknown as grpc.ServiceDefinition;
const registered = strictRequestDeserializers(
  withLockUnaryCodecs(definition),
  descriptorRegistry(packageDefinition()),
) as unknown as Methods;

/** A unary call as grpc-js hands it to a handler (from a client whose certificate CN is `cn`), recording the
 *  metadata sent and how often the caller's certificate and address were read. */
function unaryCall(request: unknown, deadlineMs: number, cn?: string) {
  const call = new EventEmitter() as EventEmitter & Record<string, unknown>;
  const sent: grpc.Metadata[] = [];
  const reads = { authContext: 0, peer: 0 };
  Object.assign(call, {
    request,
    metadata: new grpc.Metadata(),
    getDeadline: () => new Date(deadlineMs),
    getAuthContext: () => (reads.authContext++, cn === undefined ? {} : { sslPeerCertificate: { subject: { CN: cn } } }),
    getPeer: () => (reads.peer++, 'ipv4:127.0.0.1:5555'),
    sendMetadata: (md: grpc.Metadata) => sent.push(md),
  });
  return { call: call as unknown as grpc.ServerUnaryCall<unknown, unknown>, sent, reads };
}

/** The follower F (not leading, names L) with its Forward stream to L: `written` is what F sent, `answer` the leader's reply. */
function follower(opts: { ownerBinding?: boolean } = {}) {
  const nowMs = Date.now();
  const service = {
    node: { id: 'F', leaderId: 'L' },
    notLeading: 'L',
    notLeadingError: () => new LeaderUnavailableError('not the leader', 'L'),
  } as unknown as LockService;
  const grpcStream = new EventEmitter() as EventEmitter & { write(b: Uint8Array): boolean; cancel(): void };
  const written: CallEnvelope[] = [];
  grpcStream.write = (b) => (written.push(decodeCallEnvelope(Buffer.from(b), 'forward')), true);
  grpcStream.cancel = () => {};
  const client = { Forward: () => grpcStream } as unknown as RaftStub;
  const link = new ForwardStream(client, () => ({ from: 'F', clusterId: 'c-1' }), 'L');
  let leader = 'leader:7001';
  const calls = new LockCallHandling<unknown>({
    service,
    limits: DEFAULT_LOCK_LIMITS,
    defaultTimeoutMs: 5000,
    encode: new Proxy({}, { get: () => () => ({}) }) as AnswerEncoder<unknown>,
    bodies: { request: encodeRequestBody, response: encodeResponseBody },
    logger: silentNodeLogger,
    nowMs: () => Date.now(),
    after: () => {},
    leaderAddress: () => leader,
    forwardVia: () => link,
    detachedWaiterGraceMs: 2000,
    ...(opts.ownerBinding ? { ownerBinding: true, isMember: (id: string) => id === 'L' || id === 'F' } : {}),
  });
  const unary = new UnaryLockCalls(calls);
  /** A unary call to F; resolves with what the handler's callback got. */
  const send = (method: LockCallMethod, request: unknown, cn?: string) => {
    const { call, sent, reads } = unaryCall(request, nowMs + 9000, cn);
    const reply = new Promise<{ err: grpc.ServiceError | null; value: unknown }>((resolve) =>
      unary.serve(method, call, (err, value) => resolve({ err, value })),
    );
    return { reply, sent, reads, call };
  };
  const answer = (callId: string, name: LockCallName, body: Uint8Array) =>
    grpcStream.emit('data', decodeAnswerEnvelope(encodeAnswerEnvelope({ callId, code: 0, name, body }, 'forward'), 'forward'));
  return { send, answer, written, setLeader: (l: string) => (leader = l) };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

const acquire = (key: string, requestId: string) => ({ key, owner: 'o', ttl_ms: '10000', wait_ms: '0', request_id: requestId });

describe('unary lock calls on a follower that forwards them on its Forward stream', () => {
  it("two calls in flight, answered out of order: each reply is the leader's bytes for that call, as they came", async () => {
    const f = follower();
    const a = f.send('Acquire', acquire('a', 'ra'));
    const b = f.send('Acquire', acquire('b', 'rb'));
    await flush();
    expect(f.written).toHaveLength(2);
    const [wa, wb] = f.written;
    expect(decodeRequestBody('acquire', wa!.body!)).toStrictEqual({ request: { ...acquire('a', 'ra'), ...DEFAULTS } });
    expect(decodeRequestBody('acquire', wb!.body!)).toStrictEqual({ request: { ...acquire('b', 'rb'), ...DEFAULTS } });
    const respA = encodeResponseBody('acquire', { acquired: true, token: 2n ** 60n + 1n, ttl_ms: 10_000 });
    const respB = encodeResponseBody('acquire', { acquired: false, holder_owner: 'someone-else', holder_ttl_ms: 4000 });
    f.answer(wb!.callId, 'acquire', respB);
    f.answer(wa!.callId, 'acquire', respA);
    const [ra, rb] = await Promise.all([a.reply, b.reply]);
    expect([ra.err, rb.err]).toEqual([null, null]);
    expect(Buffer.compare(Buffer.from(ra.value as Uint8Array), respA)).toBe(0);
    expect(Buffer.compare(Buffer.from(rb.value as Uint8Array), respB)).toBe(0);
    // What the client reads: the method's serializer writes the bytes as they are.
    const wire = (v: unknown) => decodeResponseBody('acquire', registered.Acquire!.responseSerialize(v));
    expect(wire(ra.value)).toMatchObject({ acquired: true, token: String(2n ** 60n + 1n), ttl_ms: '10000', holder_owner: '' });
    expect(wire(rb.value)).toMatchObject({ acquired: false, token: '0', holder_owner: 'someone-else', holder_ttl_ms: '4000' });
    for (const r of [a, b]) expect(r.sent.map((md) => md.get(LEADER_METADATA))).toEqual([['leader:7001']]);
  });

  it('the leader hint follows the leader: the same hint is the same metadata, a new leader a new one', async () => {
    const f = follower();
    const calls = [f.send('Get', { key: 'x' }), f.send('Get', { key: 'y' })];
    await flush();
    f.answer(f.written[0]!.callId, 'get', encodeResponseBody('get', {}));
    f.answer(f.written[1]!.callId, 'get', encodeResponseBody('get', {}));
    await Promise.all(calls.map((c) => c.reply));
    expect(calls[0]!.sent[0]).toBe(calls[1]!.sent[0]);
    f.setLeader('leader:7002');
    const third = f.send('Get', { key: 'z' });
    await flush();
    f.answer(f.written[2]!.callId, 'get', encodeResponseBody('get', {}));
    await third.reply;
    expect(third.sent.map((md) => md.get(LEADER_METADATA))).toEqual([['leader:7002']]);
  });

  it("the caller's certificate is read when owner binding asks for it, and not otherwise", async () => {
    const bound = follower({ ownerBinding: true });
    const bob = bound.send('Release', { key: 'k', owner: 'bob', token: '7', request_id: 'r' }, 'alice');
    const { err } = await bob.reply;
    expect([err?.code, err?.details]).toEqual([
      grpc.status.PERMISSION_DENIED,
      'owner "bob" does not match the client certificate CN "alice" (auth.ownerBinding)',
    ]);
    expect(bob.reads.authContext).toBe(1);
    const alice = bound.send('Release', { key: 'k', owner: 'alice', token: '7', request_id: 'r' }, 'alice');
    await flush();
    expect(bound.written).toHaveLength(1);
    bound.answer(bound.written[0]!.callId, 'release', encodeResponseBody('release', { released: true }));
    expect((await alice.reply).err).toBeNull();
    const open = follower();
    const plain = open.send('Release', { key: 'k', owner: 'bob', token: '7', request_id: 'r' }, 'alice');
    await flush();
    open.answer(open.written[0]!.callId, 'release', encodeResponseBody('release', { released: true }));
    expect((await plain.reply).err).toBeNull();
    expect(plain.reads).toEqual({ authContext: 0, peer: 0 });
  });

  it("the caller going away (grpc-js 'cancelled') cancels the forwarded call at the leader", async () => {
    const f = follower();
    const a = f.send('Acquire', acquire('a', 'ra'));
    await flush();
    a.call.emit('cancelled', 'client cancelled');
    expect(f.written).toHaveLength(2);
    expect(f.written[1]).toMatchObject({ callId: f.written[0]!.callId, cancel: true, name: undefined });
  });

  it('a request the decoder refused is INVALID_ARGUMENT with its reason, and nothing is forwarded', async () => {
    const f = follower();
    const bad = f.send('Acquire', registered.Acquire!.requestDeserialize(Buffer.from([0x58, 1])));
    const { err } = await bad.reply;
    expect([err?.code, err?.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'AcquireRequest: unknown field number 11']);
    expect(f.written).toHaveLength(0);
    expect(bad.sent).toHaveLength(0);
  });
});

const DEFAULTS = { lock_delay_ms: '0', value: Buffer.alloc(0), session_id: '0', limit: 0, shared: false };

describe("the unary lock methods' codecs", () => {
  it('a reply given as bytes is written as it is; an object by the one response encoder (protobufjs for the others)', () => {
    const bytes = encodeResponseBody('release', { released: true });
    expect(registered.Release!.responseSerialize(bytes)).toBe(bytes);
    const view = new Uint8Array([8, 1, 16, 2]).subarray(2);
    const written = registered.Renew!.responseSerialize(view);
    expect([Buffer.isBuffer(written), written.buffer, [...written]]).toEqual([true, view.buffer, [16, 2]]);
    const get = { held: true, owner: 'z', token: '7', holders: [{ owner: 'z', token: '7' }] };
    expect(registered.Get!.responseSerialize(get)).toStrictEqual(encodeResponseBody('get', get));
    const session = { session_id: '5', ttl_ms: '10000', expires_at_ms: '0' };
    expect(registered.OpenSession!.responseSerialize(session)).toStrictEqual(encodeResponseBodyWithProtobufjs('open_session', session));
  });

  it('the hot requests are decoded by hand (not walked again); the others stay behind the strict walk', () => {
    const hand = Object.keys(registered).filter((m) => registered[m]!.ownStrictDecoder === true);
    expect(hand.sort()).toEqual(['Acquire', 'Get', 'Release', 'Renew']);
    expect(registered.OpenSession!.requestDeserialize(Buffer.from([0x48, 1]))).toStrictEqual({
      __invalid: 'OpenSessionRequest: unknown field number 9',
    });
    expect(registered.Revoke!.requestDeserialize(Buffer.from([0x48, 1]))).toStrictEqual({
      __invalid: 'RevokeRequest: unknown field number 9',
    });
  });
});
