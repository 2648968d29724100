// A job pool across processes and machines: run as many workers as you like; a leasehold semaphore
// (acquire with `limit`) lets at most SLOTS of their jobs run at once. Each job runs under its own hold and
// its own fencing token, waits in line (FIFO) for a free slot, and releases it when done — or, if the
// worker dies, the slot comes back when its lease runs out.
import { appendFileSync } from 'node:fs';
import { LockClient } from 'leasehold/client';

const endpoints = process.env.LEASEHOLD_ENDPOINTS ?? '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';
const pool = process.argv[2] ?? 'render-pool';
const slots = Number(process.env.SLOTS ?? 3);
const jobs = Number(process.env.JOBS ?? 3);
const jobMs = Number(process.env.JOB_MS ?? 1000);
const worker = process.env.WORKER ?? `worker-${process.pid}`;
// Optional: a file every worker appends "start <token>" / "end <token>" to (the package test counts overlaps).
const journal = process.env.JOB_LOG;
const log = (event, fields = {}) => console.log(JSON.stringify({ event, worker, ...fields }));

const client = new LockClient({ endpoints });
try {
  for (let job = 1; job <= jobs; job++) {
    const slot = await client.acquire(pool, { limit: slots, ttlMs: 5000, waitMs: 120_000, owner: `${worker}/${job}` });
    const token = slot.token.toString();
    if (journal) appendFileSync(journal, `start ${token}\n`);
    log('start', { job, token });
    // The job: real work would pass `token` to every write it makes, so a resource can refuse a slot's
    // writes once that slot is lost (slot.signal fires then).
    await new Promise((r) => setTimeout(r, jobMs));
    if (journal) appendFileSync(journal, `end ${token}\n`);
    log('end', { job, token });
    await slot.release();
  }
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  client.close();
}
