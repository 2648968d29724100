// What the lock service answered, judged as it answers (the simulation's view of every call):
//  - arrival order is grant order: among waiters for one key that arrived at one leader in one term, a
//    waiter is never granted while one that arrived before it is still waiting (not answered, not
//    cancelled, its wait not over) — for waiters arriving directly and through a follower alike (the holder
//    re-acquiring its own live hold keeps the key and takes no one's turn: not a grant in this sense). A call
//    the leader answers with a refusal it remembers is that refusal's replay, not a waiter (it is answered
//    once a read barrier confirms the refusal: LockLeader.confirmRefusal): it takes nobody's turn;
//  - a refused acquire never takes effect: once a client RECEIVED "not acquired" for (owner, request_id),
//    the log never grants that request unless the client itself invoked it again afterwards (a late
//    duplicate or a still-queued earlier attempt must not turn into an orphan grant). A refusal that never
//    reached its client (lost answer, crashed server) binds nobody: the client retries and may be granted.
//    The promise has the scope the service documents (README "Retries are safe"): a refusal decided by the
//    log binds every leader for the dedup window; one the leader decided itself (a wait deadline, no
//    barging) binds that leader while it leads — a late duplicate reaching a NEW leader is judged afresh
//    (counted as `leaderRefusalsOutlived`, not failed);
//  - no grant is ever answered "not acquired": once the log granted (owner, request_id), every answer to
//    that request (within the dedup window) is that grant, with its token.
import type { AcquireResult } from '../../src/lock/index.js';

export interface Arrival {
  seq: number;
  key: string;
  requestKey: string;
  waitMs: number;
  /** The serving node's clock at arrival (the module's deadlines run on it). */
  arrivedNodeMs: number;
  term: number;
  open: boolean;
  label: string;
}

interface Grant {
  token: bigint;
  index: number;
  /** Log time of the granting entry (the dedup window is measured in log time). */
  logMs: number;
}

export class LockCallChecks {
  violation: string | null = null;
  private seq = 0;
  /** Open FIFO records by `${node}/${incarnation}/${term}/${key}`. */
  private readonly arrivals = new Map<string, Arrival[]>();
  private readonly grants = new Map<string, Grant>();
  private readonly refusedAnswerAt = new Map<string, number>();
  /** Log time at the leader when it last answered the request "not acquired". */
  private readonly refusalLogMs = new Map<string, number>();
  /** Log time of the first log entry that refused the request (the machine's dedup record dates from it). */
  private readonly refusedInLogMs = new Map<string, number>();
  /** Index of the latest log entry that refused the request (a wait deadline by log time, a refusal). */
  private readonly refusedInLogAt = new Map<string, number>();
  private readonly lastInvokeAt = new Map<string, number>();
  readonly stats = { arrivals: 0, queuedGrants: 0, refusalAnswers: 0, fifoChecked: 0, leaderRefusalsOutlived: 0 };
  /** The last refusal answered per request: decided by the log (index > 0) or by a leader (`node/term`). */
  private readonly lastRefusal = new Map<string, { logDecided: boolean; leader: string }>();
  /** The refusal the client received last, per request (a copy of lastRefusal at that moment). */
  private readonly receivedRefusal = new Map<string, { logDecided: boolean; leader: string }>();

  constructor(private readonly dedupWindowMs: number) {}

  static requestKey(owner: string, requestId: string): string {
    return `${owner}\u0000${requestId}`;
  }

  /** Requests the log refused as SESSION_NOT_OPEN, at the first such entry's index. */
  private readonly sessionNotOpenAt = new Map<string, number>();

  sessionNotOpen(requestKey: string, index: number): void {
    if (!this.sessionNotOpenAt.has(requestKey)) this.sessionNotOpenAt.set(requestKey, index);
  }

  /** Each request's latest ticket (the index of the entry that put it in the replicated line). */
  private readonly tickets = new Map<string, number>();

  queuedInLog(requestKey: string, ticket: number): void {
    this.tickets.set(requestKey, ticket);
  }

  /** Tokens of grants that superseded the same owner's live hold of the key: no turn taken from the line. */
  private readonly supersedes = new Set<bigint>();

  supersededOwnHold(token: bigint): void {
    this.supersedes.add(token);
  }

  /** The client invoked an operation carrying this request (a new op, not a retry of an old one). */
  invoked(requestKey: string, nowMs: number): void {
    const prev = this.lastInvokeAt.get(requestKey);
    if (prev === undefined || nowMs > prev) this.lastInvokeAt.set(requestKey, nowMs);
  }

  /** An acquire reached the lock service of a node (leader or not: a follower refuses at once). */
  /** `joins`: the leader already queues this request (asked just before the call reached it).
   *  `replays`: the log has decided the request already (LockService.replaysOutcome), so the call gets that
   *  outcome replayed — it is no waiter and takes nobody's turn. */
  arrive(
    scope: string,
    key: string,
    requestKey: string,
    waitMs: number,
    nodeMs: number,
    term: number,
    label: string,
    joins: boolean,
    replays = false,
    inAppliedLine = false,
  ): Arrival {
    const k = `${scope}/${term}/${key}`;
    let list = this.arrivals.get(k);
    if (list === undefined) this.arrivals.set(k, (list = []));
    // A call of a request that holds a place in the queue right now — its earlier call still waits, or was
    // cancelled while the leader kept its place (a head whose acquire is in flight) — joins that place: it
    // takes the earlier call's arrival position and wait deadline. Any other retry starts at the back.
    let prev: Arrival | undefined;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i]!.requestKey === requestKey) {
        prev = list[i];
        break;
      }
    }
    // (An earlier call still open counts too: calls held until the term starts are served in arrival order,
    // so a later one of the same request joins the first one's waiter.)
    const inherit = prev !== undefined && (joins || prev.open);
    // A call re-attaching to a place already in the applied line, taken before any arrival here (under an
    // earlier leader: the line is replicated): that place is ahead of every arrival in this term — seq 0,
    // before all of them (and not compared among its kind). A request merely in flight is not: if its old
    // place is gone (refused, and forgotten past the dedup window), its entry takes a new one at the back.
    const a: Arrival = {
      seq: inherit ? prev!.seq : inAppliedLine ? 0 : ++this.seq,
      key,
      requestKey,
      waitMs: replays ? 0 : inherit ? prev!.waitMs : waitMs,
      arrivedNodeMs: inherit ? prev!.arrivedNodeMs : nodeMs,
      term,
      open: true,
      label,
    };
    list.push(a);
    this.stats.arrivals++;
    return a;
  }

  /** The call behind `a` ended without a grant (refused, failed, cancelled, or its node died). */
  close(a: Arrival): void {
    a.open = false;
  }

  /** Every open arrival of a node incarnation ends (it crashed: nobody is waiting there any more). */
  closeScope(scope: string): void {
    for (const [k, list] of this.arrivals) {
      if (!k.startsWith(`${scope}/`)) continue;
      for (const a of list) a.open = false;
      this.arrivals.delete(k);
    }
  }

  /** The service answered `a`'s call with `r` at the serving node's clock `nodeMs`, sim time `nowMs`. */
  /** `placeOf(requestKey)`: that request's ticket in the serving node's applied line, if it has one. A
   *  seq-0 arrival is ahead of a grant only while its place (ticket) is before the granting entry: entries
   *  that applied after it arrived — a term start, say — may have refused it since, and a retry past the
   *  dedup window may have taken a new place at the back (lock simulation seed 2147). */
  answered(
    scope: string,
    a: Arrival,
    r: AcquireResult,
    nodeMs: number,
    logMs: number,
    leader: string,
    placeOf: (requestKey: string) => number | undefined = () => 0,
  ): void {
    a.open = false;
    // A replay (the retry of a request the log already granted) is that old grant, not a new one: it takes
    // nobody's turn.
    if (r.acquired && !r.replayed && !this.supersedes.has(r.token)) {
      const list = this.arrivals.get(`${scope}/${a.term}/${a.key}`) ?? [];
      // A grant that had waiters arriving before it at this leader: the order actually mattered.
      if (list.some((q) => q.seq < a.seq && q.waitMs > 0 && q.requestKey !== a.requestKey)) this.stats.fifoChecked++;
      for (const q of list) {
        if (q === a || q.seq >= a.seq || !q.open || q.waitMs <= 0 || q.requestKey === a.requestKey) continue;
        if (q.seq === 0 && !((placeOf(q.requestKey) ?? Infinity) < r.index)) continue;
        // The granted request held a place in the replicated line ahead of q's (its entry, of an earlier term,
        // applied here only after its retry arrived): the log's order, which the oracle checks by ticket, is
        // the order (lock simulation seed 2603).
        const aTicket = this.tickets.get(a.requestKey);
        const qTicket = placeOf(q.requestKey);
        if (aTicket !== undefined && qTicket !== undefined && aTicket < qTicket) continue;
        // The log granted q's request before this grant: q is no waiter but a copy (a duplicate, a retry) of
        // a request whose hold may already have ended — a session hold ends with its session, which can run
        // out moments after the grant (lock simulation seeds 1182, 2469, 3037, ...). Its call gets that grant
        // replayed; the key's next grant takes nobody's turn.
        const earlier = this.grants.get(q.requestKey);
        if (earlier !== undefined && earlier.index < r.index) continue;
        // The log refused q's request because its session was not open: every copy of it meets the same
        // answer (a session never comes back), so it waits for nothing.
        if ((this.sessionNotOpenAt.get(q.requestKey) ?? Infinity) < r.index) continue;
        // The log took q's request out of line before this grant (its wait deadline passed by log time, which
        // a leader whose clock runs ahead of this node's moves faster than this node's clock) and q has no
        // later place: its call waits for an answer the log already gave — a refusal, replayed to its retry —
        // not for a turn (lock simulation seed 7153: the call sat at a node that learned the refusal from a
        // snapshot, which carries no decisions to answer calls with).
        const refusedAt = this.refusedInLogAt.get(q.requestKey);
        if (refusedAt !== undefined && refusedAt < r.index && !(qTicket !== undefined && qTicket > refusedAt && qTicket < r.index))
          continue;
        // Still waiting by the module's own clock (its deadline tick may be just due: give it 1 ms).
        if (nodeMs - q.arrivedNodeMs >= q.waitMs - 1) continue;
        this.fail(
          `FIFO: ${a.label} (arrival #${a.seq}) was granted ${a.key} with token ${r.token} while ${q.label} (arrival #${q.seq}, earlier, wait ${q.waitMs}ms) still waits at the same leader in term ${a.term}: arrival order must be grant order`,
        );
        return;
      }
      if (a.waitMs > 0 && r.index > 0) this.stats.queuedGrants++;
    }
    if (r.acquired) {
      const g = this.grants.get(a.requestKey);
      // An answer decided by an entry BEFORE the grant on record is not that grant: the request's earlier
      // grant, replayed by a duplicate that applied just before the dedup window ran out and another
      // duplicate was granted afresh (lock simulation seed 7800; past the window a duplicate is a new
      // request, README "Retries are safe").
      const decidedBefore = g !== undefined && r.index > 0 && r.index < g.index;
      if (g !== undefined && !decidedBefore && g.token !== r.token && logMs - g.logMs < this.dedupWindowMs) {
        this.fail(
          `${a.label} answered acquired with token ${r.token}, but the log granted that request token ${g.token} (entry ${g.index})`,
        );
      }
      return;
    }
    this.stats.refusalAnswers++;
    const g = this.grants.get(a.requestKey);
    // As for a grant above: a refusal decided by an entry BEFORE the grant on record is the request's earlier
    // outcome, replayed by a duplicate that applied just before the dedup window ran out, while another
    // duplicate, just past it, was a new request and granted afresh (the oracle's retries check judges both
    // entries; `granted` judges the orphan). Lock simulation seed 196 with a 50 ms window: two copies of one
    // forwarded call, entries 53 and 54, 49 and 51 ms after the refusal at entry 43.
    const refusedBefore = g !== undefined && r.index > 0 && r.index < g.index;
    if (g !== undefined && !refusedBefore && logMs - g.logMs < this.dedupWindowMs) {
      this.fail(
        `${a.label} answered "not acquired" (holder ${r.holderOwner || '-'}), but the log granted that very request token ${g.token} at entry ${g.index}: a grant must never be answered as a refusal`,
      );
    }
    this.refusalLogMs.set(a.requestKey, logMs);
    this.lastRefusal.set(a.requestKey, { logDecided: r.index > 0, leader });
  }

  /** A log entry (`index`) refused (owner, request_id) afresh (not a replay) at log time `logMs`. */
  refusedInLog(requestKey: string, logMs: number, index: number): void {
    if (!this.refusedInLogMs.has(requestKey)) this.refusedInLogMs.set(requestKey, logMs);
    this.refusedInLogAt.set(requestKey, index);
  }

  /** The client received "not acquired" for this request at sim time `nowMs`. */
  refusalReceived(requestKey: string, nowMs: number): void {
    this.refusedAnswerAt.set(requestKey, nowMs);
    const how = this.lastRefusal.get(requestKey);
    if (how !== undefined) this.receivedRefusal.set(requestKey, how);
  }

  /** The log granted (owner, request_id) at `index` (first judged apply of a non-replayed grant). */
  /** `leader`: `node/term` of the leader whose entry granted it. */
  granted(requestKey: string, label: string, token: bigint, index: number, logMs: number, leader: string): void {
    const prev = this.grants.get(requestKey);
    // Outside the dedup window (log time) the machine has forgotten the request: a new grant is a new one.
    if (prev === undefined || logMs - prev.logMs >= this.dedupWindowMs) this.grants.set(requestKey, { token, index, logMs });
    const refusedAt = this.refusedAnswerAt.get(requestKey);
    if (refusedAt === undefined) return;
    const invokedAt = this.lastInvokeAt.get(requestKey) ?? -Infinity;
    if (invokedAt > refusedAt) return; // the client asked again after the refusal: this grant is its answer
    // Past the dedup window (log time, counted from the decision the machine remembers) a late duplicate is
    // a new request: documented, and outside this check.
    const decidedAt = Math.min(this.refusalLogMs.get(requestKey) ?? Infinity, this.refusedInLogMs.get(requestKey) ?? Infinity);
    if (Number.isFinite(decidedAt) && logMs - decidedAt >= this.dedupWindowMs) return;
    const how = this.receivedRefusal.get(requestKey);
    if (how !== undefined && !how.logDecided && how.leader !== leader) {
      this.stats.leaderRefusalsOutlived++; // documented: a leader's own refusal does not outlive its leadership
      return;
    }
    this.fail(
      `a refused acquire took effect: ${label}'s client was told "not acquired" at t=${refusedAt.toFixed(2)}, and entry ${index} granted it token ${token} afterwards without the client asking again (an orphan lock)`,
    );
  }

  private fail(message: string): void {
    if (this.violation === null) this.violation = message;
  }
}
