// Online backup and restore (issue 36): `leasehold snapshot save` streams a consistent state from a live
// node while it serves, `snapshot status` reads the file, and `snapshot restore` builds each node's data dir of
// a new cluster with the same ids and addresses, which then serves every lock with its token. A damaged file
// and a non-empty data dir are refused, changing nothing.
import { existsSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcquireResponse, GetResponse } from '../../src/wire/lock.js';
import * as grpc from '@grpc/grpc-js';
import { clusterGrpcService } from '../../src/wire/cluster.js';
import { TestCluster, runCli, waitFor } from './harness.js';

const cli = (args: string[], cwd: string) => runCli(args, cwd);

describe('leasehold snapshot save | status | restore', () => {
  let c: TestCluster;
  const held = new Map<string, { owner: string; token: string }>();
  beforeAll(async () => {
    c = await TestCluster.create();
    c.startAll();
  });
  afterAll(async () => {
    await c?.stop();
  });

  it('saves from a live follower, restores a new cluster that serves every lock with its token, and refuses damage', async () => {
    const { leader } = await c.waitForLeader();
    for (let i = 0; i < 120; i++) {
      const key = `job/${String(i).padStart(4, '0')}`;
      const owner = `worker-${i % 7}`;
      const r = await c.raw<AcquireResponse>(leader, 'Acquire', { key, owner, ttl_ms: '600000', request_id: `r-${i}` });
      expect(r.acquired).toBe(true);
      held.set(key, { owner, token: String(r.token) });
    }
    const follower = c.ids.find((id) => id !== leader)!;

    const saved = await cli(['snapshot', 'save', 'backup.lhb', '--endpoints', c.endpoint(follower), '--json'], c.dir);
    expect(saved.stderr).toBe('');
    expect(saved.code).toBe(0);
    const facts = JSON.parse(saved.stdout) as { index: number; keys: number; holds: number; sha256: string };
    // A follower's store is written behind what it applied: it holds at least the 120 grants once they are
    // in a batch; save took what it had — every grant it holds is one of ours.
    expect(facts.keys).toBeLessThanOrEqual(120);
    const status = await cli(['snapshot', 'status', 'backup.lhb', '--json'], c.dir);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ index: facts.index, keys: facts.keys, sha256: facts.sha256 });

    // Take it again once the follower's store has every grant (its write-behind runs every 100 ms).
    // (Unpaced: --pace 100 reaches the node, which then never pauses.)
    await waitFor('a backup with all 120 holds', async () => {
      const again = await cli(['snapshot', 'save', 'backup.lhb', '--endpoints', c.endpoint(follower), '--json', '--pace', '100'], c.dir);
      return again.code === 0 && (JSON.parse(again.stdout) as { holds: number }).holds === 120;
    });

    // A pace over 100 % is refused, naming the field, before anything is streamed.
    const client = clusterGrpcService.client(c.endpoint(follower), grpc.credentials.createInsecure());
    try {
      const refused = await new Promise<grpc.ServiceError | null>((done) => {
        const stream = client.Snapshot({ pace_percent: 101 });
        let chunks = 0;
        stream.on('data', () => chunks++);
        stream.on('error', (err: grpc.ServiceError) => done(chunks === 0 ? err : null));
        stream.on('end', () => done(null));
      });
      expect(refused?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(refused?.details).toMatch(/^pace_percent: 101 is over 100/);
    } finally {
      client.close();
    }

    // A damaged copy: one byte flipped. Refused before anything is written.
    const bytes = readFileSync(join(c.dir, 'backup.lhb'));
    bytes[Math.floor(bytes.length / 2)]! ^= 0x40;
    writeFileSync(join(c.dir, 'damaged.lhb'), bytes);

    // The lost cluster: every node stopped, its data dirs gone (kept aside here).
    for (const id of c.ids) await c.kill(id, 'SIGTERM');
    for (const id of c.ids) renameSync(join(c.dir, id), join(c.dir, `${id}.lost`));

    const damaged = await cli(['snapshot', 'restore', 'damaged.lhb', '--config', c.configPath, '--id', 'n1'], c.dir);
    expect(damaged.code).toBe(1);
    expect(damaged.stderr).toMatch(/checksum does not match/);
    expect(existsSync(join(c.dir, 'n1'))).toBe(false);

    for (const id of c.ids) {
      const r = await cli(['snapshot', 'restore', 'backup.lhb', '--config', c.configPath, '--id', id], c.dir);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(readdirSync(join(c.dir, id))).toContain('state');
    }
    // Restoring over a data dir that is not empty is refused.
    const again = await cli(['snapshot', 'restore', 'backup.lhb', '--config', c.configPath, '--id', 'n1'], c.dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/not empty/);

    c.startAll();
    const next = await c.waitForLeader();
    for (const [key, h] of held) {
      const g = await c.raw<GetResponse>(next.leader, 'Get', { key });
      expect(g.held, key).toBe(true);
      expect({ owner: g.owner, token: String(g.token) }, key).toEqual(h);
    }
    const maxToken = Math.max(...[...held.values()].map((h) => Number(h.token)));
    const fresh = await c.raw<AcquireResponse>(next.leader, 'Acquire', {
      key: 'after-restore',
      owner: 'w',
      ttl_ms: '60000',
      request_id: 'x',
    });
    expect(fresh.acquired).toBe(true);
    expect(Number(fresh.token)).toBeGreaterThan(maxToken);
  }, 120_000);
});
