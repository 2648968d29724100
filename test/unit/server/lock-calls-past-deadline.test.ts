// A lock call that reaches the node serving it (the leader) with its caller's deadline now or past is answered
// DEADLINE_EXCEEDED and nothing is proposed (src/server/client-api/lock-calls.ts): served with the 1 ms the
// timeout's clamp gives, an acquire was still granted behind the back of a caller that could no longer learn
// of it (issue 37: "locally served calls past their deadline still run with 1 ms"). A bad request is still
// told which field is bad, deadline or not; 1 ms left is still served, with that 1 ms.
import { describe, expect, it } from 'vitest';
import { DEFAULT_LOCK_LIMITS } from '../../../src/lock/validate.js';
import type { LockService } from '../../../src/lock-on-raft/lock-service.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import { encodeRequestBody } from '../../../src/server/client-api/call-bodies.js';
import {
  EXPIRED_BEFORE_SERVED,
  LockCallHandling,
  type AnswerEncoder,
  type LockCallMethod,
} from '../../../src/server/client-api/lock-calls.js';

const DEFAULT_TIMEOUT_MS = 5000;

/** The leader L: its service records each call it is given, with the time the call may take. */
function leader() {
  const nowMs = 50_000;
  const served: string[] = [];
  const record =
    (name: string) =>
    (_req: unknown, timeoutMs: number): Promise<unknown> => {
      served.push(`${name} ${timeoutMs} ms`);
      return Promise.resolve({ revoked: [] });
    };
  const service = {
    node: { id: 'L', leaderId: 'L' },
    notLeading: undefined,
    acquire: record('acquire'),
    renew: record('renew'),
    release: record('release'),
    get: (_key: string, timeoutMs: number) => record('get')(null, timeoutMs),
    openSession: record('openSession'),
    renewSession: record('renewSession'),
    closeSession: record('closeSession'),
    revoke: record('revoke'),
  } as unknown as LockService;
  const calls = new LockCallHandling<string>({
    service,
    limits: DEFAULT_LOCK_LIMITS,
    defaultTimeoutMs: DEFAULT_TIMEOUT_MS,
    encode: new Proxy({}, { get: () => () => 'ok' }) as AnswerEncoder<string>,
    bodies: { request: encodeRequestBody, response: (_name, r) => Buffer.from(r) },
    logger: silentNodeLogger,
    nowMs: () => nowMs,
    after: () => {},
    leaderAddress: () => 'leader:1',
    detachedWaiterGraceMs: 2000,
  });
  const handle = (method: LockCallMethod, request: Record<string, unknown>, leftMs: number) =>
    calls.handle(method, request, {
      forwarded: false,
      deadlineMs: nowMs + leftMs,
      certificateCn: undefined,
      remote: 'c',
      signal: new AbortController().signal,
    });
  return { handle, served };
}

// Every method a client sends, each as a valid request.
const methods: { method: LockCallMethod; request: Record<string, unknown>; serves: string }[] = [
  {
    method: 'Acquire',
    request: { key: 'k', owner: 'a', ttl_ms: '10000', wait_ms: '0', request_id: 'r1', session_id: '0' },
    serves: 'acquire',
  },
  { method: 'Renew', request: { key: 'k', owner: 'a', token: '3', ttl_ms: '10000' }, serves: 'renew' },
  { method: 'Release', request: { key: 'k', owner: 'a', token: '3' }, serves: 'release' },
  { method: 'Get', request: { key: 'k' }, serves: 'get' },
  { method: 'OpenSession', request: { owner: 'a', ttl_ms: '10000', request_id: 'r2' }, serves: 'openSession' },
  { method: 'RenewSession', request: { session_id: '4', owner: 'a' }, serves: 'renewSession' },
  { method: 'CloseSession', request: { session_id: '4', owner: 'a', request_id: 'r3' }, serves: 'closeSession' },
  { method: 'Revoke', request: { key: 'k', token: '0', reason: 'op', request_id: 'r9' }, serves: 'revoke' },
];

describe('a lock call at the leader', () => {
  describe.each(methods)('$method', ({ method, request, serves }) => {
    it.each([0, -1, -50])("with %i ms left of the caller's deadline: DEADLINE_EXCEEDED, and nothing served", async (leftMs) => {
      const l = leader();
      const reply = await l.handle(method, { ...request }, leftMs);
      expect(reply).toEqual({ code: 4, details: EXPIRED_BEFORE_SERVED, response: null, leader: '' });
      expect(l.served).toEqual([]);
    });

    it("with 1 ms left it is served, with that 1 ms; with no deadline, with the node's default", async () => {
      const l = leader();
      const soon = await l.handle(method, { ...request }, 1);
      const none = await l.handle(method, { ...request }, Infinity);
      expect([soon.code, none.code]).toEqual([0, 0]);
      expect(l.served).toEqual([`${serves} 1 ms`, `${serves} ${DEFAULT_TIMEOUT_MS} ms`]);
    });
  });

  it('a bad request past its deadline is still told which field is bad', async () => {
    const l = leader();
    const reply = await l.handle('Acquire', { key: '', owner: 'a', ttl_ms: '10000', request_id: 'r1' }, -5);
    expect(reply.code).toBe(3);
    expect(reply.details).toMatch(/^key: /);
    expect(l.served).toEqual([]);
  });
});
