// The protected-resource side of fencing, the package's `leasehold/fencing` entry: check a token and write
// with it atomically (resource.ts), on LevelDB or SQL, a keyed mutex, and checkToken against a live Get.
// Who may import it: applications and tests. It imports only the client's types (LockHandle, LockInfo) and
// the level package; nothing of the server, the lock machine or the Raft layers.
import type { LockHandle } from '../client/handle.js';
import type { FencedResource, FencedWriteResult } from './resource.js';

export {
  assertAccepted,
  checkFencingToken,
  StaleTokenError,
  tokenFromText,
  tokenPasses,
  tokenToText,
  type FencedRecord,
  type FencedResource,
  type FencedWriteResult,
  type FencingOptions,
  type SameTokenPolicy,
} from './resource.js';
export { KeyedMutex } from './mutex.js';
export { LevelFencedStore } from './level-store.js';
export { SqlFencedStore, betterSqlite3Driver, type BetterSqlite3Like, type SqlDriver, type SqlFencedStoreOptions } from './sql-store.js';
export { checkToken, type LockReader, type TokenCheck } from './check-token.js';

/**
 * The safe way to write under a lock: refuse locally if the handle is no longer ACTIVE (throws
 * LockLostError / LockReleasedError without touching the resource), then write WITH the token, so the
 * resource refuses it if a newer holder got there first (the lease may end between the check and the write).
 */
export async function writeWithLock<V>(
  lock: LockHandle,
  resource: FencedResource<V>,
  resourceId: string,
  value: V,
): Promise<FencedWriteResult> {
  const token = lock.assertActive();
  return resource.write(resourceId, token, value);
}
