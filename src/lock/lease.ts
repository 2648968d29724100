// One lease (a held lock), as the state machine keeps it. A class, not an object literal, so every lease
// shares one hidden class (V8) and costs a fixed 128 bytes (13 fields; Node 20, no pointer compression), 32 more
// for its two boxed times (expiresAtMs, observeFromMs: beyond a small integer), plus its key and owner strings.

export class Lease {
  /** Position in the DeadlineHeap; maintained by the heap only (-1 = not in the heap). */
  heapIndex = -1;
  /** Position in the EndByHeap; maintained by the heap only (-1 = not in the heap). */
  endByIndex = -1;
  /** How many of the machine's lease epochs (term starts) have been applied to this lease's times; the
   *  rest are applied when it is next read or changed (LockMachine.settle). */
  epochsSeen = 0;
  /** The session this hold lives under (session.ts), or null. A session hold keeps no times of its own
   *  (ttlMs 0, out of the deadline heaps): it lives exactly as long as its session, whose times it reads. */
  session: Lease | null = null;
  /** Position in its session's holds (session.ts SessionHolds); maintained by them only (-1 = none). */
  sessionSlot = -1;

  constructor(
    readonly key: string,
    public owner: string,
    /**
     * The fencing token: the raft index of the acquire entry. Held as a number (indexes stay below 2^53)
     * and widened to bigint at the API boundary — a bigint per lease would cost another heap object.
     */
    public fencingToken: number,
    public ttlMs: number,
    /** Log time at which the lease ends; expired when expiresAtMs <= log time. */
    public expiresAtMs: number,
    /** Lease time already observed to have elapsed in completed terms since the last grant/renew. */
    public observedMs: number,
    /** Log time from which the current term observes this lease: max(grant/renew time, term start). */
    public observeFromMs: number,
  ) {}

  /** (Re)grant at log time `nowMs`: a fresh TTL measured only by the current term from now on. */
  grant(owner: string, fencingToken: number, ttlMs: number, nowMs: number): void {
    this.owner = owner;
    this.fencingToken = fencingToken;
    this.ttlMs = ttlMs;
    this.expiresAtMs = nowMs + ttlMs;
    this.observedMs = 0;
    this.observeFromMs = nowMs;
  }

  isLiveAt(nowMs: number): boolean {
    return (this.session ?? this).expiresAtMs > nowMs;
  }

  /** Log time at which the hold ends: its own expiresAtMs, or its session's (a session hold keeps none). */
  get effectiveExpiresAtMs(): number {
    return (this.session ?? this).expiresAtMs;
  }

  /** The TTL the hold was granted: its own, or its session's. */
  get grantedTtlMs(): number {
    return (this.session ?? this).ttlMs;
  }
}
