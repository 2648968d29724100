// One lock call's handling on a follower (src/server/client-api/lock-calls.ts): it forwards once to the leader with
// what is left of its caller's deadline; when its caller's connection breaks, a blocking acquire under a
// session stays at the leader, one without a session is cancelled after the grace, and an explicit cancel
// is sent at once; owner binding refuses another owner before anything is forwarded; a call whose caller's
// deadline is now or past is answered DEADLINE_EXCEEDED and sent to the leader neither way.
import { beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LOCK_LIMITS } from '../../../src/lock/validate.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import {
  EXPIRED_BEFORE_SERVED,
  LockCallHandling,
  type AnswerEncoder,
  type CallReply,
  type ForwardCaller,
  type LockCallMethod,
} from '../../../src/server/client-api/lock-calls.js';
import { LeaderUnavailableError, type LockService } from '../../../src/lock-on-raft/lock-service.js';
import { CANCELLED, DETACHED } from '../../../src/transport/call-end.js';
import type { ForwardedReply } from '../../../src/transport/forward-calls.js';
import type { CallSignal } from '../../../src/wire/call-signal.js';
import { encodeRequestBody } from '../../../src/server/client-api/call-bodies.js';

interface Forwarded {
  name: string;
  timeoutMs: number;
  signal: CallSignal;
  /** The request's bytes as forwarded. */
  body: Uint8Array;
  answer(reply: ForwardedReply<Uint8Array>): void;
}

/** How the follower's service tells it does not lead: before the call (`notLeading` names the leader, the
 *  call is forwarded without entering the service) or only by refusing it (leadership lost in between). */
type Knows = 'known before the call' | 'learned from the refusal';
let knows: Knows = 'known before the call';

/** A call forwarded unary (Revoke; any call when there is no Forward stream). */
interface ForwardedUnary {
  method: LockCallMethod;
  leaderId: string;
  deadlineMs: number;
}

/** `stream: false`: no Forward stream to the leader (forwardVia gives null), so every call goes unary. */
function follower(opts: { ownerBinding?: boolean; stream?: boolean } = {}) {
  let nowMs = 10_000;
  const timers: { at: number; fn: () => void }[] = [];
  const forwarded: Forwarded[] = [];
  const unary: ForwardedUnary[] = [];
  // A follower's service: every call is refused "not the leader; the leader is L".
  let served = 0;
  const countedForwarded: string[] = [];
  const notLeader = () => (served++, Promise.reject(new LeaderUnavailableError('not the leader', 'L')));
  const service = {
    node: { id: 'F', leaderId: 'L' },
    notLeading: knows === 'known before the call' ? 'L' : undefined,
    notLeadingError: () => new LeaderUnavailableError('not the leader (leader is L); retry there', 'L'),
    acquire: notLeader,
    release: notLeader,
    get: notLeader,
    revoke: notLeader,
  } as unknown as LockService;
  const channel: ForwardCaller = {
    call: (name, body, timeoutMs, signal) =>
      new Promise((answer) => {
        forwarded.push({ name, body, timeoutMs, signal, answer });
      }),
  };
  const encode = new Proxy({}, { get: () => () => 'ok' }) as AnswerEncoder<string>;
  const calls = new LockCallHandling<string>({
    service,
    limits: DEFAULT_LOCK_LIMITS,
    defaultTimeoutMs: 5000,
    encode,
    bodies: { request: encodeRequestBody, response: (_name, r) => Buffer.from(r) },
    logger: silentNodeLogger,
    nowMs: () => nowMs,
    after: (ms, fn) => void timers.push({ at: nowMs + ms, fn }),
    leaderAddress: () => 'leader:1',
    forwardVia: () => (opts.stream === false ? null : channel),
    // Never answers: what was sent is what the tests read.
    forwardUnary: (method, _request, leaderId, deadlineMs) =>
      new Promise<CallReply<string>>(() => void unary.push({ method, leaderId, deadlineMs })),
    detachedWaiterGraceMs: 2000,
    countNotLeading: (op: string, outcome: string, seconds: number) => countedForwarded.push(`${op} ${outcome} ${seconds}`),
    ...(opts.ownerBinding ? { ownerBinding: true, isMember: (id: string) => id === 'L' || id === 'F' } : {}),
  });
  const advance = (ms: number) => {
    nowMs += ms;
    for (const t of timers.splice(0).filter((t) => (t.at <= nowMs ? (t.fn(), false) : true))) timers.push(t);
  };
  return { calls, forwarded, unary, advance, now: () => nowMs, served: () => served, countedForwarded };
}

const acquire = (sessionId: string, waitMs = '60000') => ({
  key: 'k',
  owner: 'a',
  ttl_ms: sessionId === '0' ? '10000' : '0',
  wait_ms: waitMs,
  request_id: 'r1',
  session_id: sessionId,
});

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

describe.each(['known before the call', 'learned from the refusal'] as Knows[])(
  'lock call handling on a follower (not leading: %s)',
  (how) => {
    beforeEach(() => {
      knows = how;
    });

    it("forwards once with what is left of the caller's deadline, and answers with the leader's reply", async () => {
      const f = follower();
      const ended = new AbortController();
      const reply = f.calls.handle('Acquire', acquire('7'), {
        forwarded: false,
        deadlineMs: f.now() + 700,
        certificateCn: undefined,
        remote: 'c',
        signal: ended.signal,
      });
      await flush();
      expect(f.forwarded).toHaveLength(1);
      expect(f.forwarded[0]).toMatchObject({ name: 'acquire', timeoutMs: 700 });
      // Known not to lead: forwarded without entering the service (no call, promise and error built for it).
      expect(f.served()).toBe(knows === 'known before the call' ? 0 : 1);
      f.advance(40);
      f.forwarded[0]!.answer({ code: 0, details: '', response: Buffer.from('granted') });
      // The leader's response bytes as they came, not decoded here.
      expect(await reply).toEqual({ code: 0, details: '', response: null, responseBytes: Buffer.from('granted'), leader: 'leader:1' });
      // ...and counted, with the forwarded round trip's time, as the service counts a not-leader refusal
      // (which it does itself on the other way).
      expect(f.countedForwarded).toEqual(knows === 'known before the call' ? ['acquire not_leader 0.04'] : []);
    });

    it('a call that arrived forwarded is answered UNAVAILABLE, never forwarded again', async () => {
      const f = follower();
      const reply = await f.calls.handle('Acquire', acquire('7'), {
        forwarded: true,
        deadlineMs: f.now() + 700,
        certificateCn: undefined,
        remote: 'c',
        signal: new AbortController().signal,
      });
      expect(reply.code).toBe(14);
      expect(f.forwarded).toHaveLength(0);
      // Known not to lead: answered at the boundary with the lock leader's refusal, without entering the
      // service, and counted as the service counts that refusal.
      expect(f.served()).toBe(knows === 'known before the call' ? 0 : 1);
      expect(reply.details).toBe(knows === 'known before the call' ? 'not the leader (leader is L); retry there' : 'not the leader');
      expect(f.countedForwarded).toEqual(knows === 'known before the call' ? ['acquire not_leader 0'] : []);
    });

    it('a broken connection: a session waiter stays at the leader; one without a session is cancelled after the grace', async () => {
      const f = follower();
      const session = new AbortController();
      const lease = new AbortController();
      const ctx = (signal: AbortSignal) => ({
        forwarded: false,
        deadlineMs: f.now() + 70_000,
        certificateCn: undefined,
        remote: 'c',
        signal,
      });
      void f.calls.handle('Acquire', acquire('7'), ctx(session.signal));
      void f.calls.handle('Acquire', acquire('0'), ctx(lease.signal));
      await flush();
      const [underSession, withLease] = f.forwarded;
      session.abort(DETACHED);
      lease.abort(DETACHED);
      f.advance(1999);
      expect(underSession!.signal.aborted).toBe(false);
      expect(withLease!.signal.aborted).toBe(false);
      f.advance(1);
      expect(withLease!.signal.aborted).toBe(true);
      f.advance(60_000);
      expect(underSession!.signal.aborted).toBe(false);
    });

    it('an explicit cancel is sent to the leader at once, under a session too', async () => {
      const f = follower();
      const ended = new AbortController();
      void f.calls.handle('Acquire', acquire('7'), {
        forwarded: false,
        deadlineMs: f.now() + 70_000,
        certificateCn: undefined,
        remote: 'c',
        signal: ended.signal,
      });
      await flush();
      ended.abort(CANCELLED);
      expect(f.forwarded[0]!.signal.aborted).toBe(true);
    });

    it('owner binding: another CN is PERMISSION_DENIED before anything is forwarded; a member forwarding is trusted', async () => {
      const f = follower({ ownerBinding: true });
      const ctx = (cn: string, forwarded = false) => ({
        forwarded,
        deadlineMs: f.now() + 700,
        certificateCn: cn,
        remote: 'c',
        signal: new AbortController().signal,
      });
      const denied = await f.calls.handle('Acquire', acquire('0'), ctx('b'));
      expect(denied).toMatchObject({ code: 7, details: expect.stringMatching(/does not match the client certificate CN "b"/) });
      expect(f.forwarded).toHaveLength(0);
      const trusted = await f.calls.handle('Acquire', acquire('0'), ctx('L', true));
      expect(trusted.code).toBe(14); // served (here: refused not-leader, as forwarded), not denied
    });

    // The three ways a call leaves a follower: an Acquire on the Forward stream, a Revoke (always unary), and
    // an Acquire when there is no Forward stream to the leader (unary too).
    const ways = [
      { way: 'Acquire on the Forward stream', method: 'Acquire', request: acquire('7'), stream: true },
      { way: 'Revoke, unary', method: 'Revoke', request: { key: 'k', token: '0', reason: 'op', request_id: 'r9' }, stream: true },
      { way: 'Acquire, unary (no Forward stream)', method: 'Acquire', request: acquire('7'), stream: false },
    ] as const;

    describe.each(ways)('$way', ({ method, request, stream }) => {
      it.each([0, -50])(
        "with %i ms left of the caller's deadline: DEADLINE_EXCEEDED at once, and nothing sent to the leader",
        async (leftMs) => {
          const f = follower({ stream });
          // Not awaited: a call that was sent would wait for an answer the stand-ins never give.
          let reply: CallReply<string> | undefined;
          void f.calls
            .handle(
              method,
              { ...request },
              {
                forwarded: false,
                deadlineMs: f.now() + leftMs,
                certificateCn: undefined,
                remote: 'c',
                signal: new AbortController().signal,
              },
            )
            .then((r) => (reply = r));
          await flush();
          expect(f.forwarded, 'no Forward frame').toEqual([]);
          expect(f.unary, 'no unary call').toEqual([]);
          // Known not to lead: refused where the call would be forwarded. Not known (this node takes itself
          // for the leader until its service refuses): refused before the service is entered, as a leader
          // refuses a call past its deadline (lock-calls-past-deadline.test.ts) — nothing proposed either.
          expect(reply, 'answered at once').toEqual({
            code: 4,
            details:
              knows === 'known before the call' ? 'deadline expired before the call could be forwarded to leader L' : EXPIRED_BEFORE_SERVED,
            response: null,
            leader: '',
          });
          expect(f.served(), 'the service not entered').toBe(0);
        },
      );

      it("with 1 ms left of the caller's deadline it is still forwarded, with that 1 ms", async () => {
        const f = follower({ stream });
        void f.calls.handle(
          method,
          { ...request },
          {
            forwarded: false,
            deadlineMs: f.now() + 1,
            certificateCn: undefined,
            remote: 'c',
            signal: new AbortController().signal,
          },
        );
        await flush();
        const sent = [
          ...f.forwarded.map((c) => `stream ${c.name} ${c.timeoutMs} ms`),
          ...f.unary.map((c) => `unary ${c.method} to ${c.leaderId} deadline now+${c.deadlineMs - f.now()} ms`),
        ];
        expect(sent).toEqual([method === 'Revoke' || !stream ? `unary ${method} to L deadline now+1 ms` : 'stream acquire 1 ms']);
      });
    });
  },
);
