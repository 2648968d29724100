// Carrying leases across a leader change. This is the safety-critical rule of the lock machine; the full
// argument is in LEASES.md. Requirements pulling in opposite directions:
//  - SPEC: a new leader must not expire a lease sooner than a full TTL after it took office, so a new
//    leader whose clock runs ahead of the old one cannot cut leases short;
//  - etcd issue 9395: extending on every election must not keep a dead holder's lease alive forever.
import type { Lease } from './lease.js';

export interface LeaseCarryOver {
  /** Leases given at least a full TTL from the new term's start. */
  extended: number;
  /** Leases that provably outlived their TTL and were ended at the new term's start. */
  ended: number;
}

/**
 * For every lease still live at `previousTermEndMs` (P, the last log time of the finished term):
 *   observedMs += P - observeFromMs   — what the finished term measured, on ONE leader's clock: a lower
 *                                        bound of the real time that passed (clock offsets between leaders
 *                                        never enter, only one clock's differences do);
 *   observedMs >= ttlMs → it provably outlived its TTL in real time: not extended, ends at T;
 *   otherwise           → deadline = max(deadline, T + ttlMs), observed from T on.
 * T = `epochStartMs`, the new term's first log time. A lease already past its deadline at P stays expired.
 * O(leases); the caller rebuilds the deadline heap.
 */
export function carryLeasesIntoTerm(leases: LeaseVisitor, previousTermEndMs: number, epochStartMs: number): LeaseCarryOver {
  const carried = { extended: 0, ended: 0 };
  leases.forEachValue((lease) => {
    if (!lease.isLiveAt(previousTermEndMs)) return;
    lease.observedMs += Math.max(0, previousTermEndMs - lease.observeFromMs);
    lease.observeFromMs = epochStartMs;
    if (lease.observedMs >= lease.ttlMs) {
      // min: ending a lease never moves its deadline later.
      lease.leaseDeadlineMs = Math.min(lease.leaseDeadlineMs, epochStartMs);
      carried.ended++;
    } else {
      lease.leaseDeadlineMs = Math.max(lease.leaseDeadlineMs, epochStartMs + lease.ttlMs);
      carried.extended++;
    }
  });
  return carried;
}

/** Visits every lease (KeyBuckets.forEachValue): a callback per Map, not a generator per lease — this
 *  walks every lease at every term start (a million of them took seconds through yield*). */
export interface LeaseVisitor {
  forEachValue(visit: (lease: Lease) => void): void;
}
