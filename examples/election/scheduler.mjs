// Leader election on Node 20: run this in two (or more) processes; one leads and runs the scheduled job,
// the others wait in line. Kill the leader (even with kill -9) and another takes over within the session
// TTL. Every job run carries the leadership's fencing token: a resource that checks tokens refuses a
// deposed leader that is still running.
import { LockClient } from 'leasehold/client';

const endpoints = process.env.LEASEHOLD_ENDPOINTS ?? '127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003';
const name = process.argv[2] ?? 'nightly-scheduler';
const me = process.env.CANDIDATE ?? `scheduler-${process.pid}`;
const log = (event, fields = {}) => console.log(JSON.stringify({ event, candidate: me, ...fields }));

const client = new LockClient({ endpoints });
const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
process.once('SIGINT', () => stop.abort());
try {
  log('campaigning', { election: name });
  const lead = await client.campaign(name, { value: me, ttlMs: 2000, signal: stop.signal });
  log('leading', { token: lead.token.toString() });
  // The scheduled job: one run every 200 ms while we lead, each stamped with our fencing token.
  while (!lead.signal.aborted && !stop.signal.aborted) {
    log('job', { token: lead.token.toString() });
    await new Promise((r) => setTimeout(r, 200));
  }
  if (lead.signal.aborted) log('lost', { token: lead.token.toString() });
  else await lead.resign(); // Ctrl-C: hand over at once instead of after the TTL
} catch (err) {
  if (!stop.signal.aborted) {
    console.error(err);
    process.exitCode = 1;
  }
} finally {
  client.close();
}
