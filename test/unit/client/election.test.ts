// observe() (election.ts) against a scripted Get and Watch: the leader at the Get first, then each new one
// once, in token order — never an older one, never one that only ended.
import { describe, expect, it } from 'vitest';
import { observe, type ElectionClient } from '../../../src/client/election.js';

const bytes = (s: string) => new TextEncoder().encode(s);

function scripted(get: { held: boolean; owner: string; token: bigint; value: string; index: bigint }, events: { kind: string; owner: string; token: bigint; value: string }[]) {
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
    const { client } = scripted({ held: false, owner: '', token: 0n, value: '', index: 3n }, [{ kind: 'ACQUIRED', owner: 'x', token: 4n, value: '' }]);
    const seen: bigint[] = [];
    for await (const l of observe(client, 'jobs')) seen.push(l.token);
    expect(seen).toEqual([4n]);
  });
});
