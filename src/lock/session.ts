// Sessions (SPEC "Sessions"; Chubby's and ZooKeeper's sessions, etcd's concurrency.Session): one lease for
// many holds. A session is kept as a Lease (its id in the token field, no key), so the rule that carries a
// lease across a leader change (epoch.ts, LEASES.md) carries a session the same way, by the same code: a
// failover never cuts a session short and a chain of elections cannot keep a dead one alive.
// Rules, judged by the machine at the log time of the entry (machine-sessions.ts, machine-hand-off.ts):
//  - open: the session's id is the index of its entry (never reused); a retry of the same (owner,
//    request_id) while the session lives answers the same session.
//  - renew: only while live (by log time); a session that ran out cannot come back, even before the entry
//    that ends it applies.
//  - a hold acquired under a session keeps no times of its own (lease.ts `session`); renewing it is refused
//    ("renew the session"); releasing it by owner + token works as for any hold.
//  - end (close, or expiry by the leader's `expireSession` or by an entry that finds it run out): every hold
//    of the session is dropped and every waiter of it leaves its line, in that one entry; each freed key is
//    handed to its line. Expiry starts the holds' lock-delays (from the session's end); a close does not —
//    unless the session had run out by log time (from cluster level 5: machine-leases.ts `endsExpired`).
import type { GroupHold } from './holds.js';
import { Lease } from './lease.js';
import type { Waiter } from './wait-line.js';

/**
 * A session's holds of mutex keys: an array, each lease knowing its slot (Lease.sessionSlot), so a hold joins
 * and leaves without hashing its key. A Set of keys cost ~30 bytes a hold and, at a restart of a million
 * holds under 32 sessions, ~0.7 s of its inserts (each set growing and rehashing freshly read strings).
 * In no particular order: who needs one sorts (machine-sessions.ts, snapshot.ts).
 */
export class SessionHolds {
  private readonly leases: Lease[] = [];

  get size(): number {
    return this.leases.length;
  }

  add(lease: Lease): void {
    lease.sessionSlot = this.leases.length;
    this.leases.push(lease);
  }

  delete(lease: Lease): void {
    const at = lease.sessionSlot;
    if (at < 0 || this.leases[at] !== lease) return;
    const last = this.leases.pop()!;
    if (last !== lease) {
      this.leases[at] = last;
      last.sessionSlot = at;
    }
    lease.sessionSlot = -1;
  }

  /** The held keys. */
  *keys(): IterableIterator<string> {
    for (const lease of this.leases) yield lease.key;
  }
}

export class Session extends Lease {
  /** Its holds of mutex keys. */
  readonly holds = new SessionHolds();
  /** Its holds of keys with many holds (holds.ts). */
  readonly groupHolds = new Set<GroupHold>();
  /** Its requests waiting in line. */
  readonly waiters = new Set<Waiter>();

  constructor(
    id: number,
    owner: string,
    ttlMs: number,
    expiresAtMs: number,
    observedMs: number,
    observeFromMs: number,
    /** The lock-delay of every hold of the session that sets none of its own (0 = none). */
    readonly lockDelayMs: number,
    /** The OpenSession's request_id ('' = none): a retry of it answers this session. */
    readonly requestId: string,
  ) {
    super('', owner, id, ttlMs, expiresAtMs, observedMs, observeFromMs);
  }

  /** The session id: the raft index of the entry that opened it. */
  get id(): number {
    return this.fencingToken;
  }
}

/** A session whose deadline has passed, for the leader to propose `expireSession {sessionId}`. */
export interface DueSession {
  sessionId: bigint;
  expiresAtMs: number;
}
