// The client commands through the real binary against a real cluster: SPEC's exit codes, local checks of
// durations, tokens and endpoints, refusals that name the holder and the next step, progress while queued,
// ISO times, --version and `run --json`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/index.js';
import { RUN_EXIT, RUN_DEFAULT_TTL_MS } from '../../src/cli/run.js';
import { TestCluster, freePorts, waitFor } from '../integration/harness.js';
import { MAIN_JS } from './helpers.js';

let c: TestCluster;
let direct: LockClient;
const procs: ReturnType<typeof spawn>[] = [];

beforeAll(async () => {
  c = await TestCluster.create();
  c.startAll();
  await c.waitForLeader();
  direct = new LockClient({ endpoints: c.endpoints() });
});

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  direct?.close();
  await c?.stop();
});

interface Cli {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `leasehold ARGS` (with the cluster's endpoints unless the args give some) and waits for it. */
function cli(args: string[], opts: { endpoints?: boolean } = {}): Promise<Cli> {
  // After the subcommand, before any `--` (what follows it is run's command).
  const full = opts.endpoints === false ? args : [args[0]!, '--endpoints', c.endpoints().join(','), ...args.slice(1)];
  const started = Date.now();
  const proc = spawn(process.execPath, [MAIN_JS, ...full], { stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(proc);
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
  proc.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started })));
}

const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;

describe('leasehold CLI', () => {
  it('--version prints the package version', async () => {
    const r = await cli(['--version'], { endpoints: false });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe((JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version);
  });

  it("health: exit 0 for a SERVING node (what the image's HEALTHCHECK runs), 2 for an unreachable one", async () => {
    const ok = await cli(['health', '--endpoint', c.endpoint('n2')], { endpoints: false });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout.trim()).toBe(`${c.endpoint('n2')}: SERVING`);
    const [port] = await freePorts(1);
    const down = await cli(['health', '--endpoint', `127.0.0.1:${port}`], { endpoints: false });
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/no health answer \(UNAVAILABLE/);
  });

  it('exit 1 for usage errors found locally: a bare duration, a malformed token, an endpoint without a port or with http://', async () => {
    const ttl = await cli(['acquire', 'k', '--owner', 'me', '--ttl', '5']);
    expect(ttl.code).toBe(1);
    expect(ttl.stderr).toMatch(/--ttl: "5" has no unit — did you mean 5s\?/);
    const timeout = await cli(['get', 'k', '--timeout', '5']);
    expect(timeout.code).toBe(1);
    expect(timeout.stderr).toMatch(/did you mean 5s\?/);
    const token = await cli(['release', 'k', '--owner', 'me', '--token', 'abc']);
    expect(token.code).toBe(1);
    expect(token.stderr).toMatch(/--token: expected the fencing token that acquire printed/);
    const local = await cli(['get', 'k', '--endpoints', 'localhost'], { endpoints: false });
    expect(local.code).toBe(1);
    expect(local.stderr).toMatch(/"localhost" has no port: did you mean localhost:7001\?/);
    const http = await cli(['get', 'k', '--endpoints', `http://${c.endpoint('n1')}`], { endpoints: false });
    expect(http.code).toBe(1);
    expect(http.stderr).toContain(`give host:port without a scheme or path, e.g. ${c.endpoint('n1')}`);
  });

  it('exit 1 for a server-side INVALID_ARGUMENT (a ttl below lock.minTtlMs), so a retrying script does not loop', async () => {
    const r = await cli(['acquire', 'k', '--owner', 'me', '--ttl', '1ms']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/refused the request as invalid: ttl_ms/);
  });

  it('exit 2 promptly when no node is reachable, naming the endpoints tried and suggesting --endpoints', async () => {
    const ports = await freePorts(2);
    const eps = ports.map((p) => `127.0.0.1:${p}`);
    const r = await cli(['get', 'k', '--endpoints', eps.join(',')], { endpoints: false });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`tried ${eps.join(', ')}`);
    expect(r.stderr).toMatch(/Check --endpoints/);
    expect(r.ms).toBeLessThan(6000); // the grace is 2 s; the default --timeout is 10 s
  });

  it('acquire, get with ISO times, a refused acquire naming the holder (exit 3), and a same-owner re-acquire killing the old token', async () => {
    const a = await cli(['acquire', 'cli-k', '--owner', 'alice', '--ttl', '30s']);
    expect(a.code, a.stderr).toBe(0);
    const token = /token (\d+)/.exec(a.stdout)![1]!;
    expect(a.stdout).toMatch(ISO);
    const g = await cli(['get', 'cli-k']);
    expect(g.code).toBe(0);
    expect(g.stdout).toMatch(new RegExp(`held by alice, token ${token}, [\\d.]+s left \\(expires ${ISO.source}`));
    expect(g.stdout).not.toMatch(/\d{13}/); // no epoch milliseconds
    const json = JSON.parse((await cli(['get', 'cli-k', '--json'])).stdout) as { expires_at: string; token: string };
    expect(json.expires_at).toMatch(ISO);

    // A value stored with the hold is shown by get (text and JSON).
    const v = await cli(['acquire', 'cli-v', '--owner', 'carol', '--ttl', '30s', '--value', '10.0.0.7:8080']);
    expect(v.code, v.stderr).toBe(0);
    expect((await cli(['get', 'cli-v'])).stdout).toContain('value "10.0.0.7:8080"');
    const vj = JSON.parse((await cli(['get', 'cli-v', '--json'])).stdout) as { holders: { owner: string; value: string }[] };
    expect(vj.holders).toMatchObject([{ owner: 'carol', value: '10.0.0.7:8080' }]);

    const b = await cli(['acquire', 'cli-k', '--owner', 'bob', '--ttl', '5s']);
    expect(b.code).toBe(3);
    expect(b.stdout).toMatch(/not acquired: lock "cli-k" is held by "alice" for another [\d.]+s; retry later, or queue with --wait/);

    const again = await cli(['acquire', 'cli-k', '--owner', 'alice', '--ttl', '30s']);
    expect(again.code).toBe(0);
    const newToken = /token (\d+)/.exec(again.stdout)![1]!;
    expect(BigInt(newToken)).toBeGreaterThan(BigInt(token));
    expect(again.stdout).toContain(`"alice" already held cli-k with token ${token}; that token is now dead`);

    // The old token: refused (3) with the current token named and what to do.
    const renew = await cli(['renew', 'cli-k', '--owner', 'alice', '--token', token, '--ttl', '10s']);
    expect(renew.code).toBe(3);
    expect(renew.stdout).toContain(`held by "alice" with token ${newToken}, not ${token} — token ${token} is dead`);
    expect(renew.stdout).toMatch(/use --token \d+ if that acquire is yours, or acquire again/);
    // A token above the last one issued was never this lock's (issue 22: it was called "dead, superseded").
    const never = String(BigInt(newToken) + 1000n);
    const bogus = await cli(['release', 'cli-k', '--owner', 'alice', '--token', never]);
    expect(bogus.code).toBe(3);
    expect(bogus.stdout).toContain(`token ${never} was never issued for lock "cli-k" (the last token issued is ${newToken})`);
    expect(bogus.stdout).not.toContain('superseded');
    // Another owner: refused (3), naming the holder.
    const rel = await cli(['release', 'cli-k', '--owner', 'bob', '--token', newToken]);
    expect(rel.code).toBe(3);
    expect(rel.stdout).toMatch(/held by "alice" with token \d+ for another [\d.]+s \(until .*\), not by "bob"/);
    const ok = await cli(['release', 'cli-k', '--owner', 'alice', '--token', newToken]);
    expect(ok.code).toBe(0);
    const gone = await cli(['release', 'cli-k', '--owner', 'alice', '--token', newToken, '--request-id', 'fresh']);
    expect(gone.code).toBe(3);
    expect(gone.stdout).toMatch(/is not held .*Acquire it again for a new token/);
  });

  it('acquire --wait reports on stderr who holds the lock and how long it has waited', async () => {
    const holder = await direct.acquire('cli-q', { ttlMs: 20_000, owner: 'holder' });
    const r = await cli(['acquire', 'cli-q', '--owner', 'waiter', '--ttl', '5s', '--wait', '2500ms']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      new RegExp(
        `waiting for lock "cli-q": held by "holder" with token ${holder.token} for another [\\d.]+s \\(until ${ISO.source}\\); waited 1(\\.\\d)?s`,
      ),
    );
    expect(r.stdout).toMatch(/\(waited 2\.\ds\)/);
    await holder.release();
  });

  it('run --json: events as JSON lines on stderr, the default ttl, and progress while queued', async () => {
    const free = await cli(['run', '--lock', 'cli-run', '--json', '--', process.execPath, '-e', 'process.exit(0)']);
    expect(free.code).toBe(0);
    const events = free.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; at: string; ttl_ms?: number; code?: number });
    expect(events.map((e) => e.event)).toEqual(['acquired', 'released', 'exit']);
    expect(events[0]!.ttl_ms).toBe(RUN_DEFAULT_TTL_MS);
    expect(events[0]!.at).toMatch(ISO);
    expect(events[2]!.code).toBe(0);

    const holder = await direct.acquire('cli-run', { ttlMs: 20_000, owner: 'busy' });
    const busy = await cli(['run', '--lock', 'cli-run', '--json', '--wait', '1500ms', '--', process.execPath, '-e', "console.log('ran')"]);
    expect(busy.code).toBe(RUN_EXIT.NOT_ACQUIRED);
    expect(busy.stdout).toBe('');
    const ev = busy.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; holder?: string; waited_ms?: number });
    expect(ev.find((e) => e.event === 'queued')).toMatchObject({ holder: 'busy' });
    expect(ev.find((e) => e.event === 'not-acquired')).toMatchObject({ holder: 'busy' });
    await holder.release();
  });
  it('session open / acquire --session / get / session renew / close: holds live and end with the session (exit codes 0, 3, 1)', async () => {
    const eps = c.endpoints().join(',');
    const session = (args: string[]) => cli(['session', args[0]!, '--endpoints', eps, ...args.slice(1)], { endpoints: false });
    const opened = await session(['open', '--owner', 'cli-s', '--ttl', '20s', '--json']);
    expect(opened.code, opened.stderr).toBe(0);
    const id = (JSON.parse(opened.stdout) as { session_id: string }).session_id;
    expect(BigInt(id)).toBeGreaterThan(0n);
    const held = await cli(['acquire', 'cli-sess-a', '--owner', 'cli-s', '--session', id]);
    expect(held.code, held.stderr).toBe(0);
    expect(held.stdout).toMatch(new RegExp(`under session ${id}`));
    expect((await cli(['get', 'cli-sess-a'])).stdout).toMatch(new RegExp(`held by cli-s, .*under session ${id}`));
    // --ttl and --session together, or neither: usage (exit 1) before anything is sent.
    const both = await cli(['acquire', 'cli-sess-b', '--owner', 'cli-s', '--session', id, '--ttl', '5s']);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/exactly one of --ttl .* and --session/);
    // Another owner under the session: INVALID_ARGUMENT, exit 1.
    const other = await cli(['acquire', 'cli-sess-b', '--owner', 'mallory', '--session', id]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/not the owner of session/);
    const renewed = await session(['renew', id, '--owner', 'cli-s']);
    expect(renewed.code, renewed.stderr).toBe(0);
    expect(renewed.stdout).toMatch(new RegExp(`renewed session ${id}: ttl 20s`));
    const closed = await session(['close', id]);
    expect(closed.code, closed.stderr).toBe(0);
    expect(closed.stdout).toBe(`closed session ${id}; released cli-sess-a\n`);
    expect((await cli(['get', 'cli-sess-a'])).stdout).toMatch(/cli-sess-a: free/);
    // It cannot come back: refused, exit 3, and the message says to open a new one.
    const again = await session(['renew', id]);
    expect(again.code).toBe(3);
    expect(again.stdout).toMatch(/not renewed: session \d+ is not open .*open a new one/);
  }, 60_000);

  it('acquire --limit / --shared, get listing every holder, a wrong limit refused (exit 3), run --limit as a job pool', async () => {
    // Semaphores need cluster level 3: the leader raises it once it has heard every member.
    await waitFor(
      'cluster level 3 or above',
      async () => (await Promise.all(c.ids.map((id) => c.status(id)))).every((s) => s.cluster_level >= 3),
      15_000,
    );
    const a = await cli(['acquire', 'cli-pool', '--owner', 'pa', '--ttl', '20s', '--limit', '2']);
    const b = await cli(['acquire', 'cli-pool', '--owner', 'pb', '--ttl', '20s', '--limit', '2']);
    expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
    const full = await cli(['acquire', 'cli-pool', '--owner', 'pc', '--ttl', '20s', '--limit', '2']);
    expect(full.code).toBe(3);
    expect(full.stdout).toMatch(/not acquired: lock "cli-pool" is held by "pa"/);
    const got = await cli(['get', 'cli-pool']);
    expect(got.stdout).toMatch(/cli-pool: 2 holders of a limit of 2 /);
    expect(got.stdout).toMatch(/\n {2}pa: token \d+, .* left\n {2}pb: token \d+, .* left/);
    const wrong = await cli(['acquire', 'cli-pool', '--owner', 'pd', '--ttl', '20s', '--limit', '3']);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/has limit 2 while it has holders or waiters/);
    expect((await cli(['acquire', 'cli-pool', '--owner', 'pd', '--ttl', '20s', '--limit', '0'])).code).toBe(1); // usage: 1..1000
    expect((await cli(['acquire', 'cli-rw', '--owner', 'x', '--ttl', '5s', '--limit', '2', '--shared'])).code).toBe(1);
    const r1 = await cli(['acquire', 'cli-rw', '--owner', 'r1', '--ttl', '20s', '--shared']);
    const r2 = await cli(['acquire', 'cli-rw', '--owner', 'r2', '--ttl', '20s', '--shared']);
    expect([r1.code, r2.code]).toEqual([0, 0]);
    expect((await cli(['get', 'cli-rw'])).stdout).toMatch(/r1: token \d+, shared, .*\n {2}r2: token \d+, shared/);
    expect((await cli(['acquire', 'cli-rw', '--owner', 'w', '--ttl', '5s'])).code).toBe(3); // exclusive: readers hold
    // run --limit 2: four copies started at once, at most two run together (each records its start and end).
    const log = join(mkdtempSync(join(tmpdir(), 'leasehold-pool-')), 'runs.log');
    const job = `const fs=require('fs');fs.appendFileSync(${JSON.stringify(log)},'start '+process.env.LEASEHOLD_TOKEN+'\\n');setTimeout(()=>{fs.appendFileSync(${JSON.stringify(log)},'end '+process.env.LEASEHOLD_TOKEN+'\\n')},400)`;
    const runs = await Promise.all(
      [1, 2, 3, 4].map(() =>
        cli(['run', '--lock', 'cli-jobs', '--limit', '2', '--wait', '20s', '--quiet', '--', process.execPath, '-e', job]),
      ),
    );
    expect(
      runs.map((r) => r.code),
      runs.map((r) => r.stderr).join(''),
    ).toEqual([0, 0, 0, 0]);
    let inside = 0;
    let most = 0;
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    for (const line of lines) {
      inside += line.startsWith('start') ? 1 : -1;
      most = Math.max(most, inside);
    }
    expect(lines).toHaveLength(8);
    expect(new Set(lines.filter((l) => l.startsWith('start'))).size).toBe(4); // four tokens
    expect(most).toBe(2);
  }, 90_000);
});
