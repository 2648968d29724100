// Simulated lock clients (the behaviour; the harness's ClientDriver carries their requests, retries them
// with the same bytes — so the same request_id — across timeouts, lost responses and leader changes).
//
// Each client is one owner with its own drifting clock. It acquires a key (a few keys, contended), writes
// to the fenced resource while it trusts its lease, renews about every ttl/3, and now and then releases,
// re-acquires (a new token supersedes its old one), or abandons the lock (a crash: the lease must lapse).
// Like src/client, it trusts a lease only until (its clock when it SENT the acquire/renew) + a conservative
// share of the TTL, and it is LOST the moment that passes or a renew is refused; and, as src/client does, it
// stops trusting a hold when it sends a re-acquire of its key (the outcome may supersede it, known or not). Some clients are stallers:
// right after checking their lease they pause past the TTL, then write and renew with the old token as if
// nothing happened (a GC pause — fencing must refuse the write once a newer token wrote); LOST clients
// sometimes try to release or renew their old token (controlled release must refuse it).
//
// Half the clients hold through a session (session.ts): they open one, acquire under it, keep it (and
// so their hold) with RenewSession, and now and then close it or abandon it (it must lapse, and its hold
// with it). Such a client trusts its hold exactly as long as its session: from the send of the open/renew
// the server confirmed, for the conservative share of the session's TTL.
//
// Group clients (lock-clock.ts groupKeys) hold keys with many holds instead: a semaphore (limit 2-3) or a
// shared/exclusive key, naming the key's limit (now and then deliberately another one, or the other mode
// of their own hold: refused LIMIT_MISMATCH / HOLD_MODE_MISMATCH, which they take as a refusal).
//
// Half the time a client that wakes up just too late (LOST at the end of its trust window) wakes a little
// later still and ends its hold after all — a release, or a close of its session — rather than trying a
// renew: the entry, reaching the leader around the hold's deadline, ends it as its expiry would, into its
// lock-delay, once it has run out (issue 38; the oracle's `endsExpired`).
//
// Now and then a client that is about to ask for a new key acts as an operator instead: it revokes a hold
// (SPEC "Revoke": by key and token — one some client holds, the key's last one, or 0 for every hold),
// mutex and group keys alike. A revoked holder is not told: it goes on trusting and writing with its token
// until a renew is refused, so from the revoke's entry on its writes count as stale (the resource may
// refuse them once the next holder wrote) and its trust no longer counts in the exclusion checks.
//
// Real-time exclusion is checked here, in true time: whenever a client starts trusting a hold or writes
// while trusting it, the clients trusting a hold on that key at that instant fit the key (holds.ts): one
// for a mutex; at most `limit` for a semaphore; any number of shared holds or one exclusive for limit 1.
import type { LockCommand, LockResult } from '../../src/lock/index.js';
import { clientTrustMs, mutexKeys, type ClockModel, type LockProfile } from './lock-clock.js';
import type { SimFencedResource, WriteMode } from './lock-resource.js';
import type { ExhaustedAnswer } from './lock-server.js';
import type { SimRng } from './rng.js';

export interface ClientLease {
  key: string;
  token: bigint;
  ttlMs: number;
  /** Client-clock ms until which it trusts the lease. */
  trustUntilLocal: number;
  /** Held under this session (renewed by renewing the session). */
  sessionId?: number;
  /** The limit the grant named (1 for a mutex) and whether the hold is shared (holds.ts). */
  limit: number;
  shared: boolean;
  /** An entry revoked it (the client does not know): its trust and writes no longer count as a holder's. */
  revoked?: boolean;
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
  /** Group acquires refused as a whole (LIMIT_MISMATCH, HOLD_MODE_MISMATCH). */
  mismatches: number;
  /** Revokes sent (by key and token, by key alone), holds a client trusted that a revoke ended, and writes
   *  made with a revoked token (stale). */
  revokes: number;
  revokesAll: number;
  trustedRevoked: number;
  revokedWrites: number;
  /** Operations the client was answered RESOURCE_EXHAUSTED. */
  exhaustedAnswers: number;
  /** Holds ended late by a client that woke up LOST: a release of the lease, or a close of its session. */
  lateEndsSent: number;
  /** Refused acquires whose id it deliberately sent again with other terms (level 6), and how many of those
   *  came back REQUEST_ID_REUSED. */
  requestIdsMisused: number;
  requestIdsRefused: number;
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
  pausedWith: { key: string; token: bigint; limit: number; shared: boolean } | null = null;
  pending: PendingLockOp | null = null;
  /** Its own token superseded by a re-acquire: a confused client may still try to renew/release it. */
  superseded: { key: string; token: bigint } | null = null;
  /** A refused acquire whose request_id may be reused (a refusal is re-judged on retry), and the client
   *  clock at that request_id's FIRST send: a grant under it may date from then, so trust counts from it. */
  refused: { key: string; requestId: string; firstSendLocal: number; terms: string } | null = null;
  nextDelayMs: number | undefined = undefined;
  /** It chose to wake right at the end of its trust window (it will find itself LOST). */
  lateWake = false;
  /** ... and then to end its hold after all (a release, or a close of its session), not to renew it. */
  lateEnd = false;
  /** Granted long after its first send (retries): confirm with a renew before trusting it (src/client's
   *  LockHandle.start re-anchors the same way). */
  confirm = false;
  private seq = 0;

  constructor(
    readonly id: number,
    readonly ttlMs: number,
    readonly staller: boolean,
    /** Holds the profile's group keys (semaphores, shared/exclusive) rather than its mutex keys. */
    readonly groupClient = false,
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
  readonly stats: ClientStats = {
    honestWrites: 0,
    staleWrites: 0,
    pauses: 0,
    lost: 0,
    abandons: 0,
    staleReleases: 0,
    staleRenews: 0,
    reacquires: 0,
    supersededUses: 0,
    lateRenews: 0,
    mismatches: 0,
    revokes: 0,
    revokesAll: 0,
    trustedRevoked: 0,
    revokedWrites: 0,
    exhaustedAnswers: 0,
    lateEndsSent: 0,
    requestIdsMisused: 0,
    requestIdsRefused: 0,
  };
  /** `${key}#${token}` of every hold a revoke ended (a grant answered after its revoke is born revoked). */
  private readonly revokedTokens = new Set<string>();
  violation: string | null = null;
  /** Whether semaphores and shared holds can be asked for (the cluster level; set by the workload). */
  groupsReady: () => boolean = () => true;
  /** Whether the cluster checks an acquire's terms against its request id (level 6; set by the workload). */
  termsChecked: () => boolean = () => false;

  constructor(
    readonly profile: LockProfile,
    private readonly rng: SimRng,
    private readonly clock: () => ClockModel,
    private readonly resource: SimFencedResource,
    private readonly trace: (tag: string, detail: string) => void,
    /** The operators' own stream (whether to revoke, what): draws from it leave every other pick as it was. */
    private readonly revokeRng: SimRng | null = null,
    /** Whether a client that woke up too late ends its hold after all: its own stream too. */
    private readonly lateRng: SimRng | null = null,
  ) {
    for (let i = 0; i < profile.clients; i++) {
      const group = profile.groupKeys.length > 0 && i >= profile.clients - profile.groupClients;
      this.clients.push(new SimLockClient(i, rng.pick(profile.ttlChoicesMs), rng.chance(profile.stallerChance), group));
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

  /** Does client c trust a hold at true time t that it really has (not revoked behind its back)? */
  private holdsTrusted(c: SimLockClient, t: number): boolean {
    return this.trusts(c, t) && c.held!.revoked !== true;
  }

  /** The log revoked `tokens` of `key` (judged once, in the revoking entry): their holders are not told. */
  revoked(key: string, tokens: readonly bigint[], t: number): void {
    for (const token of tokens) {
      this.revokedTokens.add(`${key}#${token}`);
      for (const c of this.clients) {
        if (c.held === null || c.held.key !== key || c.held.token !== token || c.held.revoked === true) continue;
        c.held.revoked = true;
        if (this.trusts(c, t)) this.stats.trustedRevoked++;
        this.trace(`lock ${c.owner}`, `its hold ${key}#${token} was revoked (it is not told)`);
      }
    }
  }

  /** Below cluster level 6 a late copy of `owner`'s old request was granted `token` of `key` afresh: the
   *  owner's other hold of the key (superseded) is ended behind its client's back, as a revoke would. */
  supersededBehind(owner: string, key: string, token: bigint, t: number): void {
    for (const c of this.clients) {
      if (c.owner !== owner || c.held === null || c.held.key !== key || c.held.token === token || c.held.revoked === true) continue;
      c.held.revoked = true;
      this.revokedTokens.add(`${key}#${c.held.token}`);
      if (this.trusts(c, t)) this.stats.trustedRevoked++;
      this.trace(`lock ${c.owner}`, `its hold ${key}#${c.held.token} was superseded by a late copy of an old request (it is not told)`);
    }
  }

  /** The next command of client c at true time t (its previous operation has completed). */
  nextCommand(c: SimLockClient, opId: number, t: number): LockCommand {
    const r = this.rng;
    let command: LockCommand;
    if (c.confirm && c.held !== null) {
      c.confirm = false;
      command = this.renew(c, c.held.key, c.held.token, c.held.sessionId);
    } else if (
      c.usesSessions &&
      c.held === null &&
      c.pausedWith === null &&
      (c.session === null || this.clock().clientReading(c.id, t) >= c.session.trustUntilLocal)
    ) {
      // No session it can trust: open one (a run-out one is left to lapse).
      if (c.lost !== null && c.lost.sessionId !== undefined && r.chance(0.3)) {
        // A LOST client's stale renew of its old session: refused, or harmless if the session still lives.
        this.stats.staleRenews++;
        const sessionId = c.lost.sessionId;
        c.lost = null;
        command = { type: 'renewSession', timeMs: 0, sessionId, owner: c.owner };
      } else {
        c.session = null;
        command = this.openSession(c);
      }
    } else if (c.pausedWith !== null) {
      // Back from the pause: write and renew as if no time had passed.
      const p = c.pausedWith;
      c.pausedWith = null;
      const stillTrusted = this.holdsTrusted(c, t) && c.held!.token === p.token;
      this.write(c, p, t, stillTrusted);
      command = this.renew(c, p.key, p.token, c.held?.token === p.token ? c.held.sessionId : undefined);
    } else if (c.held !== null && this.trusts(c, t)) {
      const h = c.held;
      // A revoked hold's holder writes as before (it does not know): a stale write from the revoke on.
      this.write(c, h, t, h.revoked !== true);
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
        // As src/client does: a re-acquire may supersede the hold from the moment it is sent (whatever comes
        // back, or if nothing does), so the hold is no longer trusted from the send.
        h.trustUntilLocal = Math.min(h.trustUntilLocal, this.clock().clientReading(c.id, t));
        command = this.acquire(c, h.key, false);
      } else if (x < 0.29) {
        this.stats.abandons++;
        this.trace(`lock ${c.owner}`, `abandons ${h.key}#${h.token} (the lease must lapse by itself)`);
        c.held = null;
        c.session = null; // its session too: it lapses, and ends the hold
        command = this.acquire(c, c.groupClient ? this.pickKey(c) : r.pick(mutexKeys(this.profile)), false);
      } else {
        command = this.renew(c, h.key, h.token, h.sessionId);
      }
    } else {
      if (c.held !== null) this.markLost(c, t, 'its deadline passed');
      const old = c.lost;
      const late = c.lateWake;
      const lateEnd = c.lateEnd;
      c.lateWake = false;
      c.lateEnd = false;
      if (old !== null && late && lateEnd) {
        // Woke up just too late: ends its hold after all (its session, for a hold under one).
        this.stats.lateEndsSent++;
        c.lost = null;
        if (old.sessionId !== undefined) {
          c.session = null;
          command = { type: 'closeSession', timeMs: 0, sessionId: old.sessionId, owner: c.owner };
        } else {
          command = { type: 'release', timeMs: 0, key: old.key, owner: c.owner, token: old.token, requestId: c.newRequestId() };
        }
      } else if (old !== null && old.sessionId !== undefined) {
        // A session client's lost hold: a stale release of it now and then; its session is gone for it.
        c.lost = null;
        c.session = null;
        if (r.chance(0.3)) {
          this.stats.staleReleases++;
          command = { type: 'release', timeMs: 0, key: old.key, owner: c.owner, token: old.token, requestId: c.newRequestId() };
        } else {
          command = this.openSession(c);
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
        const revoke = this.revokeRng !== null && this.revokeRng.chance(this.profile.revokeChance) ? this.revoke(this.revokeRng) : null;
        if (revoke !== null) {
          command = revoke;
        } else {
          const reuse = c.refused !== null && r.chance(0.5);
          command = this.acquire(c, reuse ? c.refused!.key : this.pickKey(c), reuse);
        }
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
    const res = result as LockResult | ExhaustedAnswer | undefined;
    if (res === undefined || res === null || typeof res !== 'object')
      return this.fail(`${c.owner}: ${p.command.type} acknowledged without a lock result`);
    if (res.type === 'exhausted') {
      // RESOURCE_EXHAUSTED (a leader's limit, lock-clock.ts `limits`): nothing was proposed; whatever it holds
      // is as before. It backs off and picks its next move afresh.
      this.stats.exhaustedAnswers++;
      c.nextDelayMs = this.rng.exp(c.ttlMs / 3);
      return;
    }
    const cmd = p.command;
    if (
      res.type === 'error' &&
      cmd.type === 'acquire' &&
      c.groupClient &&
      (res.code === 'LIMIT_MISMATCH' || res.code === 'HOLD_MODE_MISMATCH')
    ) {
      // Its deliberate mismatch (or the key taken meanwhile by one): refused as a whole, its hold (if any)
      // untouched. The oracle judged the entry.
      this.stats.mismatches++;
      c.nextDelayMs = this.rng.exp(c.ttlMs / 3);
      return;
    }
    if (res.type === 'error' && cmd.type === 'acquire' && res.code === 'REQUEST_ID_REUSED' && c.refused?.requestId === cmd.requestId) {
      // Its deliberate reuse of a refused request's id with other terms: refused as a whole, nothing held
      // by it (the oracle judged the entry). That id is spent.
      this.stats.requestIdsRefused++;
      c.refused = null;
      c.nextDelayMs = this.rng.exp(c.ttlMs / 3);
      return;
    }
    if (res.type === 'error') return this.fail(`${c.owner}: ${p.command.type} failed as a whole: ${res.code} ${res.message}`);
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
          if (this.holdsTrusted(c, t)) {
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
        if (c.held !== null && c.held.key === cmd.key && c.held.token !== res.token && this.rng.chance(0.7))
          c.superseded = { key: cmd.key, token: c.held.token };
        // Under a session the hold lives exactly as long as the session: trusted as long as it is.
        const session = (cmd.sessionId ?? 0) > 0 && c.session !== null && c.session.id === cmd.sessionId ? c.session : null;
        if ((cmd.sessionId ?? 0) > 0 && session === null) return; // granted under a session it no longer has
        const mode = {
          limit: cmd.limit ?? 1,
          shared: cmd.shared === true,
          ...(this.revokedTokens.has(`${cmd.key}#${res.token}`) ? { revoked: true } : {}),
        };
        c.held =
          session !== null
            ? { key: cmd.key, token: res.token, ttlMs: c.ttlMs, trustUntilLocal: session.trustUntilLocal, sessionId: session.id, ...mode }
            : {
                key: cmd.key,
                token: res.token,
                ttlMs: cmd.ttlMs,
                trustUntilLocal: this.anchor(c, p, t) + this.trustMs(cmd.ttlMs),
                ...mode,
              };
        this.trace(
          `lock ${c.owner}`,
          `acquired ${cmd.key}#${res.token}${res.replayed ? ' (replayed)' : ''} trust until true ${this.trustEndTrue(c).toFixed(2)}`,
        );
        if (session === null && this.clock().clientReading(c.id, t) - p.invokeLocal >= cmd.ttlMs / 3) {
          c.confirm = true; // a late grant: renew at once to re-anchor
          c.nextDelayMs = 0;
        }
        if (this.holdsTrusted(c, t)) {
          this.checkExclusive(c, t, 'starts trusting its new lease');
          this.maybePause(c);
        }
      } else {
        if (c.held !== null && c.held.key === cmd.key) this.markLost(c, t, `its re-acquire was refused (holder ${res.holderOwner})`);
        c.refused = { key: cmd.key, requestId: cmd.requestId, firstSendLocal: p.invokeLocal, terms: termsOf(cmd) };
        c.nextDelayMs = Math.min(this.rng.exp(c.ttlMs / 3), Math.max(1, res.holderTtlMs));
      }
      return;
    }
    if (cmd.type === 'renew' && res.type === 'renew') {
      const mine = c.held !== null && c.held.key === cmd.key && c.held.token === cmd.token;
      if (!mine) return; // a LOST client's stale renew: LOST is final for that lease whatever the answer
      if (res.renewed) {
        c.held!.trustUntilLocal = Math.max(c.held!.trustUntilLocal, this.anchor(c, p, t) + this.trustMs(cmd.ttlMs));
        if (this.holdsTrusted(c, t)) {
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
        c.lateEnd = this.lateRng !== null && this.lateRng.chance(0.5);
        // One that will end its hold after all wakes a little later still, so its entry may land just past
        // the hold's deadline (the server's is later than the client's trust) and before the leader's expire.
        const later = c.lateEnd ? this.lateRng!.float() * 0.06 * c.held.ttlMs : 0;
        const endTrue = this.trustEndTrue(c);
        return Math.max(0, endTrue - now) + this.rng.float() * 4 + later;
      }
      return (c.held.ttlMs / 3) * (0.6 + 0.5 * this.rng.float()); // renew early
    }
    return this.rng.exp(8);
  }

  /** The key a read (Get) by client c looks at. */
  readKey(c: SimLockClient): string {
    return c.held?.key ?? this.pickKey(c);
  }

  // ------------------------------------------------------------------ helpers

  /** Client clock at the start of the trust window a grant/renew opens: its send (or, planted bug, the answer). */
  private anchor(c: SimLockClient, p: PendingLockOp, t: number): number {
    return this.profile.clientTrustFrom === 'ack' ? this.clock().clientReading(c.id, t) : p.invokeLocal;
  }

  private acquire(c: SimLockClient, key: string, reuseRefused: boolean): LockCommand {
    const command: Extract<LockCommand, { type: 'acquire' }> =
      c.usesSessions && c.session !== null
        ? { type: 'acquire', timeMs: 0, key, owner: c.owner, ttlMs: 0, requestId: '', sessionId: c.session.id }
        : { type: 'acquire', timeMs: 0, key, owner: c.owner, ttlMs: c.ttlMs, requestId: '' };
    this.setTerms(c, command);
    // A request id names one request: a retry of a refused acquire carries it again only with the same terms
    // (session, limit, mode), as src/client's retries do. Once the cluster checks terms (level 6), now and
    // then deliberately with other ones: it must be refused as a whole (REQUEST_ID_REUSED), never answered
    // with the first request's outcome (a grant under another session or mode).
    const refused = reuseRefused && c.refused !== null && c.refused.key === key ? c.refused : null;
    const misuse = refused !== null && refused.terms !== termsOf(command) && this.termsChecked() && this.rng.chance(0.3);
    if (misuse) this.stats.requestIdsMisused++;
    command.requestId = refused !== null && (misuse || refused.terms === termsOf(command)) ? refused.requestId : c.newRequestId();
    return command;
  }

  /** A group client's limit and mode for `command`'s key (a mutex key: nothing to add). */
  private setTerms(c: SimLockClient, command: Extract<LockCommand, { type: 'acquire' }>): void {
    const key = command.key;
    const spec = this.profile.groupKeys.find((g) => g.key === key);
    if (!c.groupClient || spec === undefined) return;
    // A key with many holds: its limit; for limit 1, shared or exclusive (a re-acquire keeps its mode: it
    // supersedes its own hold). Now and then deliberately the wrong limit or the other mode.
    const own = c.held?.key === key ? c.held : null;
    let limit = spec.limit;
    let shared = own !== null ? own.shared : spec.limit === 1 && this.rng.chance(0.6);
    if (this.rng.chance(this.profile.groupMismatchChance)) {
      if (own !== null && spec.limit === 1 && this.rng.chance(0.5)) shared = !shared;
      else limit = spec.limit === 1 ? 2 : spec.limit + 1;
    }
    if (limit > 1) command.limit = limit;
    if (shared && limit === 1) command.shared = true;
  }

  /** An OpenSession; a third of them give their holds a lock-delay (OpenSession.lock_delay_ms), drawn from
   *  the late-end stream so every other pick stays as it was. */
  private openSession(c: SimLockClient): LockCommand {
    const lockDelayMs = this.lateRng !== null && this.lateRng.chance(1 / 3) ? Math.round(c.ttlMs * (0.5 + this.lateRng.float())) : 0;
    return { type: 'openSession', timeMs: 0, owner: c.owner, ttlMs: c.ttlMs, requestId: c.newRequestId(), lockDelayMs };
  }

  /** A renew of the hold — or, for a hold under a session, of its session (a session hold never renews
   *  alone). */
  private renew(c: SimLockClient, key: string, token: bigint, sessionId?: number): LockCommand {
    if (sessionId !== undefined) return { type: 'renewSession', timeMs: 0, sessionId, owner: c.owner };
    return { type: 'renew', timeMs: 0, key, owner: c.owner, token, ttlMs: c.ttlMs, requestId: c.newRequestId() };
  }

  /** An operator's revoke (SPEC "Revoke"): mostly of a hold some client has (as Get or List would show it),
   *  by its token or by key alone (token 0: every hold of the key); else of any key of the run, by the last
   *  token the resource saw there (maybe long gone) or by key. Retried unchanged like any call, with its
   *  request id: from cluster level 5 a retry answers its first outcome and ends nothing new (below it, a
   *  retry of a revoke by key alone may end a hold granted after its first copy applied). */
  private revoke(rng: SimRng): LockCommand {
    this.stats.revokes++;
    const held = this.clients.filter((o) => o.held !== null).map((o) => o.held!);
    let key: string;
    let token: bigint;
    if (held.length > 0 && rng.chance(0.75)) {
      const h = rng.pick(held);
      key = h.key;
      token = rng.chance(0.7) ? h.token : 0n;
    } else {
      key = rng.pick(this.profile.keys);
      token = rng.chance(0.5) ? this.resource.last(key) : 0n;
    }
    if (token === 0n) this.stats.revokesAll++;
    return { type: 'revoke', timeMs: 0, key, token, owner: 'operator', requestId: `op-r${this.stats.revokes}` };
  }

  private pickKey(c: SimLockClient): string {
    const keys = mutexKeys(this.profile);
    if (c.groupClient && (keys.length === 0 || this.groupsReady())) return this.rng.pick(this.profile.groupKeys).key;
    // The first key is hot: most clients fight over it.
    return this.rng.chance(0.6) ? keys[0]! : this.rng.pick(keys);
  }

  private maybePause(c: SimLockClient): void {
    if (!c.staller || c.held === null || c.confirm || !this.rng.chance(0.35)) return;
    this.stats.pauses++;
    c.pausedWith = { key: c.held.key, token: c.held.token, limit: c.held.limit, shared: c.held.shared };
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

  /** A write with the hold `h` (the one it trusts, or the one it checked before a pause). */
  private write(c: SimLockClient, h: { key: string; token: bigint; limit: number; shared: boolean }, t: number, honest: boolean): void {
    const { key, token } = h;
    if (honest) {
      this.stats.honestWrites++;
      this.checkExclusive(c, t, `writes ${key} with token ${token}`);
    } else {
      this.stats.staleWrites++;
      if (this.revokedTokens.has(`${key}#${token}`)) this.stats.revokedWrites++;
    }
    const mode: WriteMode = h.limit >= 2 ? 'slot' : h.shared ? 'shared' : 'exclusive';
    const accepted = this.resource.write(key, token, c.owner, t, honest, mode);
    this.trace(
      `lock ${c.owner}`,
      `write ${key}#${token}${honest ? '' : ' (stale, after a pause)'} ${accepted ? 'accepted' : 'REFUSED by the resource'}`,
    );
  }

  /** Exclusion in true time: the clients trusting a hold on c's key right now fit it. A mutex or an
   *  exclusive hold: nobody else (mutual exclusion); a shared hold: no exclusive one (shared with exclusive);
   *  a semaphore: at most its limit, counted (semaphore limit). All trusted holds of a key were granted
   *  under one limit: a key keeps its limit while anyone holds it, and a trust window ends before its hold. */
  private checkExclusive(c: SimLockClient, t: number, what: string): void {
    const h = c.held!;
    const others = this.clients.filter((o) => o !== c && o.held !== null && o.held.key === h.key && this.holdsTrusted(o, t));
    const mine = `${c.owner} ${what} (token ${h.token}${h.shared ? ', shared' : ''}, trusted until true ${this.trustEndTrue(c).toFixed(3)})`;
    const list = () =>
      others
        .map(
          (o) =>
            `${o.owner} (token ${o.held!.token}${o.held!.shared ? ', shared' : ''}, limit ${o.held!.limit}, until true ${this.trustEndTrue(o).toFixed(3)})`,
        )
        .join(', ');
    if (h.limit >= 2) {
      if (others.length + 1 > h.limit)
        this.fail(
          `semaphore limit: at true t=${t.toFixed(3)} ${mine} as the ${others.length + 1}th holder of ${h.key} (limit ${h.limit}), with ${list()}`,
        );
      return;
    }
    const clash = others.filter((o) => !h.shared || !o.held!.shared);
    if (clash.length === 0) return;
    const o = clash[0]!;
    const rule = h.shared || o.held!.shared ? 'shared with exclusive' : 'mutual exclusion';
    this.fail(
      `${rule}: at true t=${t.toFixed(3)} ${mine} while ${o.owner} trusts its hold on ${h.key} (token ${o.held!.token}${o.held!.shared ? ', shared' : ''}, until true ${this.trustEndTrue(o).toFixed(3)})`,
    );
  }

  private trustEndTrue(c: SimLockClient): number {
    return c.held === null ? NaN : this.clock().clientTrueTime(c.id, c.held.trustUntilLocal);
  }

  private fail(message: string): void {
    if (this.violation === null) this.violation = message;
  }
}

/** An acquire's terms as the client compares them: session, limit, mode. */
function termsOf(cmd: Extract<LockCommand, { type: 'acquire' }>): string {
  return `${cmd.sessionId ?? 0}|${Math.max(cmd.limit ?? 1, 1)}|${cmd.shared === true ? 'shared' : 'exclusive'}`;
}
