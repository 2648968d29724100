// The lock oracle's model of keys with many holds (SPEC "Many holders"; src/lock/holds.ts), written from
// the rules, not from the machine: LockOracle (lock-invariants.ts) hands it every entry on a key that is a
// group in the model, and every acquire that names a limit >= 2 or `shared`; lines, lock-delays, sessions,
// dedup and the decisions list stay LockOracle's (one wait line per key, whatever its holds).
//
// The model, per key while it has holds or waiters: its limit; its holds in token order (owner, token,
// mode, times as the lease rule follows them, session); the line's waiters carry the limit and mode they
// asked for. Rules:
//  - limit: a request naming another limit than the key's is refused as a whole (LIMIT_MISMATCH); on a key
//    in use as a mutex (a lease or a line, no group) the limit is 1, and its holder asking shared is refused
//    (HOLD_MODE_MISMATCH);
//  - admission: a request is granted only when nobody waits (FIFO; its owner's own hold is replaced in
//    place), the key is in no lock-delay, no grant for the key was made in this entry (a token is an
//    entry's index), and it fits: limit >= 2 fewer live holds than the limit; limit 1 shared no live
//    exclusive hold; exclusive no live hold at all (its owner's own hold not counted);
//  - one hold per owner: a re-acquire of the same mode supersedes (the old token dies, no lock-delay) —
//    from cluster level 4 only under the same session, else it is blocked as by another's hold — the
//    other mode is HOLD_MODE_MISMATCH;
//  - a hold past its end counts for nothing: the entry that meets it ends it (lock-delay from its end), or
//    ends its whole session;
//  - hand-off: an entry that ends holds grants the line's head if it fits (one grant per key per entry);
//    heads whose wait or session ran out leave refused on the way; a `handOff` entry does the same;
//  - a group with neither holds nor waiters is a free key again, keeping its last token.
//
// Named invariants, checked on what the MACHINE did (its results and state) so that a bug is named even
// before the exact comparison with the model: `semaphore limit` (at most `limit` live holds), `shared with
// exclusive` (a limit-1 key's live holds are all shared, or one exclusive), `fencing token (group)` (every
// grant's token above the key's last, no two alike), `FIFO (group)` (no grant while a waiter ahead of it
// stays in line), `lock-delay (group)` (no grant while the key is in lock-delay).
import type { LockCommand, LockResult, LockView } from '../../src/lock/index.js';
import type { WaiterDecision } from '../../src/lock/types.js';
import type { OracleLease, OracleSession, OracleStats, OracleWaiter, StampWindow, StateCapture } from './lock-invariants.js';

/** What the group model needs of LockOracle: the shared state and its bookkeeping. */
export interface GroupHost {
  readonly lines: Map<string, OracleWaiter[]>;
  readonly delays: Map<string, number>;
  readonly sessions: Map<number, OracleSession>;
  readonly lastIssued: Map<string, bigint>;
  readonly stats: OracleStats;
  readonly touched: Set<string>;
  readonly checksExtension: boolean;
  /** Cluster level 4 reached: an owner's own hold is replaced only by a request under its session. */
  readonly supersedeSameSessionOnly: boolean;
  /** How a hold ends: as expired (into its lock-delay) or not — LockOracle's one rule (level 5). */
  endsExpired(held: OracleLease, nowMs: number, expiry: boolean): boolean;
  /** The key's mutex lease (no group), if any. */
  leaseOf(key: string): OracleLease | undefined;
  decide(key: string, idx: number, w: OracleWaiter, outcome: string, cancelled: boolean, nowMs: number): void;
  /** An acquire's terms as the model records them (0n below level 6). */
  acquireTerms(req: { sessionId?: number; limit?: number; shared?: boolean }): bigint;
  remember(
    owner: string,
    requestId: string,
    type: 'acquire' | 'renew' | 'release' | 'revoke',
    key: string,
    token: bigint,
    outcome: string,
    index: number,
    nowMs: number,
  ): void;
  minHold(at: string, key: string, held: OracleLease, stamp: StampWindow, why: string): void;
  endSession(s: OracleSession, expired: boolean, idx: number, nowMs: number, stamp: StampWindow): string[];
  /** A mutex lease that ran out ends (its lock-delay from its end). */
  endExpired(key: string, lease: OracleLease): void;
  /** `key`'s holds changed in entry idx: the line is served (a group's or a mutex's rule). */
  handOff(key: string, idx: number, nowMs: number, stamp: StampWindow): void;
  fail(message: string): void;
}

interface GroupHold extends OracleLease {
  shared: boolean;
}

interface Group {
  key: string;
  limit: number;
  /** Token order (a grant appends: its token is its entry's index). */
  holds: GroupHold[];
}

export interface GroupStats {
  groupGrants: number;
  groupHandOffs: number;
  handOffEntries: number;
  groupWaits: number;
  groupRefusals: number;
  supersedes: number;
  limitMismatches: number;
  modeMismatches: number;
  groupsFreed: number;
  /** Revoke entries that ended holds of many. */
  groupRevokes: number;
  /** Most live holds seen on one key at once, and the most shared holds together. */
  maxHolds: number;
  maxShared: number;
}

type Acquire = Extract<LockCommand, { type: 'acquire' }>;
type AcquireOrError = Extract<LockResult, { type: 'acquire' | 'error' }>;

const REFUSED_FREE = 'false|0|0|0||0';

export class GroupOracle {
  readonly groups = new Map<string, Group>();
  readonly stats: GroupStats = {
    groupGrants: 0,
    groupHandOffs: 0,
    handOffEntries: 0,
    groupWaits: 0,
    groupRefusals: 0,
    supersedes: 0,
    limitMismatches: 0,
    modeMismatches: 0,
    groupsFreed: 0,
    groupRevokes: 0,
    maxHolds: 0,
    maxShared: 0,
  };
  /** Before the entry being judged: each line's tickets and requests, each key's delay and last token. */
  /** The grants the machine made in the entry being judged (checkGrants). */
  private grantsOfEntry: { key: string; owner: string; token: bigint }[] = [];
  private before = new Map<string, { line: OracleWaiter[]; delayUntil: number | undefined; lastToken: bigint; owners: Set<string> }>();

  constructor(
    private readonly host: GroupHost,
    private readonly keys: readonly string[],
  ) {}

  has(key: string): boolean {
    return this.groups.has(key);
  }

  /** Holds of every group (each counts as a lease of the machine's leaseCount). */
  holdCount(): number {
    let n = 0;
    for (const g of this.groups.values()) n += g.holds.length;
    return n;
  }

  /** Called before the entry is judged: what the named invariants compare the machine's grants with. */
  noteBefore(nowMs: number): void {
    this.before = new Map();
    for (const key of this.keys) {
      const g = this.groups.get(key);
      const owners = new Set(g === undefined ? [] : g.holds.filter((h) => live(h, nowMs)).map((h) => h.owner));
      const lease = this.host.leaseOf(key);
      if (lease !== undefined && live(lease, nowMs)) owners.add(lease.owner);
      this.before.set(key, {
        line: [...(this.host.lines.get(key) ?? [])],
        delayUntil: this.host.delays.get(key),
        lastToken: this.host.lastIssued.get(key) ?? 0n,
        owners,
      });
    }
  }

  // ------------------------------------------------------------------ entries

  /** An acquire routed here: it names limit >= 2 or shared, or its key is a group in the model. */
  judgeAcquire(
    at: string,
    idx: number,
    cmd: Acquire,
    r: AcquireOrError,
    nowMs: number,
    stamp: StampWindow,
    session: OracleSession | undefined,
  ): void {
    const h = this.host;
    const key = cmd.key;
    const limit = Math.max(1, cmd.limit ?? 1);
    const shared = cmd.shared === true;
    const until = h.delays.get(key);
    if (until !== undefined && until <= nowMs) {
      // The delay passed without its undelay entry: it ends here, the line served before the newcomer.
      h.delays.delete(key);
      h.stats.undelays++;
      h.handOff(key, idx, nowMs, stamp);
    }
    let g = this.groups.get(key);
    if (g === undefined) {
      let lease = h.leaseOf(key);
      if (lease?.session !== undefined && lease.session.deadlineMs <= nowMs) {
        h.minHold(at, key, lease, stamp, `found run out by ${cmd.owner}'s acquire, which ended its session`);
        h.endSession(lease.session, true, idx, nowMs, stamp);
        lease = h.leaseOf(key);
      }
      if (lease !== undefined && !live(lease, nowMs)) {
        h.stats.takeovers++;
        h.minHold(at, key, lease, stamp, `ended by ${cmd.owner}'s acquire of many`);
        h.endExpired(key, lease);
        h.handOff(key, idx, nowMs, stamp);
        lease = h.leaseOf(key);
      }
      g = this.groups.get(key);
      if (g === undefined && (lease !== undefined || (h.lines.get(key)?.length ?? 0) > 0)) {
        // In use as a mutex: limit 1, its holder's hold exclusive.
        if (limit !== 1) return this.mismatch(at, r, 'LIMIT_MISMATCH', `${key} is in use as a mutex (limit 1), the request names ${limit}`);
        if (lease !== undefined && lease.owner === cmd.owner)
          return this.mismatch(at, r, 'HOLD_MODE_MISMATCH', `${cmd.owner} holds ${key} exclusive (a mutex) and asks shared`);
        return this.blocked(at, idx, cmd, r, nowMs, lease !== undefined && live(lease, nowMs) ? lease : undefined, limit, shared);
      }
      if (g === undefined) {
        if (delayLeft(h, key, nowMs) > 0 && (cmd.waitMs ?? 0) === 0) return this.blocked(at, idx, cmd, r, nowMs, undefined, limit, shared);
        g = { key, limit, holds: [] };
        this.groups.set(key, g);
      }
    }
    if (g.limit !== limit) {
      this.tidy(g);
      return this.mismatch(at, r, 'LIMIT_MISMATCH', `${key} has limit ${g.limit}, the request names ${limit}`);
    }
    this.sweep(at, g, idx, nowMs, stamp);
    if (this.groups.get(key) !== g) {
      // The sweep ended a run-out session whose end left the key with neither holds nor waiters: it is a
      // free key again, and the request meets it as such.
      g = { key, limit, holds: [] };
      this.groups.set(key, g);
    }
    const own = g.holds.find((x) => x.owner === cmd.owner);
    if (own !== undefined && own.shared !== shared)
      return this.mismatch(at, r, 'HOLD_MODE_MISMATCH', `${cmd.owner} holds ${key} ${own.shared ? 'shared' : 'exclusive'}`);
    const admitted =
      delayLeft(h, key, nowMs) === 0 &&
      h.lastIssued.get(key) !== BigInt(idx) &&
      (own !== undefined || (h.lines.get(key)?.length ?? 0) === 0) &&
      (own === undefined || replaceable(h, own, session?.id ?? 0)) &&
      fits(g, shared, own, nowMs);
    if (!admitted) {
      this.blocked(
        at,
        idx,
        cmd,
        r,
        nowMs,
        g.holds.find((x) => live(x, nowMs)),
        limit,
        shared,
      );
      this.tidy(g);
      return;
    }
    if (r.type !== 'acquire' || !r.acquired)
      return h.fail(
        `${at}: acquire of ${key} by ${cmd.owner} (limit ${limit}${shared ? ', shared' : ''}) answered ${resultText(r)}, but it fits: ${this.describe(g, nowMs)}`,
      );
    if (own !== undefined) {
      this.stats.supersedes++;
      this.remove(g, own, false);
    }
    const granted = this.grant(
      g,
      idx,
      nowMs,
      stamp,
      { owner: cmd.owner, ttlMs: cmd.ttlMs, lockDelayMs: cmd.lockDelayMs ?? 0, shared },
      session,
    );
    const want = `acquire@${idx}|${granted}`;
    const got = `acquire@${idx}|${outcomeText(r)}`;
    if (got !== want || r.waitTicket !== undefined || r.delayMsLeft !== undefined)
      return h.fail(`${at}: acquire of ${key} by ${cmd.owner} answered ${got}; the model grants ${want}`);
    h.remember(cmd.owner, cmd.requestId, 'acquire', key, h.acquireTerms(cmd), granted, idx, nowMs);
  }

  judgeRenew(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'renew' }>,
    r: Extract<LockResult, { type: 'renew' }>,
    nowMs: number,
    stamp: StampWindow,
  ): void {
    const g = this.groups.get(cmd.key)!;
    const hold = g.holds.find((x) => x.owner === cmd.owner);
    const reason =
      hold === undefined
        ? g.holds.length === 0
          ? 'NOT_HELD'
          : 'WRONG_OWNER'
        : hold.token !== cmd.token
          ? 'WRONG_TOKEN'
          : !live(hold, nowMs)
            ? 'EXPIRED'
            : 'UNSPECIFIED';
    const ok = reason === 'UNSPECIFIED';
    const want = ok ? `true|${cmd.ttlMs}|${nowMs + cmd.ttlMs}|UNSPECIFIED` : `false|0|0|${reason}`;
    const got = `${r.renewed}|${r.ttlMs}|${r.expiresAtMs}|${r.reason}`;
    if (got !== want)
      return this.host.fail(
        `${at}: renew of ${cmd.key} by ${cmd.owner} token ${cmd.token} answered ${got}; the model says ${want} (${this.describe(g, nowMs)})`,
      );
    if (reason === 'EXPIRED') this.host.minHold(at, cmd.key, hold!, stamp, 'judged expired by a renew');
    if (ok) Object.assign(hold!, { grantAt: stamp, grantIndex: idx, ttlMs: cmd.ttlMs, epochs: 0, deadlineMs: nowMs + cmd.ttlMs });
    this.host.remember(cmd.owner, cmd.requestId, 'renew', cmd.key, cmd.token, got, idx, nowMs);
  }

  judgeRelease(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'release' }>,
    r: Extract<LockResult, { type: 'release' }>,
    nowMs: number,
    stamp: StampWindow,
  ): void {
    const g = this.groups.get(cmd.key)!;
    const hold = g.holds.find((x) => x.owner === cmd.owner);
    const reason =
      hold === undefined ? (g.holds.length === 0 ? 'NOT_HELD' : 'WRONG_OWNER') : hold.token !== cmd.token ? 'WRONG_TOKEN' : 'UNSPECIFIED';
    const got = `${r.released}|${r.reason}`;
    const want = `${reason === 'UNSPECIFIED'}|${reason}`;
    if (got !== want)
      return this.host.fail(
        `controlled release: ${at} release of ${cmd.key} by ${cmd.owner} token ${cmd.token} answered ${got}; the model says ${want} (${this.describe(g, nowMs)})`,
      );
    if (reason === 'UNSPECIFIED') {
      const expired = this.host.endsExpired(hold!, nowMs, false);
      if (expired) this.host.minHold(at, cmd.key, hold!, stamp, 'ended as expired by a late release');
      this.remove(g, hold!, expired);
      this.handOff(g, idx, nowMs, stamp, at);
    }
    this.host.remember(cmd.owner, cmd.requestId, 'release', cmd.key, cmd.token, got, idx, nowMs);
  }

  judgeExpire(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'expire' }>,
    expired: boolean,
    nowMs: number,
    stamp: StampWindow,
  ): void {
    const g = this.groups.get(cmd.key)!;
    const hold = g.holds.find((x) => x.token === cmd.token);
    const due = hold !== undefined && hold.session === undefined && !live(hold, nowMs);
    if (expired !== due)
      return this.host.fail(
        `${at}: expire of ${cmd.key} token ${cmd.token} answered ${expired}; the model says ${due} (${this.describe(g, nowMs)})`,
      );
    if (!due) return;
    this.host.stats.expired++;
    this.host.minHold(at, cmd.key, hold, stamp, 'removed by expire');
    this.remove(g, hold, true);
    this.handOff(g, idx, nowMs, stamp, at);
  }

  judgeHandOffEntry(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'handOff' }>,
    r: Extract<LockResult, { type: 'handOff' }>,
    nowMs: number,
    stamp: StampWindow,
  ): void {
    this.stats.handOffEntries++;
    const g = this.groups.get(cmd.key);
    if (g !== undefined) this.handOff(g, idx, nowMs, stamp, at);
    const granted = this.host.lastIssued.get(cmd.key) === BigInt(idx);
    if (r.granted !== granted || r.key !== cmd.key)
      this.host.fail(
        `${at}: handOff of ${cmd.key} answered granted=${r.granted}; the model ${granted ? 'grants the head' : 'grants nobody'}${g === undefined ? ' (no group)' : ` (${this.describe(g, nowMs)})`}`,
      );
  }

  /** The tokens of `key`'s holds, run out or not, in token order. */
  tokensOf(key: string): bigint[] {
    return (this.groups.get(key)?.holds ?? []).map((x) => x.token);
  }

  /** `key`'s line as it was before the entry being judged. */
  lineBefore(key: string): readonly OracleWaiter[] {
    return this.before.get(key)?.line ?? [];
  }

  /** A revoke ended `tokens` of `key` (LockOracle checked that they are the ones it names): no lock-delay
   *  (a run-out hold, from level 5, into its delay as its expiry would), then the line is served, run-out
   *  holds swept first, as after a release. */
  judgeRevoke(at: string, idx: number, key: string, tokens: readonly bigint[], nowMs: number, stamp: StampWindow): void {
    const g = this.groups.get(key)!;
    this.stats.groupRevokes++;
    for (const token of tokens) {
      const hold = g.holds.find((x) => x.token === token)!;
      const expired = this.host.endsExpired(hold, nowMs, false);
      if (expired) this.host.minHold(at, key, hold, stamp, 'ended as expired by a late revoke');
      this.remove(g, hold, expired);
    }
    this.handOff(g, idx, nowMs, stamp, at);
  }

  /** A dequeue on a group key (LockOracle took the waiter out and decided it): the next heads may fit. */
  afterDequeue(at: string, idx: number, key: string, nowMs: number, stamp: StampWindow): void {
    const g = this.groups.get(key);
    if (g !== undefined) this.handOff(g, idx, nowMs, stamp, at);
  }

  /** Session `s` ends: its group holds go, in key order, each key handed to its line. Returns their keys. */
  endSessionHolds(at: string, s: OracleSession, expired: boolean, idx: number, nowMs: number, stamp: StampWindow): string[] {
    const mine: { g: Group; hold: GroupHold }[] = [];
    for (const g of this.groups.values()) for (const hold of g.holds) if (hold.session === s) mine.push({ g, hold });
    mine.sort((a, b) => (a.g.key < b.g.key ? -1 : a.g.key > b.g.key ? 1 : 0));
    for (const { g, hold } of mine) {
      this.remove(g, hold, expired);
      this.handOff(g, idx, nowMs, stamp, at);
    }
    return mine.map((m) => m.g.key);
  }

  /** A mutex key whose line's head asks shared, with no lease: from here it is a group of limit 1. */
  startFromLine(key: string): void {
    this.groups.set(key, { key, limit: 1, holds: [] });
  }

  /** `key`'s holds changed (LockOracle's generic hand-off). */
  handOffKey(key: string, idx: number, nowMs: number, stamp: StampWindow): void {
    this.handOff(this.groups.get(key)!, idx, nowMs, stamp, `entry ${idx}`);
  }

  /** An epoch start (the first entry of a term, P = the previous term's end, T = its start): every hold live
   *  at P and not under a session lasts a full TTL from T — or ended there, having provably run its TTL. */
  carry(
    at: string,
    idx: number,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
    viewOf: (key: string) => LockView | undefined,
  ): void {
    const startMs = post.epochStartMs;
    for (const g of this.groups.values()) {
      const after = viewOf(g.key)?.holders ?? [];
      for (const hold of g.holds) {
        if (hold.session !== undefined || hold.deadlineMs <= pre.nowMs) continue;
        const v = after.find((x) => x.token === hold.token);
        if (v !== undefined) {
          if (
            v.owner !== hold.owner ||
            (this.host.checksExtension && (v.expiresAtMs < startMs + hold.ttlMs || v.expiresAtMs < hold.deadlineMs))
          ) {
            return this.host.fail(
              `lease extension: ${at} (termStart, log time ${startMs}) left ${g.key}'s hold (${hold.owner} token ${hold.token}, ttl ${hold.ttlMs}) ending at ${v.expiresAtMs} (was ${hold.deadlineMs}): a live hold lasts a full TTL from the new leader's start and is never shortened`,
            );
          }
          hold.epochs++;
          hold.deadlineMs = v.expiresAtMs;
          this.host.stats.leasesExtended++;
        } else {
          hold.deadlineMs = Math.min(hold.deadlineMs, startMs);
          this.host.stats.leasesEnded++;
          this.host.minHold(at, g.key, hold, stamp, `ended at the epoch start of entry ${idx}`);
        }
      }
    }
  }

  // ------------------------------------------------------------------ checks after every entry

  /** The named invariants on the machine's grants in this entry (`decided` and the acquire's own). */
  checkGrants(at: string, idx: number, cmd: LockCommand, r: LockResult, nowMs: number): void {
    const grants: { key: string; owner: string; requestId: string; token: bigint; ticket: number | null }[] = [];
    for (const d of r.decided ?? [])
      if (d.outcome.acquired) grants.push({ key: d.key, owner: d.owner, requestId: d.requestId, token: d.outcome.token, ticket: d.ticket });
    if (cmd.type === 'acquire' && r.type === 'acquire' && r.acquired && !r.replayed)
      grants.push({ key: cmd.key, owner: cmd.owner, requestId: cmd.requestId, token: r.token, ticket: null });
    const decidedTickets = new Set((r.decided ?? []).map((d: WaiterDecision) => `${d.key}#${d.ticket}`));
    const seen = new Set<string>();
    this.grantsOfEntry = grants;
    for (const gr of grants) {
      const before = this.before.get(gr.key);
      if (before === undefined) continue; // not a key of the model (the oracle reports that itself)
      const many = this.groups.has(gr.key) || before.line.some((w) => w.shared || w.limit > 1);
      if (!many) continue; // a mutex key's grants: LockOracle's own checks
      if (gr.token <= before.lastToken || seen.has(`${gr.key}#${gr.token}`)) {
        return this.host.fail(
          `fencing token (group): ${at} granted ${gr.key} to ${gr.owner} with token ${gr.token}, ${gr.token <= before.lastToken ? `not above ${before.lastToken} issued before` : 'a token it also granted another hold in the same entry'}`,
        );
      }
      seen.add(`${gr.key}#${gr.token}`);
      if (before.delayUntil !== undefined && before.delayUntil > nowMs)
        return this.host.fail(
          `lock-delay (group): ${at} granted ${gr.key} to ${gr.owner} (token ${gr.token}) during its lock-delay (until ${before.delayUntil}, log time ${nowMs})`,
        );
      // Ahead of it: every waiter of a lower ticket (a newcomer: every waiter), unless it left the line in this
      // entry. A newcomer replacing its own live hold takes no one's turn.
      if (gr.ticket === null && before.owners.has(gr.owner)) continue;
      const ahead = before.line.find(
        (w) => (gr.ticket === null || w.ticket < gr.ticket) && w.requestId !== gr.requestId && !decidedTickets.has(`${gr.key}#${w.ticket}`),
      );
      if (ahead !== undefined) {
        return this.host.fail(
          `FIFO (group): ${at} granted ${gr.key} to ${gr.owner}/${gr.requestId} (${gr.ticket === null ? 'a newcomer' : `ticket ${gr.ticket}`}, token ${gr.token}) while ${ahead.owner}/${ahead.requestId} (ticket ${ahead.ticket}${ahead.shared ? ', shared' : ''}) waits ahead of it and stays in line`,
        );
      }
    }
  }

  /** The named counting invariants on every key's live holds as the machine shows them (Get). */
  checkCounts(at: string, post: StateCapture): void {
    const nowMs = post.nowMs;
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i]!;
      const v = post.views[i]!;
      if (v.holders !== undefined) {
        const holders = v.holders.filter((x) => x.expiresAtMs > nowMs);
        const limit = v.limit ?? 1;
        const list = holders.map((x) => `${x.owner}#${x.token}${x.shared ? 's' : ''}`).join(',');
        if (limit >= 2 && holders.length > limit)
          return this.host.fail(`semaphore limit: after ${at} ${key} (limit ${limit}) has ${holders.length} live holds: ${list}`);
        if (limit === 1 && holders.length > 1 && holders.some((x) => !x.shared)) {
          return this.host.fail(
            `${holders.every((x) => !x.shared) ? 'mutual exclusion' : 'shared with exclusive'}: after ${at} ${key} (limit 1) has live holds ${list}`,
          );
        }
        this.stats.maxHolds = Math.max(this.stats.maxHolds, holders.length);
        this.stats.maxShared = Math.max(this.stats.maxShared, holders.filter((x) => x.shared).length);
      }
    }
  }

  /** After the model judged the entry: no grant on a key the entry left in lock-delay (a delay the entry
   *  started, a hold ending with one, is in the model's delays now). */
  checkDelayAfter(at: string, nowMs: number): void {
    for (const gr of this.grantsOfEntry) {
      const until = this.host.delays.get(gr.key);
      if (
        (this.groups.has(gr.key) || this.before.get(gr.key)?.line.some((w) => w.shared || w.limit > 1)) &&
        until !== undefined &&
        until > nowMs
      ) {
        return this.host.fail(
          `lock-delay (group): ${at} granted ${gr.key} to ${gr.owner} (token ${gr.token}) while the entry leaves it in lock-delay until ${until} (log time ${nowMs})`,
        );
      }
    }
  }

  /** Every key's holds as the machine shows them (Get: live holds, limit) against the model's. */
  checkViews(at: string, post: StateCapture): void {
    const nowMs = post.nowMs;
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i]!;
      const v = post.views[i]!;
      const g = this.groups.get(key);
      if (g === undefined) {
        if (v.holders !== undefined)
          return this.host.fail(
            `${at}: ${key} shows many holds (limit ${v.limit}: ${describeView(v)}), but the model has no group there (a group with neither holds nor waiters is a free key again)`,
          );
        continue;
      }
      if (v.holders === undefined || v.limit !== g.limit)
        return this.host.fail(
          `${at}: ${key} shows ${v.holders === undefined ? `no group (${v.held ? `held by ${v.owner} token ${v.token}` : 'free'})` : `limit ${v.limit}`}; the model has ${this.describe(g, nowMs)}`,
        );
      const want = g.holds
        .filter((x) => live(x, nowMs))
        .map((x) => `${x.owner}#${x.token}${x.shared ? 's' : ''}<${(x.session ?? x).deadlineMs}`)
        .join(',');
      const got = v.holders.map((x) => `${x.owner}#${x.token}${x.shared ? 's' : ''}<${x.expiresAtMs}`).join(',');
      if (got !== want) return this.host.fail(`${at}: ${key}'s live holds are [${got}]; the model has [${want}] (limit ${g.limit})`);
      if (v.lastToken < (this.host.lastIssued.get(key) ?? 0n))
        return this.host.fail(`${at}: ${key}'s last token ${v.lastToken} is below ${this.host.lastIssued.get(key)} issued`);
    }
  }

  // ------------------------------------------------------------------ the rules

  /** Not granted: in line (a blocking request: ticket = this entry) or refused and remembered. */
  private blocked(
    at: string,
    idx: number,
    cmd: Acquire,
    r: AcquireOrError,
    nowMs: number,
    holder: OracleLease | undefined,
    limit: number,
    shared: boolean,
  ): void {
    const h = this.host;
    const want = holder === undefined ? REFUSED_FREE : `false|0|0|0|${holder.owner}|${(holder.session ?? holder).deadlineMs - nowMs}`;
    const left = delayLeft(h, cmd.key, nowMs);
    const waits = (cmd.waitMs ?? 0) > 0;
    if (
      r.type !== 'acquire' ||
      outcomeText(r) !== want ||
      r.replayed ||
      r.delayMsLeft !== (left > 0 ? left : undefined) ||
      r.waitTicket !== (waits ? idx : undefined)
    ) {
      return h.fail(
        `${at}: acquire of ${cmd.key} by ${cmd.owner} (limit ${limit}${shared ? ', shared' : ''}, wait ${cmd.waitMs ?? 0}) answered ${resultText(r)}; the model says ${want}${left > 0 ? ` in lock-delay ${left}ms` : ''}${waits ? `, in line with ticket ${idx}` : ''}`,
      );
    }
    if (left > 0) h.stats.delayRefusals++;
    if (waits) {
      this.stats.groupWaits++;
      h.stats.waitersJoined++;
      if (!h.lines.has(cmd.key)) h.lines.set(cmd.key, []);
      h.lines.get(cmd.key)!.push({
        ticket: idx,
        owner: cmd.owner,
        requestId: cmd.requestId,
        ttlMs: cmd.ttlMs,
        deadlineMs: nowMs + cmd.waitMs!,
        lockDelayMs: cmd.lockDelayMs ?? 0,
        sessionId: cmd.sessionId ?? 0,
        limit,
        shared,
      });
      return;
    }
    this.stats.groupRefusals++;
    h.remember(cmd.owner, cmd.requestId, 'acquire', cmd.key, h.acquireTerms(cmd), want, idx, nowMs);
  }

  private mismatch(at: string, r: AcquireOrError, code: 'LIMIT_MISMATCH' | 'HOLD_MODE_MISMATCH', why: string): void {
    if (code === 'LIMIT_MISMATCH') this.stats.limitMismatches++;
    else this.stats.modeMismatches++;
    if (r.type !== 'error' || r.code !== code)
      this.host.fail(`${at}: the model refuses it as a whole (${code}: ${why}), but the machine answered ${resultText(r)}`);
  }

  /** The holds of `g` that ran out end, in token order: into their lock-delays, or with their session. */
  private sweep(at: string, g: Group, idx: number, nowMs: number, stamp: StampWindow): void {
    for (;;) {
      const runOut = g.holds.find((x) => !live(x, nowMs));
      if (runOut === undefined) return;
      this.host.minHold(at, g.key, runOut, stamp, 'found run out by an entry of its key');
      if (runOut.session !== undefined) this.host.endSession(runOut.session, true, idx, nowMs, stamp);
      else this.remove(g, runOut, true);
    }
  }

  /** Serves `g`'s line in entry idx: heads whose wait or session ran out leave refused; the first that
   *  fits is granted, unless this entry granted the key already (one grant per key per entry). */
  private handOff(g: Group, idx: number, nowMs: number, stamp: StampWindow, at: string): void {
    const h = this.host;
    this.sweep(at, g, idx, nowMs, stamp);
    const line = h.lines.get(g.key);
    while (delayLeft(h, g.key, nowMs) === 0 && line !== undefined && line.length > 0) {
      const w = line[0]!;
      const session = w.sessionId > 0 ? h.sessions.get(w.sessionId) : undefined;
      if (w.deadlineMs <= nowMs || (w.sessionId > 0 && (session === undefined || session.deadlineMs <= nowMs))) {
        line.shift();
        h.stats.waitsRefused++;
        h.touched.add(g.key);
        h.decide(g.key, idx, w, REFUSED_FREE, false, nowMs);
        continue;
      }
      const own = g.holds.find((x) => x.owner === w.owner);
      if (h.lastIssued.get(g.key) === BigInt(idx) || !fits(g, w.shared, own, nowMs)) break;
      if (own !== undefined && !replaceable(h, own, w.sessionId)) break; // waits at the head for that hold to end
      line.shift();
      if (own !== undefined) this.remove(g, own, false);
      this.stats.groupHandOffs++;
      h.stats.handOffs++;
      h.decide(g.key, idx, w, this.grant(g, idx, nowMs, stamp, w, session), false, nowMs);
      break;
    }
    if (line !== undefined && line.length === 0) h.lines.delete(g.key);
    this.tidy(g);
  }

  /** A new hold of `g` with token idx; returns its outcome text. */
  private grant(
    g: Group,
    idx: number,
    nowMs: number,
    stamp: StampWindow,
    req: { owner: string; ttlMs: number; lockDelayMs: number; shared: boolean },
    session: OracleSession | undefined,
  ): string {
    const h = this.host;
    const token = BigInt(idx);
    const [ttlMs, untilMs] = session !== undefined ? [session.ttlMs, session.deadlineMs] : [req.ttlMs, nowMs + req.ttlMs];
    const hold: GroupHold = {
      owner: req.owner,
      token,
      ttlMs,
      grantIndex: idx,
      grantAt: stamp,
      epochs: 0,
      deadlineMs: untilMs,
      lockDelayMs: req.lockDelayMs || (session?.lockDelayMs ?? 0),
      shared: req.shared,
    };
    if (session !== undefined) hold.session = session;
    g.holds.push(hold);
    h.lastIssued.set(g.key, token);
    h.touched.add(g.key);
    h.stats.acquired++;
    this.stats.groupGrants++;
    return `true|${token}|${ttlMs}|${untilMs}||0`;
  }

  /** `hold` ends; `expired`: it ran out, so its lock-delay (if any) runs from its end. */
  private remove(g: Group, hold: GroupHold, expired: boolean): void {
    const h = this.host;
    g.holds.splice(g.holds.indexOf(hold), 1);
    h.touched.add(g.key);
    if (expired && hold.lockDelayMs > 0) {
      const until = (hold.session ?? hold).deadlineMs + hold.lockDelayMs;
      if (until > (h.delays.get(g.key) ?? -1)) {
        h.delays.set(g.key, until);
        h.stats.delaysStarted++;
      }
    }
  }

  private tidy(g: Group): void {
    if (g.holds.length > 0 || (this.host.lines.get(g.key)?.length ?? 0) > 0 || this.groups.get(g.key) !== g) return;
    this.groups.delete(g.key);
    this.stats.groupsFreed++;
  }

  private describe(g: Group, nowMs: number): string {
    const holds = g.holds.map((x) => `${x.owner}#${x.token}${x.shared ? 's' : ''}${live(x, nowMs) ? '' : '(run out)'}`).join(',');
    const line = (this.host.lines.get(g.key) ?? []).map((w) => `${w.owner}#${w.ticket}${w.shared ? 's' : ''}`).join(',');
    const until = this.host.delays.get(g.key);
    return `limit ${g.limit}, holds [${holds}], line [${line}]${until !== undefined && until > nowMs ? `, lock-delay until ${until}` : ''}, log time ${nowMs}`;
  }
}

function live(l: OracleLease, nowMs: number): boolean {
  return (l.session ?? l).deadlineMs > nowMs;
}

function delayLeft(h: GroupHost, key: string, nowMs: number): number {
  return Math.max(0, (h.delays.get(key) ?? 0) - nowMs);
}

/** Whether a request under session `sessionId` (0: none) may replace its owner's hold `own`: always below
 *  level 4; from it only under the same session (a hold under another blocks it, as another's would). */
function replaceable(h: GroupHost, own: GroupHold, sessionId: number): boolean {
  return !h.supersedeSameSessionOnly || (own.session?.id ?? 0) === sessionId;
}

/** Whether a request of this mode fits beside `g`'s live holds, its owner's own (`own`) not counted. */
function fits(g: Group, shared: boolean, own: GroupHold | undefined, nowMs: number): boolean {
  const others = g.holds.filter((x) => x !== own && live(x, nowMs));
  if (g.limit >= 2) return others.length < g.limit;
  return shared ? others.every((x) => x.shared) : others.length === 0;
}

function outcomeText(r: Extract<LockResult, { type: 'acquire' }>): string {
  return `${r.acquired}|${r.token}|${r.ttlMs}|${r.expiresAtMs}|${r.holderOwner}|${r.holderTtlMs}`;
}

function resultText(r: AcquireOrError): string {
  if (r.type === 'error') return `error ${r.code}`;
  return `${outcomeText(r)}${r.replayed ? ' (replayed)' : ''}${r.waitTicket !== undefined ? ` in line #${r.waitTicket}` : ''}${r.delayMsLeft !== undefined ? ` delay ${r.delayMsLeft}ms` : ''}`;
}

function describeView(v: LockView): string {
  return (v.holders ?? []).map((x) => `${x.owner}#${x.token}${x.shared ? 's' : ''}`).join(',') || 'no live holds';
}
