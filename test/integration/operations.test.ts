// What an operator sees: Prometheus metrics scraped from real nodes under load, the warning a node repeats
// while it cannot reach a quorum, and the error for a second node started on the same dataDir.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/index.js';
import { MAIN_JS, TestCluster, freePorts, waitFor } from './harness.js';

/** One scrape, parsed into `name{labels}` -> value (the node label dropped for brevity). */
async function scrape(address: string): Promise<Map<string, number>> {
  const res = await fetch(`http://${address}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = (m[2] ?? '')
      .split(',')
      .filter((l) => l !== '' && !l.startsWith('node='))
      .join(',');
    out.set(labels ? `${m[1]}{${labels}}` : m[1]!, Number(m[3]));
  }
  return out;
}
const val = (m: Map<string, number>, key: string) => m.get(key) ?? 0;

describe('metrics', () => {
  let c: TestCluster;
  let client: LockClient;
  afterAll(async () => {
    client?.close();
    await c?.stop();
  });

  it('every node serves GET /metrics; the series move under load', async () => {
    const mports = await freePorts(3);
    const maddr = (i: number) => `127.0.0.1:${mports[i]}`;
    // A lag sampling period of 20 ms, unlike the default (50) and prom-client's own (10): the histogram's
    // shortest interval below shows the setting reached it through the node's start.
    c = await TestCluster.create({
      nodeYaml: (_id, i) => `metricsAddress: ${maddr(i)}`,
      extraYaml: '  snapshotEvery: 40\nmetrics:\n  loopLagResolutionMs: 20\n',
    });
    c.startAll();
    const { leader } = await c.waitForLeader();
    const li = c.ids.indexOf(leader);
    const fi = (li + 1) % 3;
    client = new LockClient({ endpoints: c.endpoints() });

    const before = await scrape(maddr(li));
    expect(val(before, 'leasehold_raft_role{role="leader"}')).toBe(1);
    expect(val(before, 'leasehold_raft_term')).toBeGreaterThan(0);
    expect(val(before, 'leasehold_raft_leader_changes_total')).toBeGreaterThanOrEqual(1);
    const follower0 = await scrape(maddr(fi));
    expect(val(follower0, 'leasehold_raft_role{role="follower"}')).toBe(1);
    expect(follower0.has('leasehold_raft_peer_match_lag_entries{peer="n1"}')).toBe(false); // leader only

    // Load: 60 acquire/release cycles, three locks left held, one waiter queued.
    for (let i = 0; i < 60; i++) await (await client.acquire(`m-${i % 5}`, { ttlMs: 5000 })).release();
    const held = await Promise.all([0, 1, 2].map((i) => client.acquire(`held-${i}`, { ttlMs: 30_000 })));
    const waiting = client.acquire('held-0', { ttlMs: 5000, waitMs: 20_000 }).catch((e: unknown) => e);

    const after = await waitFor('the leader to count the waiter', async () => {
      const m = await scrape(maddr(li));
      return val(m, 'leasehold_lock_waiters') === 1 ? m : null;
    });
    expect(val(after, 'leasehold_lock_operations_total{op="acquire",outcome="acquired"}')).toBeGreaterThanOrEqual(63);
    expect(val(after, 'leasehold_lock_operations_total{op="release",outcome="released"}')).toBeGreaterThanOrEqual(60);
    // Refused before it was served (a ttl below lock.minTtlMs): counted as invalid on the node that refused it.
    const badTtl = await c.raw('n1', 'Acquire', { key: 'bad', owner: 'o', ttl_ms: '1', request_id: 'bad-1' }).then(
      () => 'OK',
      (e: unknown) => String(e),
    );
    expect(badTtl).toMatch(/INVALID_ARGUMENT/);
    const n1 = await waitFor('n1 counts the invalid call', async () => {
      const m = await scrape(maddr(0));
      return val(m, 'leasehold_lock_operations_total{op="acquire",outcome="invalid"}') >= 1 ? m : null;
    });
    expect(val(n1, 'leasehold_lock_operations_total{op="acquire",outcome="invalid"}')).toBe(1);
    // So is a List beyond its page bound.
    const badList = await c.raw('n1', 'List', { prefix: '', limit: 5000, page_token: '' }).then(
      () => 'OK',
      (e: unknown) => String(e),
    );
    expect(badList).toMatch(/INVALID_ARGUMENT/);
    const listed = await waitFor('n1 counts the invalid List', async () => {
      const m = await scrape(maddr(0));
      return val(m, 'leasehold_lock_operations_total{op="list",outcome="invalid"}') >= 1 ? m : null;
    });
    expect(val(listed, 'leasehold_lock_operations_total{op="list",outcome="invalid"}')).toBe(1);
    expect(val(after, 'leasehold_lock_operation_duration_seconds_count{op="acquire"}')).toBeGreaterThanOrEqual(63);
    expect(
      val(after, 'leasehold_raft_proposals_total{outcome="committed"}') -
        val(before, 'leasehold_raft_proposals_total{outcome="committed"}'),
    ).toBeGreaterThanOrEqual(123);
    expect(val(after, 'leasehold_raft_proposal_duration_seconds_count')).toBeGreaterThan(
      val(before, 'leasehold_raft_proposal_duration_seconds_count'),
    );
    expect(val(after, 'leasehold_storage_fsync_duration_seconds_count')).toBeGreaterThan(
      val(before, 'leasehold_storage_fsync_duration_seconds_count'),
    );
    expect(val(after, 'leasehold_raft_commit_index')).toBeGreaterThanOrEqual(val(before, 'leasehold_raft_commit_index') + 123);
    expect(val(after, 'leasehold_raft_commits_total')).toBeGreaterThan(val(before, 'leasehold_raft_commits_total'));
    expect(val(after, 'leasehold_lock_leases_held')).toBe(3);
    expect(val(after, 'leasehold_lock_dedup_entries')).toBeGreaterThanOrEqual(120);
    // snapshotEvery 40: the log is compacted below the applied store (no whole-state snapshot is taken while
    // every follower keeps up; one is made only for a follower behind the log — lagging-follower.test.ts).
    expect(val(after, 'leasehold_log_compactions_total')).toBeGreaterThanOrEqual(1);
    for (const id of c.ids.filter((x) => x !== leader)) {
      expect(after.get(`leasehold_raft_peer_match_lag_entries{peer="${id}"}`)).toBeGreaterThanOrEqual(0);
      expect(val(after, `leasehold_peer_connected{peer="${id}"}`)).toBe(1);
    }
    // A follower applies the same entries and sees the same leases.
    const follower = await waitFor('the follower to apply the leases', async () => {
      const m = await scrape(maddr(fi));
      return val(m, 'leasehold_lock_leases_held') === 3 ? m : null;
    });
    expect(val(follower, 'leasehold_raft_commits_total')).toBeGreaterThan(val(follower0, 'leasehold_raft_commits_total') + 100);
    expect(val(follower, 'leasehold_raft_applied_index')).toBeGreaterThan(val(follower0, 'leasehold_raft_applied_index'));

    // The event-loop lag histogram samples every metrics.loopLagResolutionMs: its shortest interval is about
    // one period (a timer never fires early; the clock it is measured by may be a little stale). Each scrape
    // empties the histogram, so scrapes 200 ms apart (several periods) until one holds a sample (an empty
    // histogram reads a min of ~9.2e9 s).
    const lagMinS = await waitFor(
      'an event-loop lag sample',
      async () => {
        const v = val(await scrape(maddr(li)), 'leasehold_nodejs_eventloop_lag_min_seconds');
        return v > 0 && v < 1 ? v : null;
      },
      15_000,
      200,
    );
    expect(lagMinS, 'the shortest event-loop lag interval, 20 ms configured').toBeGreaterThanOrEqual(0.015);
    expect(lagMinS, 'the shortest event-loop lag interval, 20 ms configured').toBeLessThan(0.045);

    // Only /metrics is served.
    expect((await fetch(`http://${maddr(li)}/other`)).status).toBe(404);
    for (const h of held) await h.release();
    const w = await waiting;
    if (w && typeof (w as { release?: unknown }).release === 'function') await (w as { release: () => Promise<unknown> }).release();
  });
});

describe('a node that cannot reach a quorum, and a second node on the same dataDir', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stop();
  });

  it('repeats a warning naming the unreachable peers; a second process on the same dataDir says the dir is locked', async () => {
    c = await TestCluster.create();
    c.start('n1');
    const log = () => readFileSync(join(c.dir, 'n1.log'), 'utf8');
    type Warn = { level: number; time: number; msg: string; unreachable: string[]; votersNeeded: number; votersReachable: number };
    const warnings = () =>
      log()
        .split('\n')
        .filter((l) => l.includes('cannot reach a quorum'))
        .map((l) => JSON.parse(l) as Warn);
    // Election timeout here is 2 x 6 ticks x 50 ms = 600 ms: first warning after 1.2 s, then every 6 s.
    const two = await waitFor('two quorum warnings', () => (warnings().length >= 2 ? warnings() : null), 15_000, 200);
    expect(two[0]).toMatchObject({ level: 40, votersNeeded: 2, votersReachable: 1 });
    expect(two[0]!.unreachable).toEqual([`n2 (${c.endpoint('n2')})`, `n3 (${c.endpoint('n3')})`]);
    expect(two[1]!.time - two[0]!.time).toBeGreaterThanOrEqual(5900);

    const second = spawn(process.execPath, [MAIN_JS, 'serve', '--config', c.configPath, '--id', 'n1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    second.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((r) => second.once('exit', (code) => r(code)));
    expect(code).toBe(1);
    expect(stderr).toMatch(
      new RegExp(`node n1: dataDir ${join(c.dir, 'n1').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is locked by another process`),
    );
    expect(stderr).toMatch(/Each node needs its own dataDir/);
  });
});

describe('examples/grafana-dashboard.json', () => {
  it('is a dashboard whose every query uses series a node exports (as listed in the README)', () => {
    const dash = JSON.parse(readFileSync('examples/grafana-dashboard.json', 'utf8')) as { panels: { targets: { expr: string }[] }[] };
    const readme = readFileSync('README.md', 'utf8');
    const names = dash.panels.flatMap((p) =>
      p.targets.flatMap((t) => [...t.expr.matchAll(/leasehold_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, ''))),
    );
    expect(names.length).toBeGreaterThan(10);
    for (const n of new Set(names)) expect(readme, n).toContain(`\`${n}`);
  });
});
