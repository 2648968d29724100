// The package as a user gets it: `npm pack`, install the tarball into the example project under
// examples/client-app, type-check its TypeScript against the shipped declarations, and run both the
// JavaScript and the TypeScript version against a real cluster; then the election and job-pool examples
// (examples/election, examples/job-pool: scripts that import only 'leasehold/client') from the same install.
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createInterface } from 'node:readline';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster, waitFor } from '../integration/harness.js';

const REPO = resolve('.');
let dir: string;
let app: string;
let tarball: string;
let files: string[];
let c: TestCluster;

function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 180_000, env: { ...process.env, ...env } });
}
const out = (r: SpawnSyncReturns<string>) => `exit ${r.status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-pkg-'));
  // dist/ is built by `npm test` (npm run build); --ignore-scripts keeps pack from building it again.
  const pack = sh('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], REPO);
  expect(pack.status, out(pack)).toBe(0);
  const info = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(dir, info[0]!.filename);
  files = info[0]!.files.map((f) => f.path);
  app = join(dir, 'app');
  cpSync(join(REPO, 'examples/client-app'), app, { recursive: true, filter: (src) => !/node_modules|reports-db|[/\\]out$/.test(src) });
  cpSync(join(REPO, 'examples/election/scheduler.mjs'), join(app, 'scheduler.mjs'));
  cpSync(join(REPO, 'examples/job-pool/worker.mjs'), join(app, 'worker.mjs'));
  // From npm's cache when it can (the repository's own npm ci filled it); the registry is slow here.
  let install = sh('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball], app);
  if (install.status !== 0) install = sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], app);
  expect(install.status, out(install)).toBe(0);
  c = await TestCluster.create();
  c.startAll();
  await c.waitForLeader();
}, 240_000);

afterAll(async () => {
  await c?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the npm package', () => {
  it('ships the built library, its declarations and the protos, and nothing of the tests (test faults included)', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'dist/src/cli/main.js',
        'dist/src/client/index.d.ts',
        'dist/src/fencing/index.d.ts',
        'proto/leasehold/v1/lock.proto',
        'dashboard/index.html',
        'dashboard/dashboard.js',
        'dashboard/dashboard.css',
      ]),
    );
    expect(files.filter((f) => /^(test|scripts|src|examples|build)\/|^dist\/(test|scripts)\//.test(f))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    // Test faults are built into dist/ (the process tests' nodes run from it) and left out of the package.
    expect(existsSync(join(REPO, 'dist/src/test-faults/switch.js'))).toBe(true);
    expect(files.filter((f) => f.startsWith('dist/src/test-faults/'))).toEqual([]);
    console.info(`npm pack: ${files.length} files`);
  });

  it('the installed package finds its dashboard files from dist/ (what a node serves at /)', () => {
    const assets = join(app, 'node_modules/leasehold/dist/src/server/observability/dashboard-assets.js');
    const found = sh(
      process.execPath,
      ['--input-type=module', '-e', `import { findDashboardDir } from ${JSON.stringify(assets)}; console.log(findDashboardDir());`],
      app,
    );
    expect(found.status, out(found)).toBe(0);
    expect(found.stdout.trim()).toBe(join(app, 'node_modules/leasehold/dashboard'));
  });

  it('the example project type-checks (skipLibCheck off: our .d.ts files too) against leasehold/client and leasehold/fencing, and a type error is caught', () => {
    const tsc = join(app, 'node_modules/typescript/bin/tsc');
    const ok = sh(process.execPath, [tsc, '-p', 'tsconfig.json'], app);
    expect(ok.status, out(ok)).toBe(0);
    // The declarations are real: a token is a bigint, not a number (and no TS7016 "no declaration file").
    writeFileSync(
      join(app, 'wrong.ts'),
      "import { LockClient } from 'leasehold/client';\nconst c = new LockClient({ endpoints: 'h:1' });\nexport const n: number = (await c.acquire('k', { ttlMs: 1000 })).token;\n",
    );
    const badFile = sh(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--skipLibCheck',
        '--module',
        'NodeNext',
        '--moduleResolution',
        'NodeNext',
        '--target',
        'ES2022',
        '--strict',
        '--types',
        'node',
        'wrong.ts',
      ],
      app,
    );
    expect(badFile.status).not.toBe(0);
    expect(badFile.stdout).toMatch(/wrong\.ts\(3,\d+\): error TS2322: Type 'bigint' is not assignable to type 'number'/);
    expect(badFile.stdout).not.toMatch(/TS7016/);
  });

  it('the JavaScript and the TypeScript example run against a real cluster and write with increasing tokens', () => {
    const env = { LEASEHOLD_ENDPOINTS: c.endpoints().join(','), REPORTS_DB: join(dir, 'reports-db') };
    const js = sh(process.execPath, ['report.mjs', 'report:js'], app, env);
    expect(js.status, out(js)).toBe(0);
    const first = JSON.parse(js.stdout.trim()) as { event: string; token: string };
    expect(first.event).toBe('written');
    const ts = sh(process.execPath, ['out/report.js', 'report:js'], app, env);
    expect(ts.status, out(ts)).toBe(0);
    const second = JSON.parse(ts.stdout.trim()) as { event: string; token: string };
    expect(second.event).toBe('written');
    expect(BigInt(second.token)).toBeGreaterThan(BigInt(first.token));
    expect(readdirSync(join(dir, 'reports-db')).length).toBeGreaterThan(0);
  });

  it('the election example: two schedulers, one leads; kill -9 it and the other leads within the 2 s session TTL, with a higher token', async () => {
    const env = { ...process.env, LEASEHOLD_ENDPOINTS: c.endpoints().join(',') };
    const start = (name: string) => {
      const p = spawn(process.execPath, ['scheduler.mjs', 'pkg-election'], {
        cwd: app,
        env: { ...env, CANDIDATE: name },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const lines: { event: string; candidate: string; token?: string; atMs: number }[] = [];
      createInterface({ input: p.stdout! }).on('line', (l) =>
        lines.push({ ...(JSON.parse(l) as { event: string; candidate: string; token?: string }), atMs: Date.now() }),
      );
      return { p, lines };
    };
    const a = start('a');
    const b = start('b');
    try {
      const leading = (x: typeof a) => x.lines.find((l) => l.event === 'leading');
      const first = await waitFor('one scheduler leads', () => (leading(a) ? a : leading(b) ? b : null), 20_000);
      const other = first === a ? b : a;
      await waitFor('it runs the job', () => first.lines.filter((l) => l.event === 'job').length >= 2, 10_000);
      expect(leading(other)).toBeUndefined(); // one leader at a time
      const killedAt = Date.now();
      first.p.kill('SIGKILL');
      const next = await waitFor('the other leads', () => leading(other), 20_000);
      console.info(`election example: kill -9 -> the other leads in ${next.atMs - killedAt} ms`);
      expect(next.atMs - killedAt).toBeLessThan(2000 + 1500);
      expect(BigInt(next.token!)).toBeGreaterThan(BigInt(leading(first)!.token!));
    } finally {
      a.p.kill('SIGKILL');
      b.p.kill('SIGKILL');
    }
  }, 60_000);

  it('the job-pool example: five workers of two jobs each on a semaphore of 3 — never more than three at once', async () => {
    // Semaphores need cluster level 3: the leader raises it once it has heard every member.
    await waitFor(
      'cluster level 3 or above',
      async () => (await Promise.all(c.ids.map((id) => c.status(id)))).every((s) => s.cluster_level >= 3),
      15_000,
    );
    const journal = join(dir, 'jobs.log');
    const env = { ...process.env, LEASEHOLD_ENDPOINTS: c.endpoints().join(','), SLOTS: '3', JOBS: '2', JOB_MS: '400', JOB_LOG: journal };
    const workers = [1, 2, 3, 4, 5].map((i) =>
      spawn(process.execPath, ['worker.mjs', 'pkg-pool'], {
        cwd: app,
        env: { ...env, WORKER: `w${i}` },
        stdio: ['ignore', 'ignore', 'inherit'],
      }),
    );
    try {
      const codes = await Promise.all(workers.map((p) => new Promise<number | null>((r) => p.on('close', r))));
      expect(codes).toEqual([0, 0, 0, 0, 0]);
    } finally {
      for (const p of workers) p.kill('SIGKILL');
    }
    const lines = readFileSync(journal, 'utf8').trim().split('\n');
    let inside = 0;
    let most = 0;
    for (const line of lines) {
      inside += line.startsWith('start ') ? 1 : -1;
      most = Math.max(most, inside);
    }
    expect(lines).toHaveLength(20);
    expect(new Set(lines.filter((l) => l.startsWith('start '))).size).toBe(10); // ten jobs, ten tokens
    expect(most).toBe(3); // full, and never more
  }, 90_000);
});
