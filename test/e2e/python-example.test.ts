// examples/python against a real 3-node cluster: the stubs are generated from proto/ with grpcio-tools
// into a temp dir (examples/python/generate.sh), the example runs, and its output and the cluster's state
// afterwards are checked — the tokens it printed grow, the stale token was refused, and the keys it used
// are free with the last token it printed. Its output is printed for the record.
// Without a python3 that has the grpc and grpc_tools modules (Debian: python3-grpcio, python3-grpc-tools;
// .ci/run installs them) the test is skipped, and the reason is printed.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GetResponse } from '../../src/wire/lock.js';
import { TestCluster } from '../integration/harness.js';

const EXAMPLE = resolve('examples/python');
const CANDIDATES = [process.env['LEASEHOLD_PYTHON'], '/usr/bin/python3', 'python3'].filter(
  (p): p is string => typeof p === 'string' && p !== '',
);
/** The first python3 that can import what the example needs (a pyenv python3 may lack Debian's modules). */
const PYTHON = CANDIDATES.find((p) => spawnSync(p, ['-c', 'import grpc, grpc_tools.protoc'], { stdio: 'ignore' }).status === 0) ?? null;
const SKIP_REASON = `no python3 with the grpc and grpc_tools modules among ${CANDIDATES.join(', ')}: apt-get install -y python3-grpcio python3-grpc-tools (.ci/run does) or set LEASEHOLD_PYTHON`;
if (PYTHON === null) console.warn(`python example test SKIPPED: ${SKIP_REASON}`);

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(cmd, args, { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

let c: TestCluster;
let stubs = '';

beforeAll(async () => {
  if (PYTHON === null) return;
  stubs = mkdtempSync(join(tmpdir(), 'leasehold-py-stubs-'));
  c = await TestCluster.create();
  c.startAll();
  await c.waitForLeader();
}, 60_000);

afterAll(async () => {
  await c?.stop();
  if (stubs) rmSync(stubs, { recursive: true, force: true });
});

describe('examples/python', () => {
  it('generates its stubs from proto/, acquires with a fencing token, renews, releases, and runs a critical section under a session', async (ctx) => {
    if (PYTHON === null) return ctx.skip(SKIP_REASON);
    const gen = await run('sh', [join(EXAMPLE, 'generate.sh'), stubs], { PYTHON });
    expect(gen.code, gen.stderr).toBe(0);

    const ex = await run(PYTHON, [join(EXAMPLE, 'lock_example.py')], {
      LEASEHOLD_ENDPOINTS: c.endpoints().join(','),
      LEASEHOLD_PY_STUBS: stubs,
    });
    console.info(`python example output:\n${ex.stdout}${ex.stderr}`);
    expect(ex.code, ex.stderr).toBe(0);
    const lines = ex.stdout.trim().split('\n');
    const m = (re: RegExp): RegExpMatchArray => {
      const hit = lines.map((l) => l.match(re)).find((x) => x !== null);
      if (!hit) throw new Error(`no line matches ${re} in:\n${ex.stdout}`);
      return hit;
    };
    const first = BigInt(m(/^acquired py-example\/report: token (\d+) \(ttl 10000 ms\)$/)[1]!);
    m(new RegExp(`^fenced write with token ${first}: accepted$`));
    m(/^renewed py-example\/report: ttl 10000 ms$/);
    m(/^released py-example\/report$/);
    const next = BigInt(m(new RegExp(`^next holder py-other got token (\\d+) \\(> ${first}\\)$`))[1]!);
    expect(next > first).toBe(true);
    m(new RegExp(`^late release with token ${first}: refused \\((NOT_HELD|WRONG_OWNER|WRONG_TOKEN)\\)$`));
    m(new RegExp(`^fenced write with stale token ${first}: rejected \\(the resource has seen ${next}\\)$`));
    const session = m(/^session (\d+) opened \(ttl 1500 ms\)$/)[1]!;
    const crit = BigInt(m(new RegExp(`^critical section under session ${session}: py-example/critical token (\\d+)$`))[1]!);
    expect(crit > next).toBe(true);
    // The work outlasted the session's ttl: the hold survived only because the session was renewed.
    const renewals = Number(
      m(
        new RegExp(
          `^after 2000 ms of work \\(session ttl 1500 ms\\): still held with token ${crit}, session renewed (\\d+) times, fenced write accepted$`,
        ),
      )[1],
    );
    expect(renewals).toBeGreaterThanOrEqual(1);
    m(new RegExp(`^session ${session} closed: released py-example/critical$`));
    expect(lines[lines.length - 1]).toBe('done');

    // What the cluster says afterwards: both keys free, each with the last token the example printed.
    const report = await c.raw<GetResponse>(c.ids[0]!, 'Get', { key: 'py-example/report' });
    const critical = await c.raw<GetResponse>(c.ids[1]!, 'Get', { key: 'py-example/critical' });
    expect([report.held, report.last_token, critical.held, critical.last_token]).toEqual([false, String(next), false, String(crit)]);
  }, 90_000);
});
