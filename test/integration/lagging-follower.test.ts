// Issue 36: a follower kept down while 50,000 entries commit and the log is compacted past it comes back,
// is sent the state (streamed from a LevelDB view of the leader's applied store, written chunk by chunk into a
// new generation of the follower's and swapped in), and serves; its persisted state then equals the leader's
// at the same index. Its first two streams reach its store corrupted (test faults: snapshot.corruptStreams):
// each is refused — the node keeps running (no exit 70), its old state and log in force — and the leader
// sends the stream again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcquireResponse, GetResponse, ReleaseResponse } from '../../src/wire/lock.js';
import { BUILD_LEVEL } from '../../src/lock/versions.js';
import { TestCluster, waitFor } from './harness.js';
import { storeView } from './store-digest.js';

describe('a follower behind the compacted log', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.create({ extraYaml: '  snapshotEvery: 5000\n', faultFiles: true });
    c.startAll();
  });
  afterAll(async () => {
    await c?.stop();
  });

  it('is sent the state after 50,000 entries, serves, and equals the leader', async () => {
    const { leader } = await c.waitForLeader();
    const lagging = c.ids.find((id) => id !== leader)!;
    // The cluster reaches this build's level (the record stream is level 6) while every member is up.
    await waitFor(`cluster level ${BUILD_LEVEL}`, async () => (await c.status(leader)).cluster_level === BUILD_LEVEL, 30_000);
    const downAt = Number((await c.status(lagging)).applied_index);
    await c.kill(lagging, 'SIGTERM');
    const start = Number((await c.status(leader)).applied_index);

    // Acquire and release cycles on 64 keys (each two entries), plus 500 holds that stay, until 50,000 entries
    // have committed since the follower went down.
    let stop = false;
    const holds = new Map<string, string>();
    // One pool (one connection and Lock/Stream) to the leader for the whole load, which never kills it: c.raw
    // opens a connection per call, and a connection set-up per entry would cost more than the entry.
    const load = c.pool([leader]);
    const call = <Res>(method: 'Acquire' | 'Release', request: object): Promise<Res> =>
      load.call<Res>(method, request, Date.now() + 3000, undefined, false);
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const key = `cycle/${w}/${i % 4}`;
        const a = await call<AcquireResponse>('Acquire', { key, owner: `w${w}`, ttl_ms: '60000', request_id: `${w}-${i}-a` });
        if (!a.acquired) continue;
        if (i % 100 === 0 && holds.size < 500) {
          const k = await call<AcquireResponse>('Acquire', {
            key: `kept/${w}/${i}`,
            owner: `w${w}`,
            ttl_ms: '600000',
            request_id: `${w}-${i}-k`,
          });
          expect(k.acquired).toBe(true);
          holds.set(`kept/${w}/${i}`, String(k.token));
        }
        await call<ReleaseResponse>('Release', {
          key,
          owner: `w${w}`,
          token: String(a.token),
          request_id: `${w}-${i}-r`,
        });
      }
    };
    const workers = Array.from({ length: 16 }, (_, w) => worker(w));
    await waitFor(
      '50,000 entries committed while the follower is down',
      async () => Number((await c.status(leader)).applied_index) >= start + 50_000,
      300_000,
      500,
    );
    stop = true;
    await Promise.all(workers);
    load.close();
    const leaderLog = c.logText(leader);
    const compactedTo = Math.max(
      ...[...leaderLog.matchAll(/"index":(\d+),"storeIndex":\d+,"msg":"log compacted below the applied store"/g)].map((m) => Number(m[1])),
    );
    expect(compactedTo, 'the leader compacted its log past the follower').toBeGreaterThan(downAt + 40_000);

    // The first two streams it receives have a byte flipped: both refused, the third installs.
    c.faults(lagging).setSnapshot({ corruptStreams: 2 });
    c.start(lagging);
    await waitFor('the follower installs the state', async () => /installed snapshot from leader/.test(c.logText(lagging)), 60_000);
    const refusals = c.logText(lagging).match(/a snapshot from the leader did not verify/g) ?? [];
    expect(refusals, 'two corrupted streams refused').toHaveLength(2);
    expect(c.logText(lagging)).not.toMatch(/raft loop failed; stopping the node/);
    // Every node runs this build, so the cluster is at level 6: the state is streamed from the leader's
    // store (never made whole in its memory), not written by the sliced writer.
    expect(c.logText(leader)).toMatch(/snapshot stream opened for a follower behind the log/);
    expect(c.logText(leader)).not.toMatch(/snapshot made for a follower behind the log/);
    // It serves: a linearizable Get through it sees what the leader granted.
    await waitFor('the follower serves', async () => (await c.status(lagging)).serving === true, 30_000);
    expect(holds.size).toBeGreaterThan(50);
    for (const [key, token] of [...holds].slice(0, 50)) {
      const g = await c.raw<GetResponse>(lagging, 'Get', { key });
      expect({ held: g.held, token: String(g.token) }, key).toEqual({ held: true, token });
    }
    // Its store equals the leader's at one index.
    let views = await Promise.all([storeView(c.endpoint(leader)), storeView(c.endpoint(lagging))]);
    await waitFor('both stores at one index', async () => {
      views = await Promise.all([storeView(c.endpoint(leader)), storeView(c.endpoint(lagging))]);
      return views[0].index === views[1].index;
    });
    expect(views[1].digest).toBe(views[0].digest);
  }, 600_000);
});
