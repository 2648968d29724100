// Both fenced stores against the same contract: atomic check-and-write keeping the highest token per id.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import {
  LevelFencedStore,
  SqlFencedStore,
  StaleTokenError,
  assertAccepted,
  betterSqlite3Driver,
  tokenToText,
  type FencedResource,
  type FencingOptions,
} from '../../../src/fencing/index.js';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'leasehold-fence-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Subject {
  name: string;
  make: (opts?: FencingOptions) => Promise<{ store: FencedResource<{ v: string }>; close: () => Promise<void> | void }>;
}

const subjects: Subject[] = [
  {
    name: 'LevelFencedStore',
    make: async (opts) => {
      const store = await LevelFencedStore.open<{ v: string }>(join(tmp(), 'db'), opts);
      return { store, close: () => store.close() };
    },
  },
  {
    name: 'SqlFencedStore on better-sqlite3',
    make: async (opts) => {
      const db = new Database(join(tmp(), 'fence.sqlite'));
      const store = await new SqlFencedStore<{ v: string }>(betterSqlite3Driver(db), opts).init();
      return { store, close: () => void db.close() };
    },
  },
];

describe.each(subjects)('$name', ({ make }) => {
  it('accepts the first token, then refuses any older one; the value stays the newer writer’s', async () => {
    const { store, close } = await make();
    expect(await store.read('r')).toBeNull();
    expect(await store.write('r', 10n, { v: 'a' })).toEqual({ accepted: true, lastToken: 10n });
    expect(await store.write('r', 11n, { v: 'b' })).toEqual({ accepted: true, lastToken: 11n });
    const stale = await store.write('r', 10n, { v: 'late a' });
    expect(stale).toEqual({ accepted: false, lastToken: 11n });
    expect(() => assertAccepted('r', 10n, stale)).toThrow(StaleTokenError);
    expect(() => assertAccepted('r', 10n, stale)).toThrow(/token 11 already wrote there/);
    expect(await store.read('r')).toEqual({ value: { v: 'b' }, token: 11n });
    // Ids are independent.
    expect(await store.write('other', 3n, { v: 'x' })).toEqual({ accepted: true, lastToken: 3n });
    await close();
  });

  it('the same token may write again by default (multi-step critical section, retried write)', async () => {
    const { store, close } = await make();
    await store.write('r', 5n, { v: '1' });
    expect((await store.write('r', 5n, { v: '2' })).accepted).toBe(true);
    expect(await store.read('r')).toEqual({ value: { v: '2' }, token: 5n });
    await close();
  });

  it("sameToken: 'reject' gives the article's strict rule: each token writes once", async () => {
    const { store, close } = await make({ sameToken: 'reject' });
    await store.write('r', 5n, { v: '1' });
    expect(await store.write('r', 5n, { v: '2' })).toEqual({ accepted: false, lastToken: 5n });
    expect((await store.write('r', 6n, { v: '3' })).accepted).toBe(true);
    await close();
  });

  it('orders tokens numerically across digit lengths and up to 2^64-1; refuses 0 and negatives', async () => {
    const { store, close } = await make();
    await store.write('r', 9n, { v: '9' });
    expect((await store.write('r', 10n, { v: '10' })).accepted).toBe(true);
    expect((await store.write('r', 9n, { v: '9 again' })).accepted).toBe(false);
    const max = (1n << 64n) - 1n;
    expect((await store.write('r', max - 1n, { v: 'big' })).accepted).toBe(true);
    expect((await store.write('r', 1n << 53n, { v: 'lossy as a number' })).accepted).toBe(false);
    expect((await store.write('r', max, { v: 'max' })).accepted).toBe(true);
    await expect(store.write('r', 0n, { v: 'zero' })).rejects.toThrow(RangeError);
    await expect(store.write('r', -1n, { v: 'neg' })).rejects.toThrow(RangeError);
    await close();
  });

  it('concurrent writers: every accepted write has a token >= all accepted before it; the highest wins', async () => {
    const { store, close } = await make();
    const tokens = Array.from({ length: 60 }, (_, i) => BigInt(((i * 37) % 60) + 1)); // a shuffled 1..60
    const accepted: bigint[] = [];
    await Promise.all(
      tokens.map(async (t) => {
        const r = await store.write('hot', t, { v: String(t) });
        if (r.accepted) accepted.push(t);
        else expect(r.lastToken).toBeGreaterThan(t);
      }),
    );
    // In completion order the accepted tokens never go down: no stale write slipped in after a newer one.
    for (let i = 1; i < accepted.length; i++) expect(accepted[i]!).toBeGreaterThanOrEqual(accepted[i - 1]!);
    expect(await store.read('hot')).toEqual({ value: { v: '60' }, token: 60n });
    await close();
  });
});

describe('SqlFencedStore specifics', () => {
  it('is one conditional UPDATE: two connections to one database file cannot both pass the check', async () => {
    const file = join(tmp(), 'shared.sqlite');
    const a = new Database(file);
    const b = new Database(file);
    a.pragma('journal_mode = WAL');
    const sa = await new SqlFencedStore<string>(betterSqlite3Driver(a)).init();
    const sb = new SqlFencedStore<string>(betterSqlite3Driver(b));
    expect((await sa.write('r', 20n, 'from a')).accepted).toBe(true);
    expect(await sb.write('r', 19n, 'from b, stale')).toEqual({ accepted: false, lastToken: 20n });
    expect((await sb.write('r', 21n, 'from b')).accepted).toBe(true);
    expect(await sa.read('r')).toEqual({ value: 'from b', token: 21n });
    // Tokens are stored as zero-padded text: numeric order = text order, full uint64 range.
    const row = a.prepare('SELECT last_token FROM leasehold_fenced WHERE id = ?').get('r') as { last_token: string };
    expect(row.last_token).toBe(tokenToText(21n));
    expect(row.last_token).toHaveLength(20);
    a.close();
    b.close();
  });

  it('builds PostgreSQL-style placeholders and refuses a table name that is not an identifier', () => {
    const seen: string[] = [];
    const driver = { run: (sql: string) => (seen.push(sql), 1), get: () => undefined };
    const s = new SqlFencedStore(driver, { placeholders: 'dollar', table: 'jobs_fence' });
    void s.write('r', 1n, 'x');
    expect(() => new SqlFencedStore(driver, { table: 'x; DROP TABLE y' })).toThrow(/identifier/);
    return Promise.resolve().then(() => {
      expect(seen.join('\n')).toContain('UPDATE jobs_fence SET value = $1, last_token = $2 WHERE id = $3 AND last_token <= $4');
    });
  });
});

describe('LevelFencedStore specifics', () => {
  it('survives a reopen: the highest accepted token is durable', async () => {
    const dir = join(tmp(), 'db');
    const s1 = await LevelFencedStore.open<string>(dir);
    await s1.write('r', 7n, 'seven');
    await s1.close();
    const s2 = await LevelFencedStore.open<string>(dir);
    expect(await s2.lastToken('r')).toBe(7n);
    expect((await s2.write('r', 6n, 'six')).accepted).toBe(false);
    expect(await s2.read('r')).toEqual({ value: 'seven', token: 7n });
    await s2.close();
  });
});
