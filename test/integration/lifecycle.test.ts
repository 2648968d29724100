// Process lifecycle: graceful SIGTERM of a leader (leadership transfer first) and `leasehold dev`.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EndpointPool } from '../../src/client/rpc.js';
import { MAIN_JS, TestCluster, freePorts, waitFor } from './harness.js';

describe('SIGTERM on the leader', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stop();
  });

  it('hands leadership to a follower in the next term, then exits cleanly', async () => {
    c = await TestCluster.create();
    c.startAll();
    const { leader, term } = await c.waitForLeader();
    const child = c.procs.get(leader)!;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const t0 = Date.now();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const survivors = c.ids.filter((id) => id !== leader);
    const next = await c.waitForLeader(survivors);
    // A transfer wins the very next term without a failed election (no timeouts, no split votes).
    expect(Number(next.term)).toBe(Number(term) + 1);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe('leasehold dev', () => {
  it('starts a local 3-node cluster under ./data, serves the CLI, stops on Ctrl-C and keeps data across restarts', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'leasehold-dev-'));
    const [basePort] = await findThreeConsecutivePorts();
    let [metricsBasePort] = await findThreeConsecutivePorts();
    while (Math.abs(metricsBasePort! - basePort!) < 3) [metricsBasePort] = await findThreeConsecutivePorts(); // nothing is bound yet: keep the ranges apart
    const endpoints = [0, 1, 2].map((i) => `127.0.0.1:${basePort! + i}`).join(',');
    const startDev = () =>
      spawn(process.execPath, [MAIN_JS, 'dev', '--base-port', String(basePort), '--metrics-base-port', String(metricsBasePort)], {
        cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [MAIN_JS, ...args, '--endpoints', endpoints], { cwd, encoding: 'utf8', timeout: 20_000 });
    let dev = startDev();
    try {
      let out = '';
      dev.stdout!.on('data', (b: Buffer) => (out += b.toString()));
      await waitFor('dev to print its endpoints', () => out.includes(endpoints));
      // Each node's lines carry its id (JSON here: dev's stdout is not a terminal).
      await waitFor('prefixed node log lines', () => /^n1 \| \{.*"msg":"leasehold node serving"/m.test(out) && /^n3 \| \{/m.test(out));
      const pool = new EndpointPool({ endpoints: endpoints.split(',') });
      await waitFor('a leader', async () => (await pool.status(endpoints.split(',')[0]!, Date.now() + 1000)).leader_id !== '');
      pool.close();
      const acq = cli('acquire', 'mykey', '--owner', 'me', '--ttl', '60s');
      expect(acq.status, acq.stderr).toBe(0);
      // It prints each node's metrics URL, and they serve.
      const urls = [0, 1, 2].map((i) => `http://127.0.0.1:${metricsBasePort! + i}/metrics`);
      expect(out).toContain(`metrics: ${urls.join('  ')}`);
      for (const url of urls)
        expect(await (await fetch(url, { signal: AbortSignal.timeout(3000) })).text()).toMatch(/^leasehold_raft_term/m);
      // And the dashboard beside them.
      const dashboards = [0, 1, 2].map((i) => `http://127.0.0.1:${metricsBasePort! + i}/`);
      expect(out).toContain(`dashboard: ${dashboards.join('  ')}`);
      for (const url of dashboards)
        expect(await (await fetch(url, { signal: AbortSignal.timeout(3000) })).text()).toContain('<title>leasehold dashboard</title>');
      expect(acq.stdout).toMatch(/acquired mykey: token \d+/);
      const token = /token (\d+)/.exec(acq.stdout)![1]!;
      // Ctrl-C stops all three nodes and dev itself.
      const exited = new Promise<number | null>((r) => dev.once('exit', (code) => r(code)));
      process.kill(dev.pid!, 'SIGINT');
      expect(await exited).toBe(0);
      // Restart: the data under ./data is kept.
      dev = startDev();
      const get = await waitFor(
        'the restarted cluster to answer',
        () => {
          const r = cli('get', 'mykey', '--json');
          return r.status === 0 ? (JSON.parse(r.stdout) as { held: boolean; owner: string; token: string }) : null;
        },
        20_000,
        200,
      );
      expect(get.held).toBe(true);
      expect(get.owner).toBe('me');
      expect(get.token).toBe(token);
      const exited2 = new Promise<number | null>((r) => dev.once('exit', (code) => r(code)));
      process.kill(dev.pid!, 'SIGINT');
      expect(await exited2).toBe(0);
    } finally {
      try {
        process.kill(-dev.pid!, 'SIGKILL'); // the whole process group, in case the test failed midway
      } catch {
        /* already gone */
      }
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});

async function findThreeConsecutivePorts(): Promise<number[]> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const [p] = await freePorts(1);
    const { createServer } = await import('node:net');
    const ok = await Promise.all(
      [1, 2].map(
        (i) =>
          new Promise<boolean>((resolve) => {
            const s = createServer();
            s.once('error', () => resolve(false));
            s.listen(p! + i, '127.0.0.1', () => s.close(() => resolve(true)));
          }),
      ),
    );
    if (ok.every(Boolean)) return [p!];
  }
  throw new Error('no three consecutive free ports');
}
