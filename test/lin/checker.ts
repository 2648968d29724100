// The checker of a recorded history against "a mutex with fencing tokens" (SPEC "Guarantees", DESIGN
// "Jepsen / Porcupine"). Each rule is a separate pass with its own violation kind, so a report says which
// guarantee broke and on which operations:
//
//   (a) token-reuse / token-order: tokens of granted acquires are unique per key, and strictly increase in
//       real-time order (an acquire acknowledged before another was invoked has the smaller token);
//       get-stale: a Get's last_token is at least every token acknowledged before it was invoked, and never
//       goes back between Gets.
//   (b) fence-regression: the resource's own commit log never accepted a token lower than one it had accepted
//       before; stale-write-accepted: a write was accepted although a write with a newer token had been
//       accepted before it was made; active-write-rejected: a holder whose handle said ACTIVE had its write
//       rejected (so a newer token wrote while it still believed it held the lock); fence-wrong-reject: the
//       resource refused a token not older than its last.
//   (c) overlap: two holders' windows on one key intersect in real time. A window runs from the acknowledged
//       acquire to when the handle left ACTIVE or its conservative local deadline, whichever is first.
//   (d) non-holder-release / non-holder-renew: an acknowledged release/renew whose token had been superseded
//       (a newer acquire acknowledged before it was invoked) or already released; unknown-token: a
//       release/renew/write/Get with an owner+token no acquire ever produced.
//   lease-cut-short: no lease ended before its TTL by true time (the recording process's clock). A lease is
//       owed from its acquire (or last acknowledged renew) being SENT for ttl, minus the client's drift margin
//       (leaseSafetyFraction); it "ended" when another owner's acquire of the key was acknowledged with a
//       newer token, a Get showed the key free or held by a newer token, or a renew of it was refused
//       (EXPIRED, NOT_HELD, WRONG_OWNER, WRONG_TOKEN) — unless its holder had sent a release first. (c) only
//       sees the client's view: a holder whose renew was refused early closes its window early, so a server
//       that cut leases short by its own clock passes (c) and fails this rule.
//   refused-took-effect: an acquire the client was told was refused (a definite 'fail') whose owner was later
//       observed holding the lock — a refusal must mean it did not, and will not, happen.
//   (e) operations of unknown outcome ('info') constrain nothing: each check uses only ok/fail outcomes, and
//       the WGL pass may linearize an unknown acquire (when its effect was observed) or leave it out.
//   linearizability: the ok/fail operations of each key admit one total order, consistent with real time,
//       that the sequential model (mutex-model.ts) accepts.
//   Keys with many holds (an acquire with limit >= 2 or shared; group-windows.ts): over-limit — more windows
//       at once than the semaphore's limit; shared-with-exclusive — an exclusive window of a limit-1 key
//       overlapping any other window. Tokens (a), Gets and unknown tokens are checked as for a mutex; the
//       rules that assume one holder (overlap, supersede, lease-cut-short, refusals, the mutex model) are not.
//       token-order covers these keys too: every hold's token is the index of the entry that granted it.
//   The lock model of SPEC part three (lock-model-rules.ts; issue 20 item 8), on every key:
//   fifo-order: a granted acquire A whose QUEUED event (a Watch over every key, test/lin/queue-watch.ts) was
//       received at Q, and a granted acquire B of another owner SENT after Q: B's token must be newer than A's.
//       Sound: the watch serves applied entries, so A was in the line before any attempt of B reached the log;
//       a request leaves the line only granted or refused (and a refusal is remembered for its retries), so a
//       granted A was still there; FIFO puts B behind it, and a token is its grant's entry index. Cannot see:
//       a waiter whose QUEUED event never arrived (a gap the watch could not close) or arrived after B was
//       sent (B's first attempt may have been in the log first); a waiter refused or of unknown outcome (when
//       it left the line is not visible); a B granted 'info'.
//   session-end: a session is seen ended at E when its close was acknowledged (closed, or "already ended")
//       or a renew of it was refused EXPIRED / NOT_HELD — each an applied entry. Nothing SENT after E may show
//       it alive: an acknowledged renew of it, a granted acquire under it, a Get showing one of its holds (by
//       session id, or owner and token), an acquire refused naming its owner (an owner used under no other
//       session); and none of its holds may carry a token newer than one the log issued after E (a token
//       granted to an acquire sent after E, a Get's last_token read after E): a waiter of it granted after it
//       ended. Cannot see: a session that ended with nobody told (a crashed client's, one given up at its
//       local deadline) — it has no E; when in [last renew, E] it really ended; a session cut short before its
//       ttl (its holds' windows are still checked by overlap); fenced writes with its tokens — the resource
//       compares tokens only, so such a write is wrong only once a newer token wrote (stale-write-accepted).
//   lock-delay: an exclusive hold of a limit-1 key with a lock-delay D (its own, or its session's) that
//       nobody released while it lived — no release of it (acknowledged or unknown) and no close of its
//       session sent before the grant in question was acknowledged, other than one sent after the server
//       answered that the hold (or its session) had run out or gone, which ends it as expired (SPEC
//       "Lock-delay"); the workload never revokes — ran out, so the key grants
//       nobody for D after the lease's end. The lease is owed until (the last acquire/renew of the hold, or
//       open/renew of its session, SENT and acknowledged before the grant was sent) + ttl, so another owner's
//       grant with a newer token acknowledged before that + ttl + D - the drift margin over (ttl + D) breaks
//       the delay (a grant before the lease's own end is lease-cut-short's, for a hold with a ttl). Cannot
//       see: delays of holds granted 'info', of shared or semaphore holds (another holder may be granted
//       while they live), a grant late in a delay that a renew of unknown outcome prolonged, a hold released
//       after it ran out with nothing in the history to show that it had (the release may have applied while
//       the lease lived, a failover extending it: the rule excuses it); a session hold's grant inside its
//       session's lease (no lease-cut-short for sessions yet).
import { isSessionOp, type Op } from './history.js';
import { checkFifo, checkLockDelay, checkSessionEnd, sessionsOf, watchGapsOf } from './lock-model-rules.js';
import { mutexModel, mutexOpsForKey } from './mutex-model.js';
import { checkLinearizable } from './wgl.js';
import { checkGroupWindows, groupKeyOf } from './group-windows.js';

export type ViolationKind =
  | 'token-reuse'
  | 'token-order'
  | 'get-stale'
  | 'fence-regression'
  | 'stale-write-accepted'
  | 'active-write-rejected'
  | 'fence-wrong-reject'
  | 'overlap'
  | 'non-holder-release'
  | 'non-holder-renew'
  | 'unknown-token'
  | 'refused-took-effect'
  | 'lease-cut-short'
  | 'linearizability'
  | 'over-limit'
  | 'shared-with-exclusive'
  | 'fifo-order'
  | 'session-end'
  | 'lock-delay'
  | 'malformed-history';

export interface Violation {
  kind: ViolationKind;
  key: string;
  message: string;
  /** Indexes of the operations involved. */
  ops: number[];
}

/** One accepted write, in the order the resource committed it (its own log, not the clients' view). */
export interface AuditEntry {
  resourceId: string;
  token: bigint;
  /** Commit order (0, 1, 2, ...). */
  seq: number;
}

export interface CheckOptions {
  /** The fenced resource's commit log of accepted writes. */
  resourceAudit?: readonly AuditEntry[];
  /** Run the WGL search (default true). */
  linearizability?: boolean;
  /** Time budget of the WGL search per key (ms); an exhausted budget is 'unknown', not a violation. */
  wglBudgetMs?: number;
  /** The lease-cut-short rule (default true; false only to show what the other rules miss). */
  leaseTtl?: boolean;
  /** Fraction of the ttl the client keeps for clock-rate drift (the client's leaseSafetyFraction, default 0.02). */
  leaseSafetyFraction?: number;
}

export interface Verdict {
  valid: boolean;
  violations: Violation[];
  counts: Record<string, { ok: number; fail: number; info: number }>;
  windows: number;
  /** Granted acquires whose lease the lease-cut-short rule checked (those with a known ttl). */
  leasesChecked: number;
  linearizability: Record<string, 'ok' | 'violation' | 'unknown' | 'skipped'>;
  /** How much the rules of the lock model judged: (waiter, later acquire) pairs for fifo-order, sessions
   *  seen ended for session-end, holds with a lock-delay for lock-delay. */
  lockModel: { fifoPairs: number; sessionsEnded: number; lockDelayHolds: number };
  notes: string[];
}

const done = (op: Op) => op.outcome !== 'pending' && op.completeMs !== null;

export function checkHistory(history: readonly Op[], opts: CheckOptions = {}): Verdict {
  const violations: Violation[] = [];
  const notes: string[] = [];
  const add = (kind: ViolationKind, key: string, message: string, ops: number[]) => violations.push({ kind, key, message, ops });

  const counts: Verdict['counts'] = {};
  for (const op of history) {
    const c = (counts[op.type] ??= { ok: 0, fail: 0, info: 0 });
    if (op.outcome === 'pending') c.info++;
    else c[op.outcome]++;
    if (done(op) && op.completeMs! < op.invokeMs)
      add('malformed-history', op.key, `op ${op.index} completes (${op.completeMs}) before it is invoked (${op.invokeMs})`, [op.index]);
    if (op.type === 'acquire' && op.outcome === 'ok' && (op.token === undefined || op.token <= 0n)) {
      add('malformed-history', op.key, `granted acquire ${op.index} has no token`, [op.index]);
    }
  }

  const byKey = new Map<string, Op[]>();
  const watchGaps = watchGapsOf(history);
  for (const op of history) {
    if (isSessionOp(op)) continue; // a session names no key: session-end and lock-delay read them below
    if (op.type === 'queued' && !op.owner) continue; // a gap of the queue watch (watchGaps)
    if (!byKey.has(op.key)) byKey.set(op.key, []);
    byKey.get(op.key)!.push(op);
  }

  let windows = 0;
  let leasesChecked = 0;
  const linearizability: Verdict['linearizability'] = {};
  const sessions = sessionsOf(history);
  const lockModel: Verdict['lockModel'] = { fifoPairs: 0, sessionsEnded: checkSessionEnd(history, sessions, add), lockDelayHolds: 0 };
  for (const [key, ops] of byKey) {
    lockModel.fifoPairs += checkFifo(key, ops, add, watchGaps);
    lockModel.lockDelayHolds += checkLockDelay(key, ops, sessions, add, opts.leaseSafetyFraction ?? 0.02);
    const group = groupKeyOf(ops);
    if (group !== null) {
      checkTokens(key, ops, add);
      checkGets(key, ops, add);
      windows += checkGroupWindows(key, ops, group.limit, add);
      linearizability[key] = 'skipped';
      continue;
    }
    checkTokens(key, ops, add);
    checkGets(key, ops, add);
    checkWrites(key, ops, add);
    windows += checkWindows(key, ops, add);
    checkHolderOps(key, ops, add);
    checkRefusals(key, ops, add);
    if (opts.leaseTtl !== false) leasesChecked += checkLeaseTtl(key, ops, add, opts.leaseSafetyFraction ?? 0.02);
    if (opts.linearizability === false) {
      linearizability[key] = 'skipped';
      continue;
    }
    const timed = mutexOpsForKey(ops);
    const r = checkLinearizable(timed, mutexModel, { budgetMs: opts.wglBudgetMs ?? 20_000 });
    if (r.linearizable === true) linearizability[key] = 'ok';
    else if (r.linearizable === 'unknown') {
      linearizability[key] = 'unknown';
      notes.push(`key ${key}: linearizability not decided (${r.reason}, ${r.explored} steps)`);
    } else {
      linearizability[key] = 'violation';
      const stuck = timed[r.stuckAt]!;
      add(
        'linearizability',
        key,
        `no total order of the ${timed.length} ok/fail operations on "${key}" is consistent with real time and the mutex model; ` +
          `stuck at ${describe(stuck.op)} [${stuck.callMs.toFixed(1)}, ${stuck.retMs.toFixed(1)}] after a longest valid prefix of ${r.longestPrefix.length}: ` +
          r.longestPrefix
            .slice(-6)
            .map((i) => describe(timed[i]!.op))
            .join(' -> '),
        [stuck.index],
      );
    }
  }

  if (opts.resourceAudit) checkAudit(opts.resourceAudit, add);
  return { valid: violations.length === 0, violations, counts, windows, leasesChecked, linearizability, lockModel, notes };
}

type Add = (kind: ViolationKind, key: string, message: string, ops: number[]) => void;

function describe(op: import('./mutex-model.js').MutexOp): string {
  switch (op.type) {
    case 'acquire':
      return op.granted ? `acquire(${op.owner})=ok:${op.token ?? '?'}` : `acquire(${op.owner})=held-by:${op.holder || "''"}`;
    case 'renew':
      return `renew(${op.owner},${op.token})=${op.ok ? 'ok' : `refused:${op.reason}`}`;
    case 'release':
      return `release(${op.owner},${op.token})=${op.ok ? 'ok' : 'refused'}`;
    case 'get':
      return op.held ? `get=held(${op.owner},${op.token},last ${op.lastToken})` : `get=free(last ${op.lastToken})`;
  }
}

/** For every op in `targets` (by invoke time), the op of `sources` with the greatest value among those completed strictly before it was invoked. */
function maxCompletedBefore<T extends Op>(
  sources: readonly T[],
  value: (o: T) => bigint,
  targets: readonly Op[],
  visit: (target: Op, best: T | null) => void,
): void {
  const src = [...sources].sort((a, b) => a.completeMs! - b.completeMs!);
  const tgt = [...targets].sort((a, b) => a.invokeMs - b.invokeMs);
  let i = 0;
  let best: T | null = null;
  for (const t of tgt) {
    while (i < src.length && src[i]!.completeMs! < t.invokeMs) {
      if (best === null || value(src[i]!) > value(best)) best = src[i]!;
      i++;
    }
    visit(t, best);
  }
}

const granted = (ops: readonly Op[]) => ops.filter((o) => o.type === 'acquire' && o.outcome === 'ok' && done(o) && o.token !== undefined);

// (a) unique, real-time increasing tokens.
function checkTokens(key: string, ops: readonly Op[], add: Add): void {
  const acq = granted(ops);
  const byToken = new Map<bigint, Op>();
  for (const a of acq) {
    const prev = byToken.get(a.token!);
    if (prev)
      add(
        'token-reuse',
        key,
        `token ${a.token} was granted twice on "${key}": to ${prev.owner} (op ${prev.index}) and to ${a.owner} (op ${a.index})`,
        [prev.index, a.index],
      );
    else byToken.set(a.token!, a);
  }
  maxCompletedBefore(
    acq,
    (o) => o.token!,
    acq,
    (b, a) => {
      if (a && a.token! >= b.token!) {
        add(
          'token-order',
          key,
          `acquire ${b.index} (${b.owner}) got token ${b.token} after acquire ${a.index} (${a.owner}) had been acknowledged with token ${a.token}: tokens must grow`,
          [a.index, b.index],
        );
      }
    },
  );
}

// (a) Gets never show an older last_token than was already issued or seen.
function checkGets(key: string, ops: readonly Op[], add: Add): void {
  const gets = ops.filter((o) => o.type === 'get' && o.outcome === 'ok' && done(o));
  const sources = [...granted(ops), ...gets];
  const value = (o: Op) => (o.type === 'get' ? (o.lastToken ?? 0n) : o.token!);
  maxCompletedBefore(sources, value, gets, (g, best) => {
    if (best && value(best) > (g.lastToken ?? 0n)) {
      add(
        'get-stale',
        key,
        `get ${g.index} saw last_token ${g.lastToken} after op ${best.index} (${best.type}) had already seen token ${value(best)}: a stale read`,
        [best.index, g.index],
      );
    }
  });
  const ownerTokens = new Map<string, Op>();
  for (const a of ops) if (a.type === 'acquire' && a.owner) ownerTokens.set(a.owner, a);
  for (const g of gets) {
    if (!g.held) continue;
    const a = ownerTokens.get(g.getOwner ?? '');
    if (a && a.outcome === 'fail' && a.invokeMs <= g.completeMs!) continue; // refused-took-effect, below
    if (!a || a.outcome === 'fail' || a.invokeMs > g.completeMs! || (a.outcome === 'ok' && a.token !== g.getToken)) {
      add(
        'unknown-token',
        key,
        `get ${g.index} shows "${g.getOwner}" holding token ${g.getToken}, which no acquire by that owner produced`,
        [g.index, ...(a ? [a.index] : [])],
      );
    }
  }
  // A Get may not show a holder whose lease was released (acknowledged) before the Get was invoked.
  const releases = ops.filter((o) => o.type === 'release' && o.outcome === 'ok' && done(o));
  for (const g of gets) {
    if (!g.held) continue;
    const r = releases.find((r) => r.owner === g.getOwner && r.token === g.getToken && r.completeMs! < g.invokeMs);
    if (r)
      add('get-stale', key, `get ${g.index} shows token ${g.getToken} held after its release ${r.index} was acknowledged`, [
        r.index,
        g.index,
      ]);
  }
}

// (b) the fenced resource, seen from the clients.
function checkWrites(key: string, ops: readonly Op[], add: Add): void {
  const writes = ops.filter((o) => o.type === 'write' && done(o) && o.outcome !== 'info');
  const accepted = writes.filter((w) => w.outcome === 'ok');
  maxCompletedBefore(
    accepted,
    (o) => o.token!,
    accepted,
    (w, best) => {
      if (best && best.token! > w.token!) {
        add(
          'stale-write-accepted',
          key,
          `write ${w.index} with token ${w.token} (${w.process}, ${w.via}) was accepted after write ${best.index} with the newer token ${best.token} had been accepted`,
          [best.index, w.index],
        );
      }
    },
  );
  for (const w of writes) {
    if (w.outcome !== 'fail') continue;
    if (w.activeAtInvoke) {
      add(
        'active-write-rejected',
        key,
        `write ${w.index} by ${w.process} with token ${w.token} was rejected (resource at ${w.resourceLastToken}) while its handle was ACTIVE: a newer token wrote during this holder's window`,
        [w.index],
      );
    }
    if (w.resourceLastToken !== undefined && w.resourceLastToken <= w.token!) {
      add(
        'fence-wrong-reject',
        key,
        `write ${w.index} with token ${w.token} was rejected, but the resource's last token is ${w.resourceLastToken}`,
        [w.index],
      );
    }
  }
  const tokens = new Set(granted(ops).map((a) => a.token!));
  for (const w of accepted) {
    if (!tokens.has(w.token!))
      add(
        'unknown-token',
        key,
        `write ${w.index} with token ${w.token} was accepted, but no acknowledged acquire on "${key}" has that token`,
        [w.index],
      );
  }
}

// (b) the resource's own commit log.
function checkAudit(audit: readonly AuditEntry[], add: Add): void {
  const last = new Map<string, AuditEntry>();
  for (const e of [...audit].sort((a, b) => a.seq - b.seq)) {
    const prev = last.get(e.resourceId);
    if (prev && e.token < prev.token) {
      add(
        'fence-regression',
        e.resourceId,
        `the resource "${e.resourceId}" accepted token ${e.token} (commit ${e.seq}) after it had accepted token ${prev.token} (commit ${prev.seq})`,
        [],
      );
    }
    if (!prev || e.token >= prev.token) last.set(e.resourceId, e);
  }
}

// (c) mutual exclusion of the holders' windows, in real time.
function checkWindows(key: string, ops: readonly Op[], add: Add): number {
  const ws = granted(ops)
    .filter((a) => a.window && a.window.endMs !== null)
    .sort((a, b) => a.window!.startMs - b.window!.startMs);
  for (const a of granted(ops)) {
    if (a.window && a.window.endMs === null)
      add('malformed-history', key, `acquire ${a.index} still has an open window at the end of the run`, [a.index]);
  }
  let reach: Op | null = null; // the window reaching furthest so far
  for (const b of ws) {
    if (reach && b.window!.startMs < reach.window!.endMs!) {
      add(
        'overlap',
        key,
        `two holders of "${key}" at once: ${reach.owner} (token ${reach.token}, op ${reach.index}) held it during ` +
          `[${reach.window!.startMs.toFixed(1)}, ${reach.window!.endMs!.toFixed(1)}] ms and ${b.owner} (token ${b.token}, op ${b.index}) from ` +
          `${b.window!.startMs.toFixed(1)} ms: ${(reach.window!.endMs! - b.window!.startMs).toFixed(1)} ms of overlap`,
        [reach.index, b.index],
      );
    }
    if (!reach || b.window!.endMs! > reach.window!.endMs!) reach = b;
  }
  return ws.length;
}

// (d) acknowledged renew/release only by the then-current holder.
function checkHolderOps(key: string, ops: readonly Op[], add: Add): void {
  const acq = granted(ops);
  const acquireByOwner = new Map<string, Op>();
  for (const a of ops) if (a.type === 'acquire' && a.owner) acquireByOwner.set(a.owner, a);
  const acked = ops.filter((o) => (o.type === 'release' || o.type === 'renew') && o.outcome === 'ok' && done(o));
  for (const o of acked) {
    const a = acquireByOwner.get(o.owner ?? '');
    const plausible = a && (a.outcome === 'info' || (a.outcome === 'ok' && a.token === o.token));
    if (!plausible)
      add(
        'unknown-token',
        key,
        `${o.type} ${o.index} by "${o.owner}" with token ${o.token} was acknowledged, but no acquire produced that owner and token`,
        [o.index],
      );
  }
  maxCompletedBefore(
    acq,
    (a) => a.token!,
    acked,
    (o, newest) => {
      if (newest && newest.token! > o.token!) {
        add(
          o.type === 'release' ? 'non-holder-release' : 'non-holder-renew',
          key,
          `${o.type} ${o.index} with token ${o.token} (${o.owner}) succeeded, but acquire ${newest.index} had already been granted token ${newest.token} before it was sent`,
          [newest.index, o.index],
        );
      }
    },
  );
  const releases = acked.filter((o) => o.type === 'release');
  for (const o of acked) {
    const r = releases.find((r) => r !== o && r.owner === o.owner && r.token === o.token && r.completeMs! < o.invokeMs);
    if (r) {
      add(
        o.type === 'release' ? 'non-holder-release' : 'non-holder-renew',
        key,
        `${o.type} ${o.index} with token ${o.token} succeeded after release ${r.index} of that token was acknowledged`,
        [r.index, o.index],
      );
    }
  }
}

// lease-cut-short: the server's promise (LEASES.md) is that a lease is not freed before ttl of real time
// after the leader stamped its grant/renew, which is after the client sent it. So a lease is owed until
// (send + ttl - margin) for its acquire and for every renew acknowledged before the ending event was
// invoked (it certainly took effect first); an ending event that was acknowledged before then cut it short.
const REFUSED_AS_GONE = new Set(['EXPIRED', 'NOT_HELD', 'WRONG_OWNER', 'WRONG_TOKEN']);

function checkLeaseTtl(key: string, ops: readonly Op[], add: Add, safetyFraction: number): number {
  const owedUntil = (o: Op, ttlMs: number) => o.invokeMs + ttlMs - Math.ceil(ttlMs * safetyFraction);
  const leases = granted(ops).filter((a) => a.ttlMs !== undefined && a.ttlMs > 0);
  const gets = ops.filter((o) => o.type === 'get' && o.outcome === 'ok' && done(o));
  for (const a of leases) {
    const mine = (o: Op) => o.owner === a.owner && o.token === a.token;
    const renews = ops.filter((o) => o.type === 'renew' && done(o) && mine(o));
    const releases = ops.filter((o) => o.type === 'release' && (o.outcome === 'ok' || o.outcome === 'info') && mine(o));
    /** The latest moment the lease is owed to, judged for an ending event invoked at `invokedMs`. */
    const owed = (invokedMs: number) =>
      Math.max(
        owedUntil(a, a.ttlMs!),
        ...renews.filter((r) => r.outcome === 'ok' && r.completeMs! < invokedMs).map((r) => owedUntil(r, r.ttlMs ?? a.ttlMs!)),
      );
    const endings: { op: Op; what: string }[] = [];
    for (const b of granted(ops))
      if (b.owner !== a.owner && b.token! > a.token!)
        endings.push({ op: b, what: `acquire ${b.index} by ${b.owner} was granted token ${b.token}` });
    for (const g of gets) {
      if (g.invokeMs <= a.completeMs!) continue; // may be ordered before the grant
      if (!g.held) endings.push({ op: g, what: `get ${g.index} showed the key free` });
      else if (g.getToken !== undefined && g.getToken > a.token!)
        endings.push({ op: g, what: `get ${g.index} showed token ${g.getToken} holding it` });
    }
    for (const r of renews) {
      if (r.outcome === 'fail' && REFUSED_AS_GONE.has(r.reason ?? '') && r.invokeMs >= a.completeMs!)
        endings.push({ op: r, what: `renew ${r.index} of it was refused (${r.reason})` });
    }
    const cut = endings
      .map((e) => ({ ...e, owedMs: owed(e.op.invokeMs) }))
      .filter((e) => e.op.completeMs! < e.owedMs && !releases.some((r) => r.invokeMs < e.op.completeMs!))
      .sort((x, y) => x.op.completeMs! - y.op.completeMs!)[0];
    if (cut) {
      add(
        'lease-cut-short',
        key,
        `the lease of "${key}" granted to ${a.owner} (token ${a.token}, acquire ${a.index} sent at ${a.invokeMs.toFixed(1)} ms, ttl ${a.ttlMs} ms) ended before its TTL by true time: ` +
          `${cut.what}, acknowledged at ${cut.op.completeMs!.toFixed(1)} ms — ${(cut.owedMs - cut.op.completeMs!).toFixed(1)} ms before the lease was owed until ` +
          `(${cut.owedMs.toFixed(1)} ms: last send + ttl - ${(safetyFraction * 100).toFixed(1)} % margin), and its holder had sent no release`,
        [a.index, cut.op.index],
      );
    }
  }
  return leases.length;
}

// A definite refusal that took effect after all: its owner shows up as the holder (a Get, or another
// acquire refused because of it). Owners are unique per acquire, so the owner names the request.
function checkRefusals(key: string, ops: readonly Op[], add: Add): void {
  const refused = new Map<string, Op>();
  for (const o of ops) if (o.type === 'acquire' && o.outcome === 'fail' && o.owner) refused.set(o.owner, o);
  const reported = new Set<string>();
  for (const o of ops) {
    if (!done(o)) continue;
    const seenOwner =
      o.type === 'get' && o.outcome === 'ok' && o.held ? o.getOwner : o.type === 'acquire' && o.outcome === 'fail' ? o.holder : undefined;
    const r = seenOwner ? refused.get(seenOwner) : undefined;
    if (!r || reported.has(r.owner!) || o.completeMs! < r.invokeMs) continue;
    reported.add(r.owner!);
    if (o === r) {
      add(
        'refused-took-effect',
        key,
        `acquire ${r.index} by "${r.owner}" was answered "not acquired, held by ${r.owner}" — by ITSELF — at ${r.completeMs!.toFixed(1)} ms: ` +
          'an earlier attempt of this request was granted, and the retry was refused instead of returning that grant (an orphan lease)',
        [r.index],
      );
      continue;
    }
    add(
      'refused-took-effect',
      key,
      `acquire ${r.index} by "${r.owner}" was answered "not acquired" (held by ${r.holder || "''"}) at ${r.completeMs!.toFixed(1)} ms, ` +
        `yet ${o.type} ${o.index} (${o.process}) saw "${r.owner}" holding "${key}"${o.type === 'get' ? ` with token ${o.getToken}` : ''} at ${o.completeMs!.toFixed(1)} ms: ` +
        'a refused request took effect later (an orphan lease nobody renews or releases)',
      [r.index, o.index],
    );
  }
}

export function formatVerdict(v: Verdict, maxViolations = 20): string {
  const lines: string[] = [];
  lines.push(`checker verdict: ${v.valid ? 'VALID' : `INVALID (${v.violations.length} violation${v.violations.length === 1 ? '' : 's'})`}`);
  const lin = Object.entries(v.linearizability)
    .map(([k, r]) => `${k}=${r}`)
    .join(' ');
  lines.push(
    `  holder windows checked: ${v.windows}; leases checked against their ttl (lease-cut-short): ${v.leasesChecked}; linearizability per key: ${lin || '(no keys)'}`,
  );
  lines.push(
    `  lock model: fifo-order pairs judged ${v.lockModel.fifoPairs}; sessions seen ended (session-end) ${v.lockModel.sessionsEnded}; holds with a lock-delay (lock-delay) ${v.lockModel.lockDelayHolds}`,
  );
  const byKind = new Map<string, number>();
  for (const x of v.violations) byKind.set(x.kind, (byKind.get(x.kind) ?? 0) + 1);
  if (byKind.size) lines.push(`  by kind: ${[...byKind].map(([k, n]) => `${k}=${n}`).join(' ')}`);
  for (const x of v.violations.slice(0, maxViolations)) lines.push(`  - [${x.kind}] ${x.message}`);
  if (v.violations.length > maxViolations) lines.push(`  ... and ${v.violations.length - maxViolations} more`);
  for (const n of v.notes) lines.push(`  note: ${n}`);
  return lines.join('\n');
}
