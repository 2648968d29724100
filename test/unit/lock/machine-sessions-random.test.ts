// Sessions under seeded random logs, on the real LockMachine: sessions opened, renewed, closed and left to
// run out; holds and waiters under sessions and without; leaders taking office with clocks behind and
// ahead; the leader's housekeeping (expire, expireSession, dequeue, undelay) proposed when due. After every
// entry the state must keep the rules a user relies on:
//  - nobody takes a live hold: a key held (by log time) before an entry stays with its holder and token
//    unless that entry is the holder's release, its own re-acquire, the close of its session, or a term
//    start ending what provably ran its TTL (epoch.ts);
//  - a hold under a session reports its session's deadline, and its session is open;
//  - a session ends (expireSession) only once its deadline has passed in log time, and after its end no key
//    is held under it;
//  - fencing tokens per key only grow, and no grant is born dead (its lease or session has time left);
// and every 97 entries the snapshot restores to a machine that continues identically (same results, same
// bytes), and a snapshot written in slices while entries apply equals the one taken at its opening.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/index.js';
import { OPTIONS, SessionLog } from './session-log.js';
import { checkSnapshotContinues } from './snapshot-continues.js';

function runSeed(seed: number, entries: number): { log: SessionLog; restores: number; slices: number; stats: Map<string, number> } {
  const log = new SessionLog(new LockMachine(OPTIONS), seed);
  const stats = new Map<string, number>();
  let restores = 0;
  let slices = 0;
  while (log.entries < entries && log.violation === null) {
    const c = log.next();
    const r = log.apply(c);
    const tag =
      r.type === 'error'
        ? `error ${r.code}`
        : r.type === 'acquire'
          ? r.acquired
            ? 'acquired'
            : r.waitTicket !== undefined
              ? 'queued'
              : 'refused'
          : r.type === 'expireSession' || r.type === 'closeSession'
            ? `${r.type} ${r.ended}`
            : r.type;
    stats.set(tag, (stats.get(tag) ?? 0) + 1);
    for (const d of r.type !== 'error' ? (r.decided ?? []) : [])
      stats.set(
        d.outcome.acquired ? 'handed off' : 'waiter refused',
        (stats.get(d.outcome.acquired ? 'handed off' : 'waiter refused') ?? 0) + 1,
      );
    if (log.entries % 97 === 0) {
      slices += checkSnapshotContinues(log, seed, OPTIONS).slices;
      restores++;
    }
  }
  return { log, restores, slices, stats };
}

describe('sessions under random logs', () => {
  const SEEDS = Array.from({ length: 12 }, (_, i) => 101 + i);
  it.each(SEEDS)('seed %i: 3,000 entries keep the rules; snapshots restore and slice exactly', (seed) => {
    const { log, restores, slices, stats } = runSeed(seed, 3000);
    expect(log.violation, `seed ${seed}`).toBeNull();
    expect(restores).toBeGreaterThan(10);
    expect(slices).toBeGreaterThan(0);
    // The log reached what it is meant to test (not just refusals).
    for (const tag of [
      'openSession',
      'renewSession',
      'closeSession true',
      'expireSession true',
      'acquired',
      'queued',
      'handed off',
      'termStart',
    ]) {
      expect(stats.get(tag) ?? 0, `seed ${seed}: no ${tag} (${JSON.stringify([...stats])})`).toBeGreaterThan(0);
    }
  });
});
