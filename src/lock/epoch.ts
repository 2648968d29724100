// Carrying leases across a leader change. This is the safety-critical rule of the lock machine; the full
// argument is in LEASES.md. Requirements pulling in opposite directions:
//  - SPEC: a new leader must not expire a lease sooner than a full TTL after it took office, so a new
//    leader whose clock runs ahead of the old one cannot cut leases short;
//  - etcd issue 9395: extending on every election must not keep a dead holder's lease alive forever.

export interface LeaseCarryOver {
  /** Leases given at least a full TTL from the new term's start. */
  extended: number;
  /** Leases that provably outlived their TTL and were ended at the new term's start. */
  ended: number;
}

/** One term start: P, the last log time of the finished term, and T, the new term's first log time. */
export interface LeaseEpoch {
  previousTermEndMs: number;
  epochStartMs: number;
}

/** The times of a lease that an epoch changes. */
export interface LeaseTimes {
  ttlMs: number;
  expiresAtMs: number;
  observedMs: number;
  observeFromMs: number;
}

/**
 * Carries one lease through one epoch (P = previousTermEndMs, T = epochStartMs), if it is still live at P:
 *   observedMs += P - observeFromMs   — what the finished term measured, on ONE leader's clock: a lower
 *                                        bound of the real time that passed (clock offsets between leaders
 *                                        never enter, only one clock's differences do);
 *   observedMs >= ttlMs → it provably outlived its TTL in real time: not extended, ends at T;
 *   otherwise           → deadline = max(deadline, T + ttlMs), observed from T on.
 * A lease already past its deadline at P stays expired. The machine applies epochs to a lease lazily, in
 * order, when it is next read or changed (LockMachine.settle) — the same result as applying each epoch to
 * every lease at its term start, without a walk over every lease at a term start.
 */
export function carryLease(lease: LeaseTimes, epoch: LeaseEpoch): 'extended' | 'ended' | null {
  const { previousTermEndMs, epochStartMs } = epoch;
  if (lease.expiresAtMs <= previousTermEndMs) return null;
  lease.observedMs += Math.max(0, previousTermEndMs - lease.observeFromMs);
  lease.observeFromMs = epochStartMs;
  if (lease.observedMs >= lease.ttlMs) {
    // min: ending a lease never moves its deadline later.
    lease.expiresAtMs = Math.min(lease.expiresAtMs, epochStartMs);
    return 'ended';
  }
  lease.expiresAtMs = Math.max(lease.expiresAtMs, epochStartMs + lease.ttlMs);
  return 'extended';
}

/** The log time at which the current term will have observed `lease` for its whole TTL: an epoch whose
 *  previous term ends at or after it ends the lease (carryLease). */
export function endByMs(lease: LeaseTimes): number {
  return lease.observeFromMs + lease.ttlMs - lease.observedMs;
}
