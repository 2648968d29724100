// A follower's Lock/Stream (lock-stream.ts serveLockStream, the whole stream as the gRPC server runs it, not
// one message at a time) forwards each call to the leader with its OWN caller's deadline: the time left of
// the timeout that call carried when it arrived, whatever came before it on the same stream. Issue 37,
// planted bug 4 (one peer context per stream, the first call's time or deadline used for all later calls):
// forward-bytes.test.ts and the simulator serve each message with a context of its own, so only a process
// test (forward-reconnect) saw it, through timeouts. Here the stream is a stand-in duplex stream fed wire
// messages, the clock (Date) is moved by hand between them, and a stand-in forwarder records what each
// forwarded call carries.
import { EventEmitter } from 'node:events';
import type * as grpc from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_LOCK_LIMITS } from '../../../src/lock/validate.js';
import { LeaderUnavailableError, type LockService } from '../../../src/lock-on-raft/lock-service.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import { encodeRequestBody, encodeResponseBody } from '../../../src/server/client-api/call-bodies.js';
import { LockCallHandling, type AnswerEncoder } from '../../../src/server/client-api/lock-calls.js';
import { serveLockStream } from '../../../src/server/client-api/lock-stream.js';
import { decodeLockCall, type StreamCall } from '../../../src/server/client-api/lock-stream-codec.js';
import type { InvalidRequest } from '../../../src/server/client-api/strict-decode.js';
import type { ForwardedReply } from '../../../src/transport/forward-calls.js';
import { decodeAnswerEnvelope } from '../../../src/wire/call-envelope-decode.js';
import { encodeCallEnvelope } from '../../../src/wire/call-envelope-encode.js';
import type { LockCallName } from '../../../src/wire/lock.js';

const DEFAULT_TIMEOUT_MS = 5000;
const START_MS = Date.UTC(2026, 0, 1);

/** What the follower's Forward stream was asked to send: each call, with its time left and when. */
interface Forwarded {
  name: LockCallName;
  timeoutMs: number;
  atMs: number;
}

/** The follower F (not leading, names L), one client Lock/Stream served on it, and the forwarder to L. */
function followerStream() {
  const service = {
    node: { id: 'F', leaderId: 'L' },
    notLeading: 'L',
    notLeadingError: () => new LeaderUnavailableError('not the leader', 'L'),
  } as unknown as LockService;
  const forwarded: Forwarded[] = [];
  const forwarder = {
    call(name: LockCallName, _body: Uint8Array, timeoutMs: number): Promise<ForwardedReply<Uint8Array>> {
      forwarded.push({ name, timeoutMs, atMs: Date.now() });
      return Promise.resolve({ code: 0, details: '', response: encodeResponseBody('get', { key: 'k' }) });
    },
  };
  const calls = new LockCallHandling<unknown>({
    service,
    limits: DEFAULT_LOCK_LIMITS,
    defaultTimeoutMs: DEFAULT_TIMEOUT_MS,
    encode: new Proxy({}, { get: () => () => ({}) }) as AnswerEncoder<unknown>,
    bodies: { request: encodeRequestBody, response: encodeResponseBody },
    logger: silentNodeLogger,
    nowMs: () => Date.now(),
    after: () => {},
    leaderAddress: () => 'leader:7001',
    forwardVia: () => forwarder,
    detachedWaiterGraceMs: 2000,
  });
  // The client's stream as grpc-js hands it to the handler: messages arrive as 'data' (decoded by the
  // server's codec), answers are written back.
  const answers: { callId: string; code: number }[] = [];
  const stream = Object.assign(new EventEmitter(), {
    getAuthContext: () => ({}),
    getPeer: () => 'ipv4:127.0.0.1:5555',
    write: (bytes: Uint8Array) => {
      const a = decodeAnswerEnvelope(Buffer.from(bytes), 'lock');
      answers.push({ callId: a.callId, code: a.code });
      return true;
    },
    pause: () => {},
    resume: () => {},
    end: () => {},
  });
  serveLockStream(calls, stream as unknown as grpc.ServerDuplexStream<StreamCall | InvalidRequest, Uint8Array>);
  /** One Lock/Stream message from the client: a call with `timeoutMs` (0: none). */
  const send = (callId: string, timeoutMs: number, name: LockCallName, request: Record<string, unknown>) =>
    stream.emit('data', decodeLockCall(encodeCallEnvelope({ callId, timeoutMs, name, body: encodeRequestBody(name, request) }, 'lock')));
  return { send, forwarded, answers };
}

async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

const acquire = (key: string, requestId: string) => ({ key, owner: 'o', ttl_ms: '10000', wait_ms: '60000', request_id: requestId });

describe('Lock/Stream on a follower: each forwarded call carries its own caller’s deadline', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(START_MS);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('calls that arrive later on the same stream, with shorter, longer and no timeouts, forward with their own', async () => {
    const s = followerStream();
    s.send('1', 30_000, 'acquire', acquire('a', 'ra'));
    vi.setSystemTime(START_MS + 2_000);
    s.send('2', 700, 'acquire', acquire('b', 'rb'));
    vi.setSystemTime(START_MS + 9_000);
    s.send('3', 60_000, 'get', { key: 'c' });
    vi.setSystemTime(START_MS + 40_000); // past the first call's deadline
    s.send('4', 1_500, 'get', { key: 'd' });
    s.send('5', 0, 'get', { key: 'e' }); // no deadline: the longest wait plus the default
    await flush();
    const noDeadlineMs = DEFAULT_TIMEOUT_MS + DEFAULT_LOCK_LIMITS.maxWaitMs;
    expect(
      s.forwarded.map((f) => `${f.name} at +${f.atMs - START_MS} ms: ${f.timeoutMs} ms left`),
      "each call forwarded with the time left of its own caller's timeout",
    ).toEqual([
      'acquire at +0 ms: 30000 ms left',
      'acquire at +2000 ms: 700 ms left',
      'get at +9000 ms: 60000 ms left',
      'get at +40000 ms: 1500 ms left',
      `get at +40000 ms: ${noDeadlineMs} ms left`,
    ]);
    expect(s.answers.map((a) => `${a.callId}:${a.code}`).sort()).toEqual(['1:0', '2:0', '3:0', '4:0', '5:0']);
  });
});
