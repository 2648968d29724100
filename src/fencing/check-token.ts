// For a resource that cannot store a token next to its data (a legacy API, a file on someone else's disk):
// ask the cluster whether the token is still the current holder's, like Chubby's CheckSequencer.
//
// THE RACE WINDOW, honestly: the answer is true only at the moment the leader served the Get. Between that
// moment and the moment the resource's write takes effect, the lease can end (it expires, the holder is
// paused, the key is re-acquired) and a newer holder can write — and the stale write still lands. The window
// is the Get's return trip + the resource's own processing + any pause of the RESOURCE's process in between;
// nothing bounds a pause, so this check narrows the window but cannot close it. `minRemainingMs` helps:
// refusing tokens whose lease has less than that left (by the leader's clock) turns "lease ends during the
// write" into a refusal, as long as the write finishes within that time. Chubby accepts the same window and
// adds a lock-delay (a lost lock is not re-granted for a while); leasehold has no lock-delay today.
// A resource that can keep `last_token` itself (LevelFencedStore, SqlFencedStore) has no window at all:
// prefer that whenever possible.
import type { LockInfo } from '../client/client.js';

/** Anything that can answer a linearizable Get: a LockClient does. */
export interface LockReader {
  get(key: string): Promise<LockInfo>;
}

export interface TokenCheck {
  /** The token belongs to the current, unexpired holder (and has at least minRemainingMs left). */
  current: boolean;
  /** Why not, when not current. */
  reason: 'CURRENT' | 'NOT_HELD' | 'SUPERSEDED' | 'UNKNOWN_TOKEN' | 'EXPIRING';
  /** What the cluster said. */
  lock: LockInfo;
}

export async function checkToken(
  reader: LockReader,
  key: string,
  token: bigint,
  opts: { minRemainingMs?: number } = {},
): Promise<TokenCheck> {
  const lock = await reader.get(key);
  const minRemainingMs = opts.minRemainingMs ?? 0;
  if (token > lock.lastToken) return { current: false, reason: 'UNKNOWN_TOKEN', lock }; // never issued for this key
  if (!lock.held) return { current: false, reason: 'NOT_HELD', lock };
  // A key with many holds (a semaphore, shared holds): the token is current if it is any live hold's.
  const hold = lock.holders.find((h) => h.token === token) ?? (lock.token === token ? { ttlMs: lock.ttlMs } : undefined);
  if (hold === undefined) return { current: false, reason: 'SUPERSEDED', lock };
  if (hold.ttlMs < minRemainingMs) return { current: false, reason: 'EXPIRING', lock };
  return { current: true, reason: 'CURRENT', lock };
}
