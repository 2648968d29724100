// observe() (election.ts) against a scripted Get and Watch: the leader at the Get first, then each new one
// once, in token order — never an older one, never one that only ended.
import { describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { campaign, observe, type ElectionClient } from '../../../src/client/election.js';
import { InvalidRequestError } from '../../../src/client/errors.js';
import type { LockSession } from '../../../src/client/session.js';

const bytes = (s: string) => new TextEncoder().encode(s);

function scripted(
  get: { held: boolean; owner: string; token: bigint; value: string; index: bigint },
  events: { kind: string; owner: string; token: bigint; value: string }[],
) {
  const watchedFrom: bigint[] = [];
  const client: ElectionClient = {
    session: () => Promise.reject(new Error('not used')),
    get: async () => ({ ...get, value: bytes(get.value) }),
    watch: async function* (_key, opts) {
      watchedFrom.push(opts.afterIndex);
      for (const e of events) yield { ...e, value: bytes(e.value) };
    },
  };
  return { client, watchedFrom };
}

describe('observe', () => {
  it('reports the current leader, then each new one once, in token order, with its value', async () => {
    const { client, watchedFrom } = scripted({ held: true, owner: 'a', token: 5n, value: 'A', index: 7n }, [
      { kind: 'EXPIRED', owner: 'a', token: 5n, value: 'A' }, // a's session ran out: not a new leader
      { kind: 'ACQUIRED', owner: 'b', token: 9n, value: 'B' },
      { kind: 'QUEUED', owner: 'c', token: 0n, value: 'C' },
      { kind: 'ACQUIRED', owner: 'a', token: 5n, value: 'A' }, // an older one again (a replay): never reported
      { kind: 'RELEASED', owner: 'b', token: 9n, value: 'B' },
      { kind: 'ACQUIRED', owner: 'c', token: 12n, value: 'C' },
    ]);
    const seen: string[] = [];
    for await (const l of observe(client, 'jobs')) seen.push(`${l.owner}@${l.token}=${new TextDecoder().decode(l.value)}`);
    expect(seen).toEqual(['a@5=A', 'b@9=B', 'c@12=C']);
    expect(watchedFrom).toEqual([7n]); // from the Get's index: nothing between them is missed
  });

  it('with nobody leading at the Get, starts with the first ACQUIRED', async () => {
    const { client } = scripted({ held: false, owner: '', token: 0n, value: '', index: 3n }, [
      { kind: 'ACQUIRED', owner: 'x', token: 4n, value: '' },
    ]);
    const seen: bigint[] = [];
    for await (const l of observe(client, 'jobs')) seen.push(l.token);
    expect(seen).toEqual([4n]);
  });
});

describe('campaign', () => {
  it("waits per round as long as the cluster's lock.maxWaitMs allows (learnt from its INVALID_ARGUMENT), not failing", async () => {
    const asked: number[] = [];
    const hold = { token: 42n, signal: new AbortController().signal };
    const session = {
      acquire: async (_key: string, o: { waitMs: number }) => {
        asked.push(o.waitMs);
        if (o.waitMs > 30_000)
          throw new InvalidRequestError(
            `acquiring lock "election/x" under session 9 was refused as invalid: wait_ms: wait_ms must be between 0 and 30000, got ${o.waitMs}`,
            grpc.status.INVALID_ARGUMENT,
          );
        return hold;
      },
      close: async () => ({ closed: true, released: [] }),
    } as unknown as LockSession;
    const client: ElectionClient = {
      session: async () => session,
      get: () => Promise.reject(new Error('not used')),
      watch: () => {
        throw new Error('not used');
      },
    };
    const lead = await campaign(client, 'x', { value: 'me' });
    expect(lead.token).toBe(42n);
    expect(asked).toEqual([300_000, 30_000]);
  });
});
