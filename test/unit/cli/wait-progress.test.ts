// `leasehold run --wait` / `elect`: the progress line of a wait (run.ts waitProgress). Nothing is said until
// a leader has answered — never "queued" for a request that may not have reached one (issue 38: elect with
// no node reachable printed "queued; waited 2s" and "… 8.1s").
import { describe, expect, it } from 'vitest';
import { waitProgress } from '../../../src/cli/run.js';

const held = { held: true, owner: 'cand-1', token: 42n, ttlMs: 9000 };
const free = { held: false, owner: '', token: 0n, ttlMs: 0 };

describe('waitProgress', () => {
  it('says nothing when the read failed (every endpoint UNAVAILABLE) or a campaign has no session yet', () => {
    expect(waitProgress('election/x', true, null, 2000)).toBeNull();
    expect(waitProgress('election/x', false, held, 2000)).toBeNull();
    expect(waitProgress('election/x', false, free, 2000)).toBeNull();
  });

  it('once a leader answered: who holds the key, or queued', () => {
    expect(waitProgress('election/x', true, held, 2000)).toEqual({
      text: 'waiting for lock "election/x": held by "cand-1" with token 42 for another 9s; waited 2s',
      fields: { waited_ms: 2000, holder: 'cand-1', holder_token: '42', holder_ttl_ms: 9000 },
    });
    expect(waitProgress('k', true, free, 8100)).toEqual({ text: 'waiting for lock "k": queued; waited 8.1s', fields: { waited_ms: 8100 } });
  });
});
