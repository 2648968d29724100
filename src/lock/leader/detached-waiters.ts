// Waiters whose connection broke (SPEC "A waiter's place outlives its connection"). When the last call
// waiting for a waiter ends because its stream or forward link broke — not because the caller cancelled —
// the waiter keeps its place in the replicated line:
// - under a session, for as long as the session lives: the session's end (or the wait deadline) takes it
//   out of line, nothing here does;
// - without a session, for a grace (LockLeaderConfig.detachedWaiterGraceMs, default 5 s) from the
//   break: a retry of the same request (owner, request_id) re-attaches within it; after it, if still nobody
//   waits for it, the leader proposes its `dequeue` (cause cancel). Its wait deadline ends it sooner when
//   that comes first (housekeeping's dequeue).
// A waiter granted while nobody is attached holds a lease or a session hold like any other: a retry picks
// the grant up (waiting-calls.ts keeps recent decisions, then the dedup table replays it), or the hold ends
// with its own lease or session. The graces are leader-local: a new leader knows none, and the waiter then
// waits until a retry, its wait deadline, or its session's end.
export interface GraceDue {
  key: string;
  ticket: number;
}

export class DetachedWaiters {
  /** `${key}\0${ticket}` -> when its grace ends (the leader's clock). */
  private readonly graces = new Map<string, { key: string; ticket: number; dueMs: number }>();

  get size(): number {
    return this.graces.size;
  }

  /** The waiter (key, ticket) lost its last call at a break: its grace runs until `dueMs`. */
  start(key: string, ticket: number, dueMs: number): void {
    this.graces.set(graceId(key, ticket), { key, ticket, dueMs });
  }

  /** A call re-attached to the waiter, or the log decided it: no grace runs for it any more. */
  end(key: string, ticket: number): void {
    this.graces.delete(graceId(key, ticket));
  }

  /** The waiters whose grace has ended at `clockMs` (they leave this table). */
  takeDue(clockMs: number): GraceDue[] {
    const due: GraceDue[] = [];
    for (const [id, g] of this.graces) {
      if (g.dueMs > clockMs) continue;
      this.graces.delete(id);
      due.push({ key: g.key, ticket: g.ticket });
    }
    return due;
  }

  /** Leadership lost: the graces end with it (the next leader knows none). */
  clear(): void {
    this.graces.clear();
  }
}

function graceId(key: string, ticket: number): string {
  return `${key}\u0000${ticket}`;
}
