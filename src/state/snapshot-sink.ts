// A follower's side of a snapshot from the leader, chunk by chunk as the Raft core accepts them (in order,
// each at the offset the last one ended: snapshot-receiver.ts). A record stream (snapshot-stream.ts, from a
// leader at cluster level 6) is written into a fresh generation of the applied store as it comes — never
// held whole — with a running SHA-256 and record count over the chunks in order, checked against the last
// chunk's trailer as soon as that chunk is written; only a stream that verifies may be swapped in
// (LockStateStore.installReceived). One that does not (a chunk that does not decode, a count or checksum
// that disagrees) is refused, not thrown: its generation is deleted at once and the driver tells the core,
// which never took it and asks the leader for it again (Raft.snapshotRefused) — a corrupt stream costs a
// resend, never the node. The whole-state encoding a leader below level 6 sends is collected and restored
// as before. A crash anywhere before the swap leaves the old generation in force; the half-written one is
// deleted at the next open (applied-store.ts), when a new snapshot starts over at offset 0, or when refused.
import { createHash, type Hash } from 'node:crypto';
import type { SnapshotChunk, SnapshotMeta } from '../raft/core/types.js';
import type { AppliedStore, IncomingGeneration } from './applied-store.js';
import { SnapshotStreamError, decodeChunk, isRecordStream } from './snapshot-stream.js';

/** The largest record key or value a chunk may carry (a hold's value is far smaller; a rest record grows
 *  with the term starts and groups, never near this). */
const MAX_RECORD_BYTES = 64 << 20;

/** What a whole received snapshot is, once its last chunk is in. */
export type ReceivedSnapshot =
  /** Records written into `incoming`, verified: swap it in. */
  | { kind: 'records'; incoming: IncomingGeneration }
  /** The whole-state encoding (an older leader's): restore it and write it as a new generation. */
  | { kind: 'whole'; data: Uint8Array };

/** What became of a chunk: written (and, the last of a record stream, verified), or refused — the snapshot
 *  it belongs to was thrown away. */
export type ChunkVerdict = { ok: true } | { ok: false; reason: string };

export class SnapshotSink {
  private meta: SnapshotMeta | null = null;
  private expected = 0;
  private kind: 'records' | 'whole' = 'records';
  private incoming: IncomingGeneration | null = null;
  private hash: Hash | null = null;
  private count = 0;
  private parts: Uint8Array[] = [];
  private complete: ReceivedSnapshot | null = null;

  constructor(private readonly store: () => Promise<AppliedStore>) {}

  /** Writes one accepted chunk (records into the new generation, or kept for a whole-state snapshot). A
   *  chunk that does not decode, or a last chunk whose stream does not verify, is refused and the snapshot
   *  discarded; a failing write (the disk) still throws. */
  async chunk(chunk: SnapshotChunk): Promise<ChunkVerdict> {
    try {
      await this.write(chunk);
      return { ok: true };
    } catch (err) {
      if (!(err instanceof SnapshotStreamError)) throw err;
      await this.discard();
      return { ok: false, reason: err.message };
    }
  }

  /** Forgets the snapshot being received or received whole and not taken, and deletes what was written of
   *  it: refused, or no longer wanted (the core had it already, or a role change dropped it). */
  async discard(): Promise<void> {
    const incoming = this.incoming;
    this.reset();
    if (incoming !== null) await (await this.store()).dropIncoming(incoming);
  }

  private async write(chunk: SnapshotChunk): Promise<void> {
    if (chunk.offset === 0) await this.begin(chunk);
    else if (
      this.meta === null ||
      chunk.meta.index !== this.meta.index ||
      chunk.meta.term !== this.meta.term ||
      chunk.offset !== this.expected
    ) {
      throw new SnapshotStreamError(
        `snapshot chunk at offset ${chunk.offset} of ${chunk.meta.index}/t${chunk.meta.term}, but ` +
          (this.meta === null
            ? 'no snapshot is being received'
            : `offset ${this.expected} of ${this.meta.index}/t${this.meta.term} is next`),
      );
    }
    this.expected += chunk.data.length;
    if (this.kind === 'whole') {
      this.parts.push(chunk.data);
      if (chunk.done) this.complete = { kind: 'whole', data: concat(this.parts) };
      return;
    }
    const decoded = decodeChunk(chunk.data, MAX_RECORD_BYTES);
    if (decoded.trailer === null && chunk.done)
      throw new SnapshotStreamError(`the last chunk of snapshot ${chunk.meta.index} carries no trailer`);
    if (decoded.trailer !== null && !chunk.done)
      throw new SnapshotStreamError(`a trailer inside snapshot ${chunk.meta.index}, at offset ${chunk.offset}`);
    await this.incoming!.put(decoded.records);
    this.hash!.update(decoded.hashed);
    this.count += decoded.records.length;
    const trailer = decoded.trailer;
    if (trailer === null) return;
    const sha256 = this.hash!.digest();
    this.hash = null;
    if (trailer.total !== this.count || !equalBytes(trailer.sha256, sha256)) {
      throw new SnapshotStreamError(
        `snapshot ${chunk.meta.index} does not verify: ${this.count} records received, the leader sent ${trailer.total}` +
          (equalBytes(trailer.sha256, sha256) ? '' : '; the checksum differs'),
      );
    }
    if (trailer.index !== chunk.meta.index || trailer.term !== chunk.meta.term) {
      throw new SnapshotStreamError(
        `snapshot ${chunk.meta.index}/t${chunk.meta.term} holds the state at ${trailer.index}/t${trailer.term}`,
      );
    }
    this.complete = { kind: 'records', incoming: this.incoming! };
  }

  /** The snapshot at `meta`, every chunk in and verified; throws when it is not (nothing may be swapped in). */
  take(meta: SnapshotMeta): ReceivedSnapshot {
    const complete = this.complete;
    if (complete === null || this.meta === null || this.meta.index !== meta.index || this.meta.term !== meta.term) {
      throw new SnapshotStreamError(`snapshot ${meta.index}/t${meta.term} is to be installed but its last chunk was not received`);
    }
    this.reset();
    return complete;
  }

  private async begin(chunk: SnapshotChunk): Promise<void> {
    this.reset();
    this.meta = chunk.meta;
    this.kind = isRecordStream(chunk.data) ? 'records' : 'whole';
    if (this.kind === 'records') {
      this.incoming = await (await this.store()).beginIncoming();
      this.hash = createHash('sha256');
    }
  }

  private reset(): void {
    this.meta = null;
    this.expected = 0;
    this.incoming = null;
    this.hash = null;
    this.count = 0;
    this.parts = [];
    this.complete = null;
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
