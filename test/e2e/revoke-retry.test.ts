// Revoke is exactly-once (SPEC part four; issue 38): a revoke whose answer was lost, retried with the same
// request_id after new holds were granted, ends only the holds that existed when it was first applied. A
// real 3-node cluster of processes, the `leasehold revoke` CLI as the operator, and a fault proxy in front
// of a follower that swallows every answer (the requests reach the cluster and are served).
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient, type LockHandle } from '../../src/client/index.js';
import { BUILD_LEVEL } from '../../src/lock/versions.js';
import { TestCluster, waitFor } from '../integration/harness.js';
import { FaultProxy } from './proxy.js';
import { MAIN_JS } from './helpers.js';

let c: TestCluster;
let proxy: FaultProxy;
const clients: LockClient[] = [];
const procs: ReturnType<typeof spawn>[] = [];

beforeAll(async () => {
  c = await TestCluster.create();
  c.startAll();
  await c.waitForLeader();
  // The deduplicated revoke is the leader's to propose only once every member reads its level.
  await waitFor(
    `cluster level ${BUILD_LEVEL}`,
    async () => ((await Promise.all(c.ids.map((id) => c.status(id)))).every((st) => st.cluster_level === BUILD_LEVEL) ? true : null),
    15_000,
  );
  proxy = await FaultProxy.start(c.endpoint(c.ids[1]!));
});

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const cl of clients) cl.close();
  await proxy?.close();
  await c?.stop();
});

function client(): LockClient {
  const cl = new LockClient({ endpoints: c.endpoints(), attemptTimeoutMs: 1500 });
  clients.push(cl);
  return cl;
}

interface Cli {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], endpoints: string[]): Promise<Cli> {
  const proc = spawn(process.execPath, [MAIN_JS, args[0]!, '--endpoints', endpoints.join(','), ...args.slice(1)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.push(proc);
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
  proc.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, stdout, stderr })));
}

const tokensOf = async (cl: LockClient, key: string) => (await cl.get(key)).holders.map((h) => h.token);

describe('revoke retried after its answer was lost', () => {
  it('the retry with the same request_id answers the first outcome and ends only the holds that existed then', async () => {
    const key = 'pool/revoke-once';
    const [a1, a2, b1, b2, reader] = [client(), client(), client(), client(), client()];
    // A semaphore of 4 with two holds; the operator revokes "every hold" (token 0).
    const first: LockHandle[] = [await a1.acquire(key, { ttlMs: 60_000, limit: 4 }), await a2.acquire(key, { ttlMs: 60_000, limit: 4 })];
    expect(await tokensOf(reader, key)).toEqual(first.map((h) => h.token));

    // Through the proxy every answer is swallowed: the revoke (and the CLI's own retries, same id) reach
    // the cluster and apply; the operator sees only that nothing answered.
    proxy.setMode('drop-responses');
    const lost = await cli(['revoke', key, '--reason', 'stuck pool', '--timeout', '3s'], [proxy.address]);
    proxy.setMode('pass');
    expect(lost.code, lost.stderr).toBe(2);
    expect(proxy.stats.droppedResponses).toBeGreaterThanOrEqual(1);
    const id = /retry it with --request-id (\S+)/.exec(lost.stderr)?.[1];
    expect(id, lost.stderr).toBeDefined();
    // It did apply: both holds are gone.
    expect(await tokensOf(reader, key)).toEqual([]);

    // In between, new holds are granted.
    const second = [await b1.acquire(key, { ttlMs: 60_000, limit: 4 }), await b2.acquire(key, { ttlMs: 60_000, limit: 4 })];
    const newTokens = second.map((h) => h.token);
    expect(await tokensOf(reader, key)).toEqual(newTokens);

    // The operator retries with the same request_id (another node this time): the first outcome, and the
    // holds granted since stand.
    const retry = await cli(['revoke', key, '--request-id', id!, '--json'], [c.endpoint(c.ids[2]!)]);
    expect(retry.code, retry.stderr).toBe(0);
    expect(JSON.parse(retry.stdout)).toMatchObject({ key, revoked: first.map((h) => String(h.token)), request_id: id });
    expect(await tokensOf(reader, key)).toEqual(newTokens);
    for (const h of second) expect(h.state).toBe('ACTIVE');
    // So does the client library's retry with that id.
    expect(await reader.revoke(key, { requestId: id! })).toEqual(first.map((h) => h.token));
    expect(await tokensOf(reader, key)).toEqual(newTokens);

    // Contrast: a new request_id is a new revoke, and ends the holds there are now.
    expect(await reader.revoke(key, { reason: 'again' })).toEqual(newTokens);
    expect(await tokensOf(reader, key)).toEqual([]);
  });
});
