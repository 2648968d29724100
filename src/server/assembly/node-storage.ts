// Opening a node's data dir, with LevelDB's bare "Database failed to open" turned into the cause and the place.
import { join } from 'node:path';
import { Level } from 'level';
import { WalStorage } from '../../raft/storage/wal-storage.js';
import { AppliedStore } from '../../state/applied-store.js';

/** The applied store's LevelDB, under the data dir (README "Where the state lives"). */
export const STATE_DIR = 'state';

/** Opens the node's applied store: the lock state in LevelDB at dataDir/state. */
export async function openAppliedStore(dataDir: string, id: string): Promise<AppliedStore> {
  const path = join(dataDir, STATE_DIR);
  const db = new Level<Uint8Array, Uint8Array>(path, { keyEncoding: 'view', valueEncoding: 'view' });
  try {
    // LevelDB's memtable and block cache are memory every node holds (4 MiB and 8 MiB by default). The store
    // is written in small batches every 100 ms and read whole only at a start (a sequential scan the cache
    // does not help), so a 1 MiB memtable (flushed to a file in milliseconds) and a 2 MiB cache do.
    await db.open({ writeBufferSize: 1 << 20, cacheSize: 2 << 20 });
    return await AppliedStore.open(db);
  } catch (err) {
    await db.close().catch(() => {});
    throw new Error(`node ${id}: cannot open the applied store ${path}: ${(err as Error).message}`, { cause: err });
  }
}
import { causeChain } from './error-causes.js';

/** Opens the node's store (its WAL and LevelDB), turning LevelDB's bare "Database failed to open" into the cause and the place. */
export async function openStorage(dataDir: string, id: string): Promise<WalStorage> {
  try {
    return await WalStorage.open(dataDir);
  } catch (err) {
    const codes = causeChain(err).map((e) => String((e as { code?: unknown }).code ?? ''));
    const detail = (err as Error).message;
    if (codes.includes('LEVEL_LOCKED')) {
      throw new Error(
        `node ${id}: dataDir ${dataDir} is locked by another process — another leasehold node (or a second copy of this one) is using it. Each node needs its own dataDir; stop the other process or fix nodes[].dataDir`,
        { cause: err },
      );
    }
    if (codes.includes('EACCES') || /permission denied/i.test(detail))
      throw new Error(`node ${id}: cannot open dataDir ${dataDir}: permission denied`, { cause: err });
    if (codes.includes('LEVEL_CORRUPTION'))
      throw new Error(`node ${id}: dataDir ${dataDir} is corrupt (${detail}); restore it from a peer by replacing the node`, {
        cause: err,
      });
    throw new Error(
      `node ${id}: cannot open dataDir ${dataDir}: ${detail}${codes.length ? ` (${codes.filter(Boolean).join(' <- ')})` : ''}`,
      { cause: err },
    );
  }
}
