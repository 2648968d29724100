// Sessions, black-box (SPEC "Sessions"): a client process holds 500 locks under one session. The session is
// kept by one RenewSession per ttl/3 and no per-lock renew (counted by the nodes' metrics), survives a
// kill -9 of the leader with every hold, and when the client is killed -9 every hold ends in ONE entry:
// waiters queued on ten of its keys are all granted with the same fencing token — the index of the entry
// that ended the session.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import type { EndpointPool } from '../../src/client/rpc.js';
import type {
  AcquireResponse,
  CloseSessionResponse,
  GetResponse,
  OpenSessionResponse,
  RenewResponse,
  RenewSessionResponse,
} from '../../src/wire/lock.js';
import { TestCluster, freePorts, isCode, waitFor } from './harness.js';

const SESSION_HOLDER_JS = resolve('build/test/integration/fixtures/session-holder.js');
const HOLDS = 500;
const TTL_MS = 3000;

let c: TestCluster;
let pool: EndpointPool;
let metricsPorts: number[];
let holder: ChildProcess | undefined;

beforeAll(async () => {
  metricsPorts = await freePorts(3);
  // A 1 s election timeout (as the wait-line test): 500 acquires arriving must not cost the leader its term.
  c = await TestCluster.create({ electionTicks: 20, nodeYaml: (_id, i) => `metricsAddress: 127.0.0.1:${metricsPorts[i]}` });
  c.startAll();
  await c.waitForLeader();
  pool = c.pool();
});

afterAll(async () => {
  if (holder?.exitCode === null) holder.kill('SIGKILL');
  pool?.close();
  await c?.stop();
});

const call = <Res>(
  method: 'Acquire' | 'Renew' | 'Get' | 'OpenSession' | 'RenewSession' | 'CloseSession',
  req: object,
  timeoutMs = 10_000,
) => pool.call<Res>(method, req, Date.now() + timeoutMs);

/** leasehold_lock_operations_total for `op` with outcome `outcome`, summed over the nodes that answer. */
async function opsCount(ids: string[], op: string, outcome: string): Promise<number> {
  let total = 0;
  for (const id of ids) {
    const res = await fetch(`http://127.0.0.1:${metricsPorts[c.ids.indexOf(id)]}/metrics`, { signal: AbortSignal.timeout(2000) });
    const line = (await res.text())
      .split('\n')
      .find((l) => l.startsWith(`leasehold_lock_operations_total{op="${op}",outcome="${outcome}"`));
    total += line === undefined ? 0 : Number(line.split(' ').pop());
  }
  return total;
}

const keyOf = (i: number) => `sess/${String(i).padStart(4, '0')}`;

describe('sessions', () => {
  it(`a session with ${HOLDS} holds: one renew per ttl/3, survives the leader, ends every hold in one entry`, async () => {
    holder = spawn(process.execPath, [SESSION_HOLDER_JS, c.endpoints().join(','), String(TTL_MS), 'sess/', String(HOLDS)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: holder.stdout! });
    const events: { event: string; sessionId?: string; owner?: string; tokens?: string[] }[] = [];
    lines.on('line', (l) => events.push(JSON.parse(l)));
    const held = await waitFor('the holder to take its locks', () => events.find((e) => e.event === 'held'), 60_000);
    expect(held.tokens).toHaveLength(HOLDS);
    const sessionId = held.sessionId!;

    // Kept by the session's renews alone: over 3 TTLs, about 3 RenewSession per TTL and no per-lock Renew.
    const before = { session: await opsCount(c.ids, 'renew_session', 'renewed'), lock: await opsCount(c.ids, 'renew', 'renewed') };
    await new Promise((r) => setTimeout(r, 3 * TTL_MS));
    const after = { session: await opsCount(c.ids, 'renew_session', 'renewed'), lock: await opsCount(c.ids, 'renew', 'renewed') };
    expect(after.lock - before.lock).toBe(0);
    expect(after.session - before.session).toBeGreaterThanOrEqual(7);
    expect(after.session - before.session).toBeLessThanOrEqual(11);
    expect(events.some((e) => e.event === 'lost')).toBe(false);

    // A kill -9 of the leader cuts nothing short: every hold is still the session's afterwards.
    const { leader } = await c.waitForLeader();
    await c.kill(leader);
    const others = c.ids.filter((id) => id !== leader);
    await c.waitForLeader(others);
    await new Promise((r) => setTimeout(r, TTL_MS));
    for (let i = 0; i < HOLDS; i++) {
      const g = await call<GetResponse>('Get', { key: keyOf(i) });
      expect(g.held, keyOf(i)).toBe(true);
      expect(g.token).toBe(held.tokens![i]);
      expect(g.holders[0]!.session_id).toBe(sessionId);
    }
    expect(events.some((e) => e.event === 'lost')).toBe(false);

    // Ten waiters on ten of its keys; then the client dies.
    const waiterKeys = Array.from({ length: 10 }, (_, i) => keyOf(i * 50));
    const grants = waiterKeys.map((key) =>
      call<AcquireResponse>('Acquire', { key, owner: `next-${key}`, ttl_ms: '30000', wait_ms: '30000', request_id: `w-${key}` }, 40_000),
    );
    await waitFor('the waiters in line', async () => (await call<GetResponse>('Get', { key: waiterKeys[9]! })).waiters === 1, 10_000);
    holder.kill('SIGKILL');
    const killedAt = Date.now();
    const answers = await Promise.all(grants);
    expect(answers.every((a) => a.acquired)).toBe(true);
    // One entry ended them all: every grant carries that entry's index as its token.
    expect(new Set(answers.map((a) => a.token)).size).toBe(1);
    expect(BigInt(answers[0]!.token)).toBeGreaterThan(BigInt(held.tokens![HOLDS - 1]!));
    // Not before the session's TTL could have run out (the leader judges by log time, never early).
    expect(Date.now() - killedAt).toBeGreaterThan(TTL_MS / 3);
    for (let i = 1; i < HOLDS; i += 7) {
      const g = await call<GetResponse>('Get', { key: keyOf(i) });
      if (waiterKeys.includes(keyOf(i))) continue;
      expect(g.held, keyOf(i)).toBe(false);
    }
    // The session is gone: it cannot be renewed back.
    expect(await call<RenewSessionResponse>('RenewSession', { session_id: sessionId })).toMatchObject({
      renewed: false,
      reason: 'NOT_HELD',
    });
  }, 180_000);

  it("the contract: ttl 0 under a session, the owner is the session's, renew the session not the hold, close releases", async () => {
    const open = await call<OpenSessionResponse>('OpenSession', { owner: 'alice', ttl_ms: '10000', request_id: 'o1' });
    expect(BigInt(open.session_id)).toBeGreaterThan(0n);
    const sid = open.session_id;
    const refused = async (req: object, code: grpc.status, text: RegExp) => {
      const err = await call('Acquire', req).then(
        () => null,
        (e: unknown) => e,
      );
      expect(isCode(err, code), String(err)).toBe(true);
      expect(String((err as Error).message)).toMatch(text);
    };
    await refused(
      { key: 'c1', owner: 'alice', ttl_ms: '1000', session_id: sid },
      grpc.status.INVALID_ARGUMENT,
      /ttl_ms: ttl_ms must be 0 for a hold under a session/,
    );
    await refused(
      { key: 'c1', owner: 'bob', ttl_ms: '0', session_id: sid },
      grpc.status.INVALID_ARGUMENT,
      /owner: "bob" is not the owner of session/,
    );
    await refused(
      { key: 'c1', owner: 'alice', ttl_ms: '0', session_id: '999999' },
      grpc.status.FAILED_PRECONDITION,
      /session 999999 is not open/,
    );
    const a = await call<AcquireResponse>('Acquire', { key: 'c1', owner: 'alice', ttl_ms: '0', session_id: sid, request_id: 'a1' });
    const b = await call<AcquireResponse>('Acquire', { key: 'c2', owner: 'alice', ttl_ms: '0', session_id: sid, request_id: 'a2' });
    expect(a.acquired && b.acquired).toBe(true);
    const renew = await call<RenewResponse>('Renew', { key: 'c1', owner: 'alice', token: a.token, ttl_ms: '1000' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isCode(renew, grpc.status.FAILED_PRECONDITION)).toBe(true);
    expect(String((renew as Error).message)).toMatch(/renew the session/);
    // A retry of the open answers the same session.
    expect((await call<OpenSessionResponse>('OpenSession', { owner: 'alice', ttl_ms: '10000', request_id: 'o1' })).session_id).toBe(sid);
    expect(await call<RenewSessionResponse>('RenewSession', { session_id: sid, owner: 'bob' })).toMatchObject({
      renewed: false,
      reason: 'WRONG_OWNER',
    });
    expect(await call<RenewSessionResponse>('RenewSession', { session_id: sid })).toMatchObject({ renewed: true, ttl_ms: '10000' });
    expect(await call<CloseSessionResponse>('CloseSession', { session_id: sid, owner: 'alice' })).toMatchObject({
      closed: true,
      released: ['c1', 'c2'],
    });
    expect((await call<GetResponse>('Get', { key: 'c1' })).held).toBe(false);
    expect(await call<CloseSessionResponse>('CloseSession', { session_id: sid })).toMatchObject({ closed: false, reason: 'NOT_HELD' });
    const bad = await call('RenewSession', { session_id: '0' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isCode(bad, grpc.status.INVALID_ARGUMENT)).toBe(true);
    expect(String((bad as Error).message)).toMatch(/session_id: session_id is required/);
  }, 60_000);
});
