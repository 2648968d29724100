// TLS, mTLS, authenticated peers and owner binding against a real 3-node cluster (issue 11). The
// certificates are made by openssl for this run. Every node has a separate peer listener, so the test
// also shows the client port does not serve Raft. The metrics/dashboard address follows the same
// security (HTTPS, client certificates; /metrics left open to scrapers with metrics.openScrape).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientTlsCredentials } from '../../src/client/tls.js';
import { EndpointPool, RpcError } from '../../src/client/rpc.js';
import { LockClient as LeaseholdClient, PermissionDeniedError } from '../../src/client/index.js';
import type { AcquireResponse } from '../../src/wire/lock.js';
import type { StatusResponse } from '../../src/wire/cluster.js';
import { raftGrpcService } from '../../src/wire/raft.js';
import { encodeRaftFrame } from '../../src/wire/raft-encode.js';
import { makePki, type TestPki } from './certs.js';
import { MAIN_JS, TestCluster, freePorts, waitFor } from './harness.js';
import { get } from './http-get.js';

const creds = (pki: TestPki, who: string) => clientTlsCredentials({ ca: pki.ca, cert: pki.client(who).cert, key: pki.client(who).key });

async function statusWith(endpoint: string, credentials: grpc.ChannelCredentials): Promise<StatusResponse> {
  const pool = new EndpointPool({ endpoints: [endpoint], credentials });
  try {
    return await pool.status(endpoint, Date.now() + 2000);
  } finally {
    pool.close();
  }
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (err) {
    return err instanceof RpcError ? grpc.status[err.code]! : String(err);
  }
}

describe('TLS, mTLS, peers and owner binding (real processes)', () => {
  let c: TestCluster;
  let pki: TestPki;
  let pkiDir = '';
  let mports: number[] = [];
  beforeAll(async () => {
    pkiDir = mkdtempSync(join(tmpdir(), 'leasehold-pki-'));
    pki = makePki(pkiDir, ['n1', 'n2', 'n3'], ['alice', 'bob', 'ops-admin']);
    mports = await freePorts(3);
    // A cluster whose config points at the certificates ({id}: each node loads its own).
    c = await TestCluster.create({
      peerListeners: true,
      credentials: creds(pki, 'alice'),
      nodeYaml: (_id, i) => `metricsAddress: 127.0.0.1:${mports[i]}`,
      extraYaml: `tls:\n  cert: ${pki.dir}/{id}.pem\n  key: ${pki.dir}/{id}-key.pem\n  ca: ${pki.ca}\n  clientAuth: require\nauth:\n  ownerBinding: true\n  admins: [ops-admin]\nmetrics:\n  openScrape: true\n`,
    });
    c.startAll();
    await c.waitForLeader();
  }, 60_000);
  afterAll(async () => {
    await c?.stop();
    if (pkiDir) rmSync(pkiDir, { recursive: true, force: true });
  });

  it('an mTLS cluster elects a leader and serves a client with a certificate', async () => {
    const { leader } = await c.waitForLeader();
    const got = await c.raw<AcquireResponse>(leader === 'n1' ? 'n2' : 'n1', 'Acquire', {
      key: 'tls-a',
      owner: 'alice',
      ttl_ms: '30000',
      request_id: 'a1',
    });
    expect(got.acquired).toBe(true); // through a follower too: forwarding to the leader runs over TLS
    expect(c.logText(leader)).toMatch(/"tls":"require"/);
  });

  it('refuses a plaintext client, a TLS client without a certificate, and one with a certificate from another CA', async () => {
    const ep = c.endpoint('n1');
    expect(await codeOf(statusWith(ep, grpc.credentials.createInsecure()))).toBe('UNAVAILABLE');
    expect(await codeOf(statusWith(ep, clientTlsCredentials({ ca: pki.ca })))).toBe('UNAVAILABLE');
    expect(await codeOf(statusWith(ep, clientTlsCredentials({ ca: pki.ca, cert: pki.foreign.cert, key: pki.foreign.key })))).toBe(
      'UNAVAILABLE',
    );
    expect((await statusWith(ep, creds(pki, 'bob'))).node_id).toBe('n1');
  });

  it('the metrics address: HTTPS with the node certificate; the dashboard and its views refuse plaintext and cert-less requests and serve an admin; /metrics open to scrapers shows no key, owner or value', async () => {
    const { leader } = await c.waitForLeader();
    const base = `127.0.0.1:${mports[c.ids.indexOf(leader)]}`;
    const alice = new LeaseholdClient({ endpoints: c.endpoints(), credentials: creds(pki, 'alice'), timeoutMs: 10_000 });
    const key = 'metrics-probe/k-7f3a';
    const value = 'v-91c2-secret';
    const hold = await alice.acquire(key, { ttlMs: 60_000, owner: 'alice', value });
    try {
      await expect(get(`http://${base}/api/locks`)).rejects.toThrow(/socket hang up|ECONNRESET/);
      for (const path of [
        '/',
        '/dashboard.js',
        '/api/cluster',
        '/api/locks',
        '/api/sessions',
        '/api/elections',
        '/api/charts',
        '/api/events',
      ]) {
        const bare = await get(`https://${base}${path}`, { ca: pki.ca });
        expect([path, bare.status, bare.body]).toEqual([
          path,
          403,
          'forbidden: a client certificate signed by the cluster CA is required here (tls.clientAuth: require), and it has none; only GET /metrics is open without one (metrics.openScrape)\n',
        ]);
      }
      const stranger = await get(`https://${base}/api/locks`, { ca: pki.ca, cert: pki.foreign.cert, key: pki.foreign.key });
      expect(stranger.status).toBe(403);
      const admin = { ca: pki.ca, cert: pki.client('ops-admin').cert, key: pki.client('ops-admin').key };
      const locks = await get(`https://${base}/api/locks?prefix=metrics-probe/`, admin);
      expect([locks.status, locks.serverCn]).toEqual([200, leader]);
      const page = JSON.parse(locks.body) as { locks: { key: string; holders: { owner: string; token: string; value: string }[] }[] };
      expect(page.locks.map((l) => [l.key, l.holders[0]?.owner, l.holders[0]?.token, l.holders[0]?.value])).toEqual([
        [key, 'alice', hold.token.toString(), value],
      ]);
      const cluster = await get(`https://${base}/api/cluster`, admin);
      expect((JSON.parse(cluster.body) as { node: { id: string } }).node.id).toBe(leader);
      // The scrapers' view: served without a certificate, and nothing of the lock in it.
      const scrape = await get(`https://${base}/metrics`, { ca: pki.ca });
      expect(scrape.status).toBe(200);
      expect(scrape.body).toMatch(/^leasehold_lock_operations_total\{op="acquire",outcome="acquired",node="n\d"\} [1-9]/m);
      for (const secret of [key, 'k-7f3a', value, 'alice']) expect(scrape.body, secret).not.toContain(secret);
    } finally {
      await hold.release();
      alice.close();
    }
  });

  it('a valid client certificate that is not a member cannot inject peer messages: the target term does not move', async () => {
    const { leader } = await c.waitForLeader();
    const target = c.ids.find((id) => id !== leader)!;
    const before = await c.status(target);
    const peerEndpoint = `127.0.0.1:${c.peerPorts[c.ids.indexOf(target)]}`;
    const inject = (endpoint: string) =>
      new Promise<string>((resolve) => {
        const client = raftGrpcService.client(endpoint, creds(pki, 'alice'));
        const stream = client.Stream((err) => {
          client.close();
          resolve(err ? grpc.status[err.code]! : 'OK');
        });
        stream.on('error', () => {});
        // "I am the leader, at term 999999": accepted, this would depose every leader at will.
        stream.write(
          encodeRaftFrame(
            [
              {
                type: 'AppendEntriesResponse',
                from: leader,
                to: target,
                term: 999999,
                success: false,
                matchIndex: 0,
                conflictIndex: 0,
                conflictTerm: 0,
                round: 0,
              },
            ],
            '',
            0,
          ),
        );
        stream.end();
      });
    expect(await inject(peerEndpoint)).toBe('PERMISSION_DENIED');
    expect(await inject(c.endpoint(target))).toBe('UNIMPLEMENTED'); // the client port serves no Raft
    const after = await c.status(target);
    expect(after.term).toBe(before.term);
    expect(BigInt(after.term) < 999999n).toBe(true);
    await waitFor('the refusal in the log', () => /refused peer traffic/.test(c.logText(target)), 5000);
    const refusals = c
      .logText(target)
      .split('\n')
      .filter((l) => l.includes('refused peer traffic'));
    expect(refusals[0]).toContain('none of them a current member');
    expect(refusals[0]).toContain('alice');
    expect(c.logText(target).match(/refused peer traffic/g)?.length).toBe(1); // once per identity, not per message
  });

  it("owner binding: another identity cannot acquire as, renew or release alice's lock", async () => {
    const { leader } = await c.waitForLeader();
    const bobPool = new EndpointPool({ endpoints: [c.endpoint(leader)], credentials: creds(pki, 'bob'), attemptTimeoutMs: 2000 });
    try {
      const mine = await c.raw<AcquireResponse>(leader, 'Acquire', { key: 'bound', owner: 'alice', ttl_ms: '30000', request_id: 'b1' });
      expect(mine.acquired).toBe(true);
      const call = (method: 'Acquire' | 'Renew' | 'Release', req: object) => bobPool.call(method, req, Date.now() + 3000, undefined, false);
      for (const [method, req] of [
        ['Acquire', { key: 'bound2', owner: 'alice', ttl_ms: '30000', request_id: 'x1' }],
        ['Renew', { key: 'bound', owner: 'alice', token: mine.token, ttl_ms: '30000', request_id: 'x2' }],
        ['Release', { key: 'bound', owner: 'alice', token: mine.token, request_id: 'x3' }],
      ] as const) {
        const err = await call(method, req).then(
          () => null,
          (e: unknown) => e as RpcError,
        );
        expect(err?.code, method).toBe(grpc.status.PERMISSION_DENIED);
        expect(err?.details).toBe('owner "alice" does not match the client certificate CN "bob" (auth.ownerBinding)');
      }
      const still = await c.raw<{ owner: string; token: string }>(leader, 'Get', { key: 'bound' });
      expect([still.owner, still.token]).toEqual(['alice', mine.token]);
      // The client library surfaces it as a typed error, not a retry loop.
      const bob = new LeaseholdClient({
        endpoints: c.endpoints(),
        tls: { ca: pki.ca, cert: pki.client('bob').cert, key: pki.client('bob').key },
        timeoutMs: 3000,
      });
      await expect(bob.acquire('bound3', { ttlMs: 5000, owner: 'alice' })).rejects.toBeInstanceOf(PermissionDeniedError);
      const own = await bob.acquire('bound3', { ttlMs: 5000, owner: 'bob' });
      expect(own.token > 0n).toBe(true);
      await own.release();
      bob.close();
    } finally {
      bobPool.close();
    }
  });

  it("revoke under owner binding: refused for a non-admin certificate (even the holder's), done for an admin one through a follower; the waiter gets the key at once", async () => {
    const { leader } = await c.waitForLeader();
    const follower = c.ids.find((id) => id !== leader)!;
    const as = (who: string) => new LeaseholdClient({ endpoints: [c.endpoint(follower)], credentials: creds(pki, who), timeoutMs: 10_000 });
    const alice = as('alice');
    const bob = as('bob');
    const admin = as('ops-admin');
    try {
      const held = await alice.acquire('revoke-me', { ttlMs: 60_000, owner: 'alice', lockDelayMs: 30_000 });
      const waiting = bob.acquire('revoke-me', { ttlMs: 60_000, owner: 'bob', waitMs: 20_000 });
      for (const who of [bob, alice])
        await expect(who.revoke('revoke-me', { reason: 'test' })).rejects.toBeInstanceOf(PermissionDeniedError);
      expect((await admin.get('revoke-me')).token).toBe(held.token); // nothing changed
      // Revoke is deduplicated once every member reads cluster level 5 (versions.ts).
      await waitFor('cluster level 5', async () => ((await c.status(leader)).cluster_level >= 5 ? true : null), 10_000);
      expect(await admin.revoke('revoke-me', { reason: 'stuck worker', requestId: 'ops-rv-1' })).toEqual([held.token]);
      const next = await waiting; // no lock-delay on a revoke: granted in the same entry
      expect(next.token).toBeGreaterThan(held.token);
      // The admin's retry of "every hold" (same request id; its namespace is the admin's CN, which the
      // follower forwarded) answers the first outcome and leaves the hold granted since.
      expect(await admin.revoke('revoke-me', { reason: 'stuck worker', requestId: 'ops-rv-1' })).toEqual([held.token]);
      expect((await admin.get('revoke-me')).token).toBe(next.token);
      expect(await admin.revoke('revoke-me', { token: held.token })).toEqual([]); // already gone
      expect(c.logText(leader)).toMatch(/"msg":"hold revoked"/);
      // Where it entered, the caller is named.
      expect(c.logText(follower)).toMatch(/"by":"ops-admin".*"msg":"revoke requested"/);
      await next.release();
    } finally {
      alice.close();
      bob.close();
      admin.close();
    }
  });

  it('the CLI with --cacert/--cert/--key (or LEASEHOLD_* env) is served; without them it cannot connect', async () => {
    const endpoints = c.endpoints().join(',');
    const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      spawnSync(process.execPath, [MAIN_JS, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 });
    const tls = ['--cacert', pki.ca, '--cert', pki.client('alice').cert, '--key', pki.client('alice').key];
    const ok = cli(['acquire', 'cli-key', '--owner', 'alice', '--ttl', '5s', '--endpoints', endpoints, ...tls]);
    expect(ok.stdout, ok.stderr).toMatch(/^acquired cli-key: token \d+/);
    expect(ok.status).toBe(0);
    const viaEnv = cli(['get', 'cli-key', '--endpoints', endpoints], {
      LEASEHOLD_CACERT: pki.ca,
      LEASEHOLD_CERT: pki.client('alice').cert,
      LEASEHOLD_KEY: pki.client('alice').key,
    });
    expect(viaEnv.stdout).toMatch(/cli-key: held by alice/);
    // SPEC exit code 4: permission denied (owner binding: bob's certificate cannot acquire as alice).
    const bobTls = ['--cacert', pki.ca, '--cert', pki.client('bob').cert, '--key', pki.client('bob').key];
    const denied = cli(['acquire', 'cli-key-2', '--owner', 'alice', '--ttl', '5s', '--endpoints', endpoints, ...bobTls]);
    expect(denied.status, denied.stderr).toBe(4);
    expect(denied.stderr).toMatch(/does not match the client certificate CN "bob"/);
    const plain = cli(['get', 'cli-key', '--endpoints', endpoints, '--timeout', '1500ms']);
    expect(plain.status).toBe(2);
    expect(plain.stderr).toMatch(/UNAVAILABLE|DEADLINE_EXCEEDED/);
    // `leasehold health` over TLS with a client certificate, as deploy/kubernetes/tls probes readiness ('')
    // and liveness (leasehold.v1.Cluster); without TLS it gets no answer.
    for (const service of ['', 'leasehold.v1.Cluster']) {
      const h = cli(['health', '--endpoint', c.endpoints()[0]!, '--service', service, ...tls]);
      expect(h.stdout, h.stderr).toMatch(/: SERVING$/m);
      expect(h.status).toBe(0);
    }
    const plainHealth = cli(['health', '--endpoint', c.endpoints()[0]!, '--timeout', '1500ms']);
    expect(plainHealth.status, plainHealth.stdout).toBe(2);
  });
});
