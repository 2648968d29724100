// The image without a container engine: the Dockerfile is linted (scripts/dockerfile-lint.ts; hadolint does
// not install from the registries here), then its build stage's COPY and RUN steps run as written in a
// scratch directory, the runtime stage is assembled from what it copies, and that tree must start a node
// that answers `leasehold health` (the HEALTHCHECK) with its data under the data dir the image sets.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lintDockerfile, parseDockerfile } from '../../scripts/dockerfile-lint.js';
import { freePorts, waitFor } from './harness.js';

const REPO = resolve('.');
const TEXT = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
const scratch = mkdtempSync(join(tmpdir(), 'leasehold-image-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('Dockerfile lint', () => {
  it('keeps every rule', () => {
    expect(lintDockerfile(TEXT, (p) => existsSync(join(REPO, p)))).toEqual([]);
  });

  it('catches a root image that ships the tests and the dev dependencies, without a health check', () => {
    const bad = `FROM node:latest AS build
WORKDIR app
RUN apt-get install python3 && cd src
COPY . .
RUN npm ci
FROM node:20
COPY --from=build /app/test ./test
RUN npm install
CMD node dist/src/cli/main.js
`;
    const problems = lintDockerfile(bad).join('\n');
    for (const rule of [
      'DL3007',
      'DL3000',
      'DL3015',
      'DL3009',
      'DL3003',
      'DL3025',
      'install make',
      'npm prune --omit=dev',
      'non-root USER',
      'HEALTHCHECK is required',
      'VOLUME',
      'LEASEHOLD_DATA_DIR',
      'no tests',
      'without --omit=dev',
      'rm -rf dist/src/test-faults',
    ])
      expect(problems).toContain(rule);
  });
});

describe('Dockerfile build steps, run in a scratch directory', () => {
  it('build stage as written; the runtime tree holds no tests or dev dependencies and serves a healthy node', async () => {
    const [build, runtime] = [parseDockerfile(TEXT)[0]!, parseDockerfile(TEXT).at(-1)!];
    const buildDir = join(scratch, 'build');
    const runDir = join(scratch, 'runtime');
    // Build stage: WORKDIR /app is buildDir; COPY from the repository; RUN as written, with two stand-ins:
    // apt-get is skipped (the lint checks what it installs; this machine has the tools), and `npm ci` is the
    // node_modules the repository's own `npm ci` made from the same package-lock.json, then `prepare` as npm
    // ci runs it (a second full install costs minutes on a shared 2-core machine); npm runs --offline.
    for (const ins of build.instructions) {
      if (ins.op === 'WORKDIR') mkdirSync(buildDir, { recursive: true });
      if (ins.op === 'COPY') {
        const parts = ins.args.split(/\s+/);
        const dest = join(buildDir, parts.at(-1)!);
        for (const src of parts.slice(0, -1))
          cpSync(join(REPO, src), parts.length > 2 || dest.endsWith('/') ? join(dest, src) : dest, { recursive: true });
      }
      if (ins.op === 'RUN' && !ins.args.startsWith('apt-get')) {
        for (const step of ins.args.split('&&').map((c) => c.trim())) {
          let cmd = /^npm\b/.test(step) ? `${step} --offline` : step;
          if (/^npm ci\b/.test(step)) {
            cpSync(join(REPO, 'node_modules'), join(buildDir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
            cmd = 'npm run prepare';
          }
          const r = spawnSync('sh', ['-c', cmd], { cwd: buildDir, encoding: 'utf8', timeout: 150_000 });
          expect(r.status, `${cmd}\n${r.stdout}\n${r.stderr}`).toBe(0);
        }
      }
    }
    expect(existsSync(join(buildDir, 'dist/src/cli/main.js'))).toBe(true);
    expect(existsSync(join(buildDir, 'dist/test'))).toBe(false);
    expect(existsSync(join(buildDir, 'dist/src/test-faults'))).toBe(false);
    // Runtime stage: what its COPY steps take.
    mkdirSync(runDir, { recursive: true });
    for (const ins of runtime.instructions.filter((i) => i.op === 'COPY')) {
      const parts = ins.args.split(/\s+/);
      const fromBuild = parts[0]!.startsWith('--from=');
      if (fromBuild) parts.shift();
      const from = (p: string) => (fromBuild ? join(buildDir, p.replace(/^\/app\//, '')) : join(REPO, p));
      const dest = join(runDir, parts.at(-1)!);
      for (const src of parts.slice(0, -1))
        cpSync(from(src), parts.length > 2 ? join(dest, src.split('/').pop()!) : dest, { recursive: true });
    }
    expect(readdirSync(runDir).sort()).toEqual(['cluster.example.yaml', 'dashboard', 'dist', 'node_modules', 'package.json', 'proto']);
    for (const dev of ['typescript', 'vitest', 'eslint', 'better-sqlite3', 'etcd3'])
      expect(existsSync(join(runDir, 'node_modules', dev)), dev).toBe(false);
    for (const prod of ['@grpc/grpc-js', 'level', 'pino', 'prom-client'])
      expect(existsSync(join(runDir, 'node_modules', prod)), prod).toBe(true);

    // The image's ENV and HEALTHCHECK against a one-node cluster run from the runtime tree.
    const env = Object.fromEntries(
      runtime.instructions
        .filter((i) => i.op === 'ENV')
        .flatMap((i) => i.args.split(/\s+/))
        .map((kv) => kv.split('=') as [string, string]),
    );
    const [port, metricsPort] = await freePorts(2);
    const dataDir = join(scratch, 'data');
    writeFileSync(
      join(scratch, 'cluster.yaml'),
      `nodes:\n  - { id: n1, address: "localhost:${port}", listen: "127.0.0.1:${port}", dataDir: ./elsewhere, metricsAddress: "127.0.0.1:${metricsPort}" }\n`,
    );
    const nodeEnv = { ...process.env, ...env, LEASEHOLD_DATA_DIR: dataDir, LEASEHOLD_HEALTH_ENDPOINT: `127.0.0.1:${port}` };
    const node = spawn(process.execPath, ['dist/src/cli/main.js', 'serve', '--config', join(scratch, 'cluster.yaml'), '--id', 'n1'], {
      cwd: runDir,
      env: nodeEnv,
      stdio: 'ignore',
    });
    try {
      const healthArgs = (
        JSON.parse(/CMD (\[.*\])/.exec(runtime.instructions.find((i) => i.op === 'HEALTHCHECK')!.args)![1]!) as string[]
      ).slice(1);
      await waitFor(
        'the HEALTHCHECK command to pass',
        () => spawnSync(process.execPath, healthArgs, { cwd: runDir, env: nodeEnv, encoding: 'utf8' }).status === 0,
        20_000,
        200,
      );
      expect(readdirSync(dataDir).length).toBeGreaterThan(0); // LEASEHOLD_DATA_DIR, not the config's dataDir
      expect(existsSync(join(scratch, 'elsewhere'))).toBe(false);
      // The dashboard's page is in the image and found from dist/.
      const page = await fetch(`http://127.0.0.1:${metricsPort}/`, { signal: AbortSignal.timeout(5000) });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<title>leasehold dashboard</title>');
    } finally {
      node.kill('SIGKILL');
    }
  }, 240_000);
});
