// The lock oracle: judges every committed lock entry once, in log order, on the first replica that applies
// it — from the machine's state just before and just after the entry, the entry's result, and the TRUE time
// at which the leader stamped it (the simulator knows it; the machine never does). Replicas applying the
// same entry later are held to the same result and state by the harness's replica-digest check.
//
// What it enforces (issue 3, "Add invariants"):
//  - at most one live holder per key at any log position: a key changes hands only when its lease has
//    passed its deadline in log time, and then only if it also ran its full TTL in true time (below);
//  - fencing tokens strictly increase per key and are never reused;
//  - renew succeeds only for the holder (owner and token) of a lease still live at the renew's log time;
//    release only for the holder; refusals give the right reason and change nothing; expire only removes a
//    due lease with that token; a retried request (same owner + request_id, inside the dedup window) gets
//    its first outcome back and changes nothing, and is never executed twice;
//  - log time is max(previous log time, the entry's stamp) — never a replica's own clock;
//  - the first entry of every term is the new leader's termStart (no client command stamped before it);
//    it extends every lease live at the end of the previous term to at least a full TTL from its own
//    start, never shortens one, never revives an expired one, and ends one only after the lease has run
//    its TTL in true time;
//  - MIN HOLD (true time). A lease granted/renewed by an entry stamped at true time r_g is never judged
//    expired (taken over by another owner's acquire, removed by expire, renew refused EXPIRED, ended at an
//    epoch start) by an entry stamped before r_g + (ttl - 1 - epochs) / (1 + maxDrift):
//      within one term, stamps s = floor(C(t)) of one leader clock with rate in [1-ρ, 1+ρ]: a deadline
//      s_g + ttl reached at s_e means C(t_e) - C(t_g) > ttl - 1, so t_e - t_g > (ttl - 1)/(1 + ρ); a
//      lease extended at an epoch start T is measured the same way from T (> r_g); a lease ended at an
//      epoch start has observedMs >= ttl summed over `epochs + 1` terms, each term's integer difference
//      overstating its clock's elapsed time by < 1 ms — hence the -1 - epochs.
//  - every acknowledged result equals the one the log produced at its index (checkAck);
//  - THE WAIT LINE (wait-line.ts), modelled here independently: a blocking acquire that cannot be granted
//    joins its key's line with its own index as ticket, and a retry of a request in line keeps its ticket;
//    every entry that ends a hold (release, expire, an acquire finding the hold run out while others wait)
//    hands the key to the first waiter still within its wait deadline, in ticket order (FIFO by log
//    arrival), skipping and refusing the ones whose deadline passed; a dequeue removes a waiter only when
//    its deadline passed (or its call was cancelled); the decisions in every result equal the model's, and
//    a decided request's outcome is remembered like any first outcome;
//  - LOCK-DELAY: a hold carrying lockDelayMs that expires (an expire entry, or an acquire finding it run out)
//    keeps its key from every grant — newcomer, line, its own owner — until the lease's end (log time, as
//    the model tracks it through renews and epochs) + lockDelayMs; from cluster level 5 a hold that ran out
//    by log time ends as expired whichever entry ends it (a late release, closeSession or revoke:
//    `endsExpired`, the model's one rule); a live hold released, closed or revoked starts no delay; a
//    refusal in a delay says how long is left; `undelay` applies only once it passed, then the line is served.
//  - SESSIONS (session.ts), modelled here: a session's deadline follows its open, its renews and every epoch
//    start by the lease rule (never cut short in true time: the same minimum-hold bound as a lease); a renew
//    or an acquire under it succeeds only while it lives in log time; its end (close by its owner, expiry
//    only once due, or an acquire finding a key held under it run out) drops its waiters (refused, in ticket
//    order) and then its holds, in key order, each key handed to its line in that entry; a hold under it
//    reports its session's deadline.
//  - MANY HOLDS (holds.ts): semaphores and shared/exclusive keys, modelled in lock-oracle-groups.ts, which
//    judges every entry on a key that is a group in the model and every acquire naming a limit or shared.
//  - REVOKE (SPEC "Revoke"; an operator's call): it ends the key's hold with its token (0: every hold of
//    the key, run-out ones included) with no lock-delay (a run-out one, from level 5, into its delay as its
//    expiry would); from level 5 its entry carries a request id and, like every mutation, a retry inside
//    the dedup window gets its first outcome back and ends nothing; the key goes to its line in the same
//    entry as after a release (a group's line: one grant, run-out holds swept first); a revoke naming no hold
//    changes nothing. The named invariant `revoke`, on what the machine did: the entry answers exactly the
//    named holds revoked, none of them is still held after it, the key's line is served in it (the first
//    waiter still in line, its wait and session live, does not fit beside the key's live holds — unless the
//    entry granted the key already or left it in lock-delay), and a revoked token never renews, releases
//    or expires again.
import type { Entry } from '../../src/raft/core/types.js';
import type { LockCommand, LockResult, LockView } from '../../src/lock/index.js';
import type { WaiterDecision } from '../../src/lock/types.js';
import { serverMinHoldMs } from './lock-clock.js';
import type { HoldView } from './lock-max-hold.js';
import type { LockMachineLike } from './lock-module.js';
import { GroupOracle, type GroupHost } from './lock-oracle-groups.js';

/** What a replica looked like just before / after an entry. */
export interface StateCapture {
  nowMs: number;
  epochTerm: number;
  epochStartMs: number;
  leaseCount: number;
  /** One view per profile key, in profile order. */
  views: LockView[];
  /** Every open session, by id. */
  sessions: Map<number, { owner: string; live: boolean; ttlMs: number; expiresAtMs: number; holds: number }>;
}

export function captureState(machine: LockMachineLike, keys: readonly string[]): StateCapture {
  return {
    nowMs: machine.logNowMs,
    epochTerm: machine.epochTerm,
    epochStartMs: machine.epochStartMs,
    leaseCount: machine.leaseCount,
    views: keys.map((k) => machine.get(k)),
    sessions: new Map((machine.sessionList?.() ?? []).map(({ id, ...s }) => [id, s])),
  };
}

/** When (true ms) and where an entry's stamp was taken. Identical bytes stamped twice in one term (a
 *  retry within the same ms) give a window; checks use its most lenient end. */
export interface StampWindow {
  min: number;
  max: number;
  node: string;
}

export interface OracleLease {
  owner: string;
  token: bigint;
  ttlMs: number;
  grantIndex: number;
  grantAt: StampWindow;
  /** Epoch starts this lease was carried (extended) through since its last grant/renew. */
  epochs: number;
  /** The lease's deadline in log time, as the model follows it (grant, renew, epoch starts). */
  deadlineMs: number;
  lockDelayMs: number;
  /** The session the hold lives under: its times are the session's. */
  session?: OracleSession;
}

/** A session, modelled as the machine keeps it: a lease without a key (token = its id). */
export interface OracleSession extends OracleLease {
  id: number;
  requestId: string;
  holds: Set<string>;
}

export interface OracleWaiter {
  ticket: number;
  /** The limit it named and whether it asks a shared hold (holds.ts); 1 and false for a mutex request. */
  limit: number;
  shared: boolean;
  owner: string;
  requestId: string;
  ttlMs: number;
  deadlineMs: number;
  lockDelayMs: number;
  /** Its hold will live under this session (0 = none). */
  sessionId: number;
}

interface OracleDedup {
  owner: string;
  requestId: string;
  type: 'acquire' | 'renew' | 'release' | 'revoke';
  key: string;
  token: bigint;
  outcome: string;
  index: number;
  recordedAtMs: number;
}

export interface OracleStats {
  acquired: number;
  acquireRefused: number;
  takeovers: number;
  renewed: number;
  renewRefused: number;
  /** `renews` entries (level 7), the renews they carried, and the renews that shared one with another. */
  renewsEntries: number;
  renewsInEntries: number;
  renewsShared: number;
  /** Renews refused EXPIRED: the lease ran out but no expire entry had removed it yet. */
  renewExpired: number;
  released: number;
  releaseRefused: number;
  expired: number;
  replays: number;
  /** Acquire records the dedup window would have forgotten, kept because their owner held the key (level 6). */
  dedupKeptWhileHeld: number;
  /** Acquires refused as REQUEST_ID_REUSED (the clients' deliberate reuse of an id with other terms). */
  requestIdsReused: number;
  epochStarts: number;
  leasesExtended: number;
  leasesEnded: number;
  maxEpochsCarried: number;
  /** Smallest (true elapsed - guaranteed min hold) over all expiry judgements, ms. */
  tightestExpiryMarginMs: number;
  /** Wait line: joins, re-attaches, hand-off grants, refusals at the deadline, cancels. */
  waitersJoined: number;
  waitersReattached: number;
  handOffs: number;
  waitsRefused: number;
  waitsCancelled: number;
  /** Lock-delay: delays started by an expiry, acquires refused in one, undelays applied. */
  delaysStarted: number;
  delayRefusals: number;
  undelays: number;
  /** Holds a release, closeSession or revoke ended after they ran out (ended as expired from level 5). */
  lateEnds: number;
  /** Sessions opened, renewed, ended (closed or expired), acquires refused as SESSION_NOT_OPEN. */
  sessionsOpened: number;
  sessionsRenewed: number;
  sessionsEnded: number;
  sessionRefusals: number;
  /** The cluster level the log reached, and the entry that raised it to 2 (0 = never). */
  clusterLevel: number;
  levelRaisedAt: number;
  /** Revoke entries, the holds they ended, and those that also granted the key to a waiter. */
  revokeEntries: number;
  holdsRevoked: number;
  revokeHandOffs: number;
  /** Revoke entries that were a retry's, answered with the first outcome (level 5). */
  revokeReplays: number;
}

export function canonicalResult(r: LockResult): string {
  switch (r.type) {
    case 'acquire':
      return `acquire@${r.index}${r.replayed ? 'R' : ''}|${acquireOutcome(r)}`;
    case 'renew':
      return `renew@${r.index}${r.replayed ? 'R' : ''}|${renewOutcome(r)}`;
    case 'renews':
      return `renews@${r.index}|${r.renews.map(canonicalResult).join(';')}`;
    case 'release':
      return `release@${r.index}${r.replayed ? 'R' : ''}|${releaseOutcome(r)}`;
    case 'expire':
      return `expire@${r.index}|${r.expired}`;
    case 'revoke':
      return `revoke@${r.index}${r.replayed ? 'R' : ''}|${r.key}|${r.revoked.join(',')}`;
    case 'termStart':
      return `termStart@${r.index}|${r.leasesExtended}|${r.leasesEnded}`;
    case 'checkpoint':
      return `checkpoint@${r.index}`;
    case 'clusterLevel':
      return `clusterLevel@${r.index}|${r.level}`;
    case 'memberRan':
      return `memberRan@${r.index}|${r.memberId}|${r.recorded}`;
    case 'forget':
      return `forget@${r.index}|${r.forgotten}|${r.watermark}`;
    case 'dequeue':
      return `dequeue@${r.index}|${r.dequeued}|${r.key}|${r.ticket}`;
    case 'undelay':
      return `undelay@${r.index}|${r.undelayed}|${r.key}`;
    case 'handOff':
      return `handOff@${r.index}|${r.granted}|${r.key}`;
    case 'openSession':
      return `openSession@${r.index}${r.replayed ? 'R' : ''}|${r.sessionId}|${r.ttlMs}|${r.expiresAtMs}`;
    case 'renewSession':
      return `renewSession@${r.index}|${r.renewed}|${r.ttlMs}|${r.expiresAtMs}|${r.reason}`;
    case 'closeSession':
    case 'expireSession':
      return `${r.type}@${r.index}|${r.sessionId}|${r.ended}|${r.reason}|${r.released.join(',')}`;
    case 'error':
      return `error@${r.index}|${r.code}`;
  }
}

function decisionText(d: WaiterDecision): string {
  const o = d.outcome;
  return `${d.key}#${d.ticket} ${d.owner}/${d.requestId} ${o.acquired}|${o.token}|${o.ttlMs}|${o.expiresAtMs}|${o.holderOwner}|${o.holderTtlMs}${d.cancelled ? ' cancelled' : ''}`;
}

function acquireOutcome(r: Extract<LockResult, { type: 'acquire' }>): string {
  return `${r.acquired}|${r.token}|${r.ttlMs}|${r.expiresAtMs}|${r.holderOwner}|${r.holderTtlMs}`;
}
function renewOutcome(r: Extract<LockResult, { type: 'renew' }>): string {
  return `${r.renewed}|${r.ttlMs}|${r.expiresAtMs}|${r.reason}`;
}
function releaseOutcome(r: Extract<LockResult, { type: 'release' }>): string {
  return `${r.released}|${r.reason}`;
}

export class LockOracle implements GroupHost {
  /** The next log index to judge (every index is judged exactly once, in order). */
  next = 1;
  violation: string | null = null;
  readonly stats: OracleStats = {
    acquired: 0,
    acquireRefused: 0,
    takeovers: 0,
    renewed: 0,
    renewRefused: 0,
    renewsEntries: 0,
    renewsInEntries: 0,
    renewsShared: 0,
    renewExpired: 0,
    released: 0,
    releaseRefused: 0,
    expired: 0,
    replays: 0,
    dedupKeptWhileHeld: 0,
    requestIdsReused: 0,
    epochStarts: 0,
    leasesExtended: 0,
    leasesEnded: 0,
    maxEpochsCarried: 0,
    tightestExpiryMarginMs: Infinity,
    waitersJoined: 0,
    waitersReattached: 0,
    handOffs: 0,
    waitsRefused: 0,
    waitsCancelled: 0,
    delaysStarted: 0,
    delayRefusals: 0,
    undelays: 0,
    lateEnds: 0,
    sessionsOpened: 0,
    sessionsRenewed: 0,
    sessionsEnded: 0,
    sessionRefusals: 0,
    clusterLevel: 1,
    levelRaisedAt: 0,
    revokeEntries: 0,
    holdsRevoked: 0,
    revokeHandOffs: 0,
    revokeReplays: 0,
  };
  /** `${key}#${token}` of every hold a revoke ended -> the revoking entry (named invariant `revoke`). */
  private readonly revokedAt = new Map<string, number>();
  /** Per key, its waiters in ticket order. */
  readonly lines = new Map<string, OracleWaiter[]>();
  /** The cluster level the log has reached, and from level 2 the current term's highest stamp (the
   *  machine's `time` rule, modelled on its own). */
  private clusterLevel = 1;
  /** Cluster level 4 (versions.ts): an owner's own hold is superseded only under the same session. */
  get supersedeSameSessionOnly(): boolean {
    return this.clusterLevel >= 4;
  }

  /** The model's one rule of how a hold ends (machine.ts `delay`): as EXPIRED — into its lock-delay, from its
   *  end — when an expiry ends it (`expiry`), and from cluster level 5 whenever it had run out by log time,
   *  whichever entry ends it (a late release, closeSession or revoke). */
  endsExpired(held: OracleLease, nowMs: number, expiry: boolean): boolean {
    if (expiry) return true;
    const ranOut = (held.session ?? held).deadlineMs <= nowMs;
    if (ranOut) this.stats.lateEnds++;
    return this.clusterLevel >= 5 && ranOut;
  }
  private termLastStampMs = 0;
  /** Members the log recorded as having run (from level 2). */
  private readonly ranMembers = new Set<string>();
  /** Keys in lock-delay, until when (log time). */
  readonly delays = new Map<string, number>();
  /** Decisions about waiters by entry index and request: the canonical acquire result a waiting call of
   *  that request is answered with (checkAck). */
  private readonly decisions = new Map<number, Map<string, string>>();
  private readonly keyIndex = new Map<string, number>();
  private readonly leases = new Map<string, OracleLease>();
  readonly sessions = new Map<number, OracleSession>();
  /** Keys the entry being judged changed as the model expects (beyond its own key). */
  readonly touched = new Set<string>();
  readonly lastIssued = new Map<string, bigint>();
  private readonly dedup = new Map<string, OracleDedup>();
  /** Dedup records in insertion (= log time) order, for pruning like the machine's window. */
  private dedupQueue: OracleDedup[] = [];
  /** From cluster level 6: an acquire's record outlives the window while its owner holds the key. */
  private keepAcquiresWhileHeld = false;
  /** From cluster level 6: an acquire's record names its terms (session, limit, mode); a copy under the same
   *  request id with other terms is refused as a whole (REQUEST_ID_REUSED). */
  private acquireTermsKept = false;
  /** The decisions the model expects of the entry being judged (compared with its `decided`). */
  private expectDecided: string[] = [];
  /** Canonical result of every lock entry, by index (for checkAck). */
  private readonly results: (string | undefined)[] = [];

  constructor(
    readonly keys: readonly string[],
    readonly maxDrift: number,
    readonly dedupWindowMs: number,
    /** The structural extension check at epoch starts (see LockProfile.oracleChecksExtension). */
    readonly checksExtension = true,
  ) {
    keys.forEach((k, i) => this.keyIndex.set(k, i));
    this.groups = new GroupOracle(this, keys);
  }

  /** Keys with many holds (lock-oracle-groups.ts). */
  readonly groups: GroupOracle;

  /** The key's mutex lease, if any (GroupHost). */
  leaseOf(key: string): OracleLease | undefined {
    return this.leases.get(key);
  }

  resultAt(index: number): string | undefined {
    return this.results[index];
  }

  /** The answer entry `index` gave a waiting request (owner, request_id), as a canonical acquire result. */
  decisionAt(index: number, owner: string, requestId: string): string | undefined {
    return this.decisions.get(index)?.get(dedupId(owner, requestId));
  }

  /** The model's hold of `key` (maybe past its deadline): its grant, TTL and session (lock-max-hold.ts). */
  holdOf(key: string): HoldView | undefined {
    return this.leases.get(key);
  }

  /** Current holder as the oracle tracks it (lease present in the machine; maybe past its deadline). */
  holder(key: string): { owner: string; token: bigint } | null {
    const l = this.leases.get(key);
    return l === undefined ? null : { owner: l.owner, token: l.token };
  }

  /** A raft noop/config entry: nothing to judge. */
  passNonCommand(index: number): void {
    if (index === this.next) this.next++;
  }

  judge(
    entry: Entry,
    cmd: LockCommand | null,
    result: LockResult,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow | undefined,
  ): void {
    const idx = entry.index;
    this.next = idx + 1;
    this.results[idx] = canonicalResult(result);
    if (this.violation !== null) return;
    this.expectDecided = [];
    const at = `entry ${idx}/t${entry.term}`;
    if (cmd === null)
      return this.fail(`${at} does not decode as a lock command (${canonicalResult(result)}); every simulated proposal is well-formed`);
    if (stamp === undefined) return this.fail(`${at} (${cmd.type}) was never stamped by a leader of term ${entry.term} in this run`);
    this.touched.clear();
    this.groups.noteBefore(pre.nowMs);
    // Log time: max(previous, stamp) at a term's first entry and, at cluster level 1, at every entry; from
    // level 2, within a term, the previous log time plus the stamp's progress past the term's last stamp
    // (so a slow-clocked leader after a fast one still moves log time on; issue 22).
    const progress = this.clusterLevel >= 2 && entry.term <= pre.epochTerm;
    const expectNow = progress ? pre.nowMs + Math.max(0, cmd.timeMs - this.termLastStampMs) : Math.max(pre.nowMs, cmd.timeMs);
    if (post.nowMs !== expectNow) {
      const rule = progress
        ? `previous ${pre.nowMs} + the stamp's progress past the term's last stamp ${this.termLastStampMs}`
        : `max(previous ${pre.nowMs}, stamp)`;
      return this.fail(
        `log time: after ${at} (${cmd.type} stamped ${cmd.timeMs}) log time is ${post.nowMs}, expected ${rule} = ${expectNow} — the machine must use the leader's stamps, never a local clock`,
      );
    }
    if (this.clusterLevel >= 2) this.termLastStampMs = progress ? Math.max(this.termLastStampMs, cmd.timeMs) : cmd.timeMs;
    // The dedup rules of the level in force before this entry (a clusterLevel entry raises it after itself).
    this.keepAcquiresWhileHeld = this.clusterLevel >= 6;
    this.acquireTermsKept = this.clusterLevel >= 6;
    if (cmd.type === 'clusterLevel' && cmd.level > this.clusterLevel) {
      this.clusterLevel = cmd.level;
      this.termLastStampMs = cmd.timeMs;
      this.stats.clusterLevel = cmd.level;
      if (this.stats.levelRaisedAt === 0) this.stats.levelRaisedAt = idx;
    }
    // The machine forgets what the window lets go at every entry, before anything else (a term start first
    // ends what it ends: pruned again below, after it); the early returns here must see the same table.
    if (cmd.type !== 'termStart') this.pruneDedup(post.nowMs);
    if (result.type === 'error' && result.code === 'SESSION_NOT_OPEN' && cmd.type === 'acquire' && (cmd.sessionId ?? 0) > 0)
      return this.judgeSessionNotOpen(at, cmd, pre, post);
    if (result.type === 'error' && result.code === 'REQUEST_ID_REUSED' && cmd.type === 'acquire')
      return this.judgeReused(at, cmd, pre, post);
    // Refused as a whole by the rules of many holds: the model says whether it should have been.
    const groupRefusal =
      result.type === 'error' && cmd.type === 'acquire' && (result.code === 'LIMIT_MISMATCH' || result.code === 'HOLD_MODE_MISMATCH');
    if (result.type === 'error' && !groupRefusal) return this.fail(`${at} ${cmd.type} failed as a whole: ${result.code} ${result.message}`);
    const epochStart = post.epochTerm !== pre.epochTerm;
    if (epochStart) {
      if (post.epochTerm !== entry.term || entry.term < pre.epochTerm)
        return this.fail(`${at}: lease epoch moved from term ${pre.epochTerm} to ${post.epochTerm}`);
      if (cmd.type !== 'termStart') {
        return this.fail(
          `${at}: the first lock entry of term ${entry.term} is a ${cmd.type}, not the leader's termStart — a leader stamped a command before its term-start entry applied`,
        );
      }
      if (post.epochStartMs !== post.nowMs) return this.fail(`${at}: epoch start ${post.epochStartMs} differs from log time ${post.nowMs}`);
      this.carryLeases(at, idx, pre, post, stamp);
      // From level 6 a lock-delay still running at P is carried across the jump to T by T - P, like a live
      // lease (key-delays.ts carryOver); one that had passed by P is left to its undelay entry.
      if (this.clusterLevel >= 6) this.carryDelays(pre.nowMs, post.epochStartMs);
    } else if (entry.term > pre.epochTerm) {
      return this.fail(`${at}: first entry of a higher term did not start a lease epoch (epoch term stays ${pre.epochTerm})`);
    }
    if (this.violation !== null) return;
    // Forget what the window lets go, as the machine does at every entry, after a term start ended what it
    // ends and before the command: from level 6 whether an acquire's record stays depends on the holds then.
    this.pruneDedup(post.nowMs);
    // The named invariants of many holds look at what the machine did, before the model says what it should.
    this.groups.checkGrants(at, idx, cmd, result, post.nowMs);
    this.groups.checkCounts(at, post);
    this.checkRevokedToken(at, cmd, result);
    if (this.violation !== null) return;
    switch (cmd.type) {
      case 'acquire':
        if (result.type !== 'acquire' && !groupRefusal) return this.fail(`${at}: acquire produced a ${result.type} result`);
        this.judgeAcquire(at, idx, cmd, result as Extract<LockResult, { type: 'acquire' | 'error' }>, pre, post, stamp);
        break;
      case 'renew':
        if (result.type !== 'renew') return this.fail(`${at}: renew produced a ${result.type} result`);
        if (this.groups.has(cmd.key) && !result.replayed) {
          this.pruneDedup(post.nowMs);
          this.mustBeFresh(at, cmd.owner, cmd.requestId, 'renew', cmd.key, cmd.token);
          this.groups.judgeRenew(at, idx, cmd, result, post.nowMs, stamp);
        } else this.judgeRenew(at, idx, cmd, result, pre, post, stamp);
        break;
      case 'renews':
        if (result.type !== 'renews') return this.fail(`${at}: renews produced a ${result.type} result`);
        this.judgeRenews(at, idx, cmd, result, pre, post, stamp);
        break;
      case 'release':
        if (result.type !== 'release') return this.fail(`${at}: release produced a ${result.type} result`);
        if (this.groups.has(cmd.key) && !result.replayed) {
          this.pruneDedup(post.nowMs);
          this.mustBeFresh(at, cmd.owner, cmd.requestId, 'release', cmd.key, cmd.token);
          this.groups.judgeRelease(at, idx, cmd, result, post.nowMs, stamp);
        } else {
          this.judgeRelease(at, idx, cmd, result, pre, post, stamp);
        }
        break;
      case 'expire':
        if (result.type !== 'expire') return this.fail(`${at}: expire produced a ${result.type} result`);
        if (this.groups.has(cmd.key)) this.groups.judgeExpire(at, idx, cmd, result.expired, post.nowMs, stamp);
        else this.judgeExpire(at, idx, cmd, result.expired, pre, post, stamp);
        break;
      case 'revoke':
        if (result.type !== 'revoke') return this.fail(`${at}: revoke produced a ${result.type} result`);
        this.judgeRevoke(at, idx, cmd, result, pre, post, stamp);
        break;
      case 'handOff':
        if (result.type !== 'handOff') return this.fail(`${at}: handOff produced a ${result.type} result`);
        this.groups.judgeHandOffEntry(at, idx, cmd, result, post.nowMs, stamp);
        break;
      case 'clusterLevel':
        if (result.type !== 'clusterLevel' || result.level !== this.clusterLevel)
          return this.fail(`${at}: clusterLevel ${cmd.level} produced ${canonicalResult(result)}; the log's level is ${this.clusterLevel}`);
        if (post.leaseCount !== pre.leaseCount)
          this.fail(`${at}: ${cmd.type} changed the number of leases ${pre.leaseCount} -> ${post.leaseCount}`);
        break;
      case 'memberRan': {
        const recorded = this.clusterLevel >= 2 && !this.ranMembers.has(cmd.memberId);
        if (recorded) this.ranMembers.add(cmd.memberId);
        if (result.type !== 'memberRan' || result.recorded !== recorded)
          return this.fail(
            `${at}: memberRan ${cmd.memberId} produced ${canonicalResult(result)}; expected recorded=${recorded} (level ${this.clusterLevel})`,
          );
        if (post.leaseCount !== pre.leaseCount)
          this.fail(`${at}: ${cmd.type} changed the number of leases ${pre.leaseCount} -> ${post.leaseCount}`);
        break;
      }
      case 'termStart':
      case 'checkpoint':
        if (post.leaseCount !== pre.leaseCount)
          this.fail(`${at}: ${cmd.type} changed the number of leases ${pre.leaseCount} -> ${post.leaseCount}`);
        break;
      case 'dequeue':
        if (result.type !== 'dequeue') return this.fail(`${at}: dequeue produced a ${result.type} result`);
        this.judgeDequeue(at, idx, cmd, result, pre, post, stamp);
        break;
      case 'undelay':
        if (result.type !== 'undelay') return this.fail(`${at}: undelay produced a ${result.type} result`);
        this.judgeUndelay(at, idx, cmd, result, pre, post, stamp);
        break;
      case 'openSession':
        if (result.type !== 'openSession') return this.fail(`${at}: openSession produced a ${result.type} result`);
        this.judgeOpenSession(at, idx, cmd, result, post, stamp);
        break;
      case 'renewSession':
        if (result.type !== 'renewSession') return this.fail(`${at}: renewSession produced a ${result.type} result`);
        this.judgeRenewSession(at, idx, cmd, result, post, stamp);
        break;
      case 'closeSession':
      case 'expireSession':
        if (result.type !== cmd.type) return this.fail(`${at}: ${cmd.type} produced a ${result.type} result`);
        this.judgeSessionEnd(at, idx, cmd, result as Extract<LockResult, { type: 'closeSession' | 'expireSession' }>, post, stamp);
        break;
      case 'forget':
        // Forgetting free keys touches no lease, and a last token may only rise to the watermark (SPEC:
        // last_token is never below the real value).
        if (post.leaseCount !== pre.leaseCount)
          return this.fail(`${at}: forget changed the number of leases ${pre.leaseCount} -> ${post.leaseCount}`);
        for (let i = 0; i < this.keys.length; i++) {
          const pv = pre.views[i]!;
          const qv = post.views[i]!;
          if (qv.lastToken < pv.lastToken || qv.held !== pv.held || qv.token !== pv.token || qv.owner !== pv.owner)
            return this.fail(`${at}: forget changed ${this.keys[i]}: ${viewText(pv)} -> ${viewText(qv)}`);
        }
        return;
    }
    this.groups.checkDelayAfter(at, post.nowMs);
    if (cmd.type === 'revoke' && result.type === 'revoke' && !result.replayed) this.checkRevokeServed(at, cmd.key, result, post);
    if (this.violation !== null) return;
    const got = (result.decided ?? []).map(decisionText).join(' ; ');
    const want = this.expectDecided.join(' ; ');
    if (got !== want) return this.fail(`wait line: ${at} (${cmd.type}) decided [${got}], but the line's order and deadlines say [${want}]`);
    this.groups.checkViews(at, post);
    if (this.violation !== null) return;
    const modelled = this.leases.size + this.groups.holdCount();
    if (post.leaseCount !== modelled)
      return this.fail(
        `${at} (${cmd.type}) left ${post.leaseCount} leases (holds of many included); the model has ${modelled}: [${[...this.leases.keys()].join(',')}] + ${this.groups.holdCount()} of many`,
      );
    if (post.sessions.size !== this.sessions.size && (post.sessions.size > 0 || pre.sessions.size > 0)) {
      return this.fail(`${at} (${cmd.type}) left ${post.sessions.size} sessions open; the model has ${this.sessions.size}`);
    }
    if (epochStart) return;
    // Entries touch only their own key (and what the model says they touched: a session's holds); time
    // passing may end other leases, never change them.
    const own = 'key' in cmd ? cmd.key : null;
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] === own || this.touched.has(this.keys[i]!)) continue;
      this.sameLock(`${at} (${cmd.type}${own === null ? '' : ' of ' + own}) on other key`, this.keys[i]!, pre.views[i]!, post.views[i]!);
    }
  }

  // ------------------------------------------------------------------ per command

  private judgeAcquire(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'acquire' }>,
    result: Extract<LockResult, { type: 'acquire' | 'error' }>,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const k = this.slot(at, cmd.key);
    if (k < 0) return;
    const pv = pre.views[k]!;
    const qv = post.views[k]!;
    let lease = this.leases.get(cmd.key);
    this.pruneDedup(post.nowMs);
    const line = this.lines.get(cmd.key) ?? [];
    const inLine = cmd.requestId === '' ? undefined : this.waiterOf(cmd.owner, cmd.requestId);
    const many = (cmd.limit ?? 1) > 1 || cmd.shared === true || this.groups.has(cmd.key);
    if (result.type === 'error' && (!many || inLine !== undefined))
      return this.fail(
        `${at}: acquire of ${cmd.key} by ${cmd.owner} failed as a whole (${result.code}), but ${inLine !== undefined ? 'it waits in line: a retry re-attaches' : 'it is a plain acquire of a key with one hold'}`,
      );
    const r = result as Extract<LockResult, { type: 'acquire' }>;
    if (result.type === 'acquire' && r.replayed && r.waitTicket !== undefined) {
      // A retry of a request in line: the same place, nothing changed.
      this.stats.waitersReattached++;
      if (inLine === undefined || inLine.key !== cmd.key || inLine.w.ticket !== r.waitTicket) {
        return this.fail(
          `wait line: ${at} re-attached ${cmd.owner}/${cmd.requestId} to ticket ${r.waitTicket} of ${cmd.key}, but the line has it ${inLine === undefined ? 'nowhere' : `at ${inLine.key}#${inLine.w.ticket}`}`,
        );
      }
      return this.unchanged(at, cmd.key, pv, qv, pre, post);
    }
    if (result.type === 'acquire' && r.replayed)
      return this.judgeReplay(at, cmd.owner, cmd.requestId, 'acquire', cmd.key, this.acquireTerms(cmd), acquireOutcome(r), pre, post, k);
    if (inLine !== undefined)
      return this.fail(
        `wait line: ${at} judged ${cmd.owner}/${cmd.requestId} afresh while it waits at ${inLine.key}#${inLine.w.ticket}: a retry must keep its place`,
      );
    // Only a queued acquire (the leader serving the head waiter) may re-judge a remembered refusal.
    this.mustBeFresh(at, cmd.owner, cmd.requestId, 'acquire', cmd.key, this.acquireTerms(cmd), cmd.queued === true);
    const sid = cmd.sessionId ?? 0;
    const session = sid > 0 ? this.sessions.get(sid) : undefined;
    if (sid > 0 && (session === undefined || session.deadlineMs <= post.nowMs)) {
      return this.fail(
        `sessions: ${at} judged an acquire under session ${sid}, which the model has ${session === undefined ? 'ended or never opened' : `run out at ${session.deadlineMs} <= log time ${post.nowMs}`} (SESSION_NOT_OPEN expected)`,
      );
    }
    if (session !== undefined && session.owner !== cmd.owner)
      return this.fail(`sessions: ${at} let ${cmd.owner} acquire under ${session.owner}'s session ${sid}`);
    if (many) return this.groups.judgeAcquire(at, idx, cmd, result, post.nowMs, stamp, session);
    // A lock-delay that has passed without its undelay entry: this entry ends it, and serves the line first.
    let handedOff = false;
    const hadLease = lease !== undefined;
    const until = this.delays.get(cmd.key);
    if (until !== undefined && until <= post.nowMs) {
      this.delays.delete(cmd.key);
      if (lease === undefined) {
        this.handOff(cmd.key, idx, post.nowMs, stamp);
        lease = this.leases.get(cmd.key);
        handedOff = true;
        // The line's head asked shared: the key now has many holds, and this acquire meets them.
        if (this.groups.has(cmd.key)) return this.groups.judgeAcquire(at, idx, cmd, result, post.nowMs, stamp, session);
      }
    }
    // A hold under a session that ran out: this entry ends the whole session first (every key of it).
    let sessionEnded = false;
    if (!handedOff && lease?.session !== undefined && lease.session.deadlineMs <= post.nowMs) {
      this.minHold(at, cmd.key, lease, stamp, `found run out by ${cmd.owner}'s acquire, which ended its session`);
      this.endSession(lease.session, true, idx, post.nowMs, stamp);
      lease = this.leases.get(cmd.key);
      handedOff = true;
      sessionEnded = true;
      if (this.groups.has(cmd.key)) return this.groups.judgeAcquire(at, idx, cmd, result, post.nowMs, stamp, session);
    }
    // A hold past its deadline with a line behind it: this entry ends it and hands the key on first.
    if (!handedOff && lease !== undefined && (line.length > 0 || lease.lockDelayMs > 0) && !(pv.held && pv.expiresAtMs > post.nowMs)) {
      this.stats.takeovers++;
      this.minHold(at, cmd.key, lease, stamp, `ended by ${cmd.owner}'s acquire, which handed the key to the line`);
      this.endExpired(cmd.key, lease);
      this.handOff(cmd.key, idx, post.nowMs, stamp);
      lease = this.leases.get(cmd.key);
      handedOff = true;
      if (this.groups.has(cmd.key)) return this.groups.judgeAcquire(at, idx, cmd, result, post.nowMs, stamp, session);
    }
    const liveHolder = handedOff ? lease !== undefined : pv.held && pv.expiresAtMs > post.nowMs;
    const delayLeftMs = Math.max(0, (this.delays.get(cmd.key) ?? 0) - post.nowMs);
    // From level 4 the owner's own hold under another session blocks too (versions.ts).
    const otherSession = this.supersedeSameSessionOnly && (lease?.session?.id ?? 0) !== sid;
    if (r.acquired) {
      this.stats.acquired++;
      if (lease !== undefined && liveHolder && lease.owner === cmd.owner && otherSession) {
        return this.fail(
          `one hold per session: ${at} superseded ${cmd.owner}'s live hold of ${cmd.key} (token ${lease.token}, session ${lease.session?.id ?? 'none'}) by a request under session ${sid || 'none'} (cluster level ${this.clusterLevel})`,
        );
      }
      if (delayLeftMs > 0)
        return this.fail(
          `lock-delay: ${at} granted ${cmd.key} to ${cmd.owner} with ${delayLeftMs}ms of its lock-delay left (until ${this.delays.get(cmd.key)}, log time ${post.nowMs})`,
        );
      const last = this.lastIssued.get(cmd.key) ?? 0n;
      if (r.token <= last)
        return this.fail(
          `fencing token: ${at} acquire of ${cmd.key} by ${cmd.owner} issued token ${r.token}, not above ${last} issued before for that key (tokens must strictly increase and never be reused)`,
        );
      if (lease !== undefined && lease.owner !== cmd.owner) {
        // Another owner's lease is taken over: it must have run out — in log time and in true time.
        if (liveHolder) {
          return this.fail(
            `one holder per key: ${at} granted ${cmd.key} to ${cmd.owner} while ${lease.owner}'s lease (token ${lease.token}) runs until ${pv.expiresAtMs} > log time ${post.nowMs}`,
          );
        }
        this.stats.takeovers++;
        this.minHold(at, cmd.key, lease, stamp, `taken over by ${cmd.owner}'s acquire`);
      }
      const [ttlMs, untilMs] = session !== undefined ? [session.ttlMs, session.deadlineMs] : [cmd.ttlMs, post.nowMs + cmd.ttlMs];
      if (r.ttlMs !== ttlMs || r.expiresAtMs !== untilMs) {
        return this.fail(
          `${at}: acquire granted ttl ${r.ttlMs} until ${r.expiresAtMs}; expected ttl ${ttlMs} until ${untilMs}${session !== undefined ? ` (session ${sid}'s)` : ''}`,
        );
      }
      if (!qv.held || qv.owner !== cmd.owner || qv.token !== r.token || qv.expiresAtMs !== r.expiresAtMs || qv.lastToken !== r.token) {
        return this.fail(
          `${at}: acquire of ${cmd.key} answered token ${r.token} to ${cmd.owner}, but the state then shows ${viewText(qv)}`,
        );
      }
      // Leases before this grant: the entry may have ended a hold and handed the key over first.
      const countBefore = pre.leaseCount - (hadLease ? 1 : 0) + (lease !== undefined ? 1 : 0);
      const expectCount = countBefore + (lease === undefined ? 1 : 0);
      if (!sessionEnded && post.leaseCount !== expectCount)
        return this.fail(`${at}: acquire left ${post.leaseCount} leases, expected ${expectCount}`);
      this.setLease(
        cmd.key,
        {
          owner: cmd.owner,
          token: r.token,
          ttlMs,
          grantIndex: idx,
          grantAt: stamp,
          epochs: 0,
          deadlineMs: r.expiresAtMs,
          lockDelayMs: (cmd.lockDelayMs ?? 0) || (session?.lockDelayMs ?? 0),
        },
        session,
      );
      this.lastIssued.set(cmd.key, r.token);
      this.remember(cmd.owner, cmd.requestId, 'acquire', cmd.key, this.acquireTerms(cmd), acquireOutcome(r), idx, post.nowMs);
      return;
    }
    // Refused: held by another owner's live lease — or by a waiter granted in this very entry (its token is
    // this index, which a same-owner supersede would reuse).
    if (delayLeftMs > 0) {
      // In lock-delay: nobody holds the key, and the refusal says how long is left.
      if (lease !== undefined || qv.held || r.holderOwner !== '' || r.delayMsLeft !== delayLeftMs) {
        return this.fail(
          `lock-delay: ${at} refused ${cmd.owner} on ${cmd.key} (holder '${r.holderOwner}', delay left ${String(r.delayMsLeft)}), but the model has the key in lock-delay for ${delayLeftMs}ms more with ${lease === undefined ? 'no holder' : `holder ${lease.owner}`}`,
        );
      }
      this.stats.delayRefusals++;
      if (!handedOff) this.unchanged(at, cmd.key, pv, qv, pre, post);
      return this.refusedOrQueued(at, idx, cmd, r, post);
    }
    if (r.delayMsLeft !== undefined)
      return this.fail(
        `lock-delay: ${at} refused ${cmd.owner} on ${cmd.key} with ${r.delayMsLeft}ms of lock-delay left, but the model has no delay there`,
      );
    const blocking = lease !== undefined && liveHolder && (lease.owner !== cmd.owner || lease.token === BigInt(idx) || otherSession);
    if (!blocking || lease === undefined || !qv.held || qv.owner !== lease.owner) {
      return this.fail(
        `${at}: acquire of ${cmd.key} by ${cmd.owner} refused (holder '${r.holderOwner}'), but the lock was ${lease === undefined ? 'free' : `${lease.owner}'s (token ${lease.token}), state ${viewText(qv)}`} — only another owner's live lease refuses`,
      );
    }
    if (r.holderOwner !== lease.owner || r.holderTtlMs !== qv.expiresAtMs - post.nowMs) {
      return this.fail(
        `${at}: refused acquire names holder ${r.holderOwner} with ${r.holderTtlMs}ms left; the state says ${viewText(qv)} at log time ${post.nowMs}`,
      );
    }
    if (!handedOff) this.unchanged(at, cmd.key, pv, qv, pre, post);
    this.refusedOrQueued(at, idx, cmd, r, post);
  }

  /** A refused acquire: in line (a blocking one, no outcome yet) or refused and remembered. */
  private refusedOrQueued(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'acquire' }>,
    r: Extract<LockResult, { type: 'acquire' }>,
    post: StateCapture,
  ): void {
    if ((cmd.waitMs ?? 0) > 0) {
      if (r.waitTicket !== idx)
        return this.fail(
          `wait line: ${at} refused a blocking acquire of ${cmd.key} by ${cmd.owner} (wait ${cmd.waitMs}ms) with ticket ${String(r.waitTicket)}: it must join the line with ticket ${idx}`,
        );
      this.stats.waitersJoined++;
      if (!this.lines.has(cmd.key)) this.lines.set(cmd.key, []);
      this.lines.get(cmd.key)!.push({
        ticket: idx,
        owner: cmd.owner,
        requestId: cmd.requestId,
        ttlMs: cmd.ttlMs,
        deadlineMs: post.nowMs + cmd.waitMs!,
        lockDelayMs: cmd.lockDelayMs ?? 0,
        sessionId: cmd.sessionId ?? 0,
        limit: 1,
        shared: false,
      });
      return; // in line: no outcome yet, nothing remembered
    }
    if (r.waitTicket !== undefined) return this.fail(`wait line: ${at} put a non-blocking acquire in line (ticket ${r.waitTicket})`);
    this.stats.acquireRefused++;
    // Refusals are first outcomes too: a retry or late duplicate must get the refusal back.
    this.remember(cmd.owner, cmd.requestId, 'acquire', cmd.key, this.acquireTerms(cmd), acquireOutcome(r), idx, post.nowMs);
  }

  /** `key`'s hold ended in entry `idx`: the model's hand-off, recorded in expectDecided. */
  handOff(key: string, idx: number, nowMs: number, stamp: StampWindow): void {
    if ((this.delays.get(key) ?? 0) > nowMs) return; // in lock-delay: the line waits for undelay
    if (this.groups.has(key)) return this.groups.handOffKey(key, idx, nowMs, stamp);
    const line = this.lines.get(key);
    while (line !== undefined && line.length > 0) {
      if (line[0]!.shared && !this.leases.has(key)) {
        // A shared request at the head of a mutex key's line (first, or behind heads refused just now): from
        // here the key has many holds, and it gets a shared one.
        this.groups.startFromLine(key);
        return this.groups.handOffKey(key, idx, nowMs, stamp);
      }
      const w = line.shift()!;
      if (line.length === 0) this.lines.delete(key);
      let outcome: string;
      const session = w.sessionId > 0 ? this.sessions.get(w.sessionId) : undefined;
      this.touched.add(key);
      if (w.deadlineMs <= nowMs || (w.sessionId > 0 && (session === undefined || session.deadlineMs <= nowMs))) {
        this.stats.waitsRefused++;
        outcome = 'false|0|0|0||0';
      } else {
        this.stats.handOffs++;
        const token = BigInt(idx);
        const last = this.lastIssued.get(key) ?? 0n;
        if (token <= last)
          return this.fail(`fencing token: entry ${idx} handed ${key} to ${w.owner} with token ${token}, not above ${last}`);
        const [ttlMs, untilMs] = session !== undefined ? [session.ttlMs, session.deadlineMs] : [w.ttlMs, nowMs + w.ttlMs];
        this.setLease(
          key,
          {
            owner: w.owner,
            token,
            ttlMs,
            grantIndex: idx,
            grantAt: stamp,
            epochs: 0,
            deadlineMs: untilMs,
            lockDelayMs: w.lockDelayMs || (session?.lockDelayMs ?? 0),
          },
          session,
        );
        this.lastIssued.set(key, token);
        outcome = `true|${token}|${ttlMs}|${untilMs}||0`;
      }
      this.decide(key, idx, w, outcome, false, nowMs);
      if (outcome.startsWith('true|')) return;
    }
  }

  decide(key: string, idx: number, w: OracleWaiter, outcome: string, cancelled: boolean, nowMs: number): void {
    this.expectDecided.push(`${key}#${w.ticket} ${w.owner}/${w.requestId} ${outcome}${cancelled ? ' cancelled' : ''}`);
    if (cancelled) return;
    this.remember(w.owner, w.requestId, 'acquire', key, this.acquireTerms(w), outcome, idx, nowMs);
    let at = this.decisions.get(idx);
    if (at === undefined) this.decisions.set(idx, (at = new Map()));
    at.set(dedupId(w.owner, w.requestId), `acquire@${idx}|${outcome}`);
  }

  private waiterOf(owner: string, requestId: string): { key: string; w: OracleWaiter } | undefined {
    for (const [key, line] of this.lines) {
      const w = line.find((x) => x.owner === owner && x.requestId === requestId);
      if (w !== undefined) return { key, w };
    }
    return undefined;
  }

  /** `lease` of `key` ran out and an entry ends it: its lock-delay (if any) starts from its end (its
   *  session's end, for a session hold). */
  endExpired(key: string, lease: OracleLease): void {
    this.dropLease(key);
    if (lease.lockDelayMs > 0) {
      this.stats.delaysStarted++;
      this.delays.set(key, (lease.session ?? lease).deadlineMs + lease.lockDelayMs);
    }
  }

  /** `key` is held by `lease` now (under `session` when given); a hold it replaces leaves its session. */
  private setLease(key: string, lease: OracleLease, session?: OracleSession): void {
    this.dropLease(key);
    if (session !== undefined) {
      lease.session = session;
      session.holds.add(key);
    }
    this.leases.set(key, lease);
  }

  private dropLease(key: string): void {
    const old = this.leases.get(key);
    old?.session?.holds.delete(key);
    this.leases.delete(key);
  }

  // ------------------------------------------------------------------ sessions

  /** `s` ends in entry `idx`: its waiters leave refused (ticket order), then its holds go (into their
   *  lock-delays when `expired`), in key order, each key handed to its line. Returns the keys released. */
  endSession(s: OracleSession, expired: boolean, idx: number, nowMs: number, stamp: StampWindow): string[] {
    const waiters: { key: string; w: OracleWaiter }[] = [];
    for (const [key, line] of this.lines) for (const w of line) if (w.sessionId === s.id) waiters.push({ key, w });
    waiters.sort((a, b) => a.w.ticket - b.w.ticket);
    for (const { key, w } of waiters) {
      const line = this.lines.get(key)!;
      line.splice(line.indexOf(w), 1);
      if (line.length === 0) this.lines.delete(key);
      const holder = this.leases.get(key);
      const untilMs = holder === undefined ? 0 : (holder.session ?? holder).deadlineMs;
      const live = holder !== undefined && untilMs > nowMs;
      this.stats.waitsRefused++;
      this.touched.add(key);
      this.decide(key, idx, w, `false|0|0|0|${live ? holder.owner : ''}|${live ? untilMs - nowMs : 0}`, false, nowMs);
    }
    // A group's line that lost a waiter is served (the ones behind an exclusive waiter may fit now), and a
    // group left with neither holds nor waiters is a free key again — in the order the keys' first waiters
    // had, as the machine does.
    for (const key of new Set(waiters.map((x) => x.key))) if (this.groups.has(key)) this.groups.handOffKey(key, idx, nowMs, stamp);
    const keys = [...s.holds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const key of keys) {
      const lease = this.leases.get(key)!;
      this.touched.add(key);
      if (expired) this.endExpired(key, lease);
      else this.dropLease(key);
      this.handOff(key, idx, nowMs, stamp);
    }
    keys.push(...this.groups.endSessionHolds(`entry ${idx}`, s, expired, idx, nowMs, stamp));
    this.sessions.delete(s.id);
    this.stats.sessionsEnded++;
    return keys;
  }

  private judgeSessionNotOpen(at: string, cmd: Extract<LockCommand, { type: 'acquire' }>, pre: StateCapture, post: StateCapture): void {
    const s = this.sessions.get(cmd.sessionId!);
    if (s !== undefined && s.deadlineMs > post.nowMs)
      return this.fail(
        `sessions: ${at} refused ${cmd.owner}'s acquire of ${cmd.key} as SESSION_NOT_OPEN, but session ${cmd.sessionId} lives until ${s.deadlineMs} > log time ${post.nowMs}`,
      );
    this.stats.sessionRefusals++;
    if (post.leaseCount !== pre.leaseCount) return this.fail(`${at}: a refused acquire changed the number of leases`);
    for (let i = 0; i < this.keys.length; i++)
      this.sameLock(`${at} (refused: session not open)`, this.keys[i]!, pre.views[i]!, post.views[i]!);
  }

  private judgeOpenSession(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'openSession' }>,
    r: Extract<LockResult, { type: 'openSession' }>,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    if (cmd.requestId !== '') {
      const earlier = [...this.sessions.values()].find((s) => s.owner === cmd.owner && s.requestId === cmd.requestId);
      if (earlier !== undefined) {
        if (!r.replayed || r.sessionId !== BigInt(earlier.id) || r.expiresAtMs !== earlier.deadlineMs) {
          return this.fail(
            `sessions: ${at} answered a retry of ${cmd.owner}/${cmd.requestId} with session ${r.sessionId}${r.replayed ? ' (replayed)' : ''}, but session ${earlier.id} (until ${earlier.deadlineMs}) is the one it opened`,
          );
        }
        return;
      }
    }
    if (r.replayed || r.sessionId !== BigInt(idx) || r.ttlMs !== cmd.ttlMs || r.expiresAtMs !== post.nowMs + cmd.ttlMs) {
      return this.fail(
        `sessions: ${at} opened session ${r.sessionId}${r.replayed ? ' (replayed)' : ''} ttl ${r.ttlMs} until ${r.expiresAtMs}; expected a new session ${idx} until ${post.nowMs + cmd.ttlMs}`,
      );
    }
    this.stats.sessionsOpened++;
    this.sessions.set(idx, {
      id: idx,
      owner: cmd.owner,
      token: BigInt(idx),
      ttlMs: cmd.ttlMs,
      grantIndex: idx,
      grantAt: stamp,
      epochs: 0,
      deadlineMs: r.expiresAtMs,
      lockDelayMs: cmd.lockDelayMs,
      requestId: cmd.requestId,
      holds: new Set(),
    });
  }

  private judgeRenewSession(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'renewSession' }>,
    r: Extract<LockResult, { type: 'renewSession' }>,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const s = this.sessions.get(cmd.sessionId);
    const expected =
      s === undefined
        ? 'NOT_HELD'
        : cmd.owner !== '' && cmd.owner !== s.owner
          ? 'WRONG_OWNER'
          : s.deadlineMs <= post.nowMs
            ? 'EXPIRED'
            : 'UNSPECIFIED';
    if (r.reason !== expected || r.renewed !== (expected === 'UNSPECIFIED')) {
      return this.fail(
        `sessions: ${at} renew of session ${cmd.sessionId} answered ${r.renewed ? 'renewed' : r.reason}; the model says ${expected === 'UNSPECIFIED' ? 'renewed' : expected}${s === undefined ? '' : ` (until ${s.deadlineMs}, log time ${post.nowMs})`}`,
      );
    }
    if (expected === 'EXPIRED') this.minHold(at, `session ${cmd.sessionId}`, s!, stamp, 'judged run out by its renew');
    if (!r.renewed) return;
    this.stats.sessionsRenewed++;
    if (r.expiresAtMs !== post.nowMs + s!.ttlMs)
      return this.fail(`sessions: ${at} renewed session ${cmd.sessionId} until ${r.expiresAtMs}; expected ${post.nowMs + s!.ttlMs}`);
    Object.assign(s!, { grantAt: stamp, grantIndex: idx, epochs: 0, deadlineMs: r.expiresAtMs });
    for (const key of s!.holds) {
      this.touched.add(key);
      const qv = post.views[this.keyIndex.get(key)!]!;
      if (!qv.held || qv.expiresAtMs !== r.expiresAtMs)
        return this.fail(
          `sessions: after ${at} ${key} (held under session ${cmd.sessionId}) shows ${viewText(qv)}, not the session's new deadline ${r.expiresAtMs}`,
        );
    }
  }

  private judgeSessionEnd(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'closeSession' | 'expireSession' }>,
    r: Extract<LockResult, { type: 'closeSession' | 'expireSession' }>,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const s = this.sessions.get(cmd.sessionId);
    this.pruneDedup(post.nowMs);
    let ends: boolean;
    let reason = 'UNSPECIFIED';
    if (s === undefined) {
      ends = false;
      reason = 'NOT_HELD';
    } else if (cmd.type === 'closeSession') {
      ends = cmd.owner === '' || cmd.owner === s.owner;
      if (!ends) reason = 'WRONG_OWNER';
    } else {
      ends = s.deadlineMs <= post.nowMs;
    }
    if (r.ended !== ends || r.reason !== reason) {
      return this.fail(
        `sessions: ${at} ${cmd.type} of session ${cmd.sessionId} answered ended=${r.ended} (${r.reason}); the model says ${ends} (${reason})${s === undefined ? '' : ` (until ${s.deadlineMs}, log time ${post.nowMs})`}`,
      );
    }
    if (!ends) return;
    const expired = this.endsExpired(s!, post.nowMs, cmd.type === 'expireSession');
    if (expired)
      this.minHold(
        at,
        `session ${cmd.sessionId}`,
        s!,
        stamp,
        cmd.type === 'expireSession' ? 'expired' : 'ended as expired by a late close',
      );
    const released = this.endSession(s!, expired, idx, post.nowMs, stamp);
    if (r.released.join(',') !== released.join(','))
      return this.fail(`sessions: ${at} released [${r.released.join(',')}]; the session held [${released.join(',')}]`);
    for (const key of released) {
      if (this.groups.has(key)) continue;
      const qv = post.views[this.keyIndex.get(key)!]!;
      const next = this.leases.get(key);
      const ok = next === undefined ? !qv.held : qv.held && qv.owner === next.owner && qv.token === next.token;
      if (!ok)
        return this.fail(
          `sessions: after ${at} ${key} shows ${viewText(qv)}; the model has it ${next === undefined ? 'free' : `${next.owner}'s (token ${next.token})`}`,
        );
    }
  }

  private judgeUndelay(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'undelay' }>,
    r: Extract<LockResult, { type: 'undelay' }>,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const k = this.slot(at, cmd.key);
    if (k < 0) return;
    this.pruneDedup(post.nowMs);
    const until = this.delays.get(cmd.key);
    const due = until !== undefined && until <= post.nowMs;
    if (r.undelayed !== due)
      return this.fail(
        `lock-delay: ${at} undelay of ${cmd.key} answered ${r.undelayed}, but the model has ${until === undefined ? 'no delay' : `a delay until ${until}`} at log time ${post.nowMs}`,
      );
    if (!due) return this.unchanged(at, cmd.key, pre.views[k]!, post.views[k]!, pre, post);
    this.delays.delete(cmd.key);
    this.stats.undelays++;
    const group = this.groups.has(cmd.key);
    if (this.leases.has(cmd.key) && !group) return this.unchanged(at, cmd.key, pre.views[k]!, post.views[k]!, pre, post);
    this.handOff(cmd.key, idx, post.nowMs, stamp);
    // A group (before or after the hand-off): the group model checks its holds, run-out ones swept included.
    if (!group) this.endedAsModelledAfterDelay(at, cmd.key, post.views[k]!, pre, post);
  }

  /** After an undelay of a key nobody held: free, or held by the waiter the model handed it to. */
  private endedAsModelledAfterDelay(at: string, key: string, qv: LockView, pre: StateCapture, post: StateCapture): void {
    if (this.groups.has(key)) return;
    const next = this.leases.get(key);
    const ok =
      next === undefined
        ? !qv.held && post.leaseCount === pre.leaseCount
        : qv.held && qv.owner === next.owner && qv.token === next.token && post.leaseCount === pre.leaseCount + 1;
    if (!ok)
      this.fail(
        `${at}: undelay of ${key}${next === undefined ? '' : ` handed it to ${next.owner} (token ${next.token})`}, but the state shows ${viewText(qv)} with ${post.leaseCount} leases (before: ${pre.leaseCount})`,
      );
  }

  private judgeDequeue(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'dequeue' }>,
    r: Extract<LockResult, { type: 'dequeue' }>,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const k = this.slot(at, cmd.key);
    if (k < 0) return;
    this.pruneDedup(post.nowMs);
    const line = this.lines.get(cmd.key) ?? [];
    const pos = line.findIndex((w) => w.ticket === cmd.ticket);
    const w = line[pos];
    const due = w !== undefined && (cmd.cause === 'cancel' || w.deadlineMs <= post.nowMs);
    if (r.dequeued !== due) {
      return this.fail(
        `wait line: ${at} dequeue (${cmd.cause}) of ${cmd.key}#${cmd.ticket} answered ${r.dequeued}, but the waiter is ${w === undefined ? 'not in line' : `in line until ${w.deadlineMs} at log time ${post.nowMs}`}`,
      );
    }
    // (A group's next heads may be granted by this entry: the group model checks its holds.)
    if (!this.groups.has(cmd.key)) this.unchanged(at, cmd.key, pre.views[k]!, post.views[k]!, pre, post);
    if (!due) return;
    line.splice(pos, 1);
    if (line.length === 0) this.lines.delete(cmd.key);
    const qv = post.views[k]!;
    const group = this.groups.has(cmd.key);
    const live = !group && qv.held && qv.expiresAtMs > post.nowMs;
    const outcome = `false|0|0|0|${live ? qv.owner : ''}|${live ? qv.expiresAtMs - post.nowMs : 0}`;
    if (cmd.cause === 'cancel') this.stats.waitsCancelled++;
    else this.stats.waitsRefused++;
    this.decide(cmd.key, idx, w!, outcome, cmd.cause === 'cancel', post.nowMs);
    if (group) this.groups.afterDequeue(at, idx, cmd.key, post.nowMs, stamp);
  }

  private judgeRenew(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'renew' }>,
    r: Extract<LockResult, { type: 'renew' }>,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const k = this.slot(at, cmd.key);
    if (k < 0) return;
    const pv = pre.views[k]!;
    const qv = post.views[k]!;
    const lease = this.leases.get(cmd.key);
    this.pruneDedup(post.nowMs);
    if (r.replayed) return this.judgeReplay(at, cmd.owner, cmd.requestId, 'renew', cmd.key, cmd.token, renewOutcome(r), pre, post, k);
    this.mustBeFresh(at, cmd.owner, cmd.requestId, 'renew', cmd.key, cmd.token);
    const matches = lease !== undefined && lease.owner === cmd.owner && lease.token === cmd.token;
    const liveAtEntry = pv.held && pv.owner === cmd.owner && pv.token === cmd.token && pv.expiresAtMs > post.nowMs;
    if (r.renewed) {
      this.stats.renewed++;
      if (!matches)
        return this.fail(
          `controlled release: ${at} renewed ${cmd.key} for ${cmd.owner} token ${cmd.token}, but the lease is ${lease === undefined ? 'absent' : `${lease.owner}'s token ${lease.token}`}`,
        );
      if (!liveAtEntry) {
        return this.fail(
          `renew after expiry: ${at} renewed ${cmd.key} for ${cmd.owner} token ${cmd.token} at log time ${post.nowMs}, but the lease ${pv.held ? `ended at ${pv.expiresAtMs}` : 'had already expired'} (renew after expiry must fail)`,
        );
      }
      if (
        r.ttlMs !== cmd.ttlMs ||
        r.expiresAtMs !== post.nowMs + cmd.ttlMs ||
        !qv.held ||
        qv.token !== cmd.token ||
        qv.expiresAtMs !== r.expiresAtMs
      ) {
        return this.fail(
          `${at}: renew answered until ${r.expiresAtMs} (ttl ${r.ttlMs}); expected ${post.nowMs + cmd.ttlMs}; state ${viewText(qv)}`,
        );
      }
      if (post.leaseCount !== pre.leaseCount) return this.fail(`${at}: renew changed the number of leases`);
      lease.grantAt = stamp;
      lease.grantIndex = idx;
      lease.ttlMs = cmd.ttlMs;
      lease.epochs = 0;
      lease.deadlineMs = r.expiresAtMs;
      this.remember(cmd.owner, cmd.requestId, 'renew', cmd.key, cmd.token, renewOutcome(r), idx, post.nowMs);
      return;
    }
    this.stats.renewRefused++;
    const expected =
      lease === undefined
        ? 'NOT_HELD'
        : lease.owner !== cmd.owner
          ? 'WRONG_OWNER'
          : lease.token !== cmd.token
            ? 'WRONG_TOKEN'
            : liveAtEntry
              ? null
              : 'EXPIRED';
    if (expected === null)
      return this.fail(
        `${at}: renew of ${cmd.key} by its live holder ${cmd.owner} (token ${cmd.token}, until ${pv.expiresAtMs} > log time ${post.nowMs}) was refused ${r.reason}`,
      );
    if (r.reason !== expected)
      return this.fail(
        `${at}: renew of ${cmd.key} by ${cmd.owner} token ${cmd.token} refused ${r.reason}, expected ${expected} (lease: ${lease === undefined ? 'none' : `${lease.owner} token ${lease.token}`})`,
      );
    if (expected === 'EXPIRED') {
      this.stats.renewExpired++;
      this.minHold(at, cmd.key, lease!, stamp, 'judged expired by a renew');
    }
    this.unchanged(at, cmd.key, pv, qv, pre, post);
    this.remember(cmd.owner, cmd.requestId, 'renew', cmd.key, cmd.token, renewOutcome(r), idx, post.nowMs);
  }

  /** A `renews` entry (level 7): each renew judged as a lone renew without a request id at the entry's log
   *  time, in the entry's order — the state between them is the entry's state before it with the renews
   *  before applied (a key renewed twice) — and none remembered: a retry of one renews again. */
  private judgeRenews(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'renews' }>,
    r: Extract<LockResult, { type: 'renews' }>,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const n = cmd.renews.length;
    if (r.renews.length !== n) return this.fail(`${at}: a renews entry of ${n} renews answered ${r.renews.length}`);
    this.stats.renewsEntries++;
    this.stats.renewsInEntries += n;
    if (n > 1) this.stats.renewsShared += n;
    const lastOfKey = new Map<string, number>();
    cmd.renews.forEach((x, i) => lastOfKey.set(x.key, i));
    let views = pre.views;
    for (let i = 0; i < n; i++) {
      const item = cmd.renews[i]!;
      const answer = r.renews[i]!;
      const itemAt = `${at} renew ${i + 1}/${n}`;
      this.touched.add(item.key);
      if (answer.type !== 'renew') return this.fail(`${itemAt} of ${item.key} failed as a whole: ${canonicalResult(answer)}`);
      if (answer.index !== idx || answer.replayed)
        return this.fail(`${itemAt} answered ${canonicalResult(answer)}: not this entry's own outcome`);
      const lone: Extract<LockCommand, { type: 'renew' }> = { type: 'renew', timeMs: cmd.timeMs, ...item, requestId: '' };
      this.checkRevokedToken(itemAt, lone, answer);
      if (this.groups.has(item.key)) {
        this.groups.judgeRenew(itemAt, idx, lone, answer, post.nowMs, stamp);
      } else {
        const k = this.slot(itemAt, item.key);
        if (k < 0) return;
        const next = [...views];
        const pv = views[k]!;
        next[k] =
          lastOfKey.get(item.key) === i
            ? post.views[k]!
            : answer.renewed
              ? { ...pv, ttlMs: answer.ttlMs, expiresAtMs: answer.expiresAtMs }
              : pv;
        this.judgeRenew(itemAt, idx, lone, answer, { ...pre, views }, { ...post, views: next }, stamp);
        views = next;
      }
      if (this.violation !== null) return;
    }
  }

  private judgeRelease(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'release' }>,
    r: Extract<LockResult, { type: 'release' }>,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const k = this.slot(at, cmd.key);
    if (k < 0) return;
    const pv = pre.views[k]!;
    const qv = post.views[k]!;
    const lease = this.leases.get(cmd.key);
    this.pruneDedup(post.nowMs);
    if (r.replayed) return this.judgeReplay(at, cmd.owner, cmd.requestId, 'release', cmd.key, cmd.token, releaseOutcome(r), pre, post, k);
    this.mustBeFresh(at, cmd.owner, cmd.requestId, 'release', cmd.key, cmd.token);
    const expected =
      lease === undefined
        ? 'NOT_HELD'
        : lease.owner !== cmd.owner
          ? 'WRONG_OWNER'
          : lease.token !== cmd.token
            ? 'WRONG_TOKEN'
            : 'UNSPECIFIED';
    if (r.released) {
      this.stats.released++;
      if (expected !== 'UNSPECIFIED') {
        return this.fail(
          `controlled release: ${at} released ${cmd.key} for ${cmd.owner} token ${cmd.token}, but the lock is ${lease === undefined ? 'not held' : `${lease.owner}'s with token ${lease.token}`} (should be refused ${expected})`,
        );
      }
      if (this.endsExpired(lease!, post.nowMs, false)) {
        this.minHold(at, cmd.key, lease!, stamp, 'ended as expired by a late release');
        this.endExpired(cmd.key, lease!);
      } else this.dropLease(cmd.key);
      this.handOff(cmd.key, idx, post.nowMs, stamp);
      if (!this.endedAsModelled(at, 'release', cmd.key, lease!.token, qv, pre, post)) return;
      this.remember(cmd.owner, cmd.requestId, 'release', cmd.key, cmd.token, releaseOutcome(r), idx, post.nowMs);
      return;
    }
    this.stats.releaseRefused++;
    if (expected === 'UNSPECIFIED')
      return this.fail(`${at}: release of ${cmd.key} by its holder ${cmd.owner} token ${cmd.token} was refused ${r.reason}`);
    if (r.reason !== expected)
      return this.fail(`${at}: release of ${cmd.key} by ${cmd.owner} token ${cmd.token} refused ${r.reason}, expected ${expected}`);
    this.unchanged(at, cmd.key, pv, qv, pre, post);
    this.remember(cmd.owner, cmd.requestId, 'release', cmd.key, cmd.token, releaseOutcome(r), idx, post.nowMs);
  }

  /** An operator's revoke: the named invariant `revoke` on what the machine did, then the model's own. */
  private judgeRevoke(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'revoke' }>,
    r: Extract<LockResult, { type: 'revoke' }>,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const k = this.slot(at, cmd.key);
    if (k < 0) return;
    const pv = pre.views[k]!;
    const qv = post.views[k]!;
    this.stats.revokeEntries++;
    // From level 5 (tag 23) a revoke is deduplicated by (owner, request id) like every mutation.
    const owner = cmd.owner ?? '';
    const requestId = cmd.requestId ?? '';
    this.pruneDedup(post.nowMs);
    if (r.replayed) {
      if (cmd.requestId === undefined) return this.fail(`retries: ${at} replayed a revoke that carries no request id (tag 18)`);
      this.stats.revokeReplays++;
      return this.judgeReplay(at, owner, requestId, 'revoke', cmd.key, cmd.token, r.revoked.join(','), pre, post, k);
    }
    this.mustBeFresh(at, owner, requestId, 'revoke', cmd.key, cmd.token);
    this.remember(owner, requestId, 'revoke', cmd.key, cmd.token, r.revoked.join(','), idx, post.nowMs);
    const group = this.groups.has(cmd.key);
    const lease = this.leases.get(cmd.key);
    // Every hold the key has, run out or not (the machine keeps one until an entry ends it), in token order.
    const holds = group ? this.groups.tokensOf(cmd.key) : lease === undefined ? [] : [lease.token];
    const named = holds.filter((t) => cmd.token === 0n || t === cmd.token);
    const what = `${at} (revoke ${cmd.key} ${cmd.token === 0n ? 'every hold' : `token ${cmd.token}`})`;
    const extra = r.revoked.find((t) => !named.includes(t));
    if (extra !== undefined)
      return this.fail(`revoke: ${what} revoked token ${extra}, which is no hold it names (the key's holds: [${holds.join(',')}])`);
    const missed = named.find((t) => !r.revoked.includes(t));
    if (missed !== undefined || r.revoked.length !== named.length || r.key !== cmd.key) {
      return this.fail(
        `revoke: ${what} answered ${r.key} revoked [${r.revoked.join(',')}], but it names the holds [${named.join(',')}]: each ends in this entry, once${missed !== undefined ? ` (token ${missed} left in place)` : ''}`,
      );
    }
    const shown = qv.holders?.map((h) => h.token) ?? (qv.held ? [qv.token] : []);
    const still = named.find((t) => shown.includes(t));
    if (still !== undefined)
      return this.fail(
        `revoke: ${what} revoked token ${still}, but after the entry the key still shows it held (${qv.holders === undefined ? viewText(qv) : `holders ${qv.holders.map((h) => `${h.owner}#${h.token}`).join(',')}`})`,
      );
    for (const t of named) this.revokedAt.set(`${cmd.key}#${t}`, idx);
    if (named.length === 0) return this.unchanged(at, cmd.key, pv, qv, pre, post);
    this.stats.holdsRevoked += named.length;
    // The model: the holds end with no lock-delay (a revoke is no expiry; a run-out hold, from level 5, as
    // its expiry would), and the line is served.
    if (group) return this.groups.judgeRevoke(at, idx, cmd.key, named, post.nowMs, stamp);
    if (this.endsExpired(lease!, post.nowMs, false)) {
      this.minHold(at, cmd.key, lease!, stamp, 'ended as expired by a late revoke');
      this.endExpired(cmd.key, lease!);
    } else this.dropLease(cmd.key);
    this.handOff(cmd.key, idx, post.nowMs, stamp);
    this.endedAsModelled(at, 'revoke', cmd.key, lease!.token, qv, pre, post);
  }

  /** Named invariant `revoke`: a revoked token never renews, releases or expires again (a replay of an
   *  outcome decided before the revoke is that old outcome). */
  private checkRevokedToken(at: string, cmd: LockCommand, r: LockResult): void {
    if (cmd.type !== 'renew' && cmd.type !== 'release' && cmd.type !== 'expire') return;
    const revokedBy = this.revokedAt.get(`${cmd.key}#${cmd.token}`);
    if (revokedBy === undefined) return;
    const took =
      r.type === 'renew' ? r.renewed && !r.replayed : r.type === 'release' ? r.released && !r.replayed : r.type === 'expire' && r.expired;
    if (took)
      this.fail(
        `revoke: ${at} ${cmd.type === 'expire' ? 'expired' : `${cmd.type}d`} ${cmd.key} token ${cmd.token}${cmd.type === 'expire' ? '' : ` for ${cmd.owner}`}, which entry ${revokedBy} revoked: a revoked token never renews, releases or expires again`,
      );
  }

  /** Named invariant `revoke`: a revoke that ended holds serves the key's line in its own entry. After it,
   *  the first waiter still in the machine's line (the line before the entry less the waiters it decided)
   *  whose wait and session live must not fit beside the key's live holds — unless the entry granted the
   *  key already (one grant per key per entry), left it in lock-delay (a hold its sweep ended), or, from
   *  cluster level 4, the waiter's owner still holds the key under another session (it waits for that hold
   *  to end: lock simulation seed 6695). */
  private checkRevokeServed(at: string, key: string, r: Extract<LockResult, { type: 'revoke' }>, post: StateCapture): void {
    if (r.revoked.length === 0) return;
    const decided = (r.decided ?? []).filter((d) => d.key === key);
    if (decided.some((d) => d.outcome.acquired)) {
      this.stats.revokeHandOffs++;
      return;
    }
    if ((this.delays.get(key) ?? 0) > post.nowMs) return;
    const k = this.keyIndex.get(key);
    if (k === undefined) return;
    const head = this.groups
      .lineBefore(key)
      .filter((w) => !decided.some((d) => d.ticket === w.ticket))
      .find((w) => w.deadlineMs > post.nowMs && (w.sessionId === 0 || post.sessions.get(w.sessionId)?.live === true));
    if (head === undefined) return;
    const v = post.views[k]!;
    const live = (
      v.holders ??
      (v.held ? [{ owner: v.owner, token: v.token, shared: false, expiresAtMs: v.expiresAtMs, sessionId: v.sessionId ?? 0n }] : [])
    ).filter((h) => h.expiresAtMs > post.nowMs);
    const own = live.find((h) => h.owner === head.owner);
    if (own !== undefined && this.supersedeSameSessionOnly && own.sessionId !== BigInt(head.sessionId)) return;
    const holders = live.filter((h) => h.owner !== head.owner);
    const limit = v.limit ?? 1;
    const fits = limit >= 2 ? holders.length < limit : head.shared ? holders.every((h) => h.shared === true) : holders.length === 0;
    if (fits) {
      this.fail(
        `revoke: ${at} revoked ${key} token(s) ${r.revoked.join(',')} and granted nobody, while ${head.owner}/${head.requestId} (ticket ${head.ticket}${head.shared ? ', shared' : ''}, wait until ${head.deadlineMs}) ` +
          `waits first in line and fits beside the key's live holds [${holders.map((h) => `${h.owner}#${h.token}`).join(',')}] (limit ${limit}, log time ${post.nowMs}): a revoke hands the key to its line in the same entry`,
      );
    }
  }

  private judgeExpire(
    at: string,
    idx: number,
    cmd: Extract<LockCommand, { type: 'expire' }>,
    expired: boolean,
    pre: StateCapture,
    post: StateCapture,
    stamp: StampWindow,
  ): void {
    const k = this.slot(at, cmd.key);
    if (k < 0) return;
    const pv = pre.views[k]!;
    const qv = post.views[k]!;
    const lease = this.leases.get(cmd.key);
    const due =
      lease !== undefined && lease.session === undefined && lease.token === cmd.token && !(pv.held && pv.expiresAtMs > post.nowMs);
    if (expired) {
      this.stats.expired++;
      if (!due)
        return this.fail(
          `${at}: expire removed ${cmd.key} token ${cmd.token}, but the lease is ${lease === undefined ? 'absent' : `token ${lease.token}, ${viewText(pv)} at log time ${post.nowMs}`}`,
        );
      this.minHold(at, cmd.key, lease, stamp, 'removed by expire');
      this.endExpired(cmd.key, lease);
      this.handOff(cmd.key, idx, post.nowMs, stamp);
      this.endedAsModelled(at, 'expire', cmd.key, lease.token, qv, pre, post);
      return;
    }
    if (due)
      return this.fail(
        `${at}: expire of ${cmd.key} token ${cmd.token} was refused although the lease is past its deadline at log time ${post.nowMs}`,
      );
    this.unchanged(at, cmd.key, pv, qv, pre, post);
  }

  /** The first entry of a higher term: every live lease is extended (or provably ran its TTL). */
  private carryDelays(previousTermEndMs: number, epochStartMs: number): void {
    const shiftMs = epochStartMs - previousTermEndMs;
    if (shiftMs <= 0) return;
    for (const [key, until] of this.delays) if (until > previousTermEndMs) this.delays.set(key, until + shiftMs);
  }

  private carryLeases(at: string, idx: number, pre: StateCapture, post: StateCapture, stamp: StampWindow): void {
    this.stats.epochStarts++;
    if (post.leaseCount !== pre.leaseCount)
      return this.fail(`${at}: epoch start changed the number of leases ${pre.leaseCount} -> ${post.leaseCount}`);
    const startMs = post.epochStartMs;
    for (let i = 0; i < this.keys.length; i++) {
      const key = this.keys[i]!;
      const pv = pre.views[i]!;
      const qv = post.views[i]!;
      const lease = this.leases.get(key);
      if (qv.lastToken !== pv.lastToken)
        return this.fail(`${at}: epoch start changed ${key}'s last token ${pv.lastToken} -> ${qv.lastToken}`);
      if (this.groups.has(key)) continue; // carried below, hold by hold
      if (lease === undefined || !pv.held) {
        if (qv.held) return this.fail(`${at}: epoch start revived ${key}: ${viewText(pv)} before, ${viewText(qv)} after`);
        continue;
      }
      if (lease.session !== undefined) {
        // Carried with its session (below): it must read the session's deadline after the epoch.
        const s = post.sessions.get(lease.session.id);
        if (qv.held && (s === undefined || qv.expiresAtMs !== s.expiresAtMs))
          return this.fail(
            `sessions: after ${at} ${key} (under session ${lease.session.id}) ends at ${qv.expiresAtMs}, its session at ${s?.expiresAtMs}`,
          );
        continue;
      }
      if (qv.held) {
        if (qv.owner !== pv.owner || qv.token !== pv.token)
          return this.fail(`${at}: epoch start changed ${key}'s holder: ${viewText(pv)} -> ${viewText(qv)}`);
        if (this.checksExtension && (qv.expiresAtMs < startMs + lease.ttlMs || qv.expiresAtMs < pv.expiresAtMs)) {
          return this.fail(
            `lease extension: ${at} (new leader's termStart, log time ${startMs}) left ${key}'s lease (${lease.owner} token ${lease.token}, ttl ${lease.ttlMs}) ending at ${qv.expiresAtMs} ` +
              `(was ${pv.expiresAtMs}) — a live lease must last at least a full TTL from the new leader's start (${startMs + lease.ttlMs}) and never be shortened`,
          );
        }
        lease.epochs++;
        lease.deadlineMs = qv.expiresAtMs;
        this.stats.leasesExtended++;
        if (lease.epochs > this.stats.maxEpochsCarried) this.stats.maxEpochsCarried = lease.epochs;
      } else {
        // Ended instead of extended: it must provably have run its TTL. Its deadline becomes the epoch's
        // start (never later), which is where a lock-delay would count from.
        lease.deadlineMs = Math.min(lease.deadlineMs, startMs);
        this.stats.leasesEnded++;
        this.minHold(at, key, lease, stamp, `ended at the epoch start of entry ${idx}`);
      }
      if (this.violation !== null) return;
    }
    this.groups.carry(at, idx, pre, post, stamp, (key) => post.views[this.keyIndex.get(key)!]);
    if (this.violation !== null) return;
    // Sessions: the same rule as leases, checked on the session itself.
    for (const s of this.sessions.values()) {
      const info = post.sessions.get(s.id);
      if (info === undefined) return this.fail(`sessions: ${at} (an epoch start) removed session ${s.id}`);
      if (s.deadlineMs <= pre.nowMs) {
        if (info.expiresAtMs !== s.deadlineMs)
          return this.fail(`sessions: ${at} moved run-out session ${s.id}'s deadline ${s.deadlineMs} -> ${info.expiresAtMs}`);
        continue;
      }
      if (info.expiresAtMs >= startMs + s.ttlMs && info.expiresAtMs >= s.deadlineMs) {
        s.epochs++;
        s.deadlineMs = info.expiresAtMs;
      } else if (info.expiresAtMs === Math.min(s.deadlineMs, startMs)) {
        s.deadlineMs = info.expiresAtMs;
        this.minHold(at, `session ${s.id}`, s, stamp, `ended at the epoch start of entry ${idx}`);
      } else {
        return this.fail(
          `session extension: ${at} (new leader's termStart, log time ${startMs}) left session ${s.id} (${s.owner}, ttl ${s.ttlMs}) ending at ${info.expiresAtMs} ` +
            `(was ${s.deadlineMs}) — a live session must last a full TTL from the new leader's start (${startMs + s.ttlMs}), or end there having provably run its TTL`,
        );
      }
      if (this.violation !== null) return;
    }
  }

  // ------------------------------------------------------------------ helpers

  /** After a hold of `key` ended (its token `ended`): the key is free, or held by the waiter the model
   *  handed it to, with the lease count to match. */
  private endedAsModelled(
    at: string,
    what: string,
    key: string,
    ended: bigint,
    qv: LockView,
    pre: StateCapture,
    post: StateCapture,
  ): boolean {
    if (this.groups.has(key)) return true; // handed to a shared head: the group model checks it
    const next = this.leases.get(key);
    const ok =
      next === undefined
        ? !qv.held && qv.lastToken === ended && post.leaseCount === pre.leaseCount - 1
        : qv.held &&
          qv.owner === next.owner &&
          qv.token === next.token &&
          qv.lastToken === next.token &&
          post.leaseCount === pre.leaseCount;
    if (!ok)
      this.fail(
        `${at}: ${what} ended ${key} token ${ended}${next === undefined ? '' : ` and handed it to ${next.owner} (token ${next.token})`}, but the state shows ${viewText(qv)} with ${post.leaseCount} leases (before: ${pre.leaseCount})`,
      );
    return ok;
  }

  minHold(at: string, key: string, held: OracleLease, stamp: StampWindow, why: string): void {
    // A hold under a session lives as long as its session: the session's grant and epochs are what count.
    const lease = held.session ?? held;
    const guaranteed = serverMinHoldMs(lease.ttlMs, lease.epochs, this.maxDrift);
    const elapsed = stamp.max - lease.grantAt.min;
    const margin = elapsed - guaranteed;
    if (margin < this.stats.tightestExpiryMarginMs) this.stats.tightestExpiryMarginMs = margin;
    if (margin < -1e-6) {
      this.fail(
        `lease cut short (true time): ${key}'s lease (${lease.owner}, token ${lease.token}, ttl ${lease.ttlMs}ms) granted/renewed by entry ${lease.grantIndex} ` +
          `stamped by ${lease.grantAt.node} at true t=${lease.grantAt.min.toFixed(3)} was ${why} at ${at}, stamped by ${stamp.node} at true t=${stamp.max.toFixed(3)}: ` +
          `only ${elapsed.toFixed(3)}ms of true time, less than the guaranteed ${guaranteed.toFixed(3)}ms = (ttl - 1 - ${lease.epochs} epochs carried) / (1 + maxDrift ${this.maxDrift})`,
      );
    }
  }

  private sameLock(at: string, key: string, pv: LockView, qv: LockView): void {
    // A key with many holds: its first holder changes as holds run out; the group model compares them all.
    if (pv.holders !== undefined || qv.holders !== undefined) return;
    if (
      qv.lastToken !== pv.lastToken ||
      (qv.held && (!pv.held || qv.owner !== pv.owner || qv.token !== pv.token || qv.expiresAtMs !== pv.expiresAtMs))
    ) {
      this.fail(`${at} changed ${key}: ${viewText(pv)} -> ${viewText(qv)}`);
    }
  }

  /** A refused or replayed request changes nothing (no lease removed, no deadline moved). */
  private unchanged(at: string, key: string, pv: LockView, qv: LockView, pre: StateCapture, post: StateCapture): void {
    if (post.leaseCount !== pre.leaseCount)
      return this.fail(`${at}: a refused/replayed request on ${key} changed the number of leases ${pre.leaseCount} -> ${post.leaseCount}`);
    this.sameLock(`${at} (refused/replayed)`, key, pv, qv);
  }

  private judgeReplay(
    at: string,
    owner: string,
    requestId: string,
    type: OracleDedup['type'],
    key: string,
    token: bigint,
    outcome: string,
    pre: StateCapture,
    post: StateCapture,
    k: number,
  ): void {
    this.stats.replays++;
    const rec = this.dedup.get(dedupId(owner, requestId));
    if (rec === undefined)
      return this.fail(
        `retries: ${at} replayed a remembered ${type} for ${owner}/${requestId}, but no first outcome of it was recorded inside the dedup window`,
      );
    if (!sameRequest(rec, type, key, token))
      return this.fail(
        `retries: ${at} replayed ${rec.type} ${rec.key}#${rec.token} for a ${type} ${key}#${token}${type === 'acquire' ? ' (acquire: its terms — session, limit, mode — differ, from level 6: REQUEST_ID_REUSED)' : ''}`,
      );
    if (rec.outcome !== outcome)
      return this.fail(
        `retries: ${at} replayed ${owner}/${requestId} as ${outcome}, but its first outcome (entry ${rec.index}) was ${rec.outcome}`,
      );
    this.unchanged(at, key, pre.views[k]!, post.views[k]!, pre, post);
  }

  private mustBeFresh(
    at: string,
    owner: string,
    requestId: string,
    type: OracleDedup['type'],
    key: string,
    token: bigint,
    queued = false,
  ): void {
    if (requestId === '') return;
    const rec = this.dedup.get(dedupId(owner, requestId));
    if (rec !== undefined && rec.type === 'acquire' && type === 'acquire' && rec.key === key && !sameRequest(rec, type, key, token))
      return this.fail(
        `retries: ${at} executed acquire ${owner}/${requestId} afresh, but that request id was first used (entry ${rec.index}) for an acquire of ${key} with other terms (session, limit, mode): from level 6 it must be refused as a whole (REQUEST_ID_REUSED)`,
      );
    if (rec !== undefined && sameRequest(rec, type, key, token)) {
      if (queued && type === 'acquire' && rec.outcome.startsWith('false|')) return;
      this.fail(
        `retries: ${at} executed ${type} ${owner}/${requestId} again — its first outcome was recorded at entry ${rec.index} (${rec.outcome}) inside the dedup window (or kept past it while its owner holds the key, from level 6), so the retry must get that outcome back`,
      );
    }
  }

  /** An acquire's terms as the model records them from level 6 (session, limit, mode, one number); 0n below
   *  it (nothing recorded: any terms match). */
  acquireTerms(req: { sessionId?: number; limit?: number; shared?: boolean }): bigint {
    if (!this.acquireTermsKept) return 0n;
    return BigInt(req.sessionId ?? 0) * 2048n + BigInt(Math.max(req.limit ?? 1, 1)) * 2n + (req.shared === true ? 1n : 0n);
  }

  /** REQUEST_ID_REUSED for an acquire: the request id names another request — a remembered one of another
   *  type, key or (level 6) terms, or a waiter in line for another key or terms. Nothing changes. */
  private judgeReused(at: string, cmd: Extract<LockCommand, { type: 'acquire' }>, pre: StateCapture, post: StateCapture): void {
    this.stats.requestIdsReused++;
    const terms = this.acquireTerms(cmd);
    const inLine = cmd.requestId === '' ? undefined : this.waiterOf(cmd.owner, cmd.requestId);
    const rec = this.dedup.get(dedupId(cmd.owner, cmd.requestId));
    const reused =
      inLine !== undefined
        ? inLine.key !== cmd.key || (terms !== 0n && this.acquireTerms(inLine.w) !== terms)
        : rec !== undefined && !sameRequest(rec, 'acquire', cmd.key, terms);
    if (!reused)
      return this.fail(
        `retries: ${at} refused acquire ${cmd.owner}/${cmd.requestId} as REQUEST_ID_REUSED, but the model has that request id ${inLine !== undefined ? `waiting for ${inLine.key} with the same terms` : rec !== undefined ? `remembered for the same request (entry ${rec.index})` : 'nowhere'}`,
      );
    for (let i = 0; i < this.keys.length; i++)
      this.sameLock(`${at} (acquire refused as REQUEST_ID_REUSED)`, this.keys[i]!, pre.views[i]!, post.views[i]!);
  }

  remember(
    owner: string,
    requestId: string,
    type: OracleDedup['type'],
    key: string,
    token: bigint,
    outcome: string,
    index: number,
    nowMs: number,
  ): void {
    if (requestId === '') return;
    const rec: OracleDedup = { owner, requestId, type, key, token, outcome, index, recordedAtMs: nowMs };
    this.dedup.set(dedupId(owner, requestId), rec);
    this.dedupQueue.push(rec);
  }

  /** Forget like the machine: a record made at log time r is gone once r + window <= log time — from level
   *  6 unless it is an acquire's whose owner holds the key then: that one is made again at log time. */
  private pruneDedup(nowMs: number): void {
    let i = 0;
    const kept: OracleDedup[] = [];
    while (i < this.dedupQueue.length && this.dedupQueue[i]!.recordedAtMs + this.dedupWindowMs <= nowMs) {
      const rec = this.dedupQueue[i]!;
      const id = dedupId(rec.owner, rec.requestId);
      // A record replaced later (a refusal turned into a grant) must not delete its successor.
      if (this.dedup.get(id) === rec) {
        if (this.keepAcquiresWhileHeld && rec.type === 'acquire' && this.ownerHolds(rec.owner, rec.key)) {
          const again = { ...rec, recordedAtMs: nowMs };
          this.dedup.set(id, again);
          kept.push(again);
          this.stats.dedupKeptWhileHeld++;
        } else this.dedup.delete(id);
      }
      i++;
    }
    if (i > 0) this.dedupQueue = [...this.dedupQueue.slice(i), ...kept];
  }

  /** Whether `owner` has a hold of `key` in the model (live or run out, until the entry that ends it). */
  private ownerHolds(owner: string, key: string): boolean {
    const group = this.groups.groups.get(key);
    if (group !== undefined) return group.holds.some((h) => h.owner === owner);
    return this.leases.get(key)?.owner === owner;
  }

  private slot(at: string, key: string): number {
    const k = this.keyIndex.get(key);
    if (k === undefined) {
      this.fail(`${at}: key ${key} is not one of the simulated keys`);
      return -1;
    }
    return k;
  }

  fail(message: string): void {
    if (this.violation === null) this.violation = message;
  }
}

/** The machine's rule (dedup.ts sameRequest), modelled: the same type and key, and the same token — for an
 *  acquire its terms, where a record without terms (0n, before level 6) matches any. */
function sameRequest(rec: OracleDedup, type: OracleDedup['type'], key: string, token: bigint): boolean {
  if (rec.type !== type || rec.key !== key) return false;
  return rec.token === token || (type === 'acquire' && rec.token === 0n);
}

function dedupId(owner: string, requestId: string): string {
  return `${owner.length}:${owner}${requestId}`;
}

export function viewText(v: LockView): string {
  return v.held ? `held by ${v.owner} token ${v.token} until ${v.expiresAtMs} (last ${v.lastToken})` : `free (last token ${v.lastToken})`;
}
