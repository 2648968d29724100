// List, black-box (SPEC "List"): 10,000 held keys paged through a follower in pages of 1,000, every key
// once, in byte order; a page after a write shows the write; the CLI pages with --all.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/index.js';
import type { EndpointPool } from '../../src/client/rpc.js';
import type { AcquireResponse } from '../../src/wire/lock.js';
import { MAIN_JS, TestCluster } from './harness.js';

const KEYS = 10_000;
let c: TestCluster;
let pool: EndpointPool;

beforeAll(async () => {
  c = await TestCluster.create({ electionTicks: 20 });
  c.startAll();
  await c.waitForLeader();
  pool = c.pool();
}, 30_000);

afterAll(async () => {
  pool?.close();
  await c?.stop();
});

describe('list', () => {
  it(`pages through ${KEYS.toLocaleString('en')} keys via a follower: every key once, in byte order`, async () => {
    const keys = Array.from({ length: KEYS }, (_, i) => `many/${(i * 7919) % KEYS}`); // not in order
    for (let i = 0; i < KEYS; i += 200) {
      await Promise.all(
        keys
          .slice(i, i + 200)
          .map((key) =>
            pool.call<AcquireResponse>(
              'Acquire',
              { key, owner: 'filler', ttl_ms: '600000', request_id: `fill-${key}` },
              Date.now() + 20_000,
            ),
          ),
      );
    }
    const { leader } = await c.waitForLeader();
    const follower = c.ids.find((id) => id !== leader)!;
    const client = new LockClient({ endpoints: [c.endpoint(follower)] });
    try {
      const listed: string[] = [];
      let token = '';
      let pages = 0;
      do {
        const page = await client.list('many/', { limit: 1000, pageToken: token });
        pages++;
        for (const l of page.locks) {
          expect(l.holders).toHaveLength(1);
          expect(l.holders[0]!.owner).toBe('filler');
          listed.push(l.key);
        }
        token = page.nextPageToken;
      } while (token !== '');
      expect(pages).toBe(KEYS / 1000);
      expect(listed).toEqual([...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
      // Read after write, on the follower: a new key is in the next List.
      await pool.call<AcquireResponse>(
        'Acquire',
        { key: 'many/~new', owner: 'late', ttl_ms: '60000', request_id: 'late-1' },
        Date.now() + 10_000,
      );
      const last = await client.list('many/~', { limit: 10 });
      expect(last.locks.map((l) => l.key)).toEqual(['many/~new']);
    } finally {
      client.close();
    }
    // The CLI follows the pages with --all.
    const out = spawnSync(
      process.execPath,
      [MAIN_JS, 'list', 'many/1', '--all', '--limit', '100', '--json', '--endpoints', c.endpoint(follower)],
      { encoding: 'utf8' },
    );
    expect(out.status, out.stderr).toBe(0);
    const json = JSON.parse(out.stdout) as { locks: { key: string }[]; next_page_token: string };
    expect(json.locks.map((l) => l.key)).toEqual(
      keys.filter((k) => k.startsWith('many/1')).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
    );
    expect(json.next_page_token).toBe('');
  }, 120_000);
});
