// The client's conservative view of one server lease (a lock's or a session's): the deadline it keeps is
// (time the granting or renewing call was SENT) + ttl - margin, on the monotonic clock. The server starts the
// lease when it orders the command in its log, after we sent it, so this deadline falls no later than the
// moment the server may end the lease (LEASES.md, last section); the margin covers clock-rate drift. It also
// owns the two timers: the next renew (about every ttl/3, two more tries fit before the deadline) and the
// deadline itself. Shared by LockHandle and LockSession so both keep the rule the same way.
export class LocalLease {
  readonly renewIntervalMs: number;
  private readonly marginMs: number;
  private anchorMs: number;
  private deadlineMs: number;
  private renewTimer: NodeJS.Timeout | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly now: () => number,
    sentAtMs: number,
    private readonly ttlMs: number,
    safetyFraction: number,
    /** No deadline of its own (a hold under a session: its session's lease decides). */
    unbounded = false,
  ) {
    this.renewIntervalMs = Math.max(1, Math.floor(ttlMs / 3));
    this.marginMs = Math.ceil(ttlMs * safetyFraction);
    this.anchorMs = sentAtMs;
    this.deadlineMs = unbounded ? Infinity : sentAtMs + ttlMs - this.marginMs;
  }

  /** The local deadline has passed (by the monotonic clock, read now). */
  passed(): boolean {
    return this.now() >= this.deadlineMs;
  }

  remainingMs(): number {
    return Math.max(0, this.deadlineMs - this.now());
  }

  /** Time since the last confirmed grant/renew was sent. */
  sinceAnchorMs(): number {
    return this.now() - this.anchorMs;
  }

  /** A renew sent at `sentAtMs` was confirmed with `grantedTtlMs` (never trusted above our own ttl). */
  confirm(sentAtMs: number, grantedTtlMs: number): void {
    const ttl = grantedTtlMs > 0 ? Math.min(grantedTtlMs, this.ttlMs) : this.ttlMs;
    this.anchorMs = sentAtMs;
    this.deadlineMs = sentAtMs + ttl - this.marginMs;
  }

  /** Calls `renew` one renew interval after the last anchor. */
  scheduleRenew(renew: () => void): void {
    this.clearRenew();
    this.renewTimer = setTimeout(
      () => {
        this.renewTimer = null;
        renew();
      },
      Math.max(0, this.anchorMs + this.renewIntervalMs - this.now()),
    );
    this.renewTimer.unref?.();
  }

  /** Calls `check` when the deadline comes (re-armed after every confirm). */
  armDeadline(check: () => void): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(check, Math.max(0, this.deadlineMs - this.now()));
    this.deadlineTimer.unref?.();
  }

  stop(): void {
    this.clearRenew();
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
  }

  private clearRenew(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = null;
  }
}
