// A fenced store on SQL. The whole check-and-write is ONE conditional UPDATE:
//
//   UPDATE leasehold_fenced SET value = ?, last_token = ? WHERE id = ? AND last_token <= ?
//
// The database evaluates the WHERE and applies the SET atomically for the row, so two writers can never both
// pass the check; the number of rows changed (1 or 0) is the verdict. The same pattern protects any table of
// your own: add a `last_token` column and put `AND last_token <= :token` in every UPDATE that the lock guards.
//
// Tokens are stored as TEXT of 20 zero-padded digits: text order is numeric order, and the full uint64 range
// fits (a signed 64-bit INTEGER stops at 2^63-1). The driver is any object with `run` and `get`; an adapter
// for better-sqlite3 is below, and the statements use only portable SQL (ON CONFLICT DO NOTHING works on
// SQLite >= 3.24 and PostgreSQL; pass `placeholders: 'dollar'` for PostgreSQL's $1, $2, ...).
import {
  checkFencingToken,
  tokenFromText,
  tokenToText,
  type FencedRecord,
  type FencedResource,
  type FencedWriteResult,
  type FencingOptions,
  type SameTokenPolicy,
} from './resource.js';

type Row = Record<string, unknown>;

/** The two things the store needs from a database driver. Sync or async results both work. */
export interface SqlDriver {
  /** Executes a statement; returns how many rows it changed. */
  run(sql: string, params: unknown[]): number | Promise<number>;
  /** Executes a query; returns its first row, or undefined. */
  get(sql: string, params: unknown[]): Row | undefined | Promise<Row | undefined>;
}

/** Structural subset of better-sqlite3's Database, so this module does not depend on the package. */
export interface BetterSqlite3Like {
  prepare(sql: string): {
    run(...params: unknown[]): { changes: number | bigint };
    get(...params: unknown[]): unknown;
  };
}

/** Adapter for better-sqlite3 (statements are prepared once and cached). */
export function betterSqlite3Driver(db: BetterSqlite3Like): SqlDriver {
  const cache = new Map<string, ReturnType<BetterSqlite3Like['prepare']>>();
  const stmt = (sql: string) => {
    let s = cache.get(sql);
    if (!s) {
      s = db.prepare(sql);
      cache.set(sql, s);
    }
    return s;
  };
  return {
    run: (sql, params) => Number(stmt(sql).run(...params).changes),
    get: (sql, params) => stmt(sql).get(...params) as Row | undefined,
  };
}

export interface SqlFencedStoreOptions extends FencingOptions {
  /** Table name (created by init()); default `leasehold_fenced`. Must be a plain SQL identifier. */
  table?: string;
  /** '?' (SQLite, MySQL; default) or '$1, $2, ...' (PostgreSQL). */
  placeholders?: 'question' | 'dollar';
}

export class SqlFencedStore<V> implements FencedResource<V> {
  private readonly sameToken: SameTokenPolicy;
  private readonly sql: { create: string; insert: string; update: string; select: string };

  constructor(
    private readonly driver: SqlDriver,
    opts: SqlFencedStoreOptions = {},
  ) {
    this.sameToken = opts.sameToken ?? 'accept';
    const table = opts.table ?? 'leasehold_fenced';
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table))
      throw new RangeError(`table: expected a plain SQL identifier (got ${JSON.stringify(table)})`);
    const p = opts.placeholders === 'dollar' ? (i: number) => `$${i}` : () => '?';
    const cmp = this.sameToken === 'accept' ? '<=' : '<';
    this.sql = {
      create: `CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, last_token TEXT NOT NULL, value TEXT)`,
      insert: `INSERT INTO ${table} (id, last_token, value) VALUES (${p(1)}, ${p(2)}, NULL) ON CONFLICT (id) DO NOTHING`,
      update: `UPDATE ${table} SET value = ${p(1)}, last_token = ${p(2)} WHERE id = ${p(3)} AND last_token ${cmp} ${p(4)}`,
      select: `SELECT last_token, value FROM ${table} WHERE id = ${p(1)}`,
    };
  }

  /** Creates the table if it does not exist. */
  async init(): Promise<this> {
    await this.driver.run(this.sql.create, []);
    return this;
  }

  async write(resourceId: string, token: bigint, value: V): Promise<FencedWriteResult> {
    checkFencingToken(token);
    const t = tokenToText(token);
    // Make sure the row exists (token 0: nothing accepted yet). Harmless when it does; not part of the check.
    await this.driver.run(this.sql.insert, [resourceId, tokenToText(0n)]);
    const changed = await this.driver.run(this.sql.update, [JSON.stringify(value), t, resourceId, t]);
    if (changed === 1) return { accepted: true, lastToken: token };
    // Refused. Read the winner's token for the message (a later read: at least the token that beat us).
    return { accepted: false, lastToken: await this.lastToken(resourceId) };
  }

  async read(resourceId: string): Promise<FencedRecord<V> | null> {
    const row = await this.driver.get(this.sql.select, [resourceId]);
    if (!row || row['value'] === null || row['value'] === undefined) return null;
    return { value: JSON.parse(String(row['value'])) as V, token: tokenFromText(String(row['last_token'])) };
  }

  async lastToken(resourceId: string): Promise<bigint> {
    const row = await this.driver.get(this.sql.select, [resourceId]);
    return row ? tokenFromText(String(row['last_token'])) : 0n;
  }
}
