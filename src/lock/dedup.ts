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
  /** Sequence number of queue[0]: every remembered record takes the next one, so queue[i] has
   *  queueBaseSeq + i, also after the forgotten prefix is dropped. */
  private queueBaseSeq = 0;
  /** Records replaced by a newer one for the same pair, and the sequence number of their successor. Only
   *  an open snapshot needs this (a record replaced after it started is still part of it); queued acquires
   *  are the only replacers, so it stays small. */
  private readonly replacedAt = new Map<DedupRecord, number>();
  /** Open snapshot readers (the driver's sliced one, and a synchronous one such as a digest). */
  private readonly readers = new Set<DedupSnapshotReader>();

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
    const key = dedupKey(record.owner, record.requestId);
    const previous = this.byRequest.get(key);
    if (previous !== undefined) this.replacedAt.set(previous, this.nextSeq);
    this.byRequest.set(key, record);
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

  /**
   * Start reading the records as they are now, oldest first, in pieces while the table keeps changing: the
   * reader sees exactly the records current at this call. New records come after its end; a record it has
   * not reached yet is handed to `emit` just before the table forgets it; a record replaced later still
   * counts. Close the reader when done with it (read() does, at the end).
   */
  openSnapshot(emit: (record: DedupRecord) => void): DedupSnapshotReader {
    const reader = new DedupSnapshotReader(this, this.head + this.queueBaseSeq, this.nextSeq, this.byRequest.size, emit);
    this.readers.add(reader);
    return reader;
  }

  /** @internal (DedupSnapshotReader) The record with sequence number `seq`, if still in the queue. */
  recordAt(seq: number): DedupRecord | undefined {
    return this.queue[seq - this.queueBaseSeq];
  }

  /** @internal (DedupSnapshotReader) Was `record` (still in the queue) current when sequence number `seq`
   *  was the next to be given? */
  wasCurrentAt(record: DedupRecord, seq: number): boolean {
    if (this.isCurrent(record)) return true;
    const successor = this.replacedAt.get(record);
    return successor !== undefined && successor >= seq;
  }

  /** @internal (DedupSnapshotReader) */
  detach(reader: DedupSnapshotReader): void {
    this.readers.delete(reader);
  }

  private get nextSeq(): number {
    return this.queueBaseSeq + this.queue.length;
  }

  private isCurrent(record: DedupRecord): boolean {
    return this.byRequest.get(dedupKey(record.owner, record.requestId)) === record;
  }

  private forgetOldest(): void {
    const oldest = this.queue[this.head]!;
    // An open snapshot must read the record before it goes.
    for (const reader of this.readers) reader.beforeForget(this.queueBaseSeq + this.head);
    // A replaced record's slot must not delete its successor.
    if (this.isCurrent(oldest)) this.byRequest.delete(dedupKey(oldest.owner, oldest.requestId));
    else this.replacedAt.delete(oldest);
    this.queue[this.head++] = undefined;
    // Drop the forgotten prefix once it is most of the array: amortised O(1) per record.
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.queueBaseSeq += this.head;
      this.head = 0;
    }
  }
}

/** Reads a DedupTable as it was when the reader was opened, in pieces (see DedupTable.openSnapshot). */
export class DedupSnapshotReader {
  private closed = false;

  constructor(
    private readonly table: DedupTable,
    /** Next sequence number to read. */
    private cursor: number,
    /** First sequence number after the snapshot's records. */
    private readonly endSeq: number,
    /** How many records the snapshot holds. */
    readonly count: number,
    private readonly emit: (record: DedupRecord) => void,
  ) {}

  get done(): boolean {
    return this.cursor >= this.endSeq;
  }

  /** Hand up to `budget` queue slots to `emit`; true when every record has been read. */
  read(budget: number): boolean {
    for (let n = 0; n < budget && this.cursor < this.endSeq; n++) this.readOne();
    if (this.done) this.close();
    return this.done;
  }

  /** The table is about to forget the record with sequence number `seq` (always the oldest it has). */
  beforeForget(seq: number): void {
    while (this.cursor <= seq && this.cursor < this.endSeq) this.readOne();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.table.detach(this);
  }

  private readOne(): void {
    const record = this.table.recordAt(this.cursor);
    if (record === undefined) throw new Error(`dedup snapshot: record ${this.cursor} was forgotten before it was read`);
    if (this.table.wasCurrentAt(record, this.endSeq)) this.emit(record);
    this.cursor++;
  }
}

/** Does a new request carry the same identity as the remembered one? Different type/key/token = misuse. */
export function sameRequest(record: DedupRecord, type: DedupOperation, key: string, token: bigint): boolean {
  return record.type === type && record.key === key && record.token === token;
}
