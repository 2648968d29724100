// The forward-once rule (src/server/client-api/lock-calls.ts, handle()): a follower forwards a client's
// lock call to the leader it knows, ONCE. A call that arrives already forwarded — on the peer link's Forward stream
// (serveForwarded) or as a unary call carrying x-leasehold-forwarded — and finds this node not leading is
// answered UNAVAILABLE naming the leader this node knows; it is never forwarded again. Without the rule, two
// nodes that each believe the other leads (both views stale during an election) bounce one call between them
// until its deadline. Issue 22, planted bug 1: with the check removed nothing else in the suite failed.
//
// Two ClientApi instances in one process; their lock service is a stand-in that always refuses "not the
// leader (leader is <the other>)" with the lock leader's own message, and a node's Forward stream to the
// other calls the other's serveForwarded directly (what the peer link's Forward stream does), counting hops.
// Client calls enter node A through a real gRPC server on a loopback port. No sleeps: every step is awaited.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notLeader } from '../../../src/lock/leader/failures.js';
import { DEFAULT_LOCK_LIMITS } from '../../../src/lock/validate.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import type { ClusterApi } from '../../../src/server/client-api/cluster-api.js';
import { ClientApi } from '../../../src/server/client-api/grpc-server.js';
import { LeaderUnavailableError, type LockService } from '../../../src/lock-on-raft/lock-service.js';
import type { ForwardedReply, ForwardStream } from '../../../src/transport/forward.js';
import type { WireInput } from '../../../src/wire/scalars.js';
import { encodeRequestBody } from '../../../src/server/client-api/call-bodies.js';
import { type AcquireRequest, type AcquireResponse, type LockCallName, type LockStub, lockGrpcService } from '../../../src/wire/lock.js';

const FORWARDED = 'x-leasehold-forwarded';
/** Far more hops than the rule allows: the stand-in link stops a bouncing call here instead of looping. */
const HOP_CAP = 8;

interface Hop {
  from: string;
  to: string;
  method: LockCallName;
}

/** A node that is not the leader and believes `believedLeader` is. */
function follower(id: string, believedLeader: string, hops: Hop[], peers: Map<string, ClientApi>): ClientApi {
  const refuse = (): Promise<never> => Promise.reject(new LeaderUnavailableError(notLeader(believedLeader).message, believedLeader));
  const service = {
    node: { id, leaderId: believedLeader },
    acquire: refuse,
    renew: refuse,
    release: refuse,
    get: refuse,
  } as unknown as LockService;
  const cluster = { handlers: () => ({}), close: () => {} } as unknown as ClusterApi;
  const forwardStream = (to: string) =>
    ({
      call: async (method: LockCallName, body: Uint8Array, timeoutMs: number, signal?: AbortSignal): Promise<ForwardedReply> => {
        hops.push({ from: id, to, method });
        if (hops.length >= HOP_CAP)
          return { code: grpc.status.ABORTED, details: `stand-in link: ${hops.length} hops, the call is bouncing`, response: null };
        const target = peers.get(to)!;
        const answer = await target.serveForwarded(
          {
            callId: String(hops.length),
            from: id,
            clusterId: 'c',
            timeoutMs,
            cancel: false,
            name: method,
            body: Buffer.from(body),
          },
          { certificate: undefined, remote: id },
          signal ?? new AbortController().signal,
        );
        return { code: answer.code ?? grpc.status.UNKNOWN, details: answer.details ?? '', response: null };
      },
    }) as unknown as ForwardStream;
  return new ClientApi({
    service,
    limits: DEFAULT_LOCK_LIMITS,
    members: new Map([
      ['a', '127.0.0.1:1'],
      ['b', '127.0.0.1:2'],
    ]),
    cluster,
    defaultTimeoutMs: 2000,
    logger: silentNodeLogger,
    forwardVia: forwardStream,
  });
}

const acquireRequest: WireInput<AcquireRequest> = { key: 'k', owner: 'o', ttl_ms: '5000', wait_ms: '0', request_id: 'r1' };

describe('forward once: a call that was forwarded already is never forwarded again', () => {
  const hops: Hop[] = [];
  const peers = new Map<string, ClientApi>();
  let server: grpc.Server;
  let client: LockStub;

  beforeAll(async () => {
    // Each believes the other leads: the state in which a second forward would bounce forever.
    peers.set('a', follower('a', 'b', hops, peers));
    peers.set('b', follower('b', 'a', hops, peers));
    server = new grpc.Server();
    peers.get('a')!.register(server);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    client = lockGrpcService.client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    client?.close();
    await new Promise<void>((resolve) => (server ? server.tryShutdown(() => resolve()) : resolve()));
    for (const api of peers.values()) api.close();
  });

  const acquireAtA = (md: grpc.Metadata) =>
    new Promise<grpc.ServiceError | AcquireResponse>((resolve) => {
      client.Acquire(acquireRequest, md, { deadline: new Date(Date.now() + 10_000) }, (err, value) => resolve(err ?? value!));
    });

  it('a forwarded call reaching a node that is not the leader: UNAVAILABLE naming the leader it knows, no second hop', async () => {
    hops.length = 0;
    const answer = await peers.get('b')!.serveForwarded(
      {
        callId: '1',
        from: 'a',
        clusterId: 'c',
        timeoutMs: 5000,
        cancel: false,
        name: 'acquire',
        body: encodeRequestBody('acquire', acquireRequest),
      },
      { certificate: undefined, remote: 'a' },
      new AbortController().signal,
    );
    expect(hops).toEqual([]);
    expect(answer.code).toBe(grpc.status.UNAVAILABLE);
    expect(answer.details).toBe(notLeader('a').message);
  });

  it('a client call at a follower goes one hop, and the leader-that-is-not answers UNAVAILABLE back through it', async () => {
    hops.length = 0;
    const r = await acquireAtA(new grpc.Metadata());
    // The one forward a follower makes (so the stand-in link is really used), and no more.
    expect(hops).toEqual([{ from: 'a', to: 'b', method: 'acquire' }]);
    expect((r as grpc.ServiceError).code).toBe(grpc.status.UNAVAILABLE);
    expect((r as grpc.ServiceError).details).toBe(`${notLeader('a').message} (forwarded to leader b)`);
  });

  it('a unary call marked forwarded (a follower without a peer link) is not forwarded either', async () => {
    hops.length = 0;
    const md = new grpc.Metadata();
    md.set(FORWARDED, '1');
    const r = await acquireAtA(md);
    expect(hops).toEqual([]);
    expect((r as grpc.ServiceError).code).toBe(grpc.status.UNAVAILABLE);
    expect((r as grpc.ServiceError).details).toBe(notLeader('b').message);
  });
});
