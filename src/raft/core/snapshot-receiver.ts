// A follower's side of a chunked snapshot (Raft §7, thesis §5.3's InstallSnapshot in pieces): the chunks
// of one snapshot, in order. The leader streams chunks of at most snapshotChunkBytes and resends from the
// offset we name, so a lost, duplicated or reordered chunk costs a resend, never a wrong snapshot: a chunk
// is taken only at exactly the offset we expect, and a chunk of another snapshot (index and term) starts
// over only at offset 0. Role changes drop a half-received snapshot (Raft.reset).
// Either the chunks are reassembled here (the whole data comes out with the last one), or — when the
// driver writes them where the snapshot goes (RaftConfig.snapshotChunksToDriver) — each accepted chunk is
// handed out as it comes and nothing is kept: the receiver only keeps the offsets. Then the last chunk is
// not the end: what the driver wrote is checked (a record count and a checksum over every chunk) only once
// it has written it, so the snapshot waits for the driver's word (takeChecked() or drop()) before the core acts on it,
// and every chunk that arrives meanwhile is ignored — the answer to the last one is the driver's word.
// PURE: no I/O.
import type { InstallSnapshot, NodeId, SnapshotMeta } from './types.js';

export type ChunkOutcome =
  /** Not taken: the leader should resend from `nextOffset`. */
  | { kind: 'refused'; nextOffset: number }
  /** Taken; more to come from `nextOffset`. */
  | { kind: 'more'; nextOffset: number }
  /** The last chunk: the whole snapshot's data. */
  | { kind: 'whole'; data: Uint8Array }
  /** Handing out: the last chunk, taken; the snapshot waits for the driver to check what it wrote. */
  | { kind: 'checking' }
  /** Handing out: a chunk that came while a received snapshot waits to be checked; not taken, not answered. */
  | { kind: 'ignored' };

/** A received snapshot waiting for the driver's check: what it is, and whom to answer. */
export interface CheckedSnapshot {
  meta: SnapshotMeta;
  leader: NodeId;
  round: number;
}

export class SnapshotReceiver {
  private index = 0;
  private term = 0;
  private chunks: Uint8Array[] = [];
  private offset = 0;
  private receiving = false;
  /** Who sent the last chunk taken, and its round (the answer to a refusal goes there). */
  private leader: NodeId | null = null;
  private round = 0;
  private checking: CheckedSnapshot | null = null;

  /** `handOut`: the chunks leave with the outcome (the caller passes each taken one on), none are kept. */
  constructor(private readonly handOut = false) {}

  accept(m: InstallSnapshot): ChunkOutcome {
    if (this.checking !== null) return { kind: 'ignored' };
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
    this.leader = m.from;
    this.round = m.round;
    if (!m.done) return { kind: 'more', nextOffset: this.offset };
    if (this.handOut) {
      this.reset();
      this.checking = { meta: m.meta, leader: m.from, round: m.round };
      return { kind: 'checking' };
    }
    const data = concat(this.chunks, this.offset);
    this.reset();
    return { kind: 'whole', data };
  }

  /** The driver wrote snapshot (index, term) whole and it verified: the one waiting for that word, taken;
   *  null when it is not the one waiting (a role change dropped it meanwhile). */
  takeChecked(index: number, term: number): CheckedSnapshot | null {
    const checking = this.checking;
    if (checking === null || checking.meta.index !== index || checking.meta.term !== term) return null;
    this.checking = null;
    return checking;
  }

  /** The driver refused snapshot (index, term) — what it wrote did not verify, at the last chunk or before:
   *  it is forgotten, waiting for its check or still coming in. Returns whom to tell; null when it is
   *  neither (a role change dropped it meanwhile: nobody waits for an answer). */
  drop(index: number, term: number): { leader: NodeId; round: number } | null {
    const checking = this.checking;
    if (checking !== null) {
      if (checking.meta.index !== index || checking.meta.term !== term) return null;
      this.checking = null;
      return { leader: checking.leader, round: checking.round };
    }
    if (!this.receiving || this.index !== index || this.term !== term || this.leader === null) return null;
    const to = { leader: this.leader, round: this.round };
    this.reset();
    return to;
  }

  /** Forget a half-received snapshot, or one waiting to be checked. */
  reset(): void {
    this.receiving = false;
    this.chunks = [];
    this.offset = 0;
    this.leader = null;
    this.round = 0;
    this.checking = null;
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
