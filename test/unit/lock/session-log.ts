// A seeded random log of entries with sessions, as a leader's clients and housekeeping would propose them,
// applied to a LockMachine with the session rules checked after every entry (machine-sessions-random.test.ts
// lists them). Shared with the applied store's record tests (store-records.test.ts).
import { encodeCommand, LockMachine } from '../../../src/lock/index.js';
import type { LockCommand, LockResult } from '../../../src/lock/index.js';
import { SimRng } from '../../sim/rng.js';

export const KEYS = Array.from({ length: 24 }, (_, i) => `k${i}`);
export const OWNERS = ['a', 'b', 'c', 'd'];
export const OPTIONS = { dedupWindowMs: 30_000, dedupMaxEntries: 500 };

export class SessionLog {
  private readonly rng: SimRng;
  term = 1;
  private clockMs = 1_000_000;
  private requests = 0;
  /** Sessions opened (ids) with their owners; some are closed or expire. */
  private readonly sessions: { id: number; owner: string }[] = [];
  violation: string | null = null;
  entries = 0;

  constructor(
    public machine: LockMachine,
    seed: number,
  ) {
    this.rng = new SimRng(seed);
  }

  private pick<T>(items: readonly T[]): T {
    return items[this.rng.int(items.length)]!;
  }

  /** The next command, as a leader's clients and housekeeping would propose it. */
  next(): { command: LockCommand; term: number } {
    const m = this.machine;
    const roll = this.rng.float();
    // A leader's clock: usually moving on, sometimes a new leader whose clock is behind or ahead.
    if (roll < 0.01) {
      this.term++;
      this.clockMs += this.rng.int(2) === 0 ? -this.rng.int(3000) : this.rng.int(3000);
      return { command: { type: 'termStart', timeMs: Math.max(0, this.clockMs) }, term: this.term };
    }
    this.clockMs += this.rng.int(60);
    const timeMs = Math.max(0, this.clockMs);
    const at = (command: LockCommand) => ({ command, term: this.term });
    const dueSession = m.dueSessions(timeMs, 1)[0];
    if (dueSession !== undefined && this.rng.float() < 0.6)
      return at({ type: 'expireSession', timeMs, sessionId: Number(dueSession.sessionId) });
    const dueLease = m.expiredLeases(timeMs, 1)[0];
    if (dueLease !== undefined && this.rng.float() < 0.6) return at({ type: 'expire', timeMs, key: dueLease.key, token: dueLease.token });
    const dueWaiter = m.dueWaiters(timeMs, 1)[0];
    if (dueWaiter !== undefined && this.rng.float() < 0.6)
      return at({ type: 'dequeue', timeMs, key: dueWaiter.key, ticket: dueWaiter.ticket, cause: 'deadline' });
    const dueDelay = m.dueDelays(timeMs, 1)[0];
    if (dueDelay !== undefined && this.rng.float() < 0.6) return at({ type: 'undelay', timeMs, key: dueDelay.key });
    const key = this.pick(KEYS);
    const view = m.get(key);
    const requestId = this.rng.float() < 0.2 ? '' : `r${++this.requests}`;
    const open = this.sessions.filter((s) => m.sessionInfo(s.id) !== undefined);
    const r = this.rng.float();
    if (r < 0.08 || open.length === 0) {
      return at({
        type: 'openSession',
        timeMs,
        owner: this.pick(OWNERS),
        ttlMs: 200 + this.rng.int(2000),
        requestId,
        lockDelayMs: this.rng.float() < 0.2 ? this.rng.int(500) : 0,
      });
    }
    const session = this.pick(open);
    if (r < 0.3) return at({ type: 'renewSession', timeMs, sessionId: session.id, owner: this.rng.float() < 0.9 ? session.owner : '' });
    if (r < 0.34) return at({ type: 'closeSession', timeMs, sessionId: session.id, owner: session.owner });
    if (r < 0.62) {
      // Under a session (its owner, or sometimes another: refused), maybe waiting.
      const owner = this.rng.float() < 0.95 ? session.owner : this.pick(OWNERS);
      const wait = this.rng.float() < 0.4 ? { waitMs: 100 + this.rng.int(1500) } : {};
      return at({ type: 'acquire', timeMs, key, owner, ttlMs: 0, requestId, sessionId: session.id, ...wait });
    }
    if (r < 0.78) {
      const wait = this.rng.float() < 0.4 ? { waitMs: 100 + this.rng.int(1500) } : {};
      const delay = this.rng.float() < 0.2 ? { lockDelayMs: 1 + this.rng.int(400) } : {};
      return at({ type: 'acquire', timeMs, key, owner: this.pick(OWNERS), ttlMs: 100 + this.rng.int(1500), requestId, ...wait, ...delay });
    }
    if (r < 0.9 && view.held) return at({ type: 'release', timeMs, key, owner: view.owner, token: view.token, requestId });
    if (r < 0.96 && view.held && view.sessionId === undefined)
      return at({ type: 'renew', timeMs, key, owner: view.owner, token: view.token, ttlMs: 100 + this.rng.int(1500), requestId });
    return at({ type: 'checkpoint', timeMs });
  }

  /** Applies `c` to the machine at the next index and checks the rules; returns the result. */
  apply(c: { command: LockCommand; term: number }): LockResult {
    const m = this.machine;
    const index = m.appliedIndex + 1;
    const before = KEYS.map((k) => m.get(k));
    const sessionBefore = 'sessionId' in c.command && c.command.type !== 'acquire' ? m.sessionInfo(c.command.sessionId) : undefined;
    const result = m.apply(index, c.term, encodeCommand(c.command));
    if (c.command.type === 'openSession' && result.type === 'openSession' && !result.replayed)
      this.sessions.push({ id: Number(result.sessionId), owner: c.command.owner });
    this.entries++;
    if (this.violation === null) this.check(index, c.command, result, before, sessionBefore);
    return result;
  }

  private check(
    index: number,
    cmd: LockCommand,
    result: LockResult,
    before: ReturnType<LockMachine['get']>[],
    sessionBefore: ReturnType<LockMachine['sessionInfo']>,
  ): void {
    const m = this.machine;
    const at = `entry ${index} (${cmd.type}${'key' in cmd ? ' ' + cmd.key : ''}${'sessionId' in cmd ? ' session ' + cmd.sessionId : ''})`;
    const fail = (msg: string) => {
      this.violation ??= `${at}: ${msg}`;
    };
    if (
      result.type === 'error' &&
      !(
        cmd.type === 'acquire' &&
        (result.code === 'SESSION_NOT_OPEN' || result.code === 'SESSION_OWNER_MISMATCH' || result.code === 'REQUEST_ID_REUSED')
      )
    )
      fail(`unexpected error ${result.code}: ${result.message}`);
    if (
      cmd.type === 'expireSession' &&
      result.type === 'expireSession' &&
      result.ended &&
      (sessionBefore === undefined || sessionBefore.expiresAtMs > m.logNowMs)
    ) {
      fail(`session ended at log time ${m.logNowMs}, before its deadline ${sessionBefore?.expiresAtMs}`);
    }
    // A grant is never born dead: a hold (or a waiter's hand-off) is granted with time left on it.
    const grants = [
      ...(result.type === 'acquire' && result.acquired ? [result] : []),
      ...(result.type !== 'error' ? (result.decided ?? []).filter((d) => d.outcome.acquired).map((d) => d.outcome) : []),
    ];
    for (const g of grants)
      if (g.expiresAtMs <= m.logNowMs)
        fail(`granted token ${g.token} with a lease that ended at ${g.expiresAtMs} <= log time ${m.logNowMs}`);
    const ended = (result.type === 'expireSession' || result.type === 'closeSession') && result.ended ? result.sessionId : null;
    KEYS.forEach((key, i) => {
      const pv = before[i]!;
      const qv = m.get(key);
      if (qv.lastToken < pv.lastToken) fail(`${key}'s last token went back ${pv.lastToken} -> ${qv.lastToken}`);
      if (qv.held && qv.token !== pv.token && qv.token <= pv.lastToken) fail(`${key} granted token ${qv.token}, not above ${pv.lastToken}`);
      if (qv.held && qv.sessionId !== undefined) {
        const s = m.sessionInfo(Number(qv.sessionId));
        if (s === undefined || !s.live)
          fail(`${key} is held under session ${qv.sessionId}, which is ${s === undefined ? 'gone' : 'run out'}`);
        else if (s.expiresAtMs !== qv.expiresAtMs)
          fail(`${key} under session ${qv.sessionId} ends at ${qv.expiresAtMs}, its session at ${s.expiresAtMs}`);
        if (ended !== null && qv.sessionId === ended) fail(`${key} is still held under session ${ended}, which this entry ended`);
      }
      // Nobody takes a live hold (judged at this entry's log time). A term start may end a hold whose lease
      // (or session) has provably run its TTL across terms though its deadline was later (epoch.ts): that
      // rule is checked in true time by the simulator's oracle, not here.
      if (
        cmd.type !== 'termStart' &&
        pv.held &&
        pv.expiresAtMs > m.logNowMs &&
        !(qv.held && qv.owner === pv.owner && qv.token === pv.token)
      ) {
        const byHolder =
          (cmd.type === 'release' && cmd.key === key && cmd.owner === pv.owner && cmd.token === pv.token) ||
          (cmd.type === 'acquire' && cmd.key === key && cmd.owner === pv.owner);
        const byClose = cmd.type === 'closeSession' && pv.sessionId !== undefined && BigInt(cmd.sessionId) === pv.sessionId;
        if (!byHolder && !byClose)
          fail(
            `${key} was ${pv.owner}'s (token ${pv.token}, until ${pv.expiresAtMs} > log time ${m.logNowMs}) and is now ${qv.held ? `${qv.owner}'s (token ${qv.token})` : 'free'}`,
          );
      }
    });
  }
}
