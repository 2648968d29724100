// `leasehold run` end to end: the real CLI process, a real cluster, and the fault proxy between them.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/index.js';
import { RUN_EXIT } from '../../src/cli/run.js';
import { TestCluster, freePorts, waitFor } from '../integration/harness.js';
import { FaultProxy } from './proxy.js';
import { MAIN_JS } from './helpers.js';

let c: TestCluster;
let direct: LockClient;
const proxies: FaultProxy[] = [];
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
  for (const p of proxies) await p.close();
  await c?.stop();
});

interface RunResult {
  code: number | null;
  stdout: { line: string; at: number }[];
  stderr: string[];
}

/** Starts `leasehold run ARGS`; `onLine` sees each stdout line (the child's, passed through) as it arrives. */
function leaseholdRun(args: string[], onLine: (line: string) => void = () => {}): Promise<RunResult> {
  return leasehold(['run', ...args], onLine);
}

/** Starts `leasehold ARGS` (run, elect); `proc` is the process, `peek()` its stderr lines so far. */
function leasehold(
  args: string[],
  onLine: (line: string) => void = () => {},
): Promise<RunResult> & { proc: ReturnType<typeof spawn>; peek: () => string[] } {
  const proc = spawn(process.execPath, [MAIN_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(proc);
  const result: RunResult = { code: null, stdout: [], stderr: [] };
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    result.stdout.push({ line, at: Date.now() });
    onLine(line);
  });
  createInterface({ input: proc.stderr! }).on('line', (line) => result.stderr.push(line));
  const done = new Promise<RunResult>((resolve) =>
    proc.on('close', (code) => {
      result.code = code;
      resolve(result);
    }),
  );
  return Object.assign(done, { proc, peek: () => result.stderr });
}

/** A child that prints its lock env as JSON, then runs `body`. */
const childScript = (body: string) =>
  `console.log(JSON.stringify({ event: 'ready', key: process.env.LEASEHOLD_KEY, token: process.env.LEASEHOLD_TOKEN, owner: process.env.LEASEHOLD_OWNER })); ${body}`;

describe('leasehold run', () => {
  it('runs the command with LEASEHOLD_KEY/TOKEN, passes its exit code through, and releases the lock', async () => {
    const key = 'run-ok';
    const res = await leaseholdRun([
      '--lock',
      key,
      '--ttl',
      '2s',
      '--endpoints',
      c.endpoints().join(','),
      '--',
      process.execPath,
      '-e',
      childScript('process.exit(7)'),
    ]);
    expect(res.code).toBe(7);
    const ready = JSON.parse(res.stdout[0]!.line) as { key: string; token: string; owner: string };
    expect(ready.key).toBe(key);
    expect(BigInt(ready.token)).toBeGreaterThan(0n);
    // Released at exit: free, and the token it ran with is the last one issued.
    expect(await direct.get(key)).toMatchObject({ held: false, lastToken: BigInt(ready.token) });
    expect(res.stderr.join('\n')).toMatch(/released lock "run-ok" \(released\)/);
  });

  it('renewals blocked: the child gets SIGTERM within ttl + one renew interval, SIGKILL after --grace; exit 77', async () => {
    const key = 'run-lost';
    const ttl = 1500;
    const renewInterval = ttl / 3;
    const grace = 500;
    const proxy = await FaultProxy.start(c.endpoint(c.ids[0]!));
    proxies.push(proxy);
    let blockedAt = 0;
    // The child ignores SIGTERM (it only records it), so the SIGKILL after the grace period is exercised too.
    const script = childScript(
      "process.on('SIGTERM', () => console.log(JSON.stringify({ event: 'sigterm', at: Date.now() }))); setInterval(() => {}, 1000);",
    );
    const done = leaseholdRun(
      ['--lock', key, '--ttl', `${ttl}ms`, '--grace', `${grace}ms`, '--endpoints', proxy.address, '--', process.execPath, '-e', script],
      (line) => {
        if (line.includes('"ready"')) {
          // Cut the holder off from the cluster the moment its command runs.
          proxy.setMode('block');
          blockedAt = Date.now();
        }
      },
    );
    const res = await done;
    const exitedAt = Date.now();
    expect(res.code).toBe(RUN_EXIT.LOST);
    const sigterm = res.stdout.map((l) => JSON.parse(l.line) as { event: string; at: number }).find((m) => m.event === 'sigterm');
    expect(sigterm, `stderr: ${res.stderr.join('\n')}`).toBeDefined();
    const lostAt = Date.parse(/LOST at (\S+): /.exec(res.stderr.join('\n'))?.[1] ?? '');
    const blockToSigtermMs = sigterm!.at - blockedAt;
    const lostToSigtermMs = sigterm!.at - lostAt;
    // The promise of the issue: SIGTERM within ttl + one renew interval of losing contact.
    expect(blockToSigtermMs).toBeLessThanOrEqual(ttl + renewInterval);
    expect(lostToSigtermMs).toBeGreaterThanOrEqual(0);
    expect(lostToSigtermMs).toBeLessThan(200);
    // SIGKILL only after the grace period.
    expect(exitedAt - sigterm!.at).toBeGreaterThanOrEqual(grace - 20);
    expect(res.stderr.join('\n')).toMatch(/still running after 500ms; sending SIGKILL/);
    console.info(
      `leasehold run: block -> SIGTERM ${blockToSigtermMs} ms (bound ${ttl + renewInterval} ms), LOST -> SIGTERM ${lostToSigtermMs} ms`,
    );
  });

  it('never acquired: exit 75 without running the command; an unstartable command gives 127 and releases', async () => {
    const key = 'run-busy';
    const holder = await direct.acquire(key, { ttlMs: 5000 });
    const res = await leaseholdRun([
      '--lock',
      key,
      '--ttl',
      '1s',
      '--endpoints',
      c.endpoints().join(','),
      '--',
      process.execPath,
      '-e',
      "console.log('ran')",
    ]);
    expect(res.code).toBe(RUN_EXIT.NOT_ACQUIRED);
    expect(res.stdout).toHaveLength(0);
    expect(res.stderr.join('\n')).toContain(`held by ${JSON.stringify(holder.owner)}`);
    expect(await direct.get(key)).toMatchObject({ owner: holder.owner, token: holder.token });
    await holder.release();

    const missing = await leaseholdRun([
      '--lock',
      key,
      '--ttl',
      '1s',
      '--endpoints',
      c.endpoints().join(','),
      '--',
      '/nonexistent/command',
    ]);
    expect(missing.code).toBe(RUN_EXIT.SPAWN_FAILED);
    expect(await direct.get(key)).toMatchObject({ held: false });
  });

  it('nothing reachable: run --wait and elect (which opens a session first) exit 69 within the connect grace, naming the endpoints, never "queued"', async () => {
    const eps = (await freePorts(2)).map((p) => `127.0.0.1:${p}`);
    for (const args of [
      ['run', '--lock', 'unreached', '--wait', '30s'],
      ['elect', 'unreached'],
    ]) {
      const started = Date.now();
      const res = await leasehold([...args, '--endpoints', eps.join(','), '--', process.execPath, '-e', "console.log('ran')"]);
      const ms = Date.now() - started;
      const stderr = res.stderr.join('\n');
      expect(res.code, `${args[0]}: ${stderr}`).toBe(RUN_EXIT.UNAVAILABLE);
      expect(res.stdout).toHaveLength(0);
      expect(stderr).toContain(`could not reach any node of the cluster (tried ${eps.join(', ')}`);
      expect(stderr, args[0]).not.toMatch(/queued/);
      expect(ms, args[0]).toBeLessThan(6000); // the connect grace is 2 s; --timeout defaults to 10 s
    }
  });

  it('elect in line behind a leader says so once a leader answered: held by the leader, with its token', async () => {
    const leading = await direct.campaign('busy-e', { value: 'first' });
    const res = leasehold(['elect', 'busy-e', '--endpoints', c.endpoints().join(','), '--', process.execPath, '-e', "console.log('ran')"]);
    try {
      await waitFor('the candidate reports its place', () => (res.peek().some((l) => /held by/.test(l)) ? true : null), 10_000);
      expect(res.peek().join('\n')).toMatch(
        new RegExp(
          `leasehold elect: waiting for lock "election/busy-e": held by ${JSON.stringify(leading.hold.owner)} with token ${leading.token}`,
        ),
      );
    } finally {
      res.proc.kill('SIGKILL');
      await res;
      await leading.resign();
    }
  });

  // Last in this file: it kills every node of the shared cluster.
  it('all nodes killed, ttl 3 s: the child gets SIGTERM at LOST and run itself exits promptly after (release is one short attempt)', async () => {
    const ttl = 3000;
    let killedAt = 0;
    const script = childScript(
      "process.on('SIGTERM', () => { console.log(JSON.stringify({ event: 'sigterm', at: Date.now() })); process.exit(0); }); setInterval(() => {}, 1000);",
    );
    const done = leaseholdRun(
      ['--lock', 'run-all-dead', '--ttl', `${ttl}ms`, '--endpoints', c.endpoints().join(','), '--', process.execPath, '-e', script],
      (line) => {
        if (line.includes('"ready"')) {
          void Promise.all(c.ids.map((id) => c.kill(id))).then(() => (killedAt = Date.now()));
        }
      },
    );
    const res = await done;
    const exitedAt = Date.now();
    expect(res.code, res.stderr.join('\n')).toBe(RUN_EXIT.LOST);
    const sigterm = res.stdout.map((l) => JSON.parse(l.line) as { event: string; at: number }).find((m) => m.event === 'sigterm');
    expect(sigterm).toBeDefined();
    const lostAt = Date.parse(/LOST at (\S+): /.exec(res.stderr.join('\n'))?.[1] ?? '');
    expect(killedAt).toBeGreaterThan(0);
    // LOST no later than ttl after the kill (the last renew was sent before it), then out within about a second.
    expect(lostAt - killedAt).toBeLessThanOrEqual(ttl);
    expect(exitedAt - lostAt).toBeLessThan(1500);
    expect(res.stderr.join('\n')).toMatch(/could not release lock "run-all-dead" within 500ms/);
    console.info(
      `leasehold run, all nodes killed: kill -> LOST ${lostAt - killedAt} ms, LOST -> exit ${exitedAt - lostAt} ms, kill -> exit ${exitedAt - killedAt} ms`,
    );
  });
});
