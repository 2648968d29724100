// Issue 36: a whole-cluster stop with one follower behind. Each node restarts applied at its store's point with
// its log kept from below it (src/raft/stored-start.ts: the catch-up tail the compaction keeps), so the new
// leader sends the follower the entries it missed — no snapshot is made or streamed — and the stores agree.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcquireResponse } from '../../src/wire/lock.js';
import { TestCluster, waitFor } from './harness.js';
import { storeView } from './store-digest.js';

/** The last 'raft node restored from storage' line of a node's log. */
function restored(c: TestCluster, id: string): { snapshotIndex: number; appliedIndex: number; entries: number } {
  const lines = c
    .logText(id)
    .split('\n')
    .filter((l) => l.includes('"raft node restored from storage"'));
  return JSON.parse(lines.at(-1)!) as { snapshotIndex: number; appliedIndex: number; entries: number };
}

describe('a whole-cluster restart with a follower behind the leader’s store', () => {
  let c: TestCluster;
  beforeAll(async () => {
    // The store is synced every 100 applied entries and the log compacted to 50 below it.
    c = await TestCluster.create({ extraYaml: '  snapshotEvery: 100\n' });
    c.startAll();
  });
  afterAll(async () => {
    await c?.stop();
  });

  it('catches the follower up with entries from the kept tail: no snapshot, the stores agree', async () => {
    const { leader } = await c.waitForLeader();
    const behind = c.ids.find((id) => id !== leader)!;
    const other = c.ids.find((id) => id !== leader && id !== behind)!;
    const acquire = async (on: string, from: number, count: number) => {
      for (let i = from; i < from + count; i += 10) {
        const batch = Array.from({ length: Math.min(10, from + count - i) }, (_, k) =>
          c.raw<AcquireResponse>(on, 'Acquire', { key: `k${i + k}`, owner: 'o', ttl_ms: '600000', request_id: `r${i + k}` }),
        );
        for (const a of await Promise.all(batch)) expect(a.acquired).toBe(true);
      }
    };
    const applied = async (id: string) => Number((await c.status(id)).applied_index);

    await acquire(leader, 0, 150);
    const first = await applied(leader);
    await waitFor('the followers apply them', async () => (await applied(behind)) >= first && (await applied(other)) >= first);
    await c.kill(behind, 'SIGTERM');
    await acquire(leader, 150, 20);
    await c.kill(other, 'SIGTERM');
    await c.kill(leader, 'SIGTERM');

    c.startAll();
    const { leader: next } = await c.waitForLeader();
    expect(next).not.toBe(behind);
    // The setup: the follower's store is behind the new leader's, and the leader's log reaches below it.
    const [lead, back] = [restored(c, next), restored(c, behind)];
    expect(back.appliedIndex).toBeLessThan(lead.appliedIndex);
    expect(lead.snapshotIndex).toBeGreaterThan(0);
    expect(lead.snapshotIndex).toBeLessThan(back.appliedIndex);

    await acquire(next, 170, 1);
    const last = await applied(next);
    await waitFor('every node applies the new entry', async () => (await Promise.all(c.ids.map(applied))).every((a) => a >= last));
    for (const id of c.ids) {
      expect(c.logText(id), id).not.toMatch(/snapshot stream opened|snapshot made for a follower|installed snapshot from leader/);
    }
    let views = await Promise.all(c.ids.map((id) => storeView(c.endpoint(id))));
    await waitFor('every store at one index', async () => {
      views = await Promise.all(c.ids.map((id) => storeView(c.endpoint(id))));
      return views.every((v) => v.index === views[0]!.index);
    });
    for (const v of views) expect(v.digest).toBe(views[0]!.digest);
    expect(views[0]!.holds).toBe(171);
  }, 120_000);
});
