// A held lock on the client side: ACTIVE -> LOST | RELEASED, both final (SPEC "Client-side state").
//
// The handle keeps a conservative local lease deadline: (time the acquire/renew was SENT) + ttl - margin,
// on the monotonic clock (performance.now). The server starts the lease when it orders the command in its
// log, which is after we sent it, so our deadline falls no later than the moment the server may give the
// key to someone else (LEASES.md, last section). The margin covers clock-rate drift between us and the leader.
//
// LOST is detected three ways, whichever comes first:
//   - the server refuses a renew (NOT_HELD / WRONG_OWNER / WRONG_TOKEN / EXPIRED);
//   - the local deadline passes without a confirmed renew (a timer, AND a synchronous check every time
//     `state`, `signal`, `isActive()` or `assertActive()` is read — after a GC pause, a SIGSTOP or a blocked
//     event loop the timer has not run yet, but the check sees the clock and turns the handle LOST before
//     the caller can write);
//   - the client is closed;
//   - the client sends another acquire of the key under the same owner and session (LockClient.acquire with
//     this handle's `owner`, or the session's acquire of a key it holds): its outcome may supersede this hold,
//     and an unknown outcome may have, so the hold ends at the send (SUPERSEDED).
import { endAtDispose } from './dispose.js';
import { performance } from 'node:perf_hooks';
import type { Reason, ReleaseResponse, RenewResponse } from '../wire/lock.js';
import { LockLostError, LockReleasedError, UnavailableError, fromRpcError, type LostReason } from './errors.js';
import type { ClientLogger } from './logger.js';
import { LeaseHolderState, LocalLease, type Renewal } from './local-lease.js';
import { newRequestId, type CallOptions, type PoolMethod, type RequestSource } from './rpc.js';

export type LockState = 'ACTIVE' | 'LOST' | 'RELEASED';

/** What EndpointPool offers; a narrow interface so unit tests can script the server. */
export interface LockRpc {
  readonly endpoints: readonly string[];
  call<Res>(
    method: PoolMethod,
    request: RequestSource,
    deadline: number,
    signal?: AbortSignal,
    options?: boolean | CallOptions,
  ): Promise<Res>;
}

/** Shared by every handle of one LockClient. */
export interface HandleContext {
  rpc: LockRpc;
  logger: ClientLogger;
  /** Monotonic milliseconds; performance.now unless a test injects its own. */
  now: () => number;
  /** After LockClient.close() no call can be made. */
  isClosed: () => boolean;
  /** Called once when the handle leaves ACTIVE, so the client can forget it. */
  onSettled: (handle: LockHandle) => void;
  /** Default deadline of a release (ms). */
  releaseTimeoutMs: number;
  /** Fraction of the ttl kept as a safety margin against clock-rate drift. */
  leaseSafetyFraction: number;
}

export interface ReleaseResult {
  /**
   * 'released': the server freed our lease (by this call or by an earlier attempt of it whose response was
   * lost — the retry carries the same request_id).
   * 'not-held': nobody holds the key: our lease lapsed, or was freed by an attempt whose outcome the server
   * no longer remembers. Clean: there is nothing left to free.
   * 'held-by-another': the lock had already moved on (a newer token exists); nothing was changed.
   */
  outcome: 'released' | 'not-held' | 'held-by-another';
  /** The server's reason when it did not release ('UNSPECIFIED' when it did). */
  reason: Reason;
}

export interface RenewedEvent {
  /** Lease length the server granted. */
  ttlMs: number;
  /** What is left of the local (conservative) lease after this renew. */
  remainingMs: number;
}

export interface LockHandleEvents {
  lost: [LockLostError];
  renewed: [RenewedEvent];
}

/** What a hold under a session asks its session (session.ts). */
export interface SessionLink {
  check(): void;
  remainingMs(): number;
}

export interface HandleInit {
  key: string;
  owner: string;
  token: bigint;
  ttlMs: number;
  /** Monotonic time at which the acquire that granted this token was first sent. */
  sentAtMs: number;
  /** A hold under a session (session.ts): no renew of its own; it lives and dies with the session, whose
   *  local deadline `check()` judges and `remainingMs()` reports. */
  session?: SessionLink;
}

export class LockHandle extends LeaseHolderState<'RELEASED', LockLostError, LockHandleEvents> {
  readonly key: string;
  readonly owner: string;
  /** The fencing token: pass it with every write to a protected resource. */
  readonly token: bigint;
  readonly ttlMs: number;
  /** Renew about every ttl/3: two more tries fit before the lease would run out. */
  readonly renewIntervalMs: number;
  /** The local lease deadline and the renew/deadline timers (local-lease.ts). */
  private readonly lease: LocalLease;

  /** One request_id for this handle's release, reused by every retry and every release() call. */
  private readonly releaseRequestId = newRequestId();
  private releaseDone: ReleaseResult | null = null;
  private releasing: Promise<ReleaseResult> | null = null;
  private readonly session: SessionLink | null;

  /** @internal Use LockClient.acquire. */
  constructor(
    private readonly ctx: HandleContext,
    init: HandleInit,
  ) {
    super();
    this.key = init.key;
    this.owner = init.owner;
    this.token = init.token;
    this.ttlMs = init.ttlMs;
    this.session = init.session ?? null;
    // A session hold's deadline is its session's (checked through it).
    this.lease = new LocalLease(ctx.now, init.sentAtMs, init.ttlMs, ctx.leaseSafetyFraction, this.session !== null);
    this.renewIntervalMs = this.lease.renewIntervalMs;
  }

  /**
   * @internal Arms the timers. When the grant may have happened well after the first send (the acquire
   * waited in line, or was retried), the deadline measured from that send would be short or already past:
   * re-anchor with one renew before handing the handle out. Throws LockLostError if that renew is refused.
   */
  async start(): Promise<void> {
    if (this.session !== null) return; // the session renews; it ends this handle when it ends
    if (this.lease.sinceAnchorMs() >= this.renewIntervalMs) {
      const sentAt = this.ctx.now();
      let res: RenewResponse;
      try {
        res = await this.ctx.rpc.call<RenewResponse>('Renew', this.renewRequest(), Date.now() + this.ttlMs, undefined, {
          attemptTimeoutMs: this.lease.attemptTimeoutMs,
        });
      } catch (err) {
        this.lostError = new LockLostError(this.key, this.token, 'DEADLINE', 'the lock was granted but could not be confirmed');
        this.settle('LOST');
        throw fromRpcError(err, `confirming lock "${this.key}" after a late grant`, this.ctx.rpc.endpoints, this.ttlMs);
      }
      if (!res.renewed) {
        const lost = new LockLostError(
          this.key,
          this.token,
          res.reason as LostReason,
          `the lock was granted but ended before it could be confirmed (server says ${res.reason})`,
        );
        this.lostError = lost;
        this.settle('LOST');
        throw lost;
      }
      this.lease.confirm(sentAt, Number(res.ttl_ms));
    }
    this.lease.keep(this.holder(this.renewal()));
  }

  /** Returns the token if ACTIVE; throws LockLostError / LockReleasedError otherwise. Call right before each write. */
  assertActive(): bigint {
    const s = this.state;
    if (s === 'ACTIVE') return this.token;
    if (s === 'LOST') throw this.lostError!;
    throw new LockReleasedError(this.key, this.token);
  }

  /** Milliseconds left of the conservative local lease (a session hold: its session's); 0 unless ACTIVE. */
  remainingMs(): number {
    if (this.state !== 'ACTIVE') return 0;
    return this.session !== null ? this.session.remainingMs() : this.lease.remainingMs();
  }

  /** @internal The session this hold lives under ended: LOST (it ran out or was refused) or RELEASED
   *  (the session was closed, which released every hold of it). */
  endBySession(how: 'LOST' | 'RELEASED', detail: string): void {
    if (how === 'RELEASED') {
      this.settle('RELEASED');
      this.releaseDone ??= { outcome: 'released', reason: 'UNSPECIFIED' };
    } else {
      this.markLost('SESSION_LOST', detail);
    }
  }

  /**
   * Gives the lock up. Safe to call again and to retry after an error: every call uses this handle's one
   * request_id, so a retry after a lost response gets the first outcome back, and never frees a newer
   * holder's lock (release checks owner AND token). Rejects only with UnavailableError (cluster
   * unreachable until the deadline); the lease then lapses on the server by itself within its ttl.
   */
  release(opts: { timeoutMs?: number } = {}): Promise<ReleaseResult> {
    if (this.releaseDone) return Promise.resolve(this.releaseDone);
    if (this.releasing) return this.releasing;
    this.checkDeadline();
    if (this.current === 'ACTIVE') this.settle('RELEASED');
    if (this.ctx.isClosed()) {
      return Promise.reject(
        new UnavailableError(`releasing lock "${this.key}": the LockClient is closed; the lease lapses by itself within its ttl`),
      );
    }
    const timeoutMs = opts.timeoutMs ?? this.ctx.releaseTimeoutMs;
    const request = { key: this.key, owner: this.owner, token: this.token.toString(), request_id: this.releaseRequestId };
    this.ctx.logger.debug({ key: this.key, token: String(this.token), requestId: this.releaseRequestId }, 'release sent');
    this.releasing = this.ctx.rpc
      .call<ReleaseResponse>('Release', request, Date.now() + timeoutMs, undefined, {
        onRetry: (r) =>
          this.ctx.logger.debug(
            { key: this.key, requestId: this.releaseRequestId, endpoint: r.endpoint, attempt: r.attempt, code: r.error.code },
            'release retried with the same request_id',
          ),
      })
      .then(
        (res) => {
          const result: ReleaseResult = res.released
            ? { outcome: 'released', reason: 'UNSPECIFIED' }
            : res.reason === 'WRONG_OWNER' || res.reason === 'WRONG_TOKEN'
              ? { outcome: 'held-by-another', reason: res.reason }
              : { outcome: 'not-held', reason: res.reason };
          this.releaseDone = result;
          this.ctx.logger.debug({ key: this.key, token: String(this.token), ...result }, 'release answered');
          return result;
        },
        (err: unknown) => {
          throw fromRpcError(err, `releasing lock "${this.key}"`, this.ctx.rpc.endpoints, timeoutMs);
        },
      )
      .finally(() => {
        this.releasing = null;
      });
    return this.releasing;
  }

  /** `await using lock = await client.acquire(...)`: releases at the end of the scope; never throws. */
  [Symbol.asyncDispose](): Promise<void> {
    return endAtDispose(
      () => this.release(),
      this.ctx.logger,
      { key: this.key, token: String(this.token) },
      'release at dispose failed; the lease lapses by itself',
    );
  }

  /** @internal An acquire of this key by this handle's owner (and session) is about to be sent: whatever
   *  comes of it — a grant with a new token, or no answer at all — may supersede this hold on the server
   *  (SPEC: a re-acquire by the same owner supersedes), so it is LOST from now. */
  supersededBySend(): void {
    this.markLost('SUPERSEDED', 'another acquire of the key by the same owner was sent, which supersedes this hold');
  }

  /** @internal LockClient.close(): the client can no longer renew, so the lock is LOST. */
  closeByClient(): void {
    this.markLost('CLIENT_CLOSED', 'the LockClient was closed while the lock was held');
  }

  // ------------------------------------------------------------------ renewing

  private renewRequest(): object {
    return { key: this.key, owner: this.owner, token: this.token.toString(), ttl_ms: String(this.ttlMs), request_id: newRequestId() };
  }

  /** How this handle renews (local-lease.ts runs the loop). */
  private renewal(): Renewal {
    return {
      // One request_id per renew, reused by its retries: below cluster level 7 a retry after a lost response
      // is applied once; from 7 it renews again from its own time (no renew is remembered), which only moves
      // the server's deadline past the one this handle keeps from the first send.
      sendRenew: (deadline, signal, attemptTimeoutMs) =>
        this.ctx.rpc.call<RenewResponse>('Renew', this.renewRequest(), deadline, signal, {
          attemptTimeoutMs,
          onRetry: (r) =>
            this.ctx.logger.debug(
              { key: this.key, token: String(this.token), endpoint: r.endpoint, attempt: r.attempt, code: r.error.code },
              'renew retried with the same request_id',
            ),
        }),
      renewing: `renewing lock "${this.key}"`,
      endpoints: () => this.ctx.rpc.endpoints,
      refused: (reason, detail) => this.markLost(reason as LostReason, detail),
      renewed: (grantedTtlMs, remainingMs) => this.emit('renewed', { ttlMs: grantedTtlMs || this.ttlMs, remainingMs }),
    };
  }

  // ------------------------------------------------------------------ state changes

  protected checkDeadline(): void {
    if (this.session !== null) {
      if (this.current === 'ACTIVE') this.session.check();
      return;
    }
    if (this.current === 'ACTIVE' && this.lease.passed()) {
      this.markLost(
        'DEADLINE',
        `no renew was confirmed within its ttl of ${this.ttlMs} ms (counted from when the last acquire/renew was sent)`,
      );
    }
  }

  protected markLost(reason: LostReason, detail: string): void {
    if (this.current !== 'ACTIVE') return;
    const err = new LockLostError(this.key, this.token, reason, detail);
    this.lostError = err;
    this.settle('LOST');
    this.ctx.logger.warn({ key: this.key, token: String(this.token), owner: this.owner, reason }, 'lock lost');
    this.emit('lost', err);
  }

  private settle(state: 'LOST' | 'RELEASED'): void {
    if (this.current !== 'ACTIVE') return;
    this.current = state;
    this.lease.stop();
    this.abort.abort(state === 'LOST' ? this.lostError : new LockReleasedError(this.key, this.token));
    this.ctx.onSettled(this);
  }
}
