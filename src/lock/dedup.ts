// Remembered outcomes of acquire/renew/release/revoke by (owner, request_id), so a retried request (lost response,
// timeout) gets its first outcome back instead of being applied twice (SPEC: "retries are safe").
//
// Bounded by log time: a record is forgotten once `windowMs` of log time has passed since it was made —
// unless the machine still needs it (from cluster level 6, an acquire whose owner holds the key: `prune`'s
// `keep`), in which case it is remembered again as it is, at the current log time. Records are inserted at
// the current log time, which never goes back, so insertion order IS time order: the records sit in a FIFO
// and pruning pops from the front in O(expired), never a scan.
//
// Memory: a record is kept as its snapshot bytes (dedup-codec.ts) in one byte arena, in arrival order,
// with its time, offset and a "replaced" flag in typed arrays and a position in an open-addressing hash
// index over the (owner, request_id) bytes — about 80-100 bytes a record instead of ~440 as objects (a
// Map entry, a composite key string, the record, its outcome, a bigint), and nothing the garbage collector
// has to trace one by one. Lookups decode the record they find; pruning just moves the front.
// `maxEntries` is a last-resort cap (oldest forgotten first) so a flood of unique request ids cannot grow
// memory without bound inside the window. The whole table is replicated state and goes into snapshots.
import { ByteReader, ByteWriter } from './bytes.js';
import { readAcquireOwnerKey, readDedupBody, readDedupIdentity, writeDedupBody, writeDedupIdentity } from './dedup-codec.js';
import type { DedupRecordSink } from './snapshot.js';
import type { DedupOperation, DedupRecord } from './dedup-record.js';

const EMPTY = -1;
/** The index keeps a record's sequence number, low 31 bits: unlike its queue position, it does not move when
 *  the forgotten prefix is dropped, so dropping it never rehashes the table (a 250,000-record index rebuilt
 *  every ~100,000 requests held every replica's loop for 30-55 ms). Positions are < 2^31, so the low bits
 *  name one record of the queue. */
const SEQ_MASK = 0x7fffffff;
/** The smallest record the snapshot decoder accepts: two string lengths, the time, the type, the key's
 *  length, the token, a flag and a reason, a byte each (only a capacity hint: more records still fit). */
const MIN_RECORD_BYTES = 8;

class ArenaError extends Error {
  override readonly name = 'DedupArenaError';
}

/** A record prune asks its keep rule about does not read (one function, not a closure a record asked). */
const keptRecordError = (message: string): ArenaError => new ArenaError(`dedup record asked about keeping: ${message}`);

/** FNV-1a over bytes: where an identity goes in the hash index. */
function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  return hash >>> 0;
}

/** Asked by prune about an expired acquire's record (the only kind cluster level 6 keeps), by its owner and
 *  key: true keeps it, remembered again at the current log time. */
export type KeepAcquire = (owner: string, key: string) => boolean;

/** What DedupTable.listener hears: record bytes as ranges of `bytes`, valid only during the call — the
 *  identity (owner, request_id) in [start, split), the body in [split, end). A replaced record is not
 *  forgotten: its successor, remembered under the same identity, took its place. */
export interface DedupListener {
  remembered(bytes: Uint8Array, start: number, split: number, end: number, recordedAtMs: number): void;
  forgotten(bytes: Uint8Array, start: number, split: number): void;
}

export class DedupTable {
  /** Every record in the queue, back to back: identity bytes, then body bytes (dedup-codec.ts). */
  private readonly arena = new ByteWriter(1024);
  // Per queue position (records [head, tail) are in the queue; earlier positions are forgotten):
  private offsets = new Float64Array(64);
  private identityBytes = new Uint16Array(64);
  /** The identity's hash (hashBytes), kept so that moving an index entry back (unindex) or rebuilding the
   *  index never hashes a record's bytes again. */
  private hashes = new Uint32Array(64);
  private recordedAt = new Float64Array(64);
  /** 1 when a newer record for the same pair replaced this one (a queued acquire turning a refusal into a
   *  grant): its slot stays in the queue, skipped, until the front passes it. */
  private replaced = new Uint8Array(64);
  private head = 0;
  private tail = 0;
  /** Sequence number of queue position 0: every remembered record takes the next one, so position i has
   *  baseSeq + i, also after the forgotten prefix is dropped. */
  private baseSeq = 0;
  /** Current (not replaced) records: hash of identity -> sequence number (SEQ_MASK bits), or EMPTY. Linear
   *  probing with deletion by backward shift: no tombstones, so a table turning over at its cap never fills
   *  up with them and is rebuilt only to grow. */
  private index = new Int32Array(64).fill(EMPTY);
  private indexUsed = 0;
  /** Records of a lower sequence number are not in the index (prune cleared it whole, every record being past
   *  the window): they go without a deletion each. Prune forgets them all before it returns. */
  private clearedBelowSeq = 0;
  private builds = 0;
  private removals = 0;
  private live = 0;
  /** Records replaced by a newer one, by sequence number, and the sequence number of their successor.
   *  Only an open snapshot needs this (a record replaced after it started is still part of it). */
  private readonly replacedAt = new Map<number, number>();
  /** Open snapshot readers (the driver's sliced one, and a synchronous one such as a digest). */
  private readonly readers = new Set<DedupSnapshotReader>();
  private readonly scratch = new ByteWriter(256);
  /** Told of every record remembered and every current record forgotten (the applied store keeps one
   *  record per remembered request: store-records.ts); null when nothing listens. */
  listener: DedupListener | null = null;

  constructor(
    readonly windowMs: number,
    readonly maxEntries: number,
  ) {}

  get size(): number {
    return this.live;
  }

  /** How many times the index was built anew (tests: a table turning over at its cap does not rebuild). */
  get indexBuilds(): number {
    return this.builds;
  }

  /** How many records were taken out of the index one by one (a backward-shift deletion each; tests: an
   *  expiry of the whole table clears the index at once instead). */
  get indexRemovals(): number {
    return this.removals;
  }

  /** Bytes the record arena has room for (its memory; tests of its bound). */
  get arenaCapacity(): number {
    return this.arena.backing.length;
  }

  /**
   * Forget records older than the window at log time `nowMs` — except those `keep` still needs (from cluster
   * level 6, an acquire whose owner still holds its key: machine-entries.ts `keepAcquireRecord`). A kept record is
   * remembered again as it is, at `nowMs` (the queue stays in time order), and asked about again once the
   * window has passed from then.
   *
   * When even the newest record is past the window (the first entry after a cluster stopped for longer than
   * it, or after as long an idle spell), every record goes or is kept: the index is then cleared whole, once,
   * instead of by a backward-shift deletion a record (kept copies are indexed as they are made). The records
   * kept, their order and sequence numbers, and what the listener hears, in order, are the same either way;
   * only the index's layout differs, which no lookup can tell.
   */
  prune(nowMs: number, keep?: KeepAcquire): void {
    if (this.head === this.tail || this.recordedAt[this.head]! + this.windowMs > nowMs) return;
    // (Not for a few records in a big index: filling it would cost more than their deletions.)
    const whole = this.recordedAt[this.tail - 1]! + this.windowMs <= nowMs;
    if (whole && (this.tail - this.head) * 8 >= this.index.length) this.clearIndex();
    while (this.head < this.tail && this.recordedAt[this.head]! + this.windowMs <= nowMs) {
      if (keep !== undefined && this.replaced[this.head] === 0 && this.keeps(this.head, keep)) this.keepAt(this.head, nowMs);
      this.forgetOldest();
    }
  }

  /** Whether `keep` keeps record `at`: asked only of an acquire's, which is decoded only as far as its owner
   *  and key. */
  private keeps(at: number, keep: KeepAcquire): boolean {
    const start = this.offsets[at]!;
    const acquire = readAcquireOwnerKey(this.arena.backing, start, start + this.identityBytes[at]!, this.endOf(at), keptRecordError);
    return acquire !== null && keep(acquire.owner, acquire.key);
  }

  find(owner: string, requestId: string): DedupRecord | undefined {
    const at = this.lookup(owner, requestId);
    return at < 0 ? undefined : this.decode(at);
  }

  /** Remember an outcome. A pair is remembered again only to turn a refusal into a grant (a queued acquire);
   *  the newer record replaces the older one, whose queue slot is then skipped. */
  remember(record: DedupRecord): void {
    const previous = this.lookup(record.owner, record.requestId); // leaves the identity in `scratch`
    const identity = this.scratch.view();
    const at = this.beginRecord(previous, record.recordedAtMs, identity.length);
    this.arena.raw(identity);
    writeDedupBody(this.arena, record);
    this.endRecord(at);
  }

  /** Remember record `at` again, byte for byte, at `nowMs`: the copy replaces it (its slot is skipped). */
  private keepAt(at: number, nowMs: number): void {
    const seq = this.baseSeq + at;
    const next = this.beginRecord(at, nowMs, this.identityBytes[at]!);
    // The queue may have moved to the front under beginRecord: the record is found again by its sequence
    // number, and copied from the arena's own bytes (rawRange reads the array it is given, kept if it grows).
    const now = seq - this.baseSeq;
    this.arena.rawRange(this.arena.backing, this.offsets[now]!, this.offsets[now + 1]!);
    this.endRecord(next);
  }

  /**
   * Where a snapshot restore hands the records (snapshot.ts decodeState): each is copied in as the bytes it
   * already is, exactly as remember() of the decoded record would store it, without the objects. The
   * arena and queue arrays are sized once from the snapshot instead of doubling their way up.
   */
  restoreSink(): DedupRecordSink {
    return {
      reserve: (count, bytesLeft) => {
        // The table never holds more than maxEntries; and a corrupt count must not allocate for records
        // the bytes cannot hold (one takes at least MIN_RECORD_BYTES).
        const expected = Math.min(count, this.maxEntries, Math.floor(bytesLeft / MIN_RECORD_BYTES));
        this.arena.reserveExact(bytesLeft);
        if (expected > this.offsets.length) this.growQueue(expected);
        this.presizeIndex(expected);
      },
      record: (bytes, start, split, bodyStart, end, recordedAtMs) =>
        this.copyIn(this.lookupRange(bytes, start, split), bytes, start, split, bodyStart, end, recordedAtMs),
      // A quarter-million lookups of a restore from the store (each a probe of the index and a compare of the
      // bytes it finds there) found nothing: its records are by distinct identities.
      recordDistinct: (bytes, start, split, bodyStart, end, recordedAtMs) =>
        this.copyIn(-1, bytes, start, split, bodyStart, end, recordedAtMs),
    };
  }

  /** A restored record, its bytes as they are, in place of the current one of its identity at `previous` (-1 = none). */
  private copyIn(
    previous: number,
    bytes: Uint8Array,
    start: number,
    split: number,
    bodyStart: number,
    end: number,
    recordedAtMs: number,
  ): void {
    const at = this.beginRecord(previous, recordedAtMs, split - start);
    this.arena.rawRange(bytes, start, split);
    this.arena.rawRange(bytes, bodyStart, end);
    this.endRecord(at);
  }

  /** Opens queue slot for a new record of the pair whose current record (if any) is at `previous`; the
   *  caller then appends its identity and body bytes to the arena and calls endRecord. */
  private beginRecord(previous: number, recordedAtMs: number, identityLength: number): number {
    if (previous >= 0) {
      this.unindex(previous);
      this.replaced[previous] = 1;
      this.replacedAt.set(this.baseSeq + previous, this.nextSeq);
      this.live--;
    }
    if (this.tail === this.offsets.length) this.makeRoom();
    const at = this.tail++;
    this.offsets[at] = this.arena.size;
    this.identityBytes[at] = identityLength;
    this.recordedAt[at] = recordedAtMs;
    this.replaced[at] = 0;
    return at;
  }

  private endRecord(at: number): void {
    const start = this.offsets[at]!;
    this.hashes[at] = hashBytes(this.arena.backing, start, start + this.identityBytes[at]!);
    this.live++;
    this.insertIndex(at);
    if (this.listener !== null) {
      this.listener.remembered(this.arena.view(), start, start + this.identityBytes[at]!, this.arena.size, this.recordedAt[at]!);
    }
    while (this.live > this.maxEntries) this.forgetOldest();
    this.compactArena();
  }

  /**
   * Drops the arena's forgotten prefix once it is a quarter of the arena and outweighs the free room at its
   * end. Else the arena of a table turning over at maxEntries doubled while mostly holding records already
   * forgotten (the queue is cut only when half of its records are gone): up to 4x its live bytes, ~40 of a
   * million-lock leader's MB for 250,000 records. Amortised: each cut moves the live bytes once for at least
   * a quarter of the arena appended since the last.
   */
  private compactArena(): void {
    if (this.head === 0) return;
    const gone = this.head < this.tail ? this.offsets[this.head]! : this.arena.size;
    const capacity = this.arena.backing.length;
    if (gone * 4 >= capacity && gone >= capacity - this.arena.size) this.dropForgotten();
  }

  /**
   * Start reading the records as they are now, oldest first, in pieces while the table keeps changing: the
   * reader sees exactly the records current at this call. New records come after its end; a record it has
   * not reached yet is handed to `emit` just before the table forgets it; a record replaced later still
   * counts. Close the reader when done with it (read() does, at the end).
   */
  openSnapshot(emit: (seq: number) => void): DedupSnapshotReader {
    const reader = new DedupSnapshotReader(this, this.baseSeq + this.head, this.nextSeq, this.live, emit);
    this.readers.add(reader);
    return reader;
  }

  /** Every current record, oldest first, as ranges of `bytes` (valid during the call; see DedupListener). */
  forEachRecord(visit: (bytes: Uint8Array, start: number, split: number, end: number, recordedAtMs: number) => void): void {
    const bytes = this.arena.view();
    for (let at = this.head; at < this.tail; at++) {
      if (this.replaced[at] !== 0) continue;
      const start = this.offsets[at]!;
      visit(bytes, start, start + this.identityBytes[at]!, this.endOf(at), this.recordedAt[at]!);
    }
  }

  /** Write record `seq` (still in the queue) as the snapshot stores it, its time relative to `nowMs`. */
  writeSnapshotRecord(out: ByteWriter, seq: number, nowMs: number): void {
    const at = seq - this.baseSeq;
    const bytes = this.arena.view();
    const start = this.offsets[at]!;
    const split = start + this.identityBytes[at]!;
    out.raw(bytes.subarray(start, split));
    out.uint(nowMs - this.recordedAt[at]!);
    out.raw(bytes.subarray(split, this.endOf(at)));
  }

  /** @internal (DedupSnapshotReader) Is record `seq` still in the queue? */
  holds(seq: number): boolean {
    const at = seq - this.baseSeq;
    return at >= this.head && at < this.tail;
  }

  /** @internal (DedupSnapshotReader) Was record `seq` (still in the queue) current when `endSeq` was the
   *  next sequence number to be given? */
  wasCurrentAt(seq: number, endSeq: number): boolean {
    if (this.replaced[seq - this.baseSeq] === 0) return true;
    const successor = this.replacedAt.get(seq);
    return successor !== undefined && successor >= endSeq;
  }

  /** @internal (DedupSnapshotReader) */
  detach(reader: DedupSnapshotReader): void {
    this.readers.delete(reader);
  }

  private get nextSeq(): number {
    return this.baseSeq + this.tail;
  }

  private endOf(at: number): number {
    return at + 1 < this.tail ? this.offsets[at + 1]! : this.arena.size;
  }

  private decode(at: number): DedupRecord {
    const input = new ByteReader(
      this.arena.view().subarray(this.offsets[at]!, this.endOf(at)),
      (message) => new ArenaError(`dedup record ${at}: ${message}`),
    );
    const identity = readDedupIdentity(input);
    return readDedupBody(input, { ...identity, recordedAtMs: this.recordedAt[at]! });
  }

  /** Queue position of the current record for the pair, or -1. Leaves the pair's bytes in `scratch`. */
  private lookup(owner: string, requestId: string): number {
    const scratch = this.scratch;
    scratch.clear();
    writeDedupIdentity(scratch, owner, requestId);
    return this.lookupRange(scratch.view(), 0, scratch.size);
  }

  /** Queue position of the current record whose identity bytes are id[start, end), or -1. */
  private lookupRange(id: Uint8Array, start: number, end: number): number {
    const mask = this.index.length - 1;
    for (let slot = hashBytes(id, start, end) & mask; ; slot = (slot + 1) & mask) {
      const stored = this.index[slot]!;
      if (stored === EMPTY) return -1;
      const at = this.positionOf(stored);
      if (this.identityBytes[at] === end - start && this.identityEquals(at, id, start)) return at;
    }
  }

  private identityEquals(at: number, id: Uint8Array, idStart: number): boolean {
    const bytes = this.arena.backing;
    const start = this.offsets[at]!;
    const length = this.identityBytes[at]!;
    for (let i = 0; i < length; i++) if (bytes[start + i] !== id[idStart + i]) return false;
    return true;
  }

  private hashOf(at: number): number {
    return this.hashes[at]!;
  }

  private insertIndex(at: number): void {
    // Linear probing stays short below 3/4 full.
    if ((this.indexUsed + 1) * 4 > this.index.length * 3) {
      this.rebuildIndex(); // `at` is in the queue already, so this indexes it too
      return;
    }
    this.index[this.slotFor(at)] = this.seqOf(at);
    this.indexUsed++;
  }

  /** What the index keeps for queue position `at`. */
  private seqOf(at: number): number {
    return (this.baseSeq + at) & SEQ_MASK;
  }

  /** The queue position of an index entry (the queue holds it: the index has only current records). */
  private positionOf(stored: number): number {
    return (stored - (this.baseSeq & SEQ_MASK)) & SEQ_MASK;
  }

  /** The first empty slot on `at`'s probe path. */
  private slotFor(at: number): number {
    const mask = this.index.length - 1;
    let slot = this.hashOf(at) & mask;
    while (this.index[slot] !== EMPTY) slot = (slot + 1) & mask;
    return slot;
  }

  /** Takes `at` out of the index, moving back each later entry of its probe run that may move into the gap
   *  (its home is not between the gap and where it sits), so no lookup's run is cut short by the gap. */
  private unindex(at: number): void {
    if (this.baseSeq + at < this.clearedBelowSeq) return;
    const index = this.index;
    const mask = index.length - 1;
    const wanted = this.seqOf(at);
    let gap = this.hashOf(at) & mask;
    for (;;) {
      const found = index[gap]!;
      if (found === EMPTY) throw new ArenaError(`record ${at} is not in the index`);
      if (found === wanted) break;
      gap = (gap + 1) & mask;
    }
    for (let slot = (gap + 1) & mask; ; slot = (slot + 1) & mask) {
      const stored = index[slot]!;
      if (stored === EMPTY) break;
      const home = this.hashOf(this.positionOf(stored)) & mask;
      // Probe distance from its home to where it sits, against from the gap: at least as far means its home
      // is at or before the gap on the run.
      if (((slot - home) & mask) >= ((slot - gap) & mask)) {
        index[gap] = stored;
        gap = slot;
      }
    }
    index[gap] = EMPTY;
    this.indexUsed--;
    this.removals++;
  }

  /** Every record in the queue out of the index at once (prune is about to forget, or replace, each). */
  private clearIndex(): void {
    this.index.fill(EMPTY);
    this.indexUsed = 0;
    this.clearedBelowSeq = this.nextSeq;
  }

  /** An empty table about to take `count` records: an index big enough for them, so it is never rebuilt
   *  on the way. */
  private presizeIndex(count: number): void {
    if (this.live === 0 && count * 2 > this.index.length) this.rebuildIndex(count);
  }

  /** A fresh index of the current records (room for `capacity`), at most half full. */
  private rebuildIndex(capacity = this.live): void {
    let size = 64;
    while (size < capacity * 2) size *= 2;
    this.index = new Int32Array(size).fill(EMPTY);
    this.indexUsed = 0;
    this.builds++;
    // Not the records a whole-table prune cleared from the index and is forgetting: unindex skips them.
    for (let at = Math.max(this.head, this.clearedBelowSeq - this.baseSeq); at < this.tail; at++) {
      if (this.replaced[at] !== 0) continue;
      this.index[this.slotFor(at)] = this.seqOf(at);
      this.indexUsed++;
    }
  }

  private forgetOldest(): void {
    const at = this.head;
    const seq = this.baseSeq + at;
    // An open snapshot must read the record before it goes.
    for (const reader of this.readers) reader.beforeForget(seq);
    // A replaced record's slot must not delete its successor.
    if (this.replaced[at] === 0) {
      this.unindex(at);
      this.live--;
      if (this.listener !== null) {
        const start = this.offsets[at]!;
        this.listener.forgotten(this.arena.view(), start, start + this.identityBytes[at]!);
      }
    } else this.replacedAt.delete(seq);
    this.head++;
    if (this.head >= 1024 && this.head * 2 >= this.tail) this.dropForgotten();
  }

  /** Move the queue to the front of its arrays (amortised O(1) a record: only once most of it is gone). */
  private dropForgotten(): void {
    const head = this.head;
    const count = this.tail - head;
    const bytesGone = head < this.tail ? this.offsets[head]! : this.arena.size;
    this.arena.dropPrefix(bytesGone);
    this.offsets.copyWithin(0, head, this.tail);
    for (let i = 0; i < count; i++) this.offsets[i]! -= bytesGone;
    this.identityBytes.copyWithin(0, head, this.tail);
    this.hashes.copyWithin(0, head, this.tail);
    this.recordedAt.copyWithin(0, head, this.tail);
    this.replaced.copyWithin(0, head, this.tail);
    // The index keeps sequence numbers, which do not move: it stays as it is.
    this.baseSeq += head;
    this.head = 0;
    this.tail = count;
  }

  /** The queue arrays are full: drop the forgotten prefix if it is half of them, else double them. */
  private makeRoom(): void {
    if (this.head * 2 >= this.offsets.length) {
      this.dropForgotten();
      return;
    }
    this.growQueue(this.offsets.length * 2);
  }

  private growQueue(capacity: number): void {
    const grow = <A extends Float64Array | Uint32Array | Uint16Array | Uint8Array>(old: A, make: (n: number) => A): A => {
      const next = make(capacity);
      next.set(old);
      return next;
    };
    this.offsets = grow(this.offsets, (n) => new Float64Array(n));
    this.identityBytes = grow(this.identityBytes, (n) => new Uint16Array(n));
    this.hashes = grow(this.hashes, (n) => new Uint32Array(n));
    this.recordedAt = grow(this.recordedAt, (n) => new Float64Array(n));
    this.replaced = grow(this.replaced, (n) => new Uint8Array(n));
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
    private readonly emit: (seq: number) => void,
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
    const seq = this.cursor;
    if (!this.table.holds(seq)) throw new Error(`dedup snapshot: record ${seq} was forgotten before it was read`);
    if (this.table.wasCurrentAt(seq, this.endSeq)) this.emit(seq);
    this.cursor++;
  }
}

/** Does a new request carry the same identity as the remembered one? Different type/key/token = misuse. An
 *  acquire recorded before level 6 has no terms (0n): any terms match it. */
export function sameRequest(record: DedupRecord, type: DedupOperation, key: string, token: bigint): boolean {
  if (record.type !== type || record.key !== key) return false;
  return record.token === token || (type === 'acquire' && record.token === 0n);
}

/** Bits below the session id in `acquireTerms`: the limit (at most WIRE_LIMITS.maxHoldLimit, 1000 < 2^10)
 *  and the shared flag. A session id is a log index (a safe integer, < 2^53), so the terms fit 64 bits. */
const TERMS_SESSION_SHIFT = 11n;

/**
 * An acquire's terms, exactly — the session it asks under (0 = none), the key's limit it names (0 and 1 = a
 * mutex) and whether it asks for a shared hold — kept in its dedup record's `token` from cluster level 6.
 * A copy under the same request id with other terms is another request, refused (REQUEST_ID_REUSED), never
 * answered with the first one's grant: a grant under one session replayed to a request under another would
 * make that request's client trust a hold that ends with the first session. Never 0n, so 0n still means
 * "recorded without terms".
 */
export function acquireTerms(sessionId: number, limit: number, shared: boolean): bigint {
  return (BigInt(sessionId) << TERMS_SESSION_SHIFT) | (BigInt(Math.max(limit, 1)) << 1n) | (shared ? 1n : 0n);
}

/** The terms acquireTerms packed, for an error message. */
export function describeAcquireTerms(terms: bigint): string {
  const sessionId = terms >> TERMS_SESSION_SHIFT;
  const limit = (terms >> 1n) & ((1n << (TERMS_SESSION_SHIFT - 1n)) - 1n);
  const mode = (terms & 1n) === 1n ? 'shared' : 'exclusive';
  return `${sessionId === 0n ? 'no session' : `session ${sessionId}`}, limit ${limit}, ${mode}`;
}
