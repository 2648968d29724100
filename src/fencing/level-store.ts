// A fenced key-value store on LevelDB. Per resource id it keeps the value and the token that wrote it.
//
// Atomicity: LevelDB has no conditional write, so "read the last token, compare, write value + token" runs
// under a per-id mutex (no other write to that id can interleave within this store object), and the value
// and its token go to disk in ONE batch (sync: true), so a crash never leaves a value without its token or
// a token without its value. LevelDB allows one process per directory, so the mutex covers every writer.
import { Level } from 'level';
import { KeyedMutex } from './mutex.js';
import {
  checkFencingToken,
  tokenFromText,
  tokenPasses,
  tokenToText,
  type FencedRecord,
  type FencedResource,
  type FencedWriteResult,
  type FencingOptions,
  type SameTokenPolicy,
} from './resource.js';

type Db = Level<string, string>;

const tokenKey = (id: string) => `t!${id}`;
const valueKey = (id: string) => `v!${id}`;

export class LevelFencedStore<V> implements FencedResource<V> {
  private readonly mutex = new KeyedMutex();
  private readonly sameToken: SameTokenPolicy;

  constructor(
    private readonly db: Db,
    opts: FencingOptions = {},
  ) {
    this.sameToken = opts.sameToken ?? 'accept';
  }

  /** Opens (creating if needed) a store in `location`. */
  static async open<V>(location: string, opts: FencingOptions = {}): Promise<LevelFencedStore<V>> {
    const db = new Level<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    await db.open();
    return new LevelFencedStore<V>(db, opts);
  }

  async write(resourceId: string, token: bigint, value: V): Promise<FencedWriteResult> {
    checkFencingToken(token);
    return this.mutex.run(resourceId, async () => {
      const lastToken = await this.lastToken(resourceId);
      if (!tokenPasses(token, lastToken, this.sameToken)) return { accepted: false, lastToken };
      await this.db.batch(
        [
          { type: 'put', key: tokenKey(resourceId), value: tokenToText(token) },
          { type: 'put', key: valueKey(resourceId), value: JSON.stringify(value) },
        ],
        { sync: true },
      );
      return { accepted: true, lastToken: token };
    });
  }

  async read(resourceId: string): Promise<FencedRecord<V> | null> {
    // One snapshot for both keys, so value and token belong to the same write.
    const [t, v] = await this.db.getMany([tokenKey(resourceId), valueKey(resourceId)]);
    if (t === undefined || v === undefined) return null;
    return { value: JSON.parse(v) as V, token: tokenFromText(t) };
  }

  /** The highest token accepted for `resourceId` (0n if none). */
  async lastToken(resourceId: string): Promise<bigint> {
    const t = await this.db.get(tokenKey(resourceId));
    return t === undefined ? 0n : tokenFromText(t);
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
