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
import { ByteReader, ByteWriter, writeUtf8 } from './bytes.js';
import { skipDedupBody, skipDedupIdentity } from './dedup-codec.js';
import type { FreeKey } from './free-keys.js';
import { KEY_BUCKETS, bucketOf } from './key-buckets.js';
import { Lease } from './lease.js';
import type { LeaseTimes } from './epoch.js';
import { WIRE_LIMITS } from './commands.js';
import { Waiter } from './wait-line.js';
import { Session } from './session.js';
import { BASE_LEVEL, BUILD_LEVEL, LEVEL_CLOCK_PROGRESS, LEVEL_MANY_HOLDERS, LEVEL_REVOKE_ONCE } from './versions.js';
import { GroupHold, KeyGroup } from './holds.js';

const MAGIC = [0x4c, 0x48, 0x53]; // "LHS"
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
const MAX_MEMBER_ID_BYTES = 63;

/** The newest snapshot version a build reading cluster level `readLevel` reads. */
function newestVersionFor(readLevel: number): number {
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
}

const MAX_SECTION_BITS = Math.log2(KEY_BUCKETS);

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

/** Strict decode of any version: any inconsistency (bad ordering, dangling owner index, token from the
 *  future, a key in the wrong section) throws SnapshotDecodeError. */
export function decodeState(
  bytes: Uint8Array,
  dedupSink: DedupRecordSink,
  readLevel = BUILD_LEVEL,
  /** The applied store's rest record (store-records.ts): sessions, wait lines and lock-delays are records of
   *  their own, so a section written empty is how it is written, not a sign of another writer. */
  restRecord = false,
): DecodedState {
  const input = new ByteReader(bytes, (message, offset) => new SnapshotDecodeError(message, offset));
  for (const b of MAGIC) if (input.byte() !== b) input.fail('not a lock snapshot (bad magic)');
  const version = input.byte();
  const newest = newestVersionFor(readLevel);
  if (version < 1 || version > newest) {
    input.fail(
      `unsupported snapshot version ${version}: this build reads versions 1-${newest}${version > newest ? '; a newer leasehold wrote it: upgrade this node' : ''}`,
    );
  }
  const appliedIndex = input.uint();
  const nowMs = input.uint();
  const epochTerm = input.uint();
  const epochStartMs = input.uint();
  if (epochStartMs > nowMs) input.fail('epoch starts after the snapshot time');
  const fields = new FieldReader(input, appliedIndex, nowMs);
  const leases: Lease[] = [];
  const freeKeys: DecodedFreeKey[] = [];
  let forgottenWatermark: number;
  if (version >= 3) {
    forgottenWatermark = input.uint();
    const sectionBits = input.byte();
    if (sectionBits > MAX_SECTION_BITS) input.fail(`section bits ${sectionBits}`);
    let section = -1;
    for (let delta = input.uint(); delta !== 0; delta = input.uint()) {
      section += delta;
      if (section >= 2 ** sectionBits) input.fail(`section ${section} out of range`);
      const before = leases.length + freeKeys.length;
      const inSection = (key: string) => {
        if (sectionOf(key, sectionBits) !== section) input.fail(`key ${JSON.stringify(key)} is not in section ${section}`);
      };
      fields.leases(fields.owners(), leases, inSection);
      fields.freeKeys(freeKeys, true, inSection);
      if (leases.length + freeKeys.length === before) input.fail(`empty section ${section}`);
    }
    if (sectionBits !== sectionBitsFor(leases.length + freeKeys.length))
      input.fail(`${sectionBits} section bits for ${leases.length + freeKeys.length} keys`);
  } else {
    fields.leases(fields.owners(), leases, () => {});
    fields.freeKeys(freeKeys, version === 2, () => {});
    forgottenWatermark = version === 1 ? 0 : input.uint();
  }
  if (forgottenWatermark > appliedIndex) input.fail(`watermark ${forgottenWatermark} is beyond index ${appliedIndex}`);
  fields.dedup(bytes, dedupSink, version >= SNAPSHOT_VERSION_WITH_REVOKES);
  const waiters: Waiter[] = [];
  const holdDelays: [string, number][] = [];
  const keyDelays: [string, number][] = [];
  const holdValues: [string, Uint8Array][] = [];
  const sessions: Session[] = [];
  const sessionHolds: [string, number][] = [];
  let clusterLevel = BASE_LEVEL;
  let termLastStampMs = 0;
  const ranMembers: string[] = [];
  const groups: KeyGroup[] = [];
  const groupHoldSessions = new Map<GroupHold, number>();
  const withGroups = version === SNAPSHOT_VERSION_WITH_GROUPS || version === SNAPSHOT_VERSION_WITH_REVOKES;
  if (version === SNAPSHOT_VERSION_WITH_LEVEL || withGroups) {
    fields.waiters(waiters, true, true, withGroups);
    fields.delays(holdDelays, keyDelays, holdValues);
    fields.sessions(sessions, sessionHolds);
    clusterLevel = input.uint();
    const lowest =
      version === SNAPSHOT_VERSION_WITH_REVOKES
        ? LEVEL_REVOKE_ONCE
        : version === SNAPSHOT_VERSION_WITH_GROUPS
          ? LEVEL_MANY_HOLDERS
          : BASE_LEVEL + 1;
    if (clusterLevel < lowest || clusterLevel > readLevel)
      input.fail(`cluster level ${clusterLevel} in a version ${version} snapshot (this build reads up to ${readLevel})`);
    termLastStampMs = input.uint();
    const count = countOf(input);
    for (let i = 0; i < count; i++) {
      const id = input.string(MAX_MEMBER_ID_BYTES);
      if (id.length === 0 || (i > 0 && !(ranMembers[i - 1]! < id))) input.fail('member ids are not sorted, distinct and non-empty');
      ranMembers.push(id);
    }
    if (withGroups) fields.groups(groups, groupHoldSessions);
  } else if (version === SNAPSHOT_VERSION_WITH_SESSIONS) {
    fields.waiters(waiters, true, true);
    fields.delays(holdDelays, keyDelays, holdValues);
    fields.sessions(sessions, sessionHolds);
    if (sessions.length === 0 && !restRecord) input.fail('a version 6 snapshot without sessions (written as version 3, 4 or 5)');
  } else if (version === SNAPSHOT_VERSION_WITH_WAITERS) {
    fields.waiters(waiters, false);
    if (waiters.length === 0 && !restRecord) input.fail('a version 4 snapshot without waiters (written as version 3)');
  } else if (version === SNAPSHOT_VERSION_WITH_DELAYS) {
    fields.waiters(waiters, true);
    fields.delays(holdDelays, keyDelays, holdValues);
    if (
      !restRecord &&
      holdDelays.length + keyDelays.length + holdValues.length === 0 &&
      waiters.every((w) => w.lockDelayMs === 0 && w.value === null)
    ) {
      input.fail('a version 5 snapshot without hold options (written as version 3 or 4)');
    }
  }
  input.end();
  return {
    appliedIndex,
    nowMs,
    epochTerm,
    epochStartMs,
    leases,
    freeKeys,
    forgottenWatermark,
    clusterLevel,
    termLastStampMs,
    ranMembers,
    waiters,
    holdDelays,
    keyDelays,
    holdValues,
    sessions,
    sessionHolds,
    groups,
    groupHoldSessions,
  };
}

/** Reads the parts every version shares, checking each field against the snapshot's index and time. */
class FieldReader {
  constructor(
    private readonly input: ByteReader,
    private readonly appliedIndex: number,
    private readonly nowMs: number,
  ) {}

  owners(): string[] {
    const input = this.input;
    const ownerCount = countOf(input);
    const owners: string[] = [];
    for (let i = 0; i < ownerCount; i++) {
      const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
      if (owner.length === 0 || (i > 0 && !(owners[i - 1]! < owner))) input.fail('owners are not sorted and distinct');
      owners.push(owner);
    }
    return owners;
  }

  leases(owners: string[], into: Lease[], checkKey: (key: string) => void): void {
    const input = this.input;
    const nowMs = this.nowMs;
    const leaseCount = countOf(input);
    const leaseKeys = new PrefixKeyReader(input);
    for (let i = 0; i < leaseCount; i++) {
      const key = leaseKeys.read();
      checkKey(key);
      const ownerAt = input.uint();
      if (ownerAt >= owners.length) input.fail(`owner index ${ownerAt} out of range`);
      const fencingToken = this.token();
      const ttlMs = input.uint();
      const expiresAtMs = nowMs + input.sint();
      const observedMs = input.uint();
      const observeFromMs = nowMs - input.uint();
      if (expiresAtMs < 0 || observeFromMs < 0) input.fail('lease time out of range');
      into.push(new Lease(key, owners[ownerAt]!, fencingToken, ttlMs, expiresAtMs, observedMs, observeFromMs));
    }
  }

  freeKeys(into: DecodedFreeKey[], withFreedAt: boolean, checkKey: (key: string) => void): void {
    const input = this.input;
    const freeCount = countOf(input);
    const keys = new PrefixKeyReader(input);
    for (let i = 0; i < freeCount; i++) {
      const key = keys.read();
      checkKey(key);
      const lastToken = this.token();
      const freedAtMs = withFreedAt ? this.nowMs - input.uint() : this.nowMs;
      if (freedAtMs < 0) input.fail('free key time out of range');
      into.push({ key, lastToken, freedAtMs });
    }
  }

  /** `bytes` is what the reader reads: the ranges handed to the sink are offsets in it. `revokes`: the
   *  version may hold revoke records (9). */
  dedup(bytes: Uint8Array, sink: DedupRecordSink, revokes: boolean): void {
    const input = this.input;
    const dedupCount = countOf(input);
    sink.reserve(dedupCount, input.remaining);
    let previousRecordedAtMs = 0;
    for (let i = 0; i < dedupCount; i++) {
      const start = input.position;
      skipDedupIdentity(input);
      const split = input.position;
      const recordedAtMs = this.nowMs - input.uint();
      if (recordedAtMs < previousRecordedAtMs) input.fail('dedup records are not in time order');
      previousRecordedAtMs = recordedAtMs;
      const bodyStart = input.position;
      skipDedupBody(input, revokes);
      sink.record(bytes, start, split, bodyStart, input.position, recordedAtMs);
    }
  }

  waiters(into: Waiter[], withLockDelay: boolean, withSession = false, withLimit = false): void {
    const input = this.input;
    const lineCount = countOf(input);
    const keys = new PrefixKeyReader(input);
    for (let line = 0; line < lineCount; line++) {
      const key = keys.read();
      const count = countOf(input);
      if (count === 0) input.fail(`empty wait line for ${JSON.stringify(key)}`);
      let ticket = 0;
      for (let i = 0; i < count; i++) {
        const delta = input.uint();
        if (delta < 1) input.fail('wait line tickets are not increasing');
        ticket += delta;
        if (ticket > this.appliedIndex) input.fail(`ticket ${ticket} is beyond index ${this.appliedIndex}`);
        const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
        if (owner.length === 0) input.fail('waiter owner is empty');
        const ttlMs = input.uint();
        const requestId = input.string(WIRE_LIMITS.maxRequestIdBytes);
        const deadlineMs = this.nowMs + input.sint();
        if (deadlineMs < 0) input.fail('waiter deadline out of range');
        const lockDelayMs = withLockDelay ? this.lockDelay() : 0;
        const value = withLockDelay ? this.value() : null;
        const sessionId = withSession ? input.uint() : 0;
        if (sessionId > this.appliedIndex) input.fail(`waiter session ${sessionId} is beyond index ${this.appliedIndex}`);
        // A waiter under a session asks for no TTL of its own (its hold will live as long as the session).
        if (sessionId > 0 ? ttlMs !== 0 : ttlMs < 1 || ttlMs > WIRE_LIMITS.maxTtlMs) input.fail(`waiter ttlMs ${ttlMs}`);
        const limit = withLimit ? this.limit() : 1;
        const shared = withLimit ? this.flag('waiter shared') : false;
        into.push(new Waiter(key, ticket, owner, ttlMs, requestId, deadlineMs, lockDelayMs, value, sessionId, limit, shared));
      }
    }
  }

  delays(holdDelays: [string, number][], keyDelays: [string, number][], holdValues: [string, Uint8Array][]): void {
    const input = this.input;
    const holdCount = countOf(input);
    const holdKeys = new PrefixKeyReader(input);
    for (let i = 0; i < holdCount; i++) {
      const key = holdKeys.read();
      const lockDelayMs = this.lockDelay();
      if (lockDelayMs === 0) input.fail(`hold of ${JSON.stringify(key)} with a lock-delay of 0`);
      holdDelays.push([key, lockDelayMs]);
    }
    const keyCount = countOf(input);
    const delayedKeys = new PrefixKeyReader(input);
    for (let i = 0; i < keyCount; i++) {
      const key = delayedKeys.read();
      const untilMs = this.nowMs + input.sint();
      if (untilMs < 0 || untilMs > WIRE_LIMITS.maxTimeMs + WIRE_LIMITS.maxTtlMs + WIRE_LIMITS.maxLockDelayMs)
        input.fail('lock-delay end out of range');
      keyDelays.push([key, untilMs]);
    }
    const valueCount = countOf(input);
    const valueKeys = new PrefixKeyReader(input);
    for (let i = 0; i < valueCount; i++) {
      const key = valueKeys.read();
      const value = this.value();
      if (value === null) input.fail(`hold of ${JSON.stringify(key)} with an empty value`);
      holdValues.push([key, value!]);
    }
  }

  sessions(into: Session[], holds: [string, number][]): void {
    const input = this.input;
    const nowMs = this.nowMs;
    const count = countOf(input);
    let id = 0;
    for (let i = 0; i < count; i++) {
      const delta = input.uint();
      if (delta < 1) input.fail('session ids are not increasing');
      id += delta;
      if (id > this.appliedIndex) input.fail(`session ${id} is beyond index ${this.appliedIndex}`);
      const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
      if (owner.length === 0) input.fail('session owner is empty');
      const ttlMs = input.uint();
      if (ttlMs < 1 || ttlMs > WIRE_LIMITS.maxTtlMs) input.fail(`session ttlMs ${ttlMs}`);
      const expiresAtMs = nowMs + input.sint();
      const observedMs = input.uint();
      const observeFromMs = nowMs - input.uint();
      if (expiresAtMs < 0 || observeFromMs < 0) input.fail('session time out of range');
      const lockDelayMs = input.uint();
      if (lockDelayMs > WIRE_LIMITS.maxLockDelayMs) input.fail(`session lockDelayMs ${lockDelayMs}`);
      const requestId = input.string(WIRE_LIMITS.maxRequestIdBytes);
      into.push(new Session(id, owner, ttlMs, expiresAtMs, observedMs, observeFromMs, lockDelayMs, requestId));
    }
    const holdCount = countOf(input);
    const keys = new PrefixKeyReader(input);
    let previous: string | null = null;
    for (let i = 0; i < holdCount; i++) {
      const key = keys.read();
      if (previous !== null && !(previous < key)) input.fail('session holds are not sorted by key');
      previous = key;
      const sessionId = input.uint();
      if (sessionId < 1 || sessionId > this.appliedIndex) input.fail(`session hold of ${JSON.stringify(key)}: session ${sessionId}`);
      holds.push([key, sessionId]);
    }
  }

  groups(into: KeyGroup[], sessions: Map<GroupHold, number>): void {
    const input = this.input;
    const nowMs = this.nowMs;
    const count = countOf(input);
    const keys = new PrefixKeyReader(input);
    for (let g = 0; g < count; g++) {
      const key = keys.read();
      if (key.length === 0 || (g > 0 && !(into[g - 1]!.key < key))) input.fail('keys with many holds are not sorted and distinct');
      const limit = this.limit();
      const lastToken = input.uint();
      if (lastToken > this.appliedIndex) input.fail(`last token ${lastToken} is beyond index ${this.appliedIndex}`);
      const group = new KeyGroup(key, limit, lastToken);
      const holdCount = countOf(input);
      if (limit >= 2 && holdCount > limit) input.fail(`${holdCount} holds of ${JSON.stringify(key)}, a semaphore of ${limit}`);
      for (let i = 0; i < holdCount; i++) {
        const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
        if (owner.length === 0) input.fail('hold owner is empty');
        const token = this.token();
        if (token > lastToken || (i > 0 && !(group.holds[i - 1]!.fencingToken < token)))
          input.fail(`hold tokens of ${JSON.stringify(key)} are not increasing up to its last token`);
        const ttlMs = input.uint();
        const expiresAtMs = nowMs + input.sint();
        const observedMs = input.uint();
        const observeFromMs = nowMs - input.uint();
        if (expiresAtMs < 0 || observeFromMs < 0 || ttlMs > WIRE_LIMITS.maxTtlMs) input.fail('hold time out of range');
        const shared = this.flag('hold shared');
        const lockDelayMs = this.lockDelay();
        const value = this.value();
        const sessionId = input.uint();
        if (sessionId > this.appliedIndex) input.fail(`hold session ${sessionId} is beyond index ${this.appliedIndex}`);
        if (sessionId > 0 === ttlMs > 0) input.fail(`hold of ${JSON.stringify(key)}: a TTL of its own and a session, or neither`);
        const hold = new GroupHold(key, owner, token, ttlMs, expiresAtMs, observedMs, observeFromMs, shared, lockDelayMs, value);
        group.holds.push(hold);
        sessions.set(hold, sessionId);
      }
      into.push(group);
    }
  }

  private limit(): number {
    const limit = this.input.uint();
    if (limit < 1 || limit > WIRE_LIMITS.maxHoldLimit) this.input.fail(`limit ${limit} is outside [1, ${WIRE_LIMITS.maxHoldLimit}]`);
    return limit;
  }

  private flag(what: string): boolean {
    const b = this.input.byte();
    if (b > 1) this.input.fail(`${what} is ${b}, not 0 or 1`);
    return b === 1;
  }

  /** A value (copied out of the snapshot's bytes); null when empty. */
  private value(): Uint8Array | null {
    const bytes = this.input.lengthPrefixed(WIRE_LIMITS.maxValueBytes);
    return bytes.length === 0 ? null : bytes.slice();
  }

  private lockDelay(): number {
    const lockDelayMs = this.input.uint();
    if (lockDelayMs > WIRE_LIMITS.maxLockDelayMs) this.input.fail(`lockDelayMs ${lockDelayMs} is beyond 2^40`);
    return lockDelayMs;
  }

  private token(): number {
    const token = this.input.uint();
    if (token < 1 || token > this.appliedIndex) this.input.fail(`token ${token} was not issued by index ${this.appliedIndex}`);
    return token;
  }
}

/** A count can never exceed the bytes left (every element takes at least one), which stops a corrupt
 *  count from making us allocate or loop for billions of elements. */
function countOf(input: ByteReader): number {
  const count = input.uint();
  if (count > input.remaining) input.fail(`count ${count} exceeds the remaining ${input.remaining} bytes`);
  return count;
}

// Scratch size for one key's UTF-8: a key is at most 512 bytes, and a JS string of n units encodes to at
// most 3n bytes, so 3 * 512 covers any key the codec accepted.
const KEY_SCRATCH_BYTES = WIRE_LIMITS.maxKeyBytes * 3;

/** Writes sorted keys as (shared prefix length with the previous key's UTF-8, remaining bytes). Two scratch
 *  buffers swap roles, so a million keys cost no allocation; restart() begins a new list (a snapshot
 *  writer keeps one for all its sections). */
export class PrefixKeyWriter {
  private current = new Uint8Array(KEY_SCRATCH_BYTES);
  private previous = new Uint8Array(KEY_SCRATCH_BYTES);
  private previousLength = 0;
  private out!: ByteWriter;

  restart(out: ByteWriter): this {
    this.out = out;
    this.previousLength = 0;
    return this;
  }

  write(key: string): void {
    const length = writeUtf8(this.current, 0, key);
    const limit = Math.min(length, this.previousLength);
    let shared = 0;
    while (shared < limit && this.current[shared] === this.previous[shared]) shared++;
    this.out.uint(shared);
    this.out.lengthPrefixed(this.current.subarray(shared, length));
    [this.current, this.previous] = [this.previous, this.current];
    this.previousLength = length;
  }
}

/** Reads what PrefixKeyWriter wrote. The scratch buffer still holds the previous key, so the shared prefix
 *  is already in place and only the suffix is copied. */
class PrefixKeyReader {
  private readonly scratch = new Uint8Array(WIRE_LIMITS.maxKeyBytes);
  private previousLength = 0;
  private previousKey: string | null = null;
  constructor(private readonly input: ByteReader) {}

  read(): string {
    const shared = this.input.uint();
    if (shared > this.previousLength) this.input.fail('key prefix longer than the previous key');
    const suffix = this.input.lengthPrefixed(WIRE_LIMITS.maxKeyBytes);
    const length = shared + suffix.length;
    if (length === 0 || length > WIRE_LIMITS.maxKeyBytes) this.input.fail(`key of ${length} bytes`);
    this.scratch.set(suffix, shared);
    const key = this.input.decodeUtf8(this.scratch.subarray(0, length));
    // Strictly increasing: canonical order and no duplicate keys.
    if (this.previousKey !== null && !(this.previousKey < key)) this.input.fail('keys are not sorted and distinct');
    this.previousLength = length;
    this.previousKey = key;
    return key;
  }
}
