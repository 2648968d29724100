// Remembered outcomes of acquire/renew/release by (owner, request_id), so a retried request (lost response,
// timeout) gets its first outcome back instead of being applied twice (SPEC: "retries are safe").
//
// Bounded by log time: a record is forgotten once `windowMs` of log time has passed since it was made.
// Records are inserted at the current log time, which never goes back, so insertion order IS time order:
// a FIFO queue beside the lookup Map lets pruning pop from the front in O(expired), never a scan. (Not the
// Map's own insertion order: V8 leaves deleted Map entries as holes until a rehash, so iterating a Map
// "from the front" after many deletions walks all the holes — measured quadratic at a million records.)
// `maxEntries` is a last-resort cap (oldest forgotten first) so a flood of unique request ids cannot grow
// memory without bound inside the window. The whole table is replicated state and goes into snapshots.
import type { AcquireOutcome, ReleaseOutcome, RenewOutcome } from './types.js';

interface DedupIdentity {
  owner: string;
  requestId: string;
  /** Log time when the first outcome was produced. */
  recordedAtMs: number;
  key: string;
  /** The token the request named (renew/release); 0n for acquire. Part of the request's identity. */
  token: bigint;
}

export type DedupRecord = DedupIdentity &
  (
    | { type: 'acquire'; outcome: AcquireOutcome }
    | { type: 'renew'; outcome: RenewOutcome }
    | { type: 'release'; outcome: ReleaseOutcome }
  );

export type DedupOperation = DedupRecord['type'];

/** Unambiguous map key: the owner's length prefix keeps ("ab","c") and ("a","bc") apart. */
function dedupKey(owner: string, requestId: string): string {
  return `${owner.length}:${owner}${requestId}`;
}

export class DedupTable {
  private readonly byRequest = new Map<string, DedupRecord>();
  /** The same records, oldest first; slots before `head` are already forgotten. */
  private queue: (DedupRecord | undefined)[] = [];
  private head = 0;

  constructor(
    readonly windowMs: number,
    readonly maxEntries: number,
  ) {}

  get size(): number {
    return this.byRequest.size;
  }

  /** Forget records older than the window at log time `nowMs`. */
  prune(nowMs: number): void {
    while (this.head < this.queue.length && this.queue[this.head]!.recordedAtMs + this.windowMs <= nowMs) {
      this.forgetOldest();
    }
  }

  find(owner: string, requestId: string): DedupRecord | undefined {
    return this.byRequest.get(dedupKey(owner, requestId));
  }

  /** Remember an outcome. A pair is remembered again only to turn a refusal into a grant (a queued acquire);
   *  the newer record replaces the older one, whose queue slot is then skipped. */
  remember(record: DedupRecord): void {
    this.byRequest.set(dedupKey(record.owner, record.requestId), record);
    this.queue.push(record);
    while (this.byRequest.size > this.maxEntries) this.forgetOldest();
  }

  /** Oldest first: the order snapshots must preserve so pruning stays front-to-back after a restore. */
  *inOrder(): IterableIterator<DedupRecord> {
    for (let i = this.head; i < this.queue.length; i++) {
      const record = this.queue[i]!;
      if (this.isCurrent(record)) yield record;
    }
  }

  private isCurrent(record: DedupRecord): boolean {
    return this.byRequest.get(dedupKey(record.owner, record.requestId)) === record;
  }

  private forgetOldest(): void {
    const oldest = this.queue[this.head]!;
    // A replaced record's slot must not delete its successor.
    if (this.isCurrent(oldest)) this.byRequest.delete(dedupKey(oldest.owner, oldest.requestId));
    this.queue[this.head++] = undefined;
    // Drop the forgotten prefix once it is most of the array: amortised O(1) per record.
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}

/** Does a new request carry the same identity as the remembered one? Different type/key/token = misuse. */
export function sameRequest(record: DedupRecord, type: DedupOperation, key: string, token: bigint): boolean {
  return record.type === type && record.key === key && record.token === token;
}
