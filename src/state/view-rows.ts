// The records of one generation of the applied store as one consistent view holds them, read in reads of many
// rows for a backup (backup.ts) — with the encodings a restart reads with (applied-store.ts readInto): LevelDB
// hands a key or a value it may read as UTF-8 as a string, for a fraction of the Buffer it hands otherwise.
// A backup of a 1M-lock store read 1.25M rows as two Buffers each (a 'view' iterator): 6.5 s of the node's CPU
// against 2.0-2.5 s as strings, measured on the same copy of a store. The view (an explicit LevelDB snapshot)
// is what lets the meta record (binary) and the records (text) be read by iterators of different encodings
// and still be one state.
import { encodeUtf8 } from '../lock/bytes.js';
import { generationPrefix, keyRecordsAsText, type RecordDb, type StoreView } from './applied-store.js';

/** One stored record as LevelDB handed it: its key (generation prefix first) as text when it was read as text
 *  — then exactly the UTF-8 of its bytes — or as bytes; its value as text when the generation keeps values in
 *  text form (text-form.ts), else as bytes. */
export type ViewRow = [key: string | Uint8Array, value: string | Uint8Array];

/** Rows one read returns: about a backup chunk's worth, and few round trips to LevelDB's thread. */
const VIEW_READ_ROWS = 1000;

type AnyIterator = (options: {
  gte?: Uint8Array;
  gt?: Uint8Array;
  lt: Uint8Array;
  snapshot: StoreView;
  keyEncoding: 'utf8' | 'view';
  valueEncoding: 'utf8' | 'view';
}) => {
  nextv(size: number): Promise<ViewRow[]>;
  close(): Promise<void>;
};

/**
 * The records of `generation` in `view`, in key order, a read of rows at a time. Keys are read as text over the
 * kinds a record key starts with (bytes below 0x7F: a range whose bounds reach LevelDB as UTF-8 byte for byte,
 * when the generation's prefix is ASCII too); LevelDB's decoding is lax (bad UTF-8 becomes U+FFFD), so from the
 * first key holding a U+FFFD on they are read as bytes, as is anything from 0x7F on.
 */
export async function* viewRows(
  db: RecordDb,
  view: StoreView,
  generation: number,
  textValues: boolean,
  readRows = VIEW_READ_ROWS,
): AsyncGenerator<ViewRow[]> {
  const prefix = generationPrefix(generation);
  const textEnd = Uint8Array.of(prefix[0]!, prefix[1]!, prefix[2]!, prefix[3]!, 0x7f);
  const end = generationPrefix(generation + 1);
  const valueEncoding = textValues ? 'utf8' : 'view';
  const open = (db.iterator as unknown as AnyIterator).bind(db);
  let bytesFrom: { gte: Uint8Array } | { gt: Uint8Array } = { gte: prefix };
  if (keyRecordsAsText(prefix)) {
    const it = open({ gte: prefix, lt: textEnd, snapshot: view, keyEncoding: 'utf8', valueEncoding });
    let last: string | null = null; // the key of the last row handed out
    try {
      for (;;) {
        const rows = await it.nextv(readRows);
        if (rows.length === 0) {
          bytesFrom = { gte: textEnd }; // all of it was text
          break;
        }
        const stop = rows.findIndex(([key]) => typeof key !== 'string' || key.includes('\uFFFD'));
        if (stop < 0) {
          last = rows[rows.length - 1]![0] as string;
          yield rows;
          continue;
        }
        if (stop > 0) {
          last = rows[stop - 1]![0] as string;
          yield rows.slice(0, stop);
        }
        // On after the last key handed out (one with no U+FFFD was valid UTF-8: its bytes are its encoding).
        bytesFrom = last === null ? { gte: prefix } : { gt: encodeUtf8(last) };
        break;
      }
    } finally {
      await it.close();
    }
  }
  const it = open({ ...bytesFrom, lt: end, snapshot: view, keyEncoding: 'view', valueEncoding });
  try {
    for (;;) {
      const rows = await it.nextv(readRows);
      if (rows.length === 0) return;
      yield rows;
    }
  } finally {
    await it.close();
  }
}
