// The entries of the in-memory log (log.ts), kept compact: per entry its term and kind in typed arrays and
// its data copied into shared chunks, where an Entry object with a view of its data is made when the log is
// read (slice, at). PURE: no I/O.
//
// Why: an entry stays in the log until a compaction passes it (5,000-15,000 entries behind the applied
// index by default: seconds under load), long enough for V8 to promote it to old space, where it then
// dies, and V8 grows the heap for that garbage (README "Memory"). Kept as objects (an Entry and its data's
// Uint8Array each), a 200,000-lock fill made a follower promote 107-109 MB; kept here, 77-82 MB (V8's
// --trace-gc-nvp, held-memory.js). The Entry objects made when the log is read live as long as a Ready or
// a message: they die young.
import type { Entry, EntryKind } from './types.js';

const KINDS: readonly EntryKind[] = ['normal', 'noop', 'config'];
/** Entry data is copied into chunks of this size; larger data gets a chunk of its own. */
export const CHUNK_BYTES = 64 * 1024;
const INITIAL_CAPACITY = 1024;
const EMPTY = new Uint8Array(0);

export class LogEntries {
  /** Per position (entry k of the log is position head + k): term, kind, chunk id, offset, length. */
  private terms = new Float64Array(INITIAL_CAPACITY);
  private kinds = new Uint8Array(INITIAL_CAPACITY);
  private chunkOf = new Float64Array(INITIAL_CAPACITY);
  private offsetOf = new Uint32Array(INITIAL_CAPACITY);
  private lengthOf = new Uint32Array(INITIAL_CAPACITY);
  private head = 0;
  private n = 0;
  /** Chunks by id: chunks[i] has id firstChunk + i; the last is the one being filled, up to `fill`. */
  private chunks: Uint8Array[] = [];
  private firstChunk = 0;
  private fill = 0;

  get length(): number {
    return this.n;
  }

  /** Term of entry k (0-based), k < length. */
  term(k: number): number {
    return this.terms[this.head + k]!;
  }

  /** Entry k (0-based) as an object, its data a view of the chunk it was copied into. */
  at(k: number, index: number): Entry {
    const p = this.head + k;
    const length = this.lengthOf[p]!;
    const data =
      length === 0 ? EMPTY : this.chunks[this.chunkOf[p]! - this.firstChunk]!.subarray(this.offsetOf[p]!, this.offsetOf[p]! + length);
    return { index, term: this.terms[p]!, kind: KINDS[this.kinds[p]!]!, data };
  }

  /** Data length of entry k. */
  dataLength(k: number): number {
    return this.lengthOf[this.head + k]!;
  }

  push(entry: Entry): void {
    const kind = KINDS.indexOf(entry.kind);
    if (kind < 0) throw new RangeError(`unknown entry kind ${String(entry.kind)}`);
    if (this.head + this.n === this.terms.length) this.makeRoom();
    const p = this.head + this.n;
    this.terms[p] = entry.term;
    this.kinds[p] = kind;
    const length = entry.data.length;
    this.lengthOf[p] = length;
    if (length > 0) {
      const [chunk, offset] = this.place(length);
      this.chunks[chunk - this.firstChunk]!.set(entry.data, offset);
      this.chunkOf[p] = chunk;
      this.offsetOf[p] = offset;
    } else {
      // An empty entry still names a chunk (the current one), so dropping chunks below the first entry's
      // never drops one a later entry is in.
      this.chunkOf[p] = this.firstChunk + Math.max(0, this.chunks.length - 1);
      this.offsetOf[p] = 0;
    }
    this.n++;
  }

  /** Keeps the first `count` entries (a conflicting suffix cut off, Raft §5.3). */
  truncate(count: number): void {
    if (count < 0 || count > this.n) throw new RangeError(`truncate to ${count} of ${this.n} log entries`);
    this.n = count;
  }

  /** Drops the first `count` entries (compacted into a snapshot), and the chunks only they were in. */
  dropFirst(count: number): void {
    if (count < 0 || count > this.n) throw new RangeError(`drop ${count} of ${this.n} log entries`);
    this.head += count;
    this.n -= count;
    const keepFrom = this.n > 0 ? this.chunkOf[this.head]! : this.firstChunk + Math.max(0, this.chunks.length - 1);
    const drop = keepFrom - this.firstChunk;
    if (drop > 0) {
      this.chunks.splice(0, drop);
      this.firstChunk = keepFrom;
    }
    if (this.n === 0) this.head = 0;
  }

  /** Where `length` bytes of data go: [chunk id, offset]. */
  private place(length: number): [number, number] {
    const last = this.chunks.length - 1;
    if (last >= 0 && this.fill + length <= this.chunks[last]!.length) {
      const offset = this.fill;
      this.fill += length;
      return [this.firstChunk + last, offset];
    }
    this.chunks.push(new Uint8Array(Math.max(CHUNK_BYTES, length)));
    this.fill = length;
    return [this.firstChunk + this.chunks.length - 1, 0];
  }

  /** The arrays are full at the end: move the entries to the front, or grow the arrays when the entries
   *  fill more than half of them. */
  private makeRoom(): void {
    const grow = this.n * 2 > this.terms.length;
    const capacity = grow ? this.terms.length * 2 : this.terms.length;
    const from = this.head;
    const to = this.n + from;
    if (grow) {
      this.terms = copied(new Float64Array(capacity), this.terms, from, to);
      this.kinds = copied(new Uint8Array(capacity), this.kinds, from, to);
      this.chunkOf = copied(new Float64Array(capacity), this.chunkOf, from, to);
      this.offsetOf = copied(new Uint32Array(capacity), this.offsetOf, from, to);
      this.lengthOf = copied(new Uint32Array(capacity), this.lengthOf, from, to);
    } else {
      this.terms.copyWithin(0, from, to);
      this.kinds.copyWithin(0, from, to);
      this.chunkOf.copyWithin(0, from, to);
      this.offsetOf.copyWithin(0, from, to);
      this.lengthOf.copyWithin(0, from, to);
    }
    this.head = 0;
  }
}

function copied<T extends Float64Array<ArrayBuffer> | Uint8Array<ArrayBuffer> | Uint32Array<ArrayBuffer>>(
  into: T,
  from: T,
  start: number,
  end: number,
): T {
  into.set(from.subarray(start, end) as never);
  return into;
}
