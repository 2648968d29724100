// The client's conservative view of one server lease (a lock's or a session's): the deadline it keeps is
// (time the granting or renewing call was SENT) + ttl - margin, on the monotonic clock. The server starts the
// lease when it orders the command in its log, after we sent it, so this deadline falls no later than the
// moment the server may end the lease (LEASES.md, last section); the margin covers clock-rate drift. It also
// owns the two timers: the next renew (about every ttl/3, two more tries fit before the deadline) and the
// deadline itself, and the renew loop that moves the deadline on (`keep`). Shared by LockHandle and
// LockSession so both keep the rule the same way.
import { EventEmitter } from 'node:events';
import type { Reason, RenewResponse } from '../wire/lock.js';
import { fromRpcError, UnavailableError } from './errors.js';

/**
 * What a LockHandle and a LockSession share as holders of a lease: ACTIVE until LOST or their own end
 * (RELEASED, CLOSED), both final, and every read of the state checks the local deadline first — after a GC
 * pause, a SIGSTOP or a blocked event loop the deadline timer has not run yet, but the check sees the clock.
 */
export abstract class LeaseHolderState<
  End extends string,
  Lost extends Error,
  Events extends Record<keyof Events, unknown[]>,
> extends EventEmitter<Events> {
  protected current: 'ACTIVE' | 'LOST' | End = 'ACTIVE';
  protected lostError: Lost | null = null;
  protected readonly abort = new AbortController();

  /** Ends the holder LOST if its local deadline has passed. */
  protected abstract checkDeadline(): void;

  /** Ends the holder LOST (no-op unless ACTIVE). */
  protected abstract markLost(reason: 'DEADLINE' | 'RENEW_FAILED', detail: string): void;

  /** This holder as the renew loop (LocalLease.keep) sees it; `renewal` says how it renews. */
  protected holder(renewal: Renewal): LeaseHolder {
    return {
      ...renewal,
      active: () => this.current === 'ACTIVE',
      checkDeadline: () => this.checkDeadline(),
      failed: (reason, detail) => this.markLost(reason, detail),
    };
  }

  /** ACTIVE, LOST, or the holder's own end (RELEASED, CLOSED). Reading it checks the local deadline first. */
  get state(): 'ACTIVE' | 'LOST' | End {
    this.checkDeadline();
    return this.current;
  }

  /** Aborted the moment the holder is LOST (reason: the lost error) or ended. Reading it checks the deadline. */
  get signal(): AbortSignal {
    this.checkDeadline();
    return this.abort.signal;
  }

  /** Why it was lost, once it is. */
  get lostReason(): Lost | null {
    this.checkDeadline();
    return this.lostError;
  }

  /** True only while ACTIVE: the single condition under which a write may be made. */
  isActive(): boolean {
    return this.state === 'ACTIVE';
  }
}

/** What a renew answers: RenewResponse (a lock) and RenewSessionResponse (a session) alike. */
export type RenewAnswer = Pick<RenewResponse, 'renewed' | 'ttl_ms' | 'reason'>;

/** What differs between the holders' renews: the call, and what a refusal and a confirmation do. */
export type Renewal = Omit<LeaseHolder, 'active' | 'checkDeadline' | 'failed'>;

/** The holder of a lease (a LockHandle, a LockSession) as the renew loop sees it. */
export interface LeaseHolder {
  /** Still ACTIVE, by its state alone (the clock is not read). */
  active(): boolean;
  /** Reads the clock: ends the holder LOST if the local deadline has passed. */
  checkDeadline(): void;
  /** Sends one renew, one request_id reused by its retries; rejects as the pool's call does. */
  sendRenew(deadlineEpochMs: number, signal: AbortSignal, attemptTimeoutMs: number): Promise<RenewAnswer>;
  /** What a renew error says it was doing: `renewing lock "k"`, `renewing session 7`. */
  readonly renewing: string;
  /** The endpoints a renew error names. */
  endpoints(): readonly string[];
  /** No renew could be confirmed: none in time ('DEADLINE') or another error ('RENEW_FAILED'). */
  failed(reason: 'DEADLINE' | 'RENEW_FAILED', detail: string): void;
  /** The server refused the renew. */
  refused(reason: Reason, detail: string): void;
  /** A renew was confirmed; the deadline has moved on. */
  renewed(grantedTtlMs: number, remainingMs: number): void;
}

export class LocalLease {
  readonly renewIntervalMs: number;
  private readonly marginMs: number;
  private anchorMs: number;
  private deadlineMs: number;
  private renewTimer: NodeJS.Timeout | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;
  /** The renew in flight, aborted by stop(). */
  private renewing: AbortController | null = null;

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

  /** Per-attempt timeout of a renew: short enough that a black-holed endpoint leaves time to try another
   *  before the lease runs out. */
  get attemptTimeoutMs(): number {
    return Math.max(100, Math.min(3000, Math.floor(this.ttlMs / 4)));
  }

  /** Arms the deadline and renews one renew interval after each confirmed anchor, while `holder` is active. */
  keep(holder: LeaseHolder): void {
    if (!holder.active()) return;
    this.armDeadline(() => holder.checkDeadline());
    this.scheduleRenew(() => void this.renewOnce(holder));
  }

  private async renewOnce(holder: LeaseHolder): Promise<void> {
    holder.checkDeadline();
    if (!holder.active()) return;
    const sentAt = this.now();
    const ctl = new AbortController();
    this.renewing = ctl;
    // No point retrying past the local deadline: by then the holder is LOST whatever the server says.
    const deadline = Date.now() + this.remainingMs();
    let res: RenewAnswer;
    try {
      res = await holder.sendRenew(deadline, ctl.signal, this.attemptTimeoutMs);
    } catch (err) {
      if (!holder.active()) return;
      const e = fromRpcError(err, holder.renewing, holder.endpoints(), Math.round(this.now() - sentAt));
      if (e instanceof UnavailableError) holder.failed('DEADLINE', `no renew was confirmed before the local lease deadline (${e.message})`);
      else holder.failed('RENEW_FAILED', e.message);
      return;
    } finally {
      if (this.renewing === ctl) this.renewing = null;
    }
    // A confirmation that arrives after the deadline passed comes too late: the deadline wins.
    holder.checkDeadline();
    if (!holder.active()) return;
    if (!res.renewed) {
      holder.refused(res.reason, `the server refused to renew it (${res.reason})`);
      return;
    }
    this.confirm(sentAt, Number(res.ttl_ms));
    if (holder.active()) this.armDeadline(() => holder.checkDeadline());
    holder.renewed(Number(res.ttl_ms), this.remainingMs());
    if (holder.active()) this.scheduleRenew(() => void this.renewOnce(holder));
  }

  /** Calls `renew` one renew interval after the last anchor. */
  private scheduleRenew(renew: () => void): void {
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
  private armDeadline(check: () => void): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(check, Math.max(0, this.deadlineMs - this.now()));
    this.deadlineTimer.unref?.();
  }

  /** Stops both timers and aborts the renew in flight. */
  stop(): void {
    this.clearRenew();
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
    this.renewing?.abort();
  }

  private clearRenew(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = null;
  }
}
