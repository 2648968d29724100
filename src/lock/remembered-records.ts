// The remembered requests (dedup.ts) as a restore from the applied store reads them, one record at a time in
// the store's key order (store-records.ts RecordsRestorer), handed to the machine's dedup table in their
// stored order: the order is state (it decides which records are forgotten first).
import { ByteWriter } from './bytes.js';
import type { DedupRecordSink } from './snapshot.js';

/**
 * The remembered requests as a restore reads them (in the store's key order): their identity and body bytes
 * copied into one arena, their order and time in typed arrays — no object per record, and none of the
 * records' buffers kept — then handed to the machine's table by their stored order (feed).
 */
export class RememberedRecords {
  private readonly arena = new ByteWriter(1024);
  private count = 0;
  private seqs = new Float64Array(1024);
  private recordedAtMs = new Float64Array(1024);
  /** Where each record's identity starts and its body starts (= where the identity ends) in the arena. */
  private starts = new Float64Array(1024);
  private splits = new Float64Array(1024);

  add(seq: number, recordedAtMs: number, identity: Uint8Array, identityStart: number, body: Uint8Array, bodyStart: number): void {
    if (this.count === this.seqs.length) this.grow();
    const at = this.count++;
    this.seqs[at] = seq;
    this.recordedAtMs[at] = recordedAtMs;
    this.starts[at] = this.arena.size;
    this.arena.rawRange(identity, identityStart, identity.length);
    this.splits[at] = this.arena.size;
    this.arena.rawRange(body, bodyStart, body.length);
  }

  /** Hands every record to `sink`, oldest (lowest stored order) first. */
  feed(sink: DedupRecordSink): void {
    const count = this.count;
    const order = placedBySeq(this.seqs, count) ?? sortedBySeq(this.seqs, count);
    const bytes = this.arena.view();
    sink.reserve(count, bytes.length);
    for (let i = 0; i < count; i++) {
      const at = order[i]!;
      const split = this.splits[at]!;
      const end = at + 1 < count ? this.starts[at + 1]! : bytes.length;
      // Distinct identities: they were the keys of the store's records.
      if (sink.recordDistinct !== undefined) sink.recordDistinct(bytes, this.starts[at]!, split, split, end, this.recordedAtMs[at]!);
      else sink.record(bytes, this.starts[at]!, split, split, end, this.recordedAtMs[at]!);
    }
  }

  private grow(): void {
    const grown = (old: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> => {
      const next = new Float64Array(old.length * 2);
      next.set(old);
      return next;
    };
    this.seqs = grown(this.seqs);
    this.recordedAtMs = grown(this.recordedAtMs);
    this.starts = grown(this.starts);
    this.splits = grown(this.splits);
  }
}

/** Orders read per record slot beyond the records' count that placedBySeq may spend on gaps between their
 *  orders (a table that forgot records out of order: replaced ones) before it sorts instead. */
const PLACE_SLOTS_PER_RECORD = 4;

/**
 * The records' indexes in order of their stored order (`seqs`, distinct in any store this build wrote), by
 * placing each at its order's offset from the lowest: the orders of the remembered requests a table holds are
 * nearly consecutive (it forgets the oldest first), so this is one pass where a sort with a comparator cost
 * ~0.2 s of a restart's CPU at 250,000 records. Null when they are spread too thin for it, or when two share an
 * order (a corrupt store): the sort then decides, as it always did.
 */
function placedBySeq(seqs: Float64Array, count: number): Uint32Array | null {
  if (count === 0) return new Uint32Array(0);
  let lowest = seqs[0]!;
  let highest = lowest;
  for (let i = 1; i < count; i++) {
    const seq = seqs[i]!;
    if (seq < lowest) lowest = seq;
    else if (seq > highest) highest = seq;
  }
  const span = highest - lowest + 1;
  if (span > count * PLACE_SLOTS_PER_RECORD) return null;
  const slots = new Int32Array(span).fill(-1);
  for (let i = 0; i < count; i++) {
    const at = seqs[i]! - lowest;
    if (slots[at] !== -1) return null;
    slots[at] = i;
  }
  const order = new Uint32Array(count);
  let next = 0;
  for (let at = 0; at < span; at++) if (slots[at] !== -1) order[next++] = slots[at]!;
  return order;
}

/** The records' indexes sorted by their stored order (ties, only in a corrupt store, by index). */
function sortedBySeq(seqs: Float64Array, count: number): Uint32Array {
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  return order.sort((a, b) => seqs[a]! - seqs[b]!);
}
