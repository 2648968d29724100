// The WAL's own copy of the entries after its base (snapshotIndex+1 .. lastIndex), kept for the next
// rotation, which writes them into the new segment (wal-storage.ts). Kept as entry records (wal-frame.ts:
// [kind][u32 length][encodeEntry bytes]) in a few blocks — one block per save(), its entries' records back
// to back, the same bytes its frame carries — and, per entry, where its record is, in typed arrays.
//
// Why not one Uint8Array per entry (what this replaced): an entry stays here for a whole compaction period
// (5,000-15,000 entries: seconds under load), long enough for V8 to promote it to old space, where it then
// dies: old space V8 then grows its heap for. Measured over a 200,000-lock fill (held-memory.js with V8's
// --trace-gc-nvp; heap sampling that keeps what a full GC collected named them: ~16 MB per 100,000
// acquires on every node), a follower promoted 140-270 MB before and 107-109 MB after. A block per save is
// one object per Ready instead of one per entry, and its bytes sit outside the JS heap.
import { CorruptRecordError } from './errors.js';

/** A record's header: kind byte and u32 length (wal-frame.ts). */
const RECORD_HEADER_BYTES = 5;
const INITIAL_CAPACITY = 1024;

export class LiveEntries {
  private blocks: Uint8Array[] = [];
  /** Per entry (position 0 = snapshotIndex+1): its block, and its record's start and end in that block. */
  private blockOf = new Uint32Array(INITIAL_CAPACITY);
  private startOf = new Uint32Array(INITIAL_CAPACITY);
  private endOf = new Uint32Array(INITIAL_CAPACITY);
  private n = 0;

  /** Entries held. */
  get count(): number {
    return this.n;
  }

  /** Keeps the first `count` entries (Raft §5.3: a leader's entries replace the suffix after them). Blocks no
   *  kept entry is in are let go. */
  truncate(count: number): void {
    if (count < 0 || count > this.n) throw new RangeError(`truncate to ${count} of ${this.n} live entries`);
    this.n = count;
    this.blocks.length = count === 0 ? 0 : this.blockOf[count - 1]! + 1;
  }

  /** Appends the entries whose records fill `records` (kept, not copied: the caller hands it over). */
  append(records: Uint8Array): void {
    if (records.length === 0) return;
    const view = new DataView(records.buffer, records.byteOffset, records.byteLength);
    const block = this.blocks.length;
    this.blocks.push(records);
    let at = 0;
    while (at < records.length) {
      if (records.length - at < RECORD_HEADER_BYTES) throw new CorruptRecordError(`entry record header cut short at byte ${at}`);
      const end = at + RECORD_HEADER_BYTES + view.getUint32(at + 1);
      if (end > records.length) throw new CorruptRecordError(`entry record at byte ${at} runs past its block`);
      this.reserve(this.n + 1);
      this.blockOf[this.n] = block;
      this.startOf[this.n] = at;
      this.endOf[this.n] = end;
      this.n++;
      at = end;
    }
  }

  /** The records of entries `from` .. count-1, back to back in one new block: what a rotation writes after its
   *  base, and (append) what the log keeps after it. */
  recordsFrom(from: number): Uint8Array {
    if (from < 0 || from > this.n) throw new RangeError(`live entries from ${from} of ${this.n}`);
    let bytes = 0;
    for (let i = from; i < this.n; i++) bytes += this.endOf[i]! - this.startOf[i]!;
    const out = new Uint8Array(bytes);
    let at = 0;
    // Runs of entries in one block are contiguous there: one copy per block, not per entry.
    for (let i = from; i < this.n;) {
      const block = this.blockOf[i]!;
      const start = this.startOf[i]!;
      let j = i;
      while (j + 1 < this.n && this.blockOf[j + 1] === block && this.startOf[j + 1] === this.endOf[j]) j++;
      const end = this.endOf[j]!;
      out.set(this.blocks[block]!.subarray(start, end), at);
      at += end - start;
      i = j + 1;
    }
    return out;
  }

  /** Starts over with the entries of `records` only (after a rotation wrote them, or a load read them). */
  reset(records: Uint8Array): void {
    this.blocks = [];
    this.n = 0;
    this.append(records);
  }

  private reserve(count: number): void {
    if (count <= this.blockOf.length) return;
    const capacity = Math.max(count, this.blockOf.length * 2);
    const grow = (from: Uint32Array): Uint32Array<ArrayBuffer> => {
      const to = new Uint32Array(capacity);
      to.set(from.subarray(0, this.n));
      return to;
    };
    this.blockOf = grow(this.blockOf);
    this.startOf = grow(this.startOf);
    this.endOf = grow(this.endOf);
  }
}
