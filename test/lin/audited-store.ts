// The chaos run's protected resource: the shipped SqlFencedStore on a real SQLite file, with an audit of
// what the DATABASE committed. better-sqlite3 is synchronous, so the order in which the guarded UPDATE
// statements report "1 row changed" is the order the database applied them — the resource's own history,
// independent of what the clients recorded. The checker replays it (fence-regression).
import Database from 'better-sqlite3';
import { betterSqlite3Driver, SqlFencedStore, type SqlDriver } from '../../src/fencing/index.js';
import type { AuditEntry } from './checker.js';

export interface ChaosValue {
  process: string;
  token: string;
  seq: number;
}

export class AuditedFencedStore {
  readonly audit: AuditEntry[] = [];
  readonly store: SqlFencedStore<ChaosValue>;
  private readonly db: Database.Database;

  private constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    const inner = betterSqlite3Driver(this.db);
    const driver: SqlDriver = {
      get: (sql, params) => inner.get(sql, params),
      run: (sql, params) => {
        const changed = inner.run(sql, params) as number;
        // UPDATE ... SET value = ?, last_token = ? WHERE id = ? AND last_token <= ?
        if (sql.startsWith('UPDATE') && changed === 1) {
          this.audit.push({ resourceId: String(params[2]), token: BigInt(String(params[1])), seq: this.audit.length });
        }
        return changed;
      },
    };
    this.store = new SqlFencedStore<ChaosValue>(driver);
  }

  static async open(path: string): Promise<AuditedFencedStore> {
    const s = new AuditedFencedStore(path);
    await s.store.init();
    return s;
  }

  close(): void {
    this.db.close();
  }
}
