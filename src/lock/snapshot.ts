// Snapshot encoding of the whole lock state: exact, compact and canonical.
//
// Canonical = the bytes depend only on the state, not on the order things happened in: leases, free keys
// and owners are sorted (JS string order, deterministic everywhere), so two replicas in the same state
// produce identical bytes and can be compared by snapshot bytes or digest. The dedup table is the one part
// kept in insertion order, because that order IS state: it decides which records are forgotten first.
//
// Layout, version 3 (uvarint unless noted; "key" = shared-prefix length with the previous key + suffix bytes):
//   magic "LHS" version:u8
//   appliedIndex nowMs epochTerm epochStartMs forgottenWatermark sectionBits:u8
//   sections, each (sectionDelta:uvarint>=1, ownerCount owner:str*, leaseCount lease*, freeKeyCount freeKey*),
//     then 0. A key belongs to section bucketOf(key) & (2^sectionBits - 1) (key-buckets.ts); sections are in
//     increasing order, an empty one is not written, sectionBits = sectionBitsFor(leases + free keys).
//     Within a section owners are sorted and distinct (leases refer to them by index), leases and free keys
//     are sorted by key:  lease = key ownerIndex token ttlMs deadline-now:svarint observedMs now-observeFrom
//                         freeKey = key lastToken now-freedAt
//   dedupCount (owner:str requestId:str now-recordedAt type:u8 key:str token:uvarint64 outcome)*  oldest first
// Version 4 is version 3 followed by the wait lines (wait-line.ts), written only when someone waits (a state
// without waiters is written as version 3, byte for byte):
//   lineCount (key waiterCount (ticketDelta owner:str ttlMs requestId:str deadline-now:svarint)*)*
//   lines sorted by key; in a line, waiters in ticket order, the first ticket absolute, then deltas >= 1.
// Version 5 adds hold options — lock-delays (machine.ts `delay`) and values — written only when there is
// one: the lines as in 4 with each waiter's lockDelayMs and value:bytes after its deadline, then, sorted by
// key, the holds' delays, the keys' delays and the holds' values:
//   holdDelayCount (key lockDelayMs)*  keyDelayCount (key until-now:svarint)*  valueCount (key value:bytes)*
// Version 6 adds sessions (session.ts), written only when one is open: the tail as in 5, each waiter with
// its sessionId (0 = none) after its value, then, sorted by id,
//   sessionCount (idDelta>=1 owner:str ttlMs deadline-now:svarint observedMs now-observeFrom lockDelayMs
//                 requestId:str)*
// then, sorted by key, the holds that live under a session (their own lease times are written as 0):
//   sessionHoldCount (key sessionId)*
// Version 7 (cluster level 2, versions.ts) is written once the cluster is at level 2 and only then (so only
// to members that read it): the tail as in 6 — always present, possibly with no sessions — then
//   clusterLevel termLastStampMs ranMemberCount memberId:str*   (member ids sorted, distinct)
// Version 8 (cluster level 3) is written once the cluster is at level 3: as 7, but each waiter carries its
// limit:uvarint and shared:u8 after its sessionId, and after the ran members come the keys with many holds
// (holds.ts), sorted by key:
//   groupCount (key limit:uvarint lastToken:uvarint holdCount (owner:str token:uvarint ttlMs
//               deadline-now:svarint observedMs now-observeFrom shared:u8 lockDelayMs value:bytes
//               sessionId:uvarint)*)*
//   holds in token order; a hold under a session has its lease times written as 0, as in version 6.
// Version 9 (cluster level 5) is written once the cluster is at level 5: laid out as 8, but its dedup records
// may be revokes' (type 3, dedup-codec.ts), which no older version holds.
// Why sections: a section is sorted and written on its own (~256-512 keys), so a snapshot of a million keys
// is written in slices, with copy-on-write per section (snapshot-writer.ts), never one global sort.
// Version 2 had one global owner table, then all leases and all free keys sorted by key, then the watermark;
// version 1 as 2 without freedAt and watermark. Both still decode (old snapshots load); only 3 is written.
// Times are stored relative to nowMs: a deadline is then ~2-3 bytes instead of 6, and sorted keys that
// share a prefix ("invoice:000123…") cost only their differing tail.
import { ByteWriter, writeUtf8 } from './bytes.js';
import type { FreeKey } from './free-keys.js';
import { KEY_BUCKETS, bucketOf } from './key-buckets.js';
import { Lease } from './lease.js';
import type { LeaseTimes } from './epoch.js';
import { WIRE_LIMITS } from './commands.js';
import { Waiter } from './wait-line.js';
import { Session } from './session.js';
import { LEVEL_CLOCK_PROGRESS, LEVEL_MANY_HOLDERS, LEVEL_REVOKE_ONCE } from './versions.js';
import { GroupHold, KeyGroup } from './holds.js';

export const MAGIC = [0x4c, 0x48, 0x53]; // "LHS"

/** 3: keys in hash sections, each with its own owner table (see the header). 2: free keys carry the time
 *  they were freed, and the forgotten-keys watermark follows them. Version 1 snapshots still decode: their
 *  free keys count as freed at the snapshot's time (kept a full retention from there, never forgotten
 *  early), with watermark 0. */
export const SNAPSHOT_VERSION = 3;

/** Version 3 plus the wait lines; see the header. */
export const SNAPSHOT_VERSION_WITH_WAITERS = 4;

/** Version 4 plus hold options (lock-delays, values); see the header. */
export const SNAPSHOT_VERSION_WITH_DELAYS = 5;

/** Version 5 plus sessions; see the header. */
export const SNAPSHOT_VERSION_WITH_SESSIONS = 6;

/** Version 6 plus the cluster level (versions.ts); written from cluster level 2 on. */
export const SNAPSHOT_VERSION_WITH_LEVEL = 7;

/** Version 7 plus keys with many holds (holds.ts); written from cluster level 3 on. */
export const SNAPSHOT_VERSION_WITH_GROUPS = 8;

/** Version 8 whose dedup records may be revokes' (dedup-codec.ts); written from cluster level 5 on. */
export const SNAPSHOT_VERSION_WITH_REVOKES = 9;

/** A node id's longest form (src/config/node-id.ts), as the memberRan entry bounds it. */
export const MAX_MEMBER_ID_BYTES = 63;

/** The newest snapshot version a build reading cluster level `readLevel` reads. */
export function newestVersionFor(readLevel: number): number {
  if (readLevel >= LEVEL_REVOKE_ONCE) return SNAPSHOT_VERSION_WITH_REVOKES;
  if (readLevel >= LEVEL_MANY_HOLDERS) return SNAPSHOT_VERSION_WITH_GROUPS;
  return readLevel >= LEVEL_CLOCK_PROGRESS ? SNAPSHOT_VERSION_WITH_LEVEL : SNAPSHOT_VERSION_WITH_SESSIONS;
}

/** The lock-delay part of a version 5 snapshot. */
export interface DelayState {
  holdDelays: [string, number][];
  keyDelays: [string, number][];
  holdValues: [string, Uint8Array][];
}

export class SnapshotDecodeError extends Error {
  override readonly name = 'SnapshotDecodeError';
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`corrupt lock snapshot at byte ${offset}: ${message}`);
  }
}

/** The scalar part of the state, written first. */
export interface SnapshotHeader {
  appliedIndex: number;
  nowMs: number;
  /** Raft term of the current lease epoch (the term whose first entry last started one). */
  epochTerm: number;
  /** Log time at which the current lease epoch started. */
  epochStartMs: number;
  /** At least the last token of every key forgotten so far (see machine.ts, forget). */
  forgottenWatermark: number;
  /** The cluster level (versions.ts); 1 in versions before 7. */
  clusterLevel: number;
  /** From level 2: the highest stamp of the current term (machine.ts `time`); 0 before version 7. */
  termLastStampMs: number;
  /** Members recorded as having run (machine.ts `ran`), sorted; none before version 7. */
  ranMembers: string[];
}

/** A free key as decoded: the key, its last token, when (log time) it was freed. */
export type DecodedFreeKey = Pick<FreeKey, 'key' | 'lastToken' | 'freedAtMs'>;

export interface DecodedState extends SnapshotHeader {
  leases: Lease[];
  freeKeys: DecodedFreeKey[];
  /** In line order per key (restore checks that each key has a lease or a lock-delay). */
  waiters: Waiter[];
  /** key -> lockDelayMs of its hold; key -> log time its lock-delay ends. Sorted by key. */
  holdDelays: [string, number][];
  keyDelays: [string, number][];
  /** key -> its hold's value, sorted by key. */
  holdValues: [string, Uint8Array][];
  /** Open sessions, by id. */
  sessions: Session[];
  /** key -> the session its hold lives under, sorted by key. */
  sessionHolds: [string, number][];
  /** Keys with many holds, sorted by key; each hold's session by id in `groupHoldSessions` (same order,
   *  0 = none), for restore to attach. */
  groups: KeyGroup[];
  groupHoldSessions: Map<GroupHold, number>;
}

/**
 * Receives the dedup records, oldest first, as checked byte ranges of the snapshot: the identity
 * (owner, request_id) in [start, split), the body (type, key, token, outcome) in [bodyStart, end). They are
 * canonical, so they equal what dedup-codec.ts writes for the record: the table copies them in as they are
 * (decoding a quarter-million records into objects only to encode them again dominated a restore).
 * `bytesLeft` before the first call is the upper bound of their total size (a capacity hint).
 */
export interface DedupRecordSink {
  reserve(count: number, bytesLeft: number): void;
  record(bytes: Uint8Array, start: number, split: number, bodyStart: number, end: number, recordedAtMs: number): void;
  /** record() of one whose identity no record handed before has, when the caller knows it (the applied store
   *  keeps one record an identity): nothing is looked up. */
  recordDistinct?(bytes: Uint8Array, start: number, split: number, bodyStart: number, end: number, recordedAtMs: number): void;
}

export const MAX_SECTION_BITS = Math.log2(KEY_BUCKETS);

function byKey<T extends { key: string }>(a: T, b: T): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** Sections for a state of `keyCount` keys: as many as keep ~128-256 keys in each, at most KEY_BUCKETS. A
 *  function of the state alone, so the layout stays canonical. */
export function sectionBitsFor(keyCount: number): number {
  let bits = 0;
  while (bits < MAX_SECTION_BITS && Math.floor(keyCount / 2 ** (bits + 1)) >= 128) bits++;
  return bits;
}

export function sectionOf(key: string, sectionBits: number): number {
  return bucketOf(key) & ((1 << sectionBits) - 1);
}

export function writeHeader(out: ByteWriter, header: SnapshotHeader, sectionBits: number, version = SNAPSHOT_VERSION): void {
  for (const b of MAGIC) out.byte(b);
  out.byte(version);
  out.uint(header.appliedIndex);
  out.uint(header.nowMs);
  out.uint(header.epochTerm);
  out.uint(header.epochStartMs);
  out.uint(header.forgottenWatermark);
  out.byte(sectionBits);
}

/** One section's body (owners, leases, free keys); sorts its inputs in place. Times relative to `nowMs`. */
export function writeSection(
  out: ByteWriter,
  leases: Lease[],
  freeKeys: DecodedFreeKey[],
  nowMs: number,
  keys = new PrefixKeyWriter(),
  timesOf: (lease: Lease) => LeaseTimes = (lease) => lease,
): void {
  leases.sort(byKey);
  freeKeys.sort(byKey);
  const owners = [...new Set(leases.map((lease) => lease.owner))].sort();
  const ownerIndex = new Map(owners.map((owner, i) => [owner, i]));
  out.uint(owners.length);
  for (const owner of owners) out.string(owner);
  out.uint(leases.length);
  const leaseKeys = keys.restart(out);
  for (const lease of leases) {
    leaseKeys.write(lease.key);
    out.uint(ownerIndex.get(lease.owner)!);
    out.uint(lease.fencingToken);
    const times = timesOf(lease);
    out.uint(times.ttlMs);
    out.sint(times.expiresAtMs - nowMs);
    out.uint(times.observedMs);
    out.uint(nowMs - times.observeFromMs);
  }
  out.uint(freeKeys.length);
  const freeKeyWriter = keys.restart(out);
  for (const { key, lastToken, freedAtMs } of freeKeys) {
    freeKeyWriter.write(key);
    out.uint(lastToken);
    out.uint(nowMs - freedAtMs);
  }
}

/** The wait lines (version 4's tail): sorts `waiters` in place by (key, ticket). Times relative to `nowMs`. */
export function writeWaiters(
  out: ByteWriter,
  waiters: Waiter[],
  nowMs: number,
  withLockDelay = false,
  withSession = false,
  withLimit = false,
): void {
  waiters.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.ticket - b.ticket));
  let lines = 0;
  for (let i = 0; i < waiters.length; i++) if (i === 0 || waiters[i]!.key !== waiters[i - 1]!.key) lines++;
  out.uint(lines);
  const keys = new PrefixKeyWriter().restart(out);
  for (let i = 0; i < waiters.length;) {
    const key = waiters[i]!.key;
    let end = i;
    while (end < waiters.length && waiters[end]!.key === key) end++;
    keys.write(key);
    out.uint(end - i);
    let previousTicket = 0;
    for (; i < end; i++) {
      const w = waiters[i]!;
      out.uint(w.ticket - previousTicket);
      previousTicket = w.ticket;
      out.string(w.owner);
      out.uint(w.ttlMs);
      out.string(w.requestId);
      out.sint(w.deadlineMs - nowMs);
      if (withLockDelay) {
        out.uint(w.lockDelayMs);
        out.lengthPrefixed(w.value ?? EMPTY);
      }
      if (withSession) out.uint(w.sessionId);
      if (withLimit) {
        out.uint(w.limit);
        out.byte(w.shared ? 1 : 0);
      }
    }
  }
}

/** Version 5's delays, after its lines. `delays` are sorted by key. */
export function writeDelays(out: ByteWriter, delays: DelayState, nowMs: number): void {
  out.uint(delays.holdDelays.length);
  const holdKeys = new PrefixKeyWriter().restart(out);
  for (const [key, lockDelayMs] of delays.holdDelays) {
    holdKeys.write(key);
    out.uint(lockDelayMs);
  }
  out.uint(delays.keyDelays.length);
  const delayedKeys = new PrefixKeyWriter().restart(out);
  for (const [key, untilMs] of delays.keyDelays) {
    delayedKeys.write(key);
    out.sint(untilMs - nowMs);
  }
  out.uint(delays.holdValues.length);
  const valueKeys = new PrefixKeyWriter().restart(out);
  for (const [key, value] of delays.holdValues) {
    valueKeys.write(key);
    out.lengthPrefixed(value);
  }
}

const EMPTY = new Uint8Array(0);

/** Version 8's keys with many holds, after the ran members. `times` gives a hold's times as of the snapshot. */
export function writeGroups(out: ByteWriter, groups: KeyGroup[], nowMs: number, times: (hold: GroupHold) => LeaseTimes): void {
  groups.sort(byKey);
  out.uint(groups.length);
  const keys = new PrefixKeyWriter().restart(out);
  for (const group of groups) {
    keys.write(group.key);
    out.uint(group.limit);
    out.uint(group.lastToken);
    out.uint(group.holds.length);
    for (const hold of group.holds) {
      out.string(hold.owner);
      out.uint(hold.fencingToken);
      const underSession = hold.session !== null;
      const t = underSession ? { ttlMs: 0, expiresAtMs: nowMs, observedMs: 0, observeFromMs: nowMs } : times(hold);
      out.uint(t.ttlMs);
      out.sint(t.expiresAtMs - nowMs);
      out.uint(t.observedMs);
      out.uint(nowMs - t.observeFromMs);
      out.byte(hold.shared ? 1 : 0);
      out.uint(hold.lockDelayMs);
      out.lengthPrefixed(hold.value ?? EMPTY);
      out.uint(hold.session === null ? 0 : hold.session.fencingToken);
    }
  }
}

/** Version 6's sessions and session holds, after its delays. `times` gives a session's times as of the
 *  snapshot (term starts are applied lazily). */
export function writeSessions(out: ByteWriter, sessions: Session[], nowMs: number, times: (session: Session) => LeaseTimes): void {
  sessions.sort((a, b) => a.id - b.id);
  out.uint(sessions.length);
  let previousId = 0;
  const holds: [string, number][] = [];
  for (const session of sessions) {
    const t = times(session);
    out.uint(session.id - previousId);
    previousId = session.id;
    out.string(session.owner);
    out.uint(t.ttlMs);
    out.sint(t.expiresAtMs - nowMs);
    out.uint(t.observedMs);
    out.uint(nowMs - t.observeFromMs);
    out.uint(session.lockDelayMs);
    out.string(session.requestId);
    for (const key of session.holds.keys()) holds.push([key, session.id]);
  }
  holds.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  out.uint(holds.length);
  const keys = new PrefixKeyWriter().restart(out);
  for (const [key, id] of holds) {
    keys.write(key);
    out.uint(id);
  }
}

/** Writes sorted keys as (shared prefix length with the previous key's UTF-8, remaining bytes). Two scratch
 *  buffers swap roles, so a million keys cost no allocation; restart() begins a new list (a snapshot
 *  writer keeps one for all its sections). */
export class PrefixKeyWriter {
  // The buffers grow to fit the longest key written (a string of n UTF-16 units is at most 3n bytes of UTF-8)
  // instead of starting at the size of the longest key the codec accepts: every snapshot writer opens several
  // of these (one per keyed list), and two 1,536-byte arrays each were most of the cost of opening one.
  private current = new Uint8Array(0);
  private previous = new Uint8Array(0);
  private previousLength = 0;
  private out!: ByteWriter;

  restart(out: ByteWriter): this {
    this.out = out;
    this.previousLength = 0;
    return this;
  }

  write(key: string): void {
    if (3 * key.length > this.current.length) this.grow(3 * key.length);
    const length = writeUtf8(this.current, 0, key);
    const limit = Math.min(length, this.previousLength);
    let shared = 0;
    while (shared < limit && this.current[shared] === this.previous[shared]) shared++;
    this.out.uint(shared);
    this.out.lengthPrefixed(this.current.subarray(shared, length));
    [this.current, this.previous] = [this.previous, this.current];
    this.previousLength = length;
  }

  /** Both arrays to at least `bytes`; the previous key's bytes are kept. */
  private grow(bytes: number): void {
    const size = Math.max(bytes, 2 * this.current.length, 64);
    const previous = new Uint8Array(size);
    previous.set(this.previous.subarray(0, this.previousLength));
    this.previous = previous;
    this.current = new Uint8Array(size);
  }
}
