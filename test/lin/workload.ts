// A chaos-run client: one LockClient of its own (its own channels, through its own fault proxies), looping
// acquire -> fenced writes carrying the token -> (sometimes a Get, an explicit renew, a long hold across
// several auto-renewals) -> release, or abandon the lock like a crashed holder. A holder that lost its lock
// sometimes keeps going as a ZOMBIE: it writes, renews and releases with its old token, as a paused or
// partitioned process would on waking up. Everything it does goes into the shared history, including its
// holder windows and the automatic renewals its handle made. Part of its acquires are made under a session
// of their own (LockClient.session; one hold per session, so owners stay unique per acquire, which the
// checker relies on): the hold renews with the session, its window ends with the session's deadline, and
// the session is closed after the release, closed while it still holds (the close releases the hold), left
// to lapse, or dies with a crashed client. The session's own calls go into the history too (open-session,
// its automatic renews and the refusal that ended it, close-session) for the session-end rule. Part of the
// acquires and sessions carry a lock-delay (SPEC "Lock-delay"): when such a hold runs out — a crashed client,
// a renew that came too late — the key grants nobody for that long (the lock-delay rule).
import type { SimRng } from '../sim/rng.js';
import {
  LockClient,
  LockLostError,
  LockNotAcquiredError,
  LockReleasedError,
  InvalidRequestError,
  SessionLostError,
  type LockHandle,
  type LockSession,
  type RenewedEvent,
} from '../../src/client/index.js';
import { EndpointPool, newRequestId, RpcError } from '../../src/client/rpc.js';
import { writeWithLock } from '../../src/fencing/index.js';
import type { ReleaseResponse, RenewResponse } from '../../src/wire/lock.js';
import type { AuditedFencedStore } from './audited-store.js';
import type { HistoryRecorder, Op, PendingOp } from './history.js';

export interface WorkerOptions {
  id: string;
  /** host:port of this worker's proxies, one per node. */
  endpoints: string[];
  keys: readonly string[];
  ttlsMs: readonly number[];
  rng: SimRng;
  recorder: HistoryRecorder;
  resource: AuditedFencedStore;
  /** Per-call deadline of acquire (on top of wait), release, get, raw calls. */
  callTimeoutMs?: number;
  /** Fraction of acquires that queue for the lock (wait_ms > 0); default 0.25. */
  waitChance?: number;
  /** Fraction of acquires made under the worker's session; default 0.3. */
  sessionChance?: number;
  /** Keys with many holds (SPEC "Many holders"): a semaphore (limit >= 2) or, with limit 1, a key of shared
   *  and exclusive holds. Checked by over-limit / shared-with-exclusive (group-windows.ts). */
  groupKeys?: readonly { key: string; limit: number }[];
  /** Fraction of iterations on a group key (when there are some); default 0.3. */
  groupChance?: number;
  /** Fraction of mutex acquires (and of sessions) that carry a lock-delay of 200-1200 ms; default 0.25. */
  lockDelayChance?: number;
}

const SERVER_REASONS = new Set(['NOT_HELD', 'WRONG_OWNER', 'WRONG_TOKEN', 'EXPIRED']);

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

interface Held {
  handle: LockHandle;
  /** The session it lives under, if any. */
  session: LockSession | null;
  acquire: Op;
  /** Close the window at `atMs` (no-op if closed). */
  closeWindow: (atMs: number, endedBy: 'released' | 'lost' | 'deadline') => void;
}

export class ChaosWorker {
  readonly id: string;
  /** Errors of a kind the client should never throw here (not a typed LeaseholdError outcome). */
  readonly unexpected: string[] = [];
  /** Holds it was granted under a session of their own. */
  sessionHolds = 0;
  private client: LockClient;
  private readonly raw: EndpointPool;
  private ownerSeq = 0;
  private writeSeq = 0;
  private readonly timeoutMs: number;

  constructor(private readonly o: WorkerOptions) {
    this.id = o.id;
    this.timeoutMs = o.callTimeoutMs ?? 4000;
    this.client = this.newClient();
    this.raw = new EndpointPool({ endpoints: [...o.endpoints], attemptTimeoutMs: 1000 });
  }

  private newClient(): LockClient {
    return new LockClient({ endpoints: this.o.endpoints, clientId: this.o.id, attemptTimeoutMs: 1000, timeoutMs: this.timeoutMs });
  }

  private get now(): number {
    return this.o.recorder.now();
  }

  /** Some calls get a short deadline, so that faults leave outcomes unknown ('info') instead of being retried away. */
  private callTimeout(): number {
    return this.o.rng.chance(0.3) ? 1200 : this.timeoutMs;
  }

  async run(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      try {
        await this.iteration(stop);
      } catch (err) {
        this.unexpected.push(`${this.id}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        await sleep(100);
      }
    }
  }

  close(): void {
    this.client.close();
    this.raw.close();
  }

  private async iteration(stop: AbortSignal): Promise<void> {
    const { rng, keys, ttlsMs } = this.o;
    const groups = this.o.groupKeys ?? [];
    // The first group key gets two thirds of the group iterations: a semaphore is only tested by more
    // contenders at once than its limit, and a run has few workers.
    if (groups.length > 0 && rng.chance(this.o.groupChance ?? 0.3))
      return this.groupIteration(rng.chance(2 / 3) ? groups[0]! : rng.pick(groups), stop);
    const key = rng.pick(keys);
    const ttlMs = rng.pick(ttlsMs);
    if (rng.chance(0.1)) await this.get(key);
    const underSession = rng.chance(this.o.sessionChance ?? 0.3);
    const lockDelayMs = rng.chance(this.o.lockDelayChance ?? 0.25) ? rng.range(200, 1200) : 0;
    const held = await this.acquire(
      key,
      ttlMs,
      rng.chance(this.o.waitChance ?? 0.25) ? rng.range(200, 1500) : 0,
      underSession,
      lockDelayMs,
    );
    if (!held) {
      await sleep(rng.range(20, 250), stop);
      return;
    }
    const h = held.handle;
    const writes = rng.range(1, 3);
    for (let i = 0; i < writes && !stop.aborted; i++) {
      if (!(await this.write(h, key))) break;
      await sleep(rng.range(0, 150), stop);
      if (rng.chance(0.1)) await this.get(key);
      if (rng.chance(0.1) && h.isActive() && held.session === null) await this.rawRenew(key, h.owner, h.token, ttlMs, 'raw');
    }
    // A long critical section: the handle renews itself (about every ttl/3) while we sleep.
    if (!stop.aborted && rng.chance(0.2)) {
      await sleep(rng.range(Math.floor(ttlMs / 2), ttlMs * 2), stop);
      await this.write(h, key);
    }

    const lostMeanwhile = h.state === 'LOST';
    if (!stop.aborted && !lostMeanwhile && rng.chance(0.1)) {
      // A crashed holder: no release, no renewals; the lease must lapse by itself within its ttl.
      held.closeWindow(this.now, 'lost');
      this.client.close();
      this.client = this.newClient(); // its session died with the client: the server lets it lapse
    } else if (held.session !== null && !lostMeanwhile && rng.chance(0.3)) {
      // Closed while it still holds: the close releases the hold (no lock-delay), and a Get may look.
      held.closeWindow(this.now, 'released'); // close() ends the session's holds synchronously
      await this.closeSession(held.session);
      if (rng.chance(0.5)) await this.get(key);
    } else {
      await this.release(held);
      // Closed (it holds nothing now), or left to lapse on the server by its TTL.
      if (held.session !== null && rng.chance(0.7)) await this.closeSession(held.session);
    }
    // A holder that lost its lock (or gave it up) wakes up and goes on with its old token: the fenced
    // resource must refuse its write once a newer token has written; renew and release must be refused
    // once a newer holder exists.
    if (!stop.aborted && rng.chance(lostMeanwhile ? 0.6 : 0.15)) {
      await sleep(rng.range(0, Math.floor(ttlMs * 1.5)), stop);
      await this.zombieWrite(key, h.token);
      if (rng.chance(0.5)) {
        // (A hold under a session has no renew of its own: the server refuses one as a usage error.)
        if (held.session === null) await this.rawRenew(key, h.owner, h.token, ttlMs, 'zombie');
        await this.rawRelease(key, h.owner, h.token);
      }
    }
  }

  /** One hold of a key with many holds: a slot of a semaphore, or a shared or exclusive hold. No writes (a
   *  fenced resource that refuses older tokens is for one holder at a time); the windows are what the
   *  checker counts. Sometimes abandoned like a crashed holder, so slots also come back by expiry. */
  private async groupIteration(group: { key: string; limit: number }, stop: AbortSignal): Promise<void> {
    const { rng, ttlsMs } = this.o;
    const ttlMs = rng.pick(ttlsMs);
    const waitMs = rng.chance(0.6) ? rng.range(200, 2000) : 0;
    const mode = group.limit >= 2 ? { limit: group.limit } : rng.chance(0.7) ? { shared: true } : {};
    const owner = `${this.id}/${++this.ownerSeq}`;
    const p = this.o.recorder.invoke({
      process: this.id,
      type: 'acquire',
      key: group.key,
      via: 'handle',
      owner,
      ttlMs,
      waitMs,
      ...(group.limit >= 2 ? { limit: group.limit } : {}),
      ...('shared' in mode ? { shared: true } : {}),
    });
    let handle: LockHandle;
    try {
      handle = await this.client.acquire(group.key, { ttlMs, waitMs, owner, timeoutMs: waitMs + this.callTimeout(), ...mode });
    } catch (err) {
      if (err instanceof LockNotAcquiredError) p.fail({ holder: err.holder });
      else if (err instanceof LockLostError) p.ok({ token: err.token, error: `granted, but LOST before it was handed out: ${err.reason}` });
      else this.unknown(p, err);
      await sleep(rng.range(20, 250), stop);
      return;
    }
    const held = this.track(p.ok({ token: handle.token }), handle, null);
    // Held for a while (the handle renews it): overlapping holds are what the limit is about.
    await sleep(rng.range(300, Math.max(600, Math.min(ttlMs * 2, 2500))), stop);
    if (rng.chance(0.1)) await this.get(group.key);
    if (!stop.aborted && handle.state !== 'LOST' && rng.chance(0.1)) {
      held.closeWindow(this.now, 'lost'); // a crashed holder: the slot comes back when its lease runs out
      this.client.close();
      this.client = this.newClient();
      return;
    }
    await this.release(held);
  }

  // ------------------------------------------------------------------ acquire, with the holder window

  private async acquire(key: string, ttlMs: number, waitMs: number, underSession: boolean, lockDelayMs: number): Promise<Held | null> {
    const owner = `${this.id}/${++this.ownerSeq}`;
    // Under a session the lock-delay is the session's (every hold of it gets it); otherwise the acquire's own.
    const session = underSession ? await this.openSession(ttlMs, owner, lockDelayMs) : null;
    // A hold under a session has no TTL of its own (ttlMs left out: the lease-cut-short rule, which reads
    // per-key renews, does not apply; its window, from the session's deadline, is checked like any other).
    const p = this.o.recorder.invoke({
      process: this.id,
      type: 'acquire',
      key,
      via: 'handle',
      owner,
      ...(session === null ? { ttlMs, ...(lockDelayMs > 0 ? { lockDelayMs } : {}) } : { sessionId: session.id }),
      waitMs,
    });
    let handle: LockHandle;
    try {
      handle =
        session !== null
          ? await session.acquire(key, { waitMs, timeoutMs: waitMs + this.callTimeout() })
          : await this.client.acquire(key, {
              ttlMs,
              waitMs,
              owner,
              timeoutMs: waitMs + this.callTimeout(),
              ...(lockDelayMs > 0 ? { lockDelayMs } : {}),
            });
    } catch (err) {
      if (
        session !== null &&
        (err instanceof SessionLostError || (err instanceof InvalidRequestError && /is not open/.test(err.message)))
      ) {
        // The session ended (by the client's deadline, or the server's) before or while the acquire ran: the
        // outcome is a refusal for a reason outside the mutex model, so it is recorded as unknown.
        p.info(err);
        return null;
      }
      if (err instanceof LockNotAcquiredError) p.fail({ holder: err.holder });
      else if (err instanceof LockLostError) {
        // Granted (we know the token) but ended before the client could confirm it: the caller never held it.
        p.ok({ token: err.token, error: `granted, but LOST before it was handed out: ${err.reason}` });
      } else this.unknown(p, err);
      return null;
    }
    const op = p.ok({ token: handle.token });
    if (session !== null) this.sessionHolds++;
    return this.track(op, handle, session);
  }

  /** A new session for one hold of `owner`; null if the open failed (the acquire then goes without one).
   *  Its open, its automatic renews (with the best known send time, as for a handle's) and a renew the
   *  server refused go into the history. */
  private async openSession(ttlMs: number, owner: string, lockDelayMs: number): Promise<LockSession | null> {
    const p = this.o.recorder.invoke({
      process: this.id,
      type: 'open-session',
      key: '',
      via: 'handle',
      owner,
      ttlMs,
      ...(lockDelayMs > 0 ? { lockDelayMs } : {}),
    });
    let session: LockSession;
    try {
      session = await this.client.session({ ttlMs, owner, timeoutMs: this.callTimeout(), ...(lockDelayMs > 0 ? { lockDelayMs } : {}) });
    } catch (err) {
      p.info(err); // unavailable: a session it may have opened lapses by itself
      return null;
    }
    p.ok({ sessionId: session.id });
    let lastConfirmMs = this.now;
    const margin = Math.ceil(session.ttlMs * 0.02);
    const base = { process: this.id, key: '', via: 'auto' as const, owner, sessionId: session.id, ttlMs: session.ttlMs };
    session.on('renewed', ({ remainingMs }) => {
      const t = this.now;
      // Sent after the previous confirmation, at (deadline - ttl + margin) if the server granted our ttl (a
      // shorter grant only makes this earlier: never later than the true send).
      const sentAt = Math.min(t, Math.max(lastConfirmMs, t + remainingMs - session.ttlMs + margin));
      this.o.recorder.record({ ...base, type: 'renew-session', invokeMs: sentAt, completeMs: t, outcome: 'ok' });
      lastConfirmMs = t;
    });
    session.on('lost', (err: SessionLostError) => {
      // Only the server's refusals are facts about the session; a local deadline or a closed client is not.
      if (SERVER_REASONS.has(err.reason))
        this.o.recorder.record({
          ...base,
          type: 'renew-session',
          invokeMs: lastConfirmMs,
          completeMs: this.now,
          outcome: 'fail',
          reason: err.reason,
        });
    });
    return session;
  }

  private async closeSession(session: LockSession): Promise<void> {
    const p = this.o.recorder.invoke({
      process: this.id,
      type: 'close-session',
      key: '',
      via: 'handle',
      owner: session.owner,
      sessionId: session.id,
    });
    try {
      const r = await session.close({ timeoutMs: this.callTimeout() });
      p.ok({ closed: r.closed });
    } catch (err) {
      p.info(err); // unavailable: it lapses by itself
    }
  }

  /**
   * The client's own view of holding the lock. Opens at the acknowledged acquire; closes when the handle
   * leaves ACTIVE, or at its conservative local lease deadline if that came first (a LOST event is
   * delivered by a timer that may fire late; the deadline is what the handle enforces synchronously).
   * The deadline is read through remainingMs() AFTER taking our own timestamp, so it is never overestimated.
   */
  private track(op: Op, handle: LockHandle, session: LockSession | null = null): Held {
    const t0 = this.now;
    // (A session hold's handle reports its session's time left.)
    let deadlineMs = t0 + handle.remainingMs();
    let lastConfirmMs = t0;
    op.window = { startMs: t0, endMs: null, endedBy: null };
    const closeWindow = (atMs: number, endedBy: 'released' | 'lost' | 'deadline') => {
      if (op.window!.endMs !== null) return;
      op.window!.endMs = Math.min(atMs, deadlineMs);
      op.window!.endedBy = atMs >= deadlineMs ? 'deadline' : endedBy;
      session?.off('renewed', onSessionRenewed);
    };
    const onSessionRenewed = () => {
      deadlineMs = this.now + session!.remainingMs();
    };
    session?.on('renewed', onSessionRenewed);
    const margin = Math.ceil(handle.ttlMs * 0.02);
    handle.on('renewed', (ev: RenewedEvent) => {
      const t = this.now;
      const newDeadline = t + handle.remainingMs();
      // The renew was sent at (deadline - granted ttl + margin), and after the previous confirmation.
      const granted = ev.ttlMs > 0 ? Math.min(ev.ttlMs, handle.ttlMs) : handle.ttlMs;
      const sentAt = Math.min(t, Math.max(lastConfirmMs, newDeadline - granted + margin));
      this.o.recorder.record({
        process: this.id,
        type: 'renew',
        key: handle.key,
        via: 'auto',
        owner: handle.owner,
        token: handle.token,
        ttlMs: handle.ttlMs,
        invokeMs: sentAt,
        completeMs: t,
        outcome: 'ok',
      });
      deadlineMs = newDeadline;
      lastConfirmMs = t;
    });
    handle.on('lost', (err: LockLostError) => {
      const t = this.now;
      closeWindow(t, 'lost');
      if (SERVER_REASONS.has(err.reason)) {
        // A renew the server refused; sent some time after the last confirmation.
        this.o.recorder.record({
          process: this.id,
          type: 'renew',
          key: handle.key,
          via: 'auto',
          owner: handle.owner,
          token: handle.token,
          ttlMs: handle.ttlMs,
          invokeMs: lastConfirmMs,
          completeMs: t,
          outcome: 'fail',
          reason: err.reason,
        });
      }
    });
    return { handle, session, acquire: op, closeWindow };
  }

  private async release(held: Held): Promise<void> {
    const h = held.handle;
    held.closeWindow(this.now, 'released'); // the handle leaves ACTIVE inside release(), synchronously
    const p = this.o.recorder.invoke({ process: this.id, type: 'release', key: h.key, via: 'handle', owner: h.owner, token: h.token });
    try {
      const r = await h.release({ timeoutMs: this.callTimeout() });
      if (r.outcome === 'released') p.ok();
      else p.fail({ reason: r.reason });
    } catch (err) {
      this.unknown(p, err);
    }
  }

  // ------------------------------------------------------------------ the fenced resource

  /** A legitimate write through the handle; false if the handle is no longer ACTIVE (nothing written). */
  private async write(h: LockHandle, key: string): Promise<boolean> {
    if (!h.isActive()) return false;
    const p = this.o.recorder.invoke({
      process: this.id,
      type: 'write',
      key,
      via: 'handle',
      owner: h.owner,
      token: h.token,
      activeAtInvoke: true,
    });
    try {
      const r = await writeWithLock(h, this.o.resource.store, key, { process: this.id, token: h.token.toString(), seq: ++this.writeSeq });
      if (r.accepted) p.ok({ resourceLastToken: r.lastToken });
      else p.fail({ resourceLastToken: r.lastToken, reason: 'STALE' });
      return true;
    } catch (err) {
      // isActive() was true a moment ago and nothing yielded in between: this would be a client bug.
      p.info(err);
      if (err instanceof LockLostError || err instanceof LockReleasedError)
        this.unexpected.push(`${this.id}: writeWithLock refused right after isActive(): ${err.message}`);
      else throw err;
      return false;
    }
  }

  private async zombieWrite(key: string, token: bigint): Promise<void> {
    const p = this.o.recorder.invoke({ process: this.id, type: 'write', key, via: 'zombie', token, activeAtInvoke: false });
    const r = await this.o.resource.store.write(key, token, { process: this.id, token: token.toString(), seq: ++this.writeSeq });
    if (r.accepted) p.ok({ resourceLastToken: r.lastToken });
    else p.fail({ resourceLastToken: r.lastToken, reason: 'STALE' });
  }

  // ------------------------------------------------------------------ Get and raw calls

  private async get(key: string): Promise<void> {
    const p = this.o.recorder.invoke({ process: this.id, type: 'get', key, via: 'handle' });
    try {
      const info = await this.client.get(key, { timeoutMs: this.callTimeout() });
      p.ok({ held: info.held, getOwner: info.owner, getToken: info.token, lastToken: info.lastToken, getSessionId: info.sessionId });
    } catch (err) {
      this.unknown(p, err);
    }
  }

  private async rawRenew(key: string, owner: string, token: bigint, ttlMs: number, via: 'raw' | 'zombie'): Promise<void> {
    const p = this.o.recorder.invoke({ process: this.id, type: 'renew', key, via, owner, token, ttlMs });
    try {
      const res = await this.raw.call<RenewResponse>(
        'Renew',
        { key, owner, token: token.toString(), ttl_ms: String(ttlMs), request_id: newRequestId() },
        Date.now() + this.callTimeout(),
      );
      if (res.renewed) p.ok();
      else p.fail({ reason: res.reason });
    } catch (err) {
      this.unknown(p, err);
    }
  }

  private async rawRelease(key: string, owner: string, token: bigint): Promise<void> {
    const p = this.o.recorder.invoke({ process: this.id, type: 'release', key, via: 'zombie', owner, token });
    try {
      const res = await this.raw.call<ReleaseResponse>(
        'Release',
        { key, owner, token: token.toString(), request_id: newRequestId() },
        Date.now() + this.callTimeout(),
      );
      if (res.released) p.ok();
      else p.fail({ reason: res.reason });
    } catch (err) {
      this.unknown(p, err);
    }
  }

  /** Timeouts and lost connections are unknown outcomes; anything else is recorded as unknown too, but flagged. */
  private unknown(p: PendingOp, err: unknown): void {
    p.info(err);
    const retryable =
      (err instanceof Error && err.name === 'UnavailableError') || (err instanceof RpcError && [1, 4, 8, 14].includes(err.code));
    if (!retryable)
      this.unexpected.push(
        `${this.id}: ${p.op.type} on ${p.op.key}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
      );
  }
}
