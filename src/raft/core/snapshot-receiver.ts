// A follower's side of a chunked snapshot (Raft §7, thesis §5.3's InstallSnapshot in pieces): the chunks
// of one snapshot, in order. The leader streams chunks of at most snapshotChunkBytes and resends from the
// offset we name, so a lost, duplicated or reordered chunk costs a resend, never a wrong snapshot: a chunk
// is taken only at exactly the offset we expect, and a chunk of another snapshot (index and term) starts
// over only at offset 0. Role changes drop a half-received snapshot (Raft.reset).
// Either the chunks are reassembled here (the whole data comes out with the last one), or — when the
// driver writes them where the snapshot goes (RaftConfig.snapshotChunksToDriver) — each accepted chunk is
// handed out as it comes and nothing is kept: the receiver only keeps the offsets.
// PURE: no I/O.
import type { InstallSnapshot } from './types.js';

export type ChunkOutcome =
  /** Not taken: the leader should resend from `nextOffset`. */
  | { kind: 'refused'; nextOffset: number }
  /** Taken; more to come from `nextOffset`. */
  | { kind: 'more'; nextOffset: number }
  /** The last chunk: the whole snapshot's data (empty when the chunks were handed out). */
  | { kind: 'whole'; data: Uint8Array };

export class SnapshotReceiver {
  private index = 0;
  private term = 0;
  private chunks: Uint8Array[] = [];
  private offset = 0;
  private receiving = false;

  /** `handOut`: the chunks leave with the outcome (the caller passes each taken one on), none are kept. */
  constructor(private readonly handOut = false) {}

  accept(m: InstallSnapshot): ChunkOutcome {
    if (!this.receiving || this.index !== m.meta.index || this.term !== m.meta.term) {
      if (m.offset !== 0) return { kind: 'refused', nextOffset: 0 };
      this.receiving = true;
      this.index = m.meta.index;
      this.term = m.meta.term;
      this.chunks = [];
      this.offset = 0;
    }
    if (m.offset !== this.offset) return { kind: 'refused', nextOffset: this.offset };
    if (!this.handOut) this.chunks.push(m.chunk);
    this.offset += m.chunk.length;
    if (!m.done) return { kind: 'more', nextOffset: this.offset };
    const data = this.handOut ? new Uint8Array(0) : concat(this.chunks, this.offset);
    this.reset();
    return { kind: 'whole', data };
  }

  /** Forget a half-received snapshot. */
  reset(): void {
    this.receiving = false;
    this.chunks = [];
    this.offset = 0;
  }
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
