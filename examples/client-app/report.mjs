// Plain JavaScript on Node 20: write a report under a lock. withLock acquires (queueing up to waitMs),
// renews in the background, aborts lock.signal if the lock is lost, and releases at the end, also on throw.
import { LockClient, LockNotAcquiredError } from 'leasehold/client';
import { LevelFencedStore, writeWithLock } from 'leasehold/fencing';

const endpoints = process.env.LEASEHOLD_ENDPOINTS ?? '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';
const key = process.argv[2] ?? 'report:2026-09-02';

const client = new LockClient({ endpoints });
const reports = await LevelFencedStore.open(process.env.REPORTS_DB ?? './reports-db');
try {
  await client.withLock(key, { ttlMs: 10_000, waitMs: 30_000 }, async (lock) => {
    // The store refuses the write if a newer token has written meanwhile (we were paused past our lease).
    const r = await writeWithLock(lock, reports, key, `rendered by ${lock.owner}`);
    if (!r.accepted) throw new Error(`stale: token ${r.lastToken} already wrote`);
    console.log(JSON.stringify({ event: 'written', key, token: lock.token.toString(), owner: lock.owner }));
  });
} catch (err) {
  if (err instanceof LockNotAcquiredError) console.error(`someone else is writing ${key}: ${err.message}`);
  else console.error(err);
  process.exitCode = 1;
} finally {
  client.close();
  await reports.close();
}
