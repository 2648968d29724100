// A session on the client side (SPEC "Sessions"): one lease, renewed by one keepalive, for many holds.
// ACTIVE -> LOST | CLOSED, both final, with the same rules as a LockHandle's lease:
//   - the local deadline is (time the open/renew was SENT) + ttl - margin (local-lease.ts);
//   - LOST when a renew is refused, when the deadline passes without a confirmed renew (a timer, and a
//     synchronous check whenever the session or any of its holds is read), or when the client is closed;
//   - every hold acquired under the session (`acquire`) is a LockHandle that does not renew itself and turns
//     LOST with the session (reason SESSION_LOST), or RELEASED when the session is closed.
import type { AcquireResponse, CloseSessionResponse, RenewSessionResponse } from '../wire/lock.js';
import { LeaseholdError, LockNotAcquiredError, UnavailableError, fromRpcError } from './errors.js';
import { LockHandle, type HandleContext } from './handle.js';
import { endAtDispose } from './dispose.js';
import { LeaseHolderState, LocalLease, type Renewal } from './local-lease.js';
import { newRequestId } from './rpc.js';
import { manyHoldsFields } from './many-holds.js';

export type SessionState = 'ACTIVE' | 'LOST' | 'CLOSED';

/** The session ended without being closed by us: its holds are gone (the server released them together). */
export class SessionLostError extends LeaseholdError {
  override name = 'SessionLostError';
  constructor(
    readonly sessionId: bigint,
    readonly reason: 'EXPIRED' | 'NOT_HELD' | 'WRONG_OWNER' | 'DEADLINE' | 'RENEW_FAILED' | 'CLIENT_CLOSED',
    readonly detail: string,
  ) {
    super(
      `session ${sessionId} is LOST: ${detail}; every lock held under it is lost too — stop writing with their tokens and open a new session`,
    );
  }
}

export interface SessionAcquireOptions {
  /** 0 (default): answer at once. > 0: queue in FIFO order up to this long for the lock. */
  waitMs?: number;
  /** Overrides the session's lock-delay for this hold (0 = the session's). */
  lockDelayMs?: number;
  /** Stored with the hold and returned by get(). */
  value?: Uint8Array | string;
  /** >= 2: a counting semaphore — up to `limit` holders at once, each with its own token (a job pool).
   *  Every acquire of the key must name the same limit while it has holders or waiters. Default 1. */
  limit?: number;
  /** A shared (read) hold: any number together, or one exclusive (default) hold; a shared request behind a
   *  waiting exclusive one waits (no writer starvation). */
  shared?: boolean;
  signal?: AbortSignal;
  /** Overall deadline of the acquire, retries included; default waitMs + the client's timeoutMs. */
  timeoutMs?: number;
}

export interface SessionCloseResult {
  /** false: the session had ended already (ran out, or closed by an earlier attempt whose answer was lost). */
  closed: boolean;
  /** The keys its holds released, in one log entry. */
  released: string[];
}

export interface SessionInit {
  id: bigint;
  owner: string;
  ttlMs: number;
  /** Monotonic time at which the OpenSession was first sent. */
  sentAtMs: number;
  /** Client default for calls (ms). */
  timeoutMs: number;
  onSettled(session: LockSession): void;
}

export class LockSession extends LeaseHolderState<
  'CLOSED',
  SessionLostError,
  { lost: [SessionLostError]; renewed: [{ remainingMs: number }] }
> {
  readonly id: bigint;
  readonly owner: string;
  readonly ttlMs: number;
  readonly renewIntervalMs: number;
  private readonly holds = new Set<LockHandle>();
  /** The local deadline and the renew/deadline timers (local-lease.ts). */
  private readonly lease: LocalLease;
  private closing: Promise<SessionCloseResult> | null = null;
  private readonly closeRequestId = newRequestId();
  /** What each hold asks to check its (the session's) deadline. */
  private readonly link = { check: () => this.checkDeadline(), remainingMs: () => this.remainingMs() };

  /** @internal Use LockClient.session. */
  constructor(
    private readonly ctx: HandleContext,
    private readonly init: SessionInit,
  ) {
    super();
    this.id = init.id;
    this.owner = init.owner;
    this.ttlMs = init.ttlMs;
    this.lease = new LocalLease(ctx.now, init.sentAtMs, init.ttlMs, ctx.leaseSafetyFraction);
    this.renewIntervalMs = this.lease.renewIntervalMs;
    this.lease.keep(this.holder(this.renewal()));
  }

  /** Milliseconds left of the conservative local lease; 0 unless ACTIVE. */
  remainingMs(): number {
    if (this.state !== 'ACTIVE') return 0;
    return this.lease.remainingMs();
  }

  /** Holds of this session that are ACTIVE. */
  heldLocks(): LockHandle[] {
    return [...this.holds].filter((h) => h.isActive());
  }

  /**
   * Takes `key` under this session: the hold lives exactly as long as the session (no renew of its own).
   * Rejects like LockClient.acquire, and with SessionLostError when the session is no longer ACTIVE.
   */
  async acquire(key: string, opts: SessionAcquireOptions = {}): Promise<LockHandle> {
    this.assertActive();
    const waitMs = opts.waitMs ?? 0;
    const requestId = newRequestId();
    const timeoutMs = opts.timeoutMs ?? waitMs + this.init.timeoutMs;
    const startedAtEpoch = Date.now();
    // The session's hold of this key (one per owner per key) is superseded by what this acquire may do,
    // answered or not.
    for (const h of [...this.holds]) if (h.key === key) h.supersededBySend();
    const sentAt = this.ctx.now();
    const request = () => ({
      key,
      owner: this.owner,
      ttl_ms: '0',
      wait_ms: String(Math.max(0, waitMs - (Date.now() - startedAtEpoch))),
      request_id: requestId,
      session_id: this.id.toString(),
      ...(opts.lockDelayMs !== undefined && opts.lockDelayMs > 0 ? { lock_delay_ms: String(opts.lockDelayMs) } : {}),
      ...(opts.value !== undefined ? { value: typeof opts.value === 'string' ? Buffer.from(opts.value, 'utf8') : opts.value } : {}),
      ...manyHoldsFields(opts),
    });
    let res: AcquireResponse;
    try {
      res = await this.ctx.rpc.call<AcquireResponse>('Acquire', request, startedAtEpoch + timeoutMs, opts.signal, {
        onRetry: (r) =>
          this.ctx.logger.debug(
            { key, owner: this.owner, requestId, endpoint: r.endpoint, attempt: r.attempt, code: r.error.code, error: r.error.details },
            'acquire retried with the same request_id',
          ),
      });
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw fromRpcError(err, `acquiring lock "${key}" under session ${this.id}`, this.ctx.rpc.endpoints, Date.now() - startedAtEpoch);
    }
    if (!res.acquired)
      throw new LockNotAcquiredError(key, res.holder_owner, Number(res.holder_ttl_ms), waitMs > 0 ? Date.now() - startedAtEpoch : 0);
    const handle = new LockHandle(this.ctx, {
      key,
      owner: this.owner,
      token: BigInt(res.token),
      ttlMs: this.ttlMs,
      sentAtMs: sentAt,
      session: this.link,
    });
    this.holds.add(handle);
    handle.once('lost', () => this.holds.delete(handle));
    // The session may have ended while the acquire was in flight: the hold ended with it.
    if (this.current === 'LOST') handle.endBySession('LOST', this.lostError!.detail);
    else if (this.current === 'CLOSED') handle.endBySession('RELEASED', 'the session was closed');
    return handle;
  }

  /**
   * Ends the session: the server releases every hold of it in one log entry (no lock-delay while the
   * session lives; a session that ran out ends into its holds' lock-delays, as its expiry would). Safe to call
   * again and to retry: every call uses one request. Rejects only with UnavailableError (then the session
   * lapses by itself within its TTL).
   */
  close(opts: { timeoutMs?: number } = {}): Promise<SessionCloseResult> {
    if (this.closing) return this.closing;
    this.settle('CLOSED', 'the session was closed');
    const timeoutMs = opts.timeoutMs ?? this.init.timeoutMs;
    const request = { session_id: this.id.toString(), request_id: this.closeRequestId, owner: this.owner };
    this.closing = this.ctx.rpc.call<CloseSessionResponse>('CloseSession', request, Date.now() + timeoutMs).then(
      (res) => ({ closed: res.closed, released: [...res.released] }),
      (err: unknown) => {
        this.closing = null;
        throw fromRpcError(err, `closing session ${this.id}`, this.ctx.rpc.endpoints, timeoutMs);
      },
    );
    return this.closing;
  }

  /** `await using session = await client.session(...)`: closes at the end of the scope; never throws. */
  [Symbol.asyncDispose](): Promise<void> {
    return endAtDispose(
      () => this.close(),
      this.ctx.logger,
      { sessionId: String(this.id) },
      'closing the session at dispose failed; it lapses by itself',
    );
  }

  /** @internal LockClient.close(). */
  closeByClient(): void {
    this.markLost('CLIENT_CLOSED', 'the LockClient was closed while the session was open');
  }

  // ------------------------------------------------------------------ renewing

  /** How this session renews (local-lease.ts runs the loop). */
  private renewal(): Renewal {
    return {
      sendRenew: (deadline, signal, attemptTimeoutMs) =>
        this.ctx.rpc.call<RenewSessionResponse>(
          'RenewSession',
          { session_id: this.id.toString(), request_id: newRequestId(), owner: this.owner },
          deadline,
          signal,
          { attemptTimeoutMs },
        ),
      renewing: `renewing session ${this.id}`,
      endpoints: () => this.ctx.rpc.endpoints,
      refused: (reason, detail) =>
        this.markLost(reason === 'WRONG_OWNER' ? 'WRONG_OWNER' : reason === 'NOT_HELD' ? 'NOT_HELD' : 'EXPIRED', detail),
      renewed: (_grantedTtlMs, remainingMs) => this.emit('renewed', { remainingMs }),
    };
  }

  // ------------------------------------------------------------------ state changes

  protected checkDeadline(): void {
    if (this.current === 'ACTIVE' && this.lease.passed()) {
      this.markLost(
        'DEADLINE',
        `no renew was confirmed within its ttl of ${this.ttlMs} ms (counted from when the last open/renew was sent)`,
      );
    }
  }

  private assertActive(): void {
    const s = this.state;
    if (s === 'LOST') throw this.lostError!;
    if (s === 'CLOSED') throw new UnavailableError(`session ${this.id} is closed; open a new one`);
  }

  protected markLost(reason: SessionLostError['reason'], detail: string): void {
    if (this.current !== 'ACTIVE') return;
    const err = new SessionLostError(this.id, reason, detail);
    this.lostError = err;
    this.settle('LOST', `session ${this.id} was lost: ${detail}`);
    this.ctx.logger.warn({ sessionId: String(this.id), owner: this.owner, reason }, 'session lost');
    this.emit('lost', err);
  }

  private settle(state: 'LOST' | 'CLOSED', detail: string): void {
    if (this.current !== 'ACTIVE') return;
    this.current = state;
    this.lease.stop();
    for (const h of this.holds) h.endBySession(state === 'LOST' ? 'LOST' : 'RELEASED', detail);
    this.holds.clear();
    this.abort.abort(state === 'LOST' ? this.lostError : new UnavailableError(`session ${this.id} was closed`));
    this.init.onSettled(this);
  }
}
