// The checker's rules for the lock model of SPEC part three (issue 20 item 8): the replicated wait line
// (fifo-order), sessions (session-end) and lock-delay (lock-delay). Each judges only what a black-box
// history can show soundly under faults — real-time order of invocations and completions, the answers
// (ok/fail; 'info' constrains nothing), and the fencing tokens, which are the log's own order of grants on a
// key (a grant's token is the index of the entry that made it). checker.ts's header says what each checks
// and what it cannot see. Owners are unique per acquire in the chaos workload; where a rule needs that, it
// skips an owner that made more than one acquire of the key instead of assuming it.
import { isSessionOp, type Op } from './history.js';

type Kind = 'fifo-order' | 'session-end' | 'lock-delay';
type Add = (kind: Kind, key: string, message: string, ops: number[]) => void;

const done = (op: Op) => op.outcome !== 'pending' && op.completeMs !== null;
/** A renew refused for one of these: the hold had run out or was gone when its entry applied. */
const HOLD_GONE = new Set(['EXPIRED', 'NOT_HELD', 'WRONG_OWNER', 'WRONG_TOKEN']);
const grantedOf = (ops: readonly Op[]) => ops.filter((o) => o.type === 'acquire' && o.outcome === 'ok' && done(o) && o.token !== undefined);

/** Owners that made exactly one acquire of the key (so an owner names one request). */
function singleAcquireOwners(ops: readonly Op[]): Set<string> {
  const n = new Map<string, number>();
  for (const o of ops) if (o.type === 'acquire' && o.owner) n.set(o.owner, (n.get(o.owner) ?? 0) + 1);
  return new Set([...n].filter(([, c]) => c === 1).map(([o]) => o));
}

// ------------------------------------------------------------------ fifo-order

/** A stretch of time in which the queue watch may have missed events (it had to start again from "now"). */
export interface WatchGap {
  fromMs: number;
  toMs: number;
}

/**
 * A granted acquire A whose last QUEUED event before its grant (its owner's final join of the key's line)
 * was received at time Q; every granted acquire B of another owner invoked after Q must have a newer token
 * than A. Why that is sound: the watch serves applied, so committed, entries; every attempt of B was sent
 * after Q, so B's entries follow that join in the log; A stayed in line from that join to its grant — a
 * request leaves the line only when granted, refused (its wait deadline, its session's end: remembered for
 * its retries), or when its call is cancelled, and then it can come back only by joining again, which is a
 * QUEUED event of its own. (A cancel need not come from the client: a connection the fault proxy resets
 * cancels the server's call, and the retry with the same request id joins anew — chaos seed 2026 saw a
 * waiter join three times; judging its FIRST join, as this rule first did, was a false alarm.) So the final
 * join is the one granted — if the watch saw every event between it and the grant: an A whose window from Q
 * to its grant meets a watch gap is not judged. FIFO then puts B behind A, and a grant's token is its
 * entry's index. Returns how many (A, B) pairs it judged.
 */
export function checkFifo(key: string, ops: readonly Op[], add: Add, gaps: readonly WatchGap[] = []): number {
  const single = singleAcquireOwners(ops);
  const joins = new Map<string, Op[]>();
  for (const q of ops) {
    if (q.type !== 'queued' || !q.owner || !done(q)) continue;
    const list = joins.get(q.owner) ?? [];
    list.push(q);
    joins.set(q.owner, list);
  }
  if (joins.size === 0) return 0;
  const granted = grantedOf(ops).filter((o) => single.has(o.owner ?? ''));
  const byInvoke = [...granted].sort((a, b) => a.invokeMs - b.invokeMs);
  let pairs = 0;
  for (const a of granted) {
    // Its final join: the last QUEUED of its owner received before the grant was.
    let q: Op | undefined;
    for (const j of joins.get(a.owner!) ?? [])
      if (j.completeMs! <= a.completeMs! && (q === undefined || j.completeMs! > q.completeMs!)) q = j;
    if (!q) continue;
    const from = q.completeMs!;
    if (gaps.some((g) => g.fromMs <= a.completeMs! && g.toMs >= from)) continue; // a later join may be unseen
    for (let i = byInvoke.length - 1; i >= 0 && byInvoke[i]!.invokeMs > from; i--) {
      const b = byInvoke[i]!;
      if (b === a) continue;
      pairs++;
      if (b.token! < a.token!) {
        add(
          'fifo-order',
          key,
          `"${key}": ${a.owner} was in the wait line (its last join QUEUED at log index ${q.logIndex ?? '?'}, seen at ${from.toFixed(1)} ms) before acquire ${b.index} by ${b.owner} was sent ` +
            `(${b.invokeMs.toFixed(1)} ms), yet ${b.owner} was granted first (token ${b.token}) and ${a.owner} later (token ${a.token}, acquire ${a.index}): a newcomer overtook a waiter`,
          [a.index, q.index, b.index],
        );
      }
    }
  }
  return pairs;
}

/** The watch's gaps: 'queued' observations with no owner (queue-watch.ts records one for each restart). */
export function watchGapsOf(history: readonly Op[]): WatchGap[] {
  return history.filter((o) => o.type === 'queued' && !o.owner && done(o)).map((o) => ({ fromMs: o.invokeMs, toMs: o.completeMs! }));
}

// ------------------------------------------------------------------ sessions

interface SessionRecord {
  id: bigint;
  owner: string | undefined;
  ttlMs: number | undefined;
  lockDelayMs: number;
  open: Op | null;
  /** Acknowledged renews. */
  renews: Op[];
  /** Closes sent (any outcome but a definite failure). */
  closes: Op[];
  /** The first proof that the session had ended, and when it arrived. */
  end: { op: Op; atMs: number; what: string } | null;
}

/** Every session the history names, by id. */
export function sessionsOf(history: readonly Op[]): Map<bigint, SessionRecord> {
  const out = new Map<bigint, SessionRecord>();
  const rec = (id: bigint) => {
    let s = out.get(id);
    if (!s) out.set(id, (s = { id, owner: undefined, ttlMs: undefined, lockDelayMs: 0, open: null, renews: [], closes: [], end: null }));
    return s;
  };
  for (const op of history) {
    if (!isSessionOp(op) || op.sessionId === undefined || op.sessionId === 0n || !done(op)) continue;
    const s = rec(op.sessionId);
    s.owner ??= op.owner;
    if (op.type === 'open-session' && op.outcome === 'ok') {
      s.open = op;
      s.ttlMs = op.ttlMs;
      s.lockDelayMs = op.lockDelayMs ?? 0;
    }
    if (op.type === 'renew-session' && op.outcome === 'ok') s.renews.push(op);
    if (op.type === 'close-session' && op.outcome !== 'fail') s.closes.push(op);
    // The proofs of its end: a close acknowledged (closed, or "had ended already" — the client always names
    // the session's owner, so that answer is NOT_HELD, not WRONG_OWNER), or a renew the server refused as
    // run out / unknown. Each is an applied entry, so the session had ended by the time the answer came.
    let what: string | null = null;
    if (op.type === 'close-session' && op.outcome === 'ok')
      what = op.closed === false ? `close-session ${op.index} was answered "already ended"` : `close-session ${op.index} was acknowledged`;
    if (op.type === 'renew-session' && op.outcome === 'fail' && (op.reason === 'EXPIRED' || op.reason === 'NOT_HELD'))
      what = `renew-session ${op.index} was refused (${op.reason})`;
    if (what !== null && (s.end === null || op.completeMs! < s.end.atMs)) s.end = { op, atMs: op.completeMs!, what };
  }
  return out;
}

/**
 * session-end: once a session was seen ended (at E), nothing invoked after E may show it alive: no renew of
 * it acknowledged, no acquire under it granted, no Get showing one of its holds, no acquire refused because
 * its owner (an owner used only under this session) holds the key; and no hold of it may carry a token newer
 * than one the log issued after E (a token granted to an acquire invoked after E, or a Get's last_token read
 * after E) — a waiter of the session granted after it ended. Returns how many sessions were seen ended.
 */
export function checkSessionEnd(history: readonly Op[], sessions: ReadonlyMap<bigint, SessionRecord>, add: Add): number {
  let ended = 0;
  // Owners used only under one session (its open and its acquires), so a holder name means that session.
  const ownerSessions = new Map<string, Set<bigint>>();
  for (const op of history) {
    if ((op.type === 'acquire' || op.type === 'open-session') && op.owner) {
      const set = ownerSessions.get(op.owner) ?? new Set<bigint>();
      set.add(op.sessionId ?? 0n);
      ownerSessions.set(op.owner, set);
    }
  }
  const onlyUnder = (owner: string | undefined, id: bigint) =>
    owner !== undefined && ownerSessions.get(owner)?.size === 1 && ownerSessions.get(owner)!.has(id);
  const byKey = new Map<string, Op[]>();
  for (const op of history) {
    if (isSessionOp(op)) continue;
    if (!byKey.has(op.key)) byKey.set(op.key, []);
    byKey.get(op.key)!.push(op);
  }
  for (const s of sessions.values()) {
    if (!s.end) continue;
    ended++;
    const e = s.end;
    const after = (o: Op) => done(o) && o.invokeMs > e.atMs;
    const report = (key: string, o: Op, what: string) =>
      add('session-end', key, `session ${s.id} (${s.owner ?? '?'}) had ended — ${e.what} at ${e.atMs.toFixed(1)} ms — yet ${what}`, [
        e.op.index,
        o.index,
      ]);
    for (const r of s.renews)
      if (after(r))
        report(
          '',
          r,
          `renew-session ${r.index}, sent at ${r.invokeMs.toFixed(1)} ms, was acknowledged: a session that ran out cannot come back`,
        );
    const holds = history.filter((o) => o.type === 'acquire' && o.sessionId === s.id && o.outcome === 'ok' && done(o));
    for (const a of holds)
      if (after(a)) report(a.key, a, `acquire ${a.index} under it, sent at ${a.invokeMs.toFixed(1)} ms, was granted token ${a.token}`);
    const keys = new Set(history.filter((o) => o.type === 'acquire' && o.sessionId === s.id).map((o) => o.key));
    for (const key of keys) {
      const ops = byKey.get(key) ?? [];
      const mine = holds.filter((a) => a.key === key);
      for (const o of ops) {
        if (!after(o)) continue;
        if (o.type === 'get' && o.outcome === 'ok' && o.held) {
          const shows = o.getSessionId === s.id || mine.some((a) => a.owner === o.getOwner && a.token === o.getToken);
          if (shows)
            report(
              key,
              o,
              `get ${o.index}, sent at ${o.invokeMs.toFixed(1)} ms, shows its hold of "${key}" (${o.getOwner}, token ${o.getToken}) live`,
            );
        }
        if (o.type === 'acquire' && o.outcome === 'fail' && o.holder && onlyUnder(o.holder, s.id)) {
          report(key, o, `acquire ${o.index}, sent at ${o.invokeMs.toFixed(1)} ms, was refused because ${o.holder} holds "${key}"`);
        }
      }
      // Tokens the log issued after E on this key; a hold of the session newer than one of them was granted after E.
      let issuedAfter: { token: bigint; op: Op } | null = null;
      for (const o of ops) {
        if (!after(o) || o.outcome !== 'ok') continue;
        const t =
          o.type === 'acquire' && o.token !== undefined && o.sessionId !== s.id ? o.token : o.type === 'get' ? (o.lastToken ?? null) : null;
        if (t !== null && (issuedAfter === null || t < issuedAfter.token)) issuedAfter = { token: t, op: o };
      }
      if (issuedAfter === null) continue;
      const early = issuedAfter;
      for (const a of mine) {
        if (a.token! > early.token && !after(a)) {
          report(
            key,
            a,
            `its hold of "${key}" (acquire ${a.index}) has token ${a.token}, newer than token ${early.token} the log had issued after the end (${early.op.type} ${early.op.index}, sent at ${early.op.invokeMs.toFixed(1)} ms): it was granted after the session ended`,
          );
        }
      }
    }
  }
  return ended;
}

// ------------------------------------------------------------------ lock-delay

/**
 * lock-delay: an exclusive hold H of a limit-1 key carrying a lock-delay D (its own, or its session's) that
 * nobody released while it lived (no release of it, no close of its session, sent before the grant in
 * question was acknowledged; the workload never revokes) ended by running out, and the key then grants
 * nobody for D of log time. A release or close that applies after H ran out by log time ends it as expired,
 * into its delay, as the expiry would (SPEC "Lock-delay", machine-leases.ts `endsExpired`), so it excuses
 * nothing: the history proves that of one sent after the server answered that H (or its session) had run
 * out or gone — a renew of it refused (EXPIRED, NOT_HELD, WRONG_OWNER, WRONG_TOKEN), a renew of its session
 * refused, a close of it acknowledged — for that answer is an applied entry, log time only grows, and a
 * hold that ran out never comes back. The lease is owed until (the last acknowledged acquire/renew — of the hold, or of its session —
 * SENT, acknowledged before the grant in question was invoked) + ttl; so no other owner's grant of the key
 * with a newer token may be acknowledged before that send + ttl + D - the client's drift margin over
 * (ttl + D). Grants inside the lease itself are lease-cut-short's (a hold with its own ttl); only the ones in
 * the delay are reported here. Returns how many holds it judged.
 */
export function checkLockDelay(
  key: string,
  ops: readonly Op[],
  sessions: ReadonlyMap<bigint, SessionRecord>,
  add: Add,
  safetyFraction: number,
): number {
  const granted = grantedOf(ops);
  const single = singleAcquireOwners(ops);
  let judged = 0;
  for (const h of granted) {
    if (h.shared === true || (h.limit ?? 1) > 1 || !single.has(h.owner ?? '')) continue;
    const session = h.sessionId !== undefined && h.sessionId !== 0n ? sessions.get(h.sessionId) : undefined;
    if (h.sessionId !== undefined && h.sessionId !== 0n && (session === undefined || session.open === null)) continue;
    const delayMs = (h.lockDelayMs ?? 0) > 0 ? h.lockDelayMs! : (session?.lockDelayMs ?? 0);
    const ttlMs = session ? session.ttlMs : h.ttlMs;
    if (delayMs <= 0 || ttlMs === undefined || ttlMs <= 0) continue;
    judged++;
    // The sends that certainly took effect before an event invoked at `invokedMs`, with their ttl.
    const anchors = (invokedMs: number): { sentMs: number; ttlMs: number }[] =>
      session
        ? [session.open!, ...session.renews.filter((r) => r.completeMs! < invokedMs)].map((o) => ({
            sentMs: o.invokeMs,
            ttlMs: o.ttlMs ?? ttlMs,
          }))
        : [
            h,
            ...ops.filter(
              (r) =>
                r.type === 'renew' &&
                r.outcome === 'ok' &&
                done(r) &&
                r.owner === h.owner &&
                r.token === h.token &&
                r.completeMs! < invokedMs,
            ),
          ].map((o) => ({ sentMs: o.invokeMs, ttlMs: o.ttlMs ?? ttlMs }));
    // When the server first answered that H had run out or gone (a renew refused; for a session, sessionsOf's
    // `end`): a release or close sent after that cannot have ended it while it lived.
    const goneAtMs = session
      ? (session.end?.atMs ?? Infinity)
      : Math.min(
          Infinity,
          ...ops
            .filter((r) => r.type === 'renew' && r.outcome === 'fail' && r.owner === h.owner && r.token === h.token && done(r))
            .filter((r) => r.reason !== undefined && HOLD_GONE.has(r.reason))
            .map((r) => r.completeMs!),
        );
    const released = (beforeMs: number) =>
      ops.some(
        (r) =>
          r.type === 'release' &&
          (r.outcome === 'ok' || r.outcome === 'info') &&
          r.owner === h.owner &&
          r.token === h.token &&
          r.invokeMs < beforeMs &&
          r.invokeMs < goneAtMs,
      ) ||
      (session !== undefined && session.closes.some((c) => c.invokeMs < beforeMs && c.invokeMs < goneAtMs));
    for (const b of granted) {
      if (b.owner === h.owner || b.token! <= h.token! || released(b.completeMs!)) continue;
      const as = anchors(b.invokeMs);
      const leaseOwedMs = Math.max(...as.map((a) => a.sentMs + a.ttlMs - Math.ceil(a.ttlMs * safetyFraction)));
      const delayOwedMs = Math.max(...as.map((a) => a.sentMs + a.ttlMs + delayMs - Math.ceil((a.ttlMs + delayMs) * safetyFraction)));
      if (b.completeMs! < leaseOwedMs || b.completeMs! >= delayOwedMs) continue;
      add(
        'lock-delay',
        key,
        `"${key}" was granted to ${b.owner} (token ${b.token}, acquire ${b.index}) at ${b.completeMs!.toFixed(1)} ms, inside the lock-delay of ${delayMs} ms of ${h.owner}'s hold ` +
          `(token ${h.token}, acquire ${h.index}${session ? `, under session ${session.id}` : ''}), which nobody released: its lease was owed until ${leaseOwedMs.toFixed(1)} ms and the key ` +
          `to nobody until ${delayOwedMs.toFixed(1)} ms (last send + ttl + delay - ${(safetyFraction * 100).toFixed(1)} % margin)`,
        [h.index, b.index],
      );
      break; // the first such grant names the broken delay
    }
  }
  return judged;
}
