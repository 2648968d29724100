// Simulated lock clients (the behaviour; the harness's ClientDriver carries their requests, retries them
// with the same bytes — so the same request_id — across timeouts, lost responses and leader changes).
//
// Each client is one owner with its own drifting clock. It acquires a key (a few keys, contended), writes
// to the fenced resource while it trusts its lease, renews about every ttl/3, and now and then releases,
// re-acquires (a new token supersedes its old one), or abandons the lock (a crash: the lease must lapse).
// Like src/client, it trusts a lease only until (its clock when it SENT the acquire/renew) + a conservative
// share of the TTL, and it is LOST the moment that passes or a renew is refused. Some clients are stallers:
// right after checking their lease they pause past the TTL, then write and renew with the old token as if
// nothing happened (a GC pause — fencing must refuse the write once a newer token wrote); LOST clients
// sometimes try to release or renew their old token (controlled release must refuse it).
//
// Half the clients hold through a session (session.ts): they open one, acquire under it, keep it (and
// so their hold) with RenewSession, and now and then close it or abandon it (it must lapse, and its hold
// with it). Such a client trusts its hold exactly as long as its session: from the send of the open/renew
// the server confirmed, for the conservative share of the session's TTL.
//
// Real-time mutual exclusion is checked here, in true time: whenever a client starts trusting a lease or
// writes while trusting it, no other client may trust a lease on the same key at that instant.
import type { LockCommand, LockResult } from '../../src/lock/index.js';
import { clientTrustMs, type ClockModel, type LockProfile } from './lock-clock.js';
import type { SimFencedResource } from './lock-resource.js';
import type { SimRng } from './rng.js';

export interface ClientLease {
  key: string;
  token: bigint;
  ttlMs: number;
  /** Client-clock ms until which it trusts the lease. */
  trustUntilLocal: number;
  /** Held under this session (renewed by renewing the session). */
  sessionId?: number;
}

export interface PendingLockOp {
  opId: number;
  command: LockCommand;
  /** Client-clock ms at the send (the start of the trust window a grant/renew opens). */
  invokeLocal: number;
  invokeTrue: number;
}

export interface ClientStats {
  honestWrites: number;
  staleWrites: number;
  pauses: number;
  lost: number;
  abandons: number;
  staleReleases: number;
  staleRenews: number;
  reacquires: number;
  supersededUses: number;
  lateRenews: number;
}

export class SimLockClient {
  readonly owner: string;
  held: ClientLease | null = null;
  /** The lease it lost (deadline passed or renew refused): its old token (and session), for stale
   *  release/renew tries. */
  lost: { key: string; token: bigint; sessionId?: number } | null = null;
  /** Holds through a session rather than a lease of each hold's own. */
  readonly usesSessions: boolean;
  /** Its open session as it trusts it (client-clock ms), or null. */
  session: { id: number; trustUntilLocal: number } | null = null;
  /** It checked its lease, then paused: the next operation writes with this token without re-checking. */
  pausedWith: { key: string; token: bigint } | null = null;
  pending: PendingLockOp | null = null;
  /** Its own token superseded by a re-acquire: a confused client may still try to renew/release it. */
  superseded: { key: string; token: bigint } | null = null;
  /** A refused acquire whose request_id may be reused (a refusal is re-judged on retry), and the client
   *  clock at that request_id's FIRST send: a grant under it may date from then, so trust counts from it. */
  refused: { key: string; requestId: string; firstSendLocal: number } | null = null;
  nextDelayMs: number | undefined = undefined;
  /** It chose to wake right at the end of its trust window (it will find itself LOST). */
  lateWake = false;
  /** Granted long after its first send (retries): confirm with a renew before trusting it (src/client's
   *  LockHandle.start re-anchors the same way). */
  confirm = false;
  private seq = 0;

  constructor(
    readonly id: number,
    readonly ttlMs: number,
    readonly staller: boolean,
  ) {
    this.owner = `owner-${id}`;
    // A fixed share, not drawn: a draw would reshuffle every seed's other picks.
    this.usesSessions = id % 2 === 1;
  }

  newRequestId(): string {
    return `c${this.id}r${++this.seq}`;
  }
}

export class LockClients {
  readonly clients: SimLockClient[] = [];
  readonly stats: ClientStats = { honestWrites: 0, staleWrites: 0, pauses: 0, lost: 0, abandons: 0, staleReleases: 0, staleRenews: 0, reacquires: 0, supersededUses: 0, lateRenews: 0 };
  violation: string | null = null;

  constructor(
    readonly profile: LockProfile,
    private readonly rng: SimRng,
    private readonly clock: () => ClockModel,
    private readonly resource: SimFencedResource,
    private readonly trace: (tag: string, detail: string) => void,
  ) {
    for (let i = 0; i < profile.clients; i++) {
      this.clients.push(new SimLockClient(i, rng.pick(profile.ttlChoicesMs), rng.chance(profile.stallerChance)));
    }
  }

  /** The clients' own random stream, for the workload's per-call choices (blocking, giving up). */
  rngChance(p: number): boolean {
    return this.rng.chance(p);
  }

  rngFloat(): number {
    return this.rng.float();
  }

  trustMs(ttlMs: number): number {
    return clientTrustMs(ttlMs, this.profile.clientSlackMs, this.profile.maxDrift);
  }

  /** Does client c trust its lease at true time t? */
  trusts(c: SimLockClient, t: number): boolean {
    return c.held !== null && this.clock().clientReading(c.id, t) < c.held.trustUntilLocal;
  }

  /** The next command of client c at true time t (its previous operation has completed). */
  nextCommand(c: SimLockClient, opId: number, t: number): LockCommand {
    const r = this.rng;
    let command: LockCommand;
    if (c.confirm && c.held !== null) {
      c.confirm = false;
      command = this.renew(c, c.held.key, c.held.token, c.held.sessionId);
    } else if (c.usesSessions && c.held === null && c.pausedWith === null && (c.session === null || this.clock().clientReading(c.id, t) >= c.session.trustUntilLocal)) {
      // No session it can trust: open one (a run-out one is left to lapse).
      if (c.lost !== null && c.lost.sessionId !== undefined && r.chance(0.3)) {
        // A LOST client's stale renew of its old session: refused, or harmless if the session still lives.
        this.stats.staleRenews++;
        const sessionId = c.lost.sessionId;
        c.lost = null;
        command = { type: 'renewSession', timeMs: 0, sessionId, owner: c.owner };
      } else {
        c.session = null;
        command = { type: 'openSession', timeMs: 0, owner: c.owner, ttlMs: c.ttlMs, requestId: c.newRequestId(), lockDelayMs: 0 };
      }
    } else if (c.pausedWith !== null) {
      // Back from the pause: write and renew as if no time had passed.
      const p = c.pausedWith;
      c.pausedWith = null;
      const stillTrusted = this.trusts(c, t) && c.held!.token === p.token;
      this.write(c, p.key, p.token, t, stillTrusted);
      command = this.renew(c, p.key, p.token, c.held?.token === p.token ? c.held.sessionId : undefined);
    } else if (c.held !== null && this.trusts(c, t)) {
      const h = c.held;
      this.write(c, h.key, h.token, t, true);
      const x = r.float();
      const old = c.superseded;
      c.superseded = null;
      if (old !== null && old.key === h.key) {
        // The token its own re-acquire superseded: renew/release with it must be refused (WRONG_TOKEN).
        this.stats.supersededUses++;
        command = r.chance(0.5)
          ? { type: 'release', timeMs: 0, key: old.key, owner: c.owner, token: old.token, requestId: c.newRequestId() }
          : this.renew(c, old.key, old.token);
      } else if (x < 0.15) {
        c.held = null; // RELEASED from the moment it sends the release
        command = { type: 'release', timeMs: 0, key: h.key, owner: c.owner, token: h.token, requestId: c.newRequestId() };
      } else if (c.session !== null && h.sessionId === c.session.id && x < 0.19) {
        // Closing the session releases its hold (RELEASED from the send, as a release).
        const sessionId = c.session.id;
        c.held = null;
        c.session = null;
        command = { type: 'closeSession', timeMs: 0, sessionId, owner: c.owner };
      } else if (x < 0.25) {
        this.stats.reacquires++;
        command = this.acquire(c, h.key, false);
      } else if (x < 0.29) {
        this.stats.abandons++;
        this.trace(`lock ${c.owner}`, `abandons ${h.key}#${h.token} (the lease must lapse by itself)`);
        c.held = null;
        c.session = null; // its session too: it lapses, and ends the hold
        command = this.acquire(c, r.pick(this.profile.keys), false);
      } else {
        command = this.renew(c, h.key, h.token, h.sessionId);
      }
    } else {
      if (c.held !== null) this.markLost(c, t, 'its deadline passed');
      const old = c.lost;
      const late = c.lateWake;
      c.lateWake = false;
      if (old !== null && old.sessionId !== undefined) {
        // A session client's lost hold: a stale release of it now and then; its session is gone for it.
        c.lost = null;
        c.session = null;
        if (r.chance(0.3)) {
          this.stats.staleReleases++;
          command = { type: 'release', timeMs: 0, key: old.key, owner: c.owner, token: old.token, requestId: c.newRequestId() };
        } else {
          command = { type: 'openSession', timeMs: 0, owner: c.owner, ttlMs: c.ttlMs, requestId: c.newRequestId(), lockDelayMs: 0 };
        }
      } else if (old !== null && late && r.chance(0.8)) {
        // Woke up just too late: renews anyway; it reaches the leader near the lease's deadline.
        this.stats.staleRenews++;
        c.lost = null;
        command = this.renew(c, old.key, old.token);
      } else if (old !== null && r.chance(0.3)) {
        this.stats.staleReleases++;
        c.lost = null;
        command = { type: 'release', timeMs: 0, key: old.key, owner: c.owner, token: old.token, requestId: c.newRequestId() };
      } else if (old !== null && r.chance(0.4)) {
        this.stats.staleRenews++;
        c.lost = null;
        command = this.renew(c, old.key, old.token);
      } else {
        c.lost = null;
        const reuse = c.refused !== null && r.chance(0.5);
        command = this.acquire(c, reuse ? c.refused!.key : this.pickKey(), reuse);
      }
    }
    const nowLocal = this.clock().clientReading(c.id, t);
    const reused = command.type === 'acquire' && c.refused !== null && command.requestId === c.refused.requestId;
    c.pending = { opId, command, invokeLocal: reused ? c.refused!.firstSendLocal : nowLocal, invokeTrue: t };
    return command;
  }

  /** The outcome of client c's pending operation arrived at true time t. */
  completed(c: SimLockClient, opId: number, result: unknown, t: number): void {
    const p = c.pending;
    if (p === null || p.opId !== opId) return;
    c.pending = null;
    const res = result as LockResult | undefined;
    if (res === undefined || res === null || typeof res !== 'object') return this.fail(`${c.owner}: ${p.command.type} acknowledged without a lock result`);
    if (res.type === 'error') return this.fail(`${c.owner}: ${p.command.type} failed as a whole: ${res.code} ${res.message}`);
    const cmd = p.command;
    if (cmd.type === 'openSession' && res.type === 'openSession') {
      c.session = { id: Number(res.sessionId), trustUntilLocal: this.anchor(c, p, t) + this.trustMs(cmd.ttlMs) };
      c.nextDelayMs = 0;
      this.trace(`lock ${c.owner}`, `opened session ${res.sessionId}`);
      return;
    }
    if (cmd.type === 'renewSession' && res.type === 'renewSession') {
      const s = c.session;
      if (s === null || s.id !== cmd.sessionId) return; // a stale renew: LOST is final whatever the answer
      if (res.renewed) {
        s.trustUntilLocal = Math.max(s.trustUntilLocal, this.anchor(c, p, t) + this.trustMs(c.ttlMs));
        if (c.held !== null && c.held.sessionId === s.id) {
          c.held.trustUntilLocal = s.trustUntilLocal;
          if (this.trusts(c, t)) {
            this.checkExclusive(c, t, 'renewed its session');
            this.maybePause(c);
          }
        }
      } else {
        if (c.held !== null && c.held.sessionId === s.id) this.markLost(c, t, `its session's renew was refused ${res.reason}`);
        c.session = null;
      }
      return;
    }
    if (cmd.type === 'closeSession') return;
    if (cmd.type === 'acquire' && res.type === 'acquire') {
      if (res.acquired) {
        c.refused = null;
        if (c.held !== null && c.held.key === cmd.key && c.held.token !== res.token && this.rng.chance(0.7)) c.superseded = { key: cmd.key, token: c.held.token };
        // Under a session the hold lives exactly as long as the session: trusted as long as it is.
        const session = (cmd.sessionId ?? 0) > 0 && c.session !== null && c.session.id === cmd.sessionId ? c.session : null;
        if ((cmd.sessionId ?? 0) > 0 && session === null) return; // granted under a session it no longer has
        c.held =
          session !== null
            ? { key: cmd.key, token: res.token, ttlMs: c.ttlMs, trustUntilLocal: session.trustUntilLocal, sessionId: session.id }
            : { key: cmd.key, token: res.token, ttlMs: cmd.ttlMs, trustUntilLocal: this.anchor(c, p, t) + this.trustMs(cmd.ttlMs) };
        this.trace(`lock ${c.owner}`, `acquired ${cmd.key}#${res.token}${res.replayed ? ' (replayed)' : ''} trust until true ${this.trustEndTrue(c).toFixed(2)}`);
        if (session === null && this.clock().clientReading(c.id, t) - p.invokeLocal >= cmd.ttlMs / 3) {
          c.confirm = true; // a late grant: renew at once to re-anchor
          c.nextDelayMs = 0;
        }
        if (this.trusts(c, t)) {
          this.checkExclusive(c, t, 'starts trusting its new lease');
          this.maybePause(c);
        }
      } else {
        if (c.held !== null && c.held.key === cmd.key) this.markLost(c, t, `its re-acquire was refused (holder ${res.holderOwner})`);
        c.refused = { key: cmd.key, requestId: cmd.requestId, firstSendLocal: p.invokeLocal };
        c.nextDelayMs = Math.min(this.rng.exp(c.ttlMs / 3), Math.max(1, res.holderTtlMs));
      }
      return;
    }
    if (cmd.type === 'renew' && res.type === 'renew') {
      const mine = c.held !== null && c.held.key === cmd.key && c.held.token === cmd.token;
      if (!mine) return; // a LOST client's stale renew: LOST is final for that lease whatever the answer
      if (res.renewed) {
        c.held!.trustUntilLocal = Math.max(c.held!.trustUntilLocal, this.anchor(c, p, t) + this.trustMs(cmd.ttlMs));
        if (this.trusts(c, t)) {
          this.checkExclusive(c, t, 'renewed its lease');
          this.maybePause(c);
        }
      } else {
        this.markLost(c, t, `its renew was refused ${res.reason}`);
      }
    }
  }

  /** The run ends with this operation's outcome unknown. */
  unknown(c: SimLockClient, opId: number): void {
    if (c.pending !== null && c.pending.opId === opId) c.pending = null;
  }

  /** Virtual ms until client c's next operation. */
  nextDelay(c: SimLockClient, now: number): number {
    if (c.nextDelayMs !== undefined) {
      const d = c.nextDelayMs;
      c.nextDelayMs = undefined;
      return d;
    }
    if (c.held !== null) {
      if (this.rng.chance(this.profile.lateRenewChance)) {
        // Wake up right around the end of its trust window: it finds itself LOST and may still try a
        // renew (a stale renew), which then reaches the leader close to the lease's deadline.
        this.stats.lateRenews++;
        c.lateWake = true;
        const endTrue = this.trustEndTrue(c);
        return Math.max(0, endTrue - now) + this.rng.float() * 4;
      }
      return (c.held.ttlMs / 3) * (0.6 + 0.5 * this.rng.float()); // renew early
    }
    return this.rng.exp(8);
  }

  /** The key a read (Get) by client c looks at. */
  readKey(c: SimLockClient): string {
    return c.held?.key ?? this.pickKey();
  }

  // ------------------------------------------------------------------ helpers

  /** Client clock at the start of the trust window a grant/renew opens: its send (or, planted bug, the answer). */
  private anchor(c: SimLockClient, p: PendingLockOp, t: number): number {
    return this.profile.clientTrustFrom === 'ack' ? this.clock().clientReading(c.id, t) : p.invokeLocal;
  }

  private acquire(c: SimLockClient, key: string, reuseRefused: boolean): LockCommand {
    const requestId = reuseRefused && c.refused !== null && c.refused.key === key ? c.refused.requestId : c.newRequestId();
    if (c.usesSessions && c.session !== null) return { type: 'acquire', timeMs: 0, key, owner: c.owner, ttlMs: 0, requestId, sessionId: c.session.id };
    return { type: 'acquire', timeMs: 0, key, owner: c.owner, ttlMs: c.ttlMs, requestId };
  }

  /** A renew of the hold — or, for a hold under a session, of its session (a session hold never renews
   *  alone). */
  private renew(c: SimLockClient, key: string, token: bigint, sessionId?: number): LockCommand {
    if (sessionId !== undefined) return { type: 'renewSession', timeMs: 0, sessionId, owner: c.owner };
    return { type: 'renew', timeMs: 0, key, owner: c.owner, token, ttlMs: c.ttlMs, requestId: c.newRequestId() };
  }

  private pickKey(): string {
    const keys = this.profile.keys;
    // The first key is hot: most clients fight over it.
    return this.rng.chance(0.6) ? keys[0]! : this.rng.pick(keys);
  }

  private maybePause(c: SimLockClient): void {
    if (!c.staller || c.held === null || c.confirm || !this.rng.chance(0.35)) return;
    this.stats.pauses++;
    c.pausedWith = { key: c.held.key, token: c.held.token };
    c.nextDelayMs = c.held.ttlMs * (1.2 + 1.8 * this.rng.float());
    this.trace(`lock ${c.owner}`, `checked ${c.held.key}#${c.held.token}, now pauses ${c.nextDelayMs.toFixed(1)}ms (past its TTL)`);
  }

  private markLost(c: SimLockClient, t: number, why: string): void {
    const h = c.held!;
    this.stats.lost++;
    this.trace(`lock ${c.owner}`, `LOST ${h.key}#${h.token} at true ${t.toFixed(2)}: ${why}`);
    c.lost = h.sessionId !== undefined ? { key: h.key, token: h.token, sessionId: h.sessionId } : { key: h.key, token: h.token };
    c.held = null;
  }

  private write(c: SimLockClient, key: string, token: bigint, t: number, honest: boolean): void {
    if (honest) {
      this.stats.honestWrites++;
      this.checkExclusive(c, t, `writes ${key} with token ${token}`);
    } else {
      this.stats.staleWrites++;
    }
    const accepted = this.resource.write(key, token, c.owner, t, honest);
    this.trace(`lock ${c.owner}`, `write ${key}#${token}${honest ? '' : ' (stale, after a pause)'} ${accepted ? 'accepted' : 'REFUSED by the resource'}`);
  }

  /** Mutual exclusion in true time: nobody else trusts a lease on c's key right now. */
  private checkExclusive(c: SimLockClient, t: number, what: string): void {
    const h = c.held!;
    for (const o of this.clients) {
      if (o === c || o.held === null || o.held.key !== h.key || !this.trusts(o, t)) continue;
      this.fail(
        `mutual exclusion: at true t=${t.toFixed(3)} ${c.owner} ${what} (token ${h.token}, trusted until true ${this.trustEndTrue(c).toFixed(3)}) ` +
          `while ${o.owner} trusts its lease on ${h.key} (token ${o.held.token}, until true ${this.trustEndTrue(o).toFixed(3)})`,
      );
      return;
    }
  }

  private trustEndTrue(c: SimLockClient): number {
    return c.held === null ? NaN : this.clock().clientTrueTime(c.id, c.held.trustUntilLocal);
  }

  private fail(message: string): void {
    if (this.violation === null) this.violation = message;
  }
}
