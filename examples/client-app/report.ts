// The same job in TypeScript. `await using` releases the lock when the block ends (also on throw);
// TypeScript compiles it for Node 20 (target ES2022 with lib ESNext.Disposable).
import { LockClient, type LockHandle } from 'leasehold/client';
import { LevelFencedStore, writeWithLock, type FencedWriteResult } from 'leasehold/fencing';

const endpoints = process.env['LEASEHOLD_ENDPOINTS'] ?? '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';
const key = process.argv[2] ?? 'report:2026-09-02';

async function main(): Promise<void> {
  await using client = new LockClient({ endpoints });
  const reports = await LevelFencedStore.open<string>(process.env['REPORTS_DB'] ?? './reports-db');
  try {
    await using lock: LockHandle = await client.acquire(key, { ttlMs: 10_000, waitMs: 30_000 });
    const token: bigint = lock.token;
    const r: FencedWriteResult = await writeWithLock(lock, reports, key, `rendered by ${lock.owner}`);
    if (!r.accepted) throw new Error(`stale: token ${r.lastToken} already wrote`);
    console.log(JSON.stringify({ event: 'written', key, token: token.toString(), owner: lock.owner }));
  } finally {
    await reports.close();
  }
}

await main();
