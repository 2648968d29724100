// Cluster calls (members add/promote/remove, transfer-leader) follow the same forward-once rule as lock
// calls: a node that is not the leader forwards a call to the leader it knows once; a call that arrives
// already forwarded is answered, never forwarded again (two nodes that each believe the other leads must
// not bounce it between them). A call whose caller's deadline is now or past when it would be forwarded is
// answered DEADLINE_EXCEEDED, and no leader address is looked up for it (nothing is dialled or sent).
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NotLeaderError } from '../../../src/raft/errors.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import { ClusterApi, type ClusterApiOptions } from '../../../src/server/client-api/cluster-api.js';

function api(lookups: string[]): ClusterApi {
  const opts = {
    node: { id: 'n1' },
    membership: { add: () => Promise.reject(new NotLeaderError('n2')) },
    health: () => ({ serving: true, reason: 'ok' }),
    levels: () => ({ cluster: 2, build: 2 }),
    hasRun: () => false,
    clientAddressOf: (id: string) => {
      lookups.push(id);
      return undefined; // no address: the forward itself then fails UNAVAILABLE, without dialling anything
    },
    credentials: () => grpc.credentials.createInsecure(),
    defaultTimeoutMs: 1000,
    logger: silentNodeLogger,
  } as unknown as ClusterApiOptions;
  return new ClusterApi(opts);
}

/** `leftMs`: what is left of the caller's deadline when the call arrives. */
function addMember(cluster: ClusterApi, forwarded: boolean, leftMs = 1000): Promise<grpc.ServiceError | null> {
  const metadata = new grpc.Metadata();
  if (forwarded) metadata.set('x-leasehold-forwarded', '1');
  const deadline = new Date(Date.now() + leftMs);
  const call = { request: { id: 'n4', address: '127.0.0.1:7004', learner: true }, metadata, getDeadline: () => deadline };
  return new Promise((resolve) =>
    (cluster.handlers().AddMember as unknown as (c: object, cb: (e: grpc.ServiceError | null) => void) => void)(call, (err) =>
      resolve(err),
    ),
  );
}

describe('Cluster calls: forward once', () => {
  it('a follower forwards a call to the leader it knows', async () => {
    const lookups: string[] = [];
    const err = await addMember(api(lookups), false);
    expect(lookups).toEqual(['n2']); // it went looking for the leader's address to forward to
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
  });

  it('a call that arrives already forwarded is answered UNAVAILABLE naming the leader, never forwarded again', async () => {
    const lookups: string[] = [];
    const err = await addMember(api(lookups), true);
    expect(lookups).toEqual([]);
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(err?.details).toMatch(/n2/);
  });

  describe("the caller's deadline", () => {
    // Date stands still (the API reads Date.now()): the time left is exactly what the test gives.
    afterEach(() => {
      vi.useRealTimers();
    });

    it.each([0, -50])('%i ms left: DEADLINE_EXCEEDED, and nothing forwarded', async (leftMs) => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const lookups: string[] = [];
      const err = await addMember(api(lookups), false, leftMs);
      expect(lookups).toEqual([]);
      expect([err?.code, err?.details]).toEqual([
        grpc.status.DEADLINE_EXCEEDED,
        'deadline expired before the call could be forwarded to leader n2',
      ]);
    });

    it('1 ms left: still forwarded', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const lookups: string[] = [];
      const err = await addMember(api(lookups), false, 1);
      expect(lookups).toEqual(['n2']);
      expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    });
  });
});
