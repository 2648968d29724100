// Decoding a snapshot (snapshot.ts's layout, every version this build reads) into a DecodedState, which
// the machine loads (machine-restore.ts). Bytes that are not a snapshot this build reads throw
// SnapshotDecodeError with the offset where decoding failed.
import { ByteReader } from './bytes.js';
import { skipDedupBody, skipDedupIdentity } from './dedup-codec.js';
import { Lease } from './lease.js';
import { WIRE_LIMITS } from './commands.js';
import { Waiter } from './wait-line.js';
import { Session } from './session.js';
import { BASE_LEVEL, BUILD_LEVEL, LEVEL_MANY_HOLDERS, LEVEL_REVOKE_ONCE } from './versions.js';
import { GroupHold, KeyGroup } from './holds.js';
import {
  MAGIC,
  MAX_MEMBER_ID_BYTES,
  MAX_SECTION_BITS,
  SNAPSHOT_VERSION_WITH_DELAYS,
  SNAPSHOT_VERSION_WITH_GROUPS,
  SNAPSHOT_VERSION_WITH_LEVEL,
  SNAPSHOT_VERSION_WITH_REVOKES,
  SNAPSHOT_VERSION_WITH_SESSIONS,
  SNAPSHOT_VERSION_WITH_WAITERS,
  SnapshotDecodeError,
  newestVersionFor,
  sectionBitsFor,
  sectionOf,
  type DecodedFreeKey,
  type DecodedState,
  type DedupRecordSink,
} from './snapshot.js';
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
