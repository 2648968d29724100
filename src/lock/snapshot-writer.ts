// Writes the machine's snapshot (format: snapshot.ts) in slices while entries keep applying, so a snapshot
// of a million locks never holds the event loop for more than one slice.
//
// The snapshot is the state at the index where the writer was opened. Keys are written section by section
// (a section = the keys whose hash bucket has the same low bits, snapshot.ts); the dedup records oldest
// first. Copy-on-write keeps it exact while the state changes under it:
//  - the machine calls beforeKeyWrite(key) before it changes anything about `key` (its lease or its free
//    record); if the key's section is not written yet, it is encoded now, as it still is, and kept aside
//    until its turn; a section written (or kept) already is never looked at again;
//  - a term start changes leases lazily: the machine calls beforeKeyWrite(key) before it settles a lease, and
//    `timesOf` encodes an unsettled lease with its pending epochs applied to a copy (machine-digest.ts);
//  - the dedup table hands over any record it is about to forget before the reader reached it, and keeps
//    the records replaced since the writer opened (DedupTable.openSnapshot).
// New keys and records created after the opening land in sections already copied or beyond the reader's
// end, so they never leak in. Each slice does a bounded amount of work (counted in keys and records, not
// time: the machine stays pure and the simulator deterministic).
import { ByteWriter } from './bytes.js';
import type { DedupSnapshotReader, DedupTable } from './dedup.js';
import type { FreeKeys } from './free-keys.js';
import { KEY_BUCKETS, type KeyBuckets } from './key-buckets.js';
import type { Lease } from './lease.js';
import type { LeaseTimes } from './epoch.js';
import type { KeyDelays } from './key-delays.js';
import type { WaitLines } from './wait-line.js';
import type { Session } from './session.js';
import {
  PrefixKeyWriter,
  SNAPSHOT_VERSION,
  SNAPSHOT_VERSION_WITH_DELAYS,
  SNAPSHOT_VERSION_WITH_GROUPS,
  SNAPSHOT_VERSION_WITH_LEVEL,
  SNAPSHOT_VERSION_WITH_REVOKES,
  writeGroups,
  SNAPSHOT_VERSION_WITH_SESSIONS,
  SNAPSHOT_VERSION_WITH_WAITERS,
  writeDelays,
  writeSessions,
  writeWaiters,
  sectionBitsFor,
  sectionOf,
  writeHeader,
  writeSection,
  type DecodedFreeKey,
  type SnapshotHeader,
} from './snapshot.js';
import { BASE_LEVEL, LEVEL_MANY_HOLDERS, LEVEL_REVOKE_ONCE } from './versions.js';
import type { GroupHold, KeyGroup } from './holds.js';

/** Keys (or dedup records) one slice handles: ~2-5 ms of work on a slow shared core (measured with
 *  scripts/machine-scale.ts). */
export const SNAPSHOT_SLICE_ITEMS = 1024;

export interface SnapshotSource {
  header: SnapshotHeader;
  leases: KeyBuckets<Lease>;
  /** A lease's times as of the snapshot (the machine applies term starts to leases lazily). */
  timesOf?: (lease: Lease) => LeaseTimes;
  freeKeys: FreeKeys;
  dedup: DedupTable;
  /** The wait lines (absent or empty: a version 3 snapshot). Copied when the writer opens: they are bounded
   *  by the admission limits, so the copy is small next to the keys. */
  waiters?: WaitLines;
  /** Lock-delays and values (absent or none: version 3 or 4). Copied at the opening like the lines. */
  delays?: KeyDelays;
  values?: ReadonlyMap<string, Uint8Array>;
  /** Open sessions (absent or none: version 5 or older). Copied at the opening like the lines (bounded
   *  by limits.maxSessions; their holds by maxHoldsPerSession). */
  sessions?: ReadonlyMap<number, Session>;
  /** true: the applied store's rest record (store-records.ts) — the sessions, wait lines, lock-delays and hold
   *  values are written empty (the store keeps each in records of its own), though the format is chosen as
   *  if they were not. */
  restRecord?: boolean;
  /** Keys with many holds (holds.ts; version 8). Copied at the opening like the lines: each is bounded by
   *  its limit or by the admission limits on holds. */
  groups?: ReadonlyMap<string, KeyGroup>;
}

export class SnapshotWriter {
  private readonly header: SnapshotHeader;
  private readonly sectionBits: number;
  private readonly sectionCount: number;
  /** Sections encoded early (copy-on-write), by section number, waiting for their turn. */
  private readonly early = new Map<number, Uint8Array>();
  private nextSection = 0;
  private lastWrittenSection = -1;
  private readonly out: ByteWriter;
  /** Where dedup records go: a side buffer while sections are still being written (records the table
   *  forgets early arrive then), `out` itself once the sections are done. */
  private dedupOut: ByteWriter;
  private readonly dedupReader: DedupSnapshotReader;
  private readonly keys = new PrefixKeyWriter();
  private readonly scratch = new ByteWriter(4096);
  private dedupWritten = 0;
  private closed = false;
  /** The wait lines (and lock-delays) as they were at the opening, encoded; null when there were none
   *  (version 3). */
  private readonly waiterBytes: Uint8Array | null;

  constructor(
    private readonly source: SnapshotSource,
    /** Expected size (the previous snapshot's), so the buffer rarely grows by copying. */
    sizeHint = 0,
  ) {
    this.header = { ...source.header };
    this.sectionBits = sectionBitsFor(source.leases.size + source.freeKeys.size);
    this.sectionCount = 2 ** this.sectionBits;
    this.out = new ByteWriter(Math.max(1024, Math.ceil(sizeHint * 1.1)));
    const rest = source.restRecord === true;
    const liveWaiters = source.waiters !== undefined && source.waiters.size > 0 ? [...source.waiters.all()] : [];
    const waiters = rest ? [] : liveWaiters;
    const delays = source.delays;
    const values = source.values;
    const liveSessions = source.sessions !== undefined && source.sessions.size > 0 ? [...source.sessions.values()] : [];
    const sessions = rest ? [] : liveSessions;
    const withLevel = this.header.clusterLevel > BASE_LEVEL;
    const withGroups = this.header.clusterLevel >= LEVEL_MANY_HOLDERS;
    const withSessions = withLevel || liveSessions.length > 0;
    const withDelays =
      withSessions ||
      (delays !== undefined && delays.holdCount + delays.keyCount > 0) ||
      (values !== undefined && values.size > 0) ||
      liveWaiters.some((w) => w.lockDelayMs > 0 || w.value !== null);
    let version = SNAPSHOT_VERSION;
    this.waiterBytes = null;
    if (liveWaiters.length > 0 || withDelays) {
      const tail = new ByteWriter(64 * waiters.length + 64);
      writeWaiters(tail, waiters, this.header.nowMs, withDelays, withSessions, withGroups);
      if (withDelays) {
        const holdValues = rest ? [] : [...(values ?? [])].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
        writeDelays(
          tail,
          {
            holdDelays: rest ? [] : (delays?.sortedHoldDelays() ?? []),
            keyDelays: rest ? [] : (delays?.sortedKeyDelays() ?? []),
            holdValues,
          },
          this.header.nowMs,
        );
      }
      if (withSessions) writeSessions(tail, sessions, this.header.nowMs, (session) => source.timesOf?.(session) ?? session);
      if (withLevel) {
        tail.uint(this.header.clusterLevel);
        tail.uint(this.header.termLastStampMs);
        tail.uint(this.header.ranMembers.length);
        for (const id of this.header.ranMembers) tail.string(id);
      }
      if (withGroups)
        writeGroups(tail, [...(source.groups?.values() ?? [])], this.header.nowMs, (hold: GroupHold) => source.timesOf?.(hold) ?? hold);
      this.waiterBytes = tail.finish();
      version = withGroups
        ? this.header.clusterLevel >= LEVEL_REVOKE_ONCE
          ? SNAPSHOT_VERSION_WITH_REVOKES
          : SNAPSHOT_VERSION_WITH_GROUPS
        : withLevel
          ? SNAPSHOT_VERSION_WITH_LEVEL
          : withSessions
            ? SNAPSHOT_VERSION_WITH_SESSIONS
            : withDelays
              ? SNAPSHOT_VERSION_WITH_DELAYS
              : SNAPSHOT_VERSION_WITH_WAITERS;
    }
    writeHeader(this.out, this.header, this.sectionBits, version);
    this.dedupOut = new ByteWriter(1024);
    this.dedupReader = source.dedup.openSnapshot((seq) => {
      source.dedup.writeSnapshotRecord(this.dedupOut, seq, this.header.nowMs);
      this.dedupWritten++;
    });
  }

  get done(): boolean {
    return this.nextSection >= this.sectionCount && this.dedupReader.done;
  }

  /** Call before changing `key`'s lease or free record. */
  beforeKeyWrite(key: string): void {
    const section = sectionOf(key, this.sectionBits);
    if (section < this.nextSection || this.early.has(section)) return;
    // One scratch writer for every early copy: a fresh small one per section grew by doubling each time
    // (resizing was a third of the copy-on-write cost during a fill).
    const body = this.scratch;
    body.clear();
    this.encodeSection(body, section);
    this.early.set(section, body.finish());
  }

  /** Do one slice of the work; true when the snapshot is complete (then call finish()). */
  step(budget = SNAPSHOT_SLICE_ITEMS): boolean {
    let spent = 0;
    while (spent < budget && this.nextSection < this.sectionCount) spent += 1 + this.writeNextSection();
    if (spent < budget) {
      this.startDedupPart();
      this.dedupReader.read(budget - spent);
    }
    return this.done;
  }

  /** The snapshot bytes; the writer must be done (step() returned true). Kept by the Raft log until the
   *  next snapshot, so without the buffer's slack when the size hint was well off. */
  finish(): Uint8Array {
    if (!this.done) throw new Error('snapshot writer: finish() before the last step');
    this.close();
    this.startDedupPart();
    if (this.dedupWritten !== this.dedupReader.count) {
      throw new Error(`snapshot writer: ${this.dedupWritten} dedup records read, ${this.dedupReader.count} expected`);
    }
    if (this.waiterBytes !== null) this.out.raw(this.waiterBytes);
    return this.out.tight();
  }

  /** After the last section: the terminator, the record count, the records read so far; then the rest of
   *  the records are written straight into `out`. */
  private startDedupPart(): void {
    if (this.dedupOut === this.out) return;
    this.out.uint(0);
    this.out.uint(this.dedupReader.count);
    this.out.raw(this.dedupOut.view());
    this.dedupOut = this.out;
  }

  /** Stop early (the machine was replaced, the node stopped): the state no longer reports to this writer. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.dedupReader.close();
  }

  /** Writes the next section (from its early copy if it has one); returns the keys it held. */
  private writeNextSection(): number {
    const section = this.nextSection++;
    const copied = this.early.get(section);
    if (copied !== undefined) {
      this.early.delete(section);
      // An early copy of an empty section is 3 zero counts.
      if (copied.length > 3) this.writeSectionStart(section).raw(copied);
      return copied.length >> 4;
    }
    const leases = this.collect(this.source.leases, section);
    const freeKeys = this.collect(this.source.freeKeys, section);
    if (leases.length + freeKeys.length === 0) return 0;
    writeSection(this.writeSectionStart(section), leases, freeKeys, this.header.nowMs, this.keys, this.source.timesOf);
    return leases.length + freeKeys.length;
  }

  private writeSectionStart(section: number): ByteWriter {
    this.out.uint(section - this.lastWrittenSection);
    this.lastWrittenSection = section;
    return this.out;
  }

  private encodeSection(out: ByteWriter, section: number): void {
    writeSection(
      out,
      this.collect(this.source.leases, section),
      this.collect(this.source.freeKeys, section),
      this.header.nowMs,
      this.keys,
      this.source.timesOf,
    );
  }

  /** The entries of one section (encoded at once, before anything can change them). */
  private collect<V extends Lease | DecodedFreeKey>(map: { bucket(b: number): Iterable<V> | undefined }, section: number): V[] {
    const items: V[] = [];
    for (let b = section; b < KEY_BUCKETS; b += this.sectionCount) {
      const bucket = map.bucket(b);
      if (bucket !== undefined) for (const value of bucket) items.push(value);
    }
    return items;
  }
}
