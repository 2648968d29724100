// A follower's Lock/Stream call forwarded on its Forward stream (lock-stream.ts serveStreamMessage ->
// lock-calls.ts -> transport/forward.ts ForwardStream -> forward-calls.ts): the client's request bytes go
// to the leader as they came, each under its own forwarded call_id with its own caller's deadline, and the
// leader's response bytes come back to the client as they came, each under the client's own call_id.
// Issue 37, planted bug 4 (raw bytes sent with another caller's deadline), and answers passed through
// under another call's id. The ForwardStream runs over a stand-in gRPC stream that records what is written
// and lets the test answer; the clock does not move, so each call's timeout is exactly its caller's.
// A call with no time left of its caller's deadline writes nothing on the stream, from lock-calls.ts or
// given to forward-calls.ts ForwardCalls itself (which a recording stream opener and timers run here).
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LOCK_LIMITS } from '../../../src/lock/validate.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import { LeaderUnavailableError, type LockService } from '../../../src/lock-on-raft/lock-service.js';
import { decodeRequestBody, encodeRequestBody, encodeResponseBody } from '../../../src/server/client-api/call-bodies.js';
import { LockCallHandling, type AnswerEncoder } from '../../../src/server/client-api/lock-calls.js';
import { serveStreamMessage } from '../../../src/server/client-api/lock-stream.js';
import { decodeLockCall, type StreamCall } from '../../../src/server/client-api/lock-stream-codec.js';
import { CallMux } from '../../../src/transport/call-mux.js';
import { ANSWER_GRACE_MS, ForwardCalls, type ForwardMessage } from '../../../src/transport/forward-calls.js';
import { ForwardStream } from '../../../src/transport/forward.js';
import type { CallEnvelope } from '../../../src/wire/call-envelope.js';
import { decodeAnswerEnvelope, decodeCallEnvelope } from '../../../src/wire/call-envelope-decode.js';
import { encodeAnswerEnvelope, encodeCallEnvelope } from '../../../src/wire/call-envelope-encode.js';
import type { LockCallName } from '../../../src/wire/lock.js';
import type { RaftStub } from '../../../src/wire/raft.js';

/** The follower F: not leading, names L; its Forward stream to L is `written` (what F sent) + `answer`. */
function follower(opts: { ownerBinding?: boolean } = {}) {
  const nowMs = 50_000;
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
  const calls = new LockCallHandling<unknown>({
    service,
    limits: DEFAULT_LOCK_LIMITS,
    defaultTimeoutMs: 5000,
    encode: new Proxy({}, { get: () => () => ({}) }) as AnswerEncoder<unknown>,
    bodies: { request: encodeRequestBody, response: encodeResponseBody },
    logger: silentNodeLogger,
    nowMs: () => nowMs,
    after: () => {},
    leaderAddress: () => 'leader:7001',
    forwardVia: () => link,
    detachedWaiterGraceMs: 2000,
    ...(opts.ownerBinding ? { ownerBinding: true, isMember: (id: string) => id === 'L' || id === 'F' } : {}),
  });
  // The client's Lock/Stream on F: what F answers, decoded as the client reads it.
  const answers = new Map<string, ReturnType<typeof decodeAnswerEnvelope>>();
  const mux = new CallMux<Uint8Array>((a) => {
    const answer = decodeAnswerEnvelope(Buffer.from(a), 'lock');
    answers.set(answer.callId, answer);
  });
  const send = (callId: string, timeoutMs: number, name: LockCallName, request: Record<string, unknown>, cn?: string) => {
    const body = encodeRequestBody(name, request);
    const wire = decodeLockCall(encodeCallEnvelope({ callId, timeoutMs, name, body }, 'lock')) as StreamCall;
    serveStreamMessage(calls, mux, wire, { certificateCn: cn, remote: 'client', nowMs });
    return body;
  };
  const cancel = (callId: string) =>
    serveStreamMessage(calls, mux, decodeLockCall(encodeCallEnvelope({ callId, cancel: true }, 'lock')) as StreamCall, {
      certificateCn: undefined,
      remote: 'client',
      nowMs,
    });
  /** The leader answers forwarded call `callId` with `body`. */
  const answer = (callId: string, name: LockCallName, body: Uint8Array) =>
    grpcStream.emit('data', decodeAnswerEnvelope(encodeAnswerEnvelope({ callId, code: 0, name, body }, 'forward'), 'forward'));
  return { send, cancel, answer, written, answers, calls };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

const acquire = (key: string, requestId: string) => ({ key, owner: 'o', ttl_ms: '10000', wait_ms: '60000', request_id: requestId });

describe('a follower forwards Lock/Stream calls as the bytes they came in', () => {
  it("two calls in flight with different deadlines: each goes with its own bytes and its own caller's deadline", async () => {
    const f = follower();
    const bodyA = f.send('11', 700, 'acquire', acquire('a', 'ra'));
    const bodyB = f.send('12', 30_000, 'acquire', acquire('b', 'rb'));
    const bodyC = f.send('13', 0, 'get', { key: 'c' }); // no deadline: the longest wait plus the default
    await flush();
    expect(f.written).toHaveLength(3);
    const [a, b, c] = f.written;
    expect(Buffer.compare(a!.body!, bodyA)).toBe(0);
    expect(Buffer.compare(b!.body!, bodyB)).toBe(0);
    expect(Buffer.compare(c!.body!, bodyC)).toBe(0);
    expect([a!.name, b!.name, c!.name]).toEqual(['acquire', 'acquire', 'get']);
    expect([a!.timeoutMs, b!.timeoutMs, c!.timeoutMs]).toEqual([700, 30_000, 5000 + DEFAULT_LOCK_LIMITS.maxWaitMs]);
    expect(new Set([a!.callId, b!.callId, c!.callId]).size).toBe(3);
    expect(f.written.every((w) => w.from === 'F' && w.clusterId === 'c-1' && !w.cancel)).toBe(true);
  });

  it("the leader's answers, in any order, reach the client as their bytes, each under the client's own call_id", async () => {
    const f = follower();
    f.send('21', 5000, 'acquire', acquire('a', 'ra'));
    f.send('22', 9000, 'acquire', acquire('b', 'rb'));
    await flush();
    const [a, b] = f.written;
    const respA = encodeResponseBody('acquire', { acquired: true, token: '101', holder_owner: 'o' });
    const respB = encodeResponseBody('acquire', { acquired: false, token: '0', holder_owner: 'someone-else' });
    f.answer(b!.callId, 'acquire', respB);
    f.answer(a!.callId, 'acquire', respA);
    await flush();
    const got21 = f.answers.get('21')!;
    const got22 = f.answers.get('22')!;
    expect(Buffer.compare(Buffer.from(got21.body!), respA)).toBe(0);
    expect(Buffer.compare(Buffer.from(got22.body!), respB)).toBe(0);
    expect([got21.code, got21.name, got21.leader]).toEqual([0, 'acquire', 'leader:7001']);
    expect([got22.code, got22.name, got22.leader]).toEqual([0, 'acquire', 'leader:7001']);
  });

  it("a client's cancel goes to the leader under that call's forwarded id, and no answer follows", async () => {
    const f = follower();
    f.send('31', 5000, 'acquire', acquire('a', 'ra'));
    f.send('32', 5000, 'acquire', acquire('b', 'rb'));
    await flush();
    f.cancel('32');
    await flush();
    expect(f.written).toHaveLength(3);
    expect(f.written[2]).toMatchObject({ callId: f.written[1]!.callId, cancel: true, name: undefined });
    expect(f.answers.has('32')).toBe(false);
  });

  it('a request whose owner the follower bound (owner binding) goes as its new bytes, never the caller’s', async () => {
    const f = follower({ ownerBinding: true });
    const sent = f.send('41', 5000, 'renew_session', { session_id: '9', request_id: 'r' }, 'alice');
    await flush();
    const w = f.written[0]!;
    expect(Buffer.compare(w.body!, sent)).not.toBe(0);
    expect(decodeRequestBody('renew_session', w.body!)).toStrictEqual({
      request: { session_id: '9', request_id: 'r', owner: 'alice' },
    });
  });

  it('a unary call (an object, no bytes) is forwarded as its encoding; its answer comes back as the leader’s bytes', async () => {
    const f = follower();
    const reply = f.calls.handle(
      'Get',
      { key: 'u' },
      { forwarded: false, deadlineMs: 50_000 + 900, certificateCn: undefined, remote: 'x', signal: new AbortController().signal },
    );
    await flush();
    const w = f.written[0]!;
    expect(decodeRequestBody('get', w.body!)).toStrictEqual({ request: { key: 'u' } });
    expect(w.timeoutMs).toBe(900);
    const resp = encodeResponseBody('get', { held: true, owner: 'z' });
    f.answer(w.callId, 'get', resp);
    const r = await reply;
    expect(r.code).toBe(0);
    expect(Buffer.compare(Buffer.from(r.responseBytes!), resp)).toBe(0);
  });
});

describe("a call with no time left of its caller's deadline is not forwarded", () => {
  const ctx = (deadlineMs: number) => ({
    forwarded: false,
    deadlineMs,
    certificateCn: undefined,
    remote: 'x',
    signal: new AbortController().signal,
  });

  it.each([0, -50])('%i ms left: DEADLINE_EXCEEDED from the follower, and no frame on its Forward stream', async (leftMs) => {
    const f = follower();
    // Not awaited: a call that was sent would wait for the leader's answer (or its time limit).
    let reply: { code: number; details: string } | undefined;
    void f.calls.handle('Acquire', acquire('a', 'ra'), ctx(50_000 + leftMs)).then((r) => (reply = r));
    await flush();
    expect(f.written, 'no frame on the Forward stream').toEqual([]);
    expect(reply, 'answered at once').toMatchObject({
      code: 4,
      details: 'deadline expired before the call could be forwarded to leader L',
      response: null,
    });
  });

  it('1 ms left: forwarded, with timeout_ms 1', async () => {
    const f = follower();
    void f.calls.handle('Acquire', acquire('a', 'ra'), ctx(50_000 + 1));
    await flush();
    expect(f.written.map((w) => [w.name, w.timeoutMs])).toEqual([['acquire', 1]]);
  });

  /** ForwardCalls on its own, as any caller may use it: what it opened, wrote and set a timer for. */
  function forwardCalls() {
    let opened = 0;
    const written: ForwardMessage[] = [];
    const limitsMs: number[] = [];
    const calls = new ForwardCalls(
      () => {
        opened++;
        return { write: (m) => void written.push(m), abandon: () => {} };
      },
      'L',
      { after: (ms) => (limitsMs.push(ms), { cancel: () => {} }) },
    );
    return { calls, opened: () => opened, written, limitsMs };
  }

  it.each([0, -50])(
    'ForwardCalls.call given %i ms: DEADLINE_EXCEEDED at once, no stream opened, no frame, no negative limit',
    async (timeoutMs) => {
      const fc = forwardCalls();
      // Not awaited: a call that was sent would wait for an answer or a timer the test never gives.
      let reply: { code: number; details: string } | undefined;
      void fc.calls.call('acquire', new Uint8Array([1]), timeoutMs).then((r) => (reply = r));
      await flush();
      expect({ opened: fc.opened(), written: fc.written, limitsMs: fc.limitsMs, inFlight: fc.calls.inFlight }).toEqual({
        opened: 0,
        written: [],
        limitsMs: [],
        inFlight: 0,
      });
      expect(reply, 'answered at once').toEqual({
        code: 4,
        details: 'deadline expired before the call could be forwarded to leader L',
        response: null,
      });
    },
  );

  it('ForwardCalls.call given 1 ms: sent with timeout_ms 1, its local limit the grace past it', () => {
    const fc = forwardCalls();
    void fc.calls.call('acquire', new Uint8Array([1]), 1);
    expect(fc.written.map((m) => [m.name, m.timeoutMs])).toEqual([['acquire', 1]]);
    expect(fc.limitsMs).toEqual([1 + ANSWER_GRACE_MS]);
    expect(fc.calls.inFlight).toBe(1);
  });
});
