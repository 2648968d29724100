// The lock machine's state as the records of the applied store (src/state: a LevelDB beside the write-ahead
// log, as etcd keeps its applied state in bbolt beside its WAL). Pure: this file turns state into records and
// records into state; src/state does the I/O.
//
// Records, by the first byte of their key (in this order in the store, which a restore relies on: a hold's
// record names its session, read before it):
//   'S' + id (8 bytes, BE)  one per open session (or one run out, awaiting its end): owner, times, the term
//                           starts it has seen, lock-delay, request id; its holds name it in their records
//   'k' + key (UTF-8)       one per key with a lease or a free record: the lease (owner, token, times, the
//                           term starts it has seen, its lock-delay and value, the session it lives under)
//                           or the free key (last token, when it was freed)
//   'd' + identity          one per remembered request (dedup.ts): its order, time and body
//   'w' + key (UTF-8)       one per wait line: its waiters in ticket order (what each asked for, its deadline)
//   'x' + key (UTF-8)       one per key in a lock-delay after its hold ended: until when it grants nobody
//   'r'                     the rest: the snapshot format (snapshot.ts) with none of the above — header,
//                           levels, keys with many holds —, the
//                           order counter of the remembered requests, and every term start the key records
//                           count in (below). Small: bounded by the admission limits (hold values and delays
//                           ride it too; they are bounded by the holds).
// A batch (take()) writes what changed since the last one, so a million held locks cost the writes of the keys
// that changed, never a rewrite of the state:
//   - a key: MachineState.touch, called before any change of its lease or free record — the hook the sliced
//     snapshot's copy-on-write already depends on, so no change can pass it by;
//   - a session: MachineState.touchSession, called where a session opens, renews or ends (machine-sessions.ts, machine-hand-off.ts);
//   - a wait line: WaitLines.changed, told by join and leave; a key's lock-delay: KeyDelays.changedKeys;
//   - a remembered request: DedupTable.listener hears each one remembered and each current one forgotten;
//   - the rest record: written whole at every batch.
// Term starts reach leases lazily (machine-state.ts settle), so a key record holds the lease's times as they
// are plus how many term starts (epochs) it has seen, counted from the store's first record; the rest record
// lists every epoch since, and a restore carries each lease through the ones it missed, exactly as settle().
import { ByteReader, ByteWriter, encodeUtf8, decodeUtf8, utf8ByteLength } from './bytes.js';
import type { DedupListener } from './dedup.js';
import { carryLease, type LeaseEpoch } from './epoch.js';
import { Lease } from './lease.js';
import { Session } from './session.js';
import { Waiter } from './wait-line.js';
import { LockMachine } from './machine.js';
import { decodeState } from './snapshot-decode.js';
import type { DecodedState, DedupRecordSink } from './snapshot.js';
import { BUILD_LEVEL } from './versions.js';
import { WIRE_LIMITS } from './commands.js';
import { skipDedupBody, skipDedupIdentity } from './dedup-codec.js';
import type { LockMachineOptions } from './types.js';
import { RememberedRecords } from './remembered-records.js';
import { OwnerNames } from './owner-names.js';

export const KEY_RECORD = 0x6b; // 'k'
export const DEDUP_RECORD = 0x64; // 'd'
export const REST_RECORD = 0x72; // 'r'
export const SESSION_RECORD = 0x53; // 'S'
export const WAIT_LINE_RECORD = 0x77; // 'w'
export const KEY_DELAY_RECORD = 0x78; // 'x'
/** The rest record's own key. */
export const REST_RECORD_KEY = Uint8Array.of(REST_RECORD);

const NO_VALUE = new Uint8Array(0);
/** A lease; rest format 1 only (its session holds are listed in the rest record). */
const LEASE_TAG = 1;
const FREE_TAG = 2;
/** A lease and the session it lives under (0 = none): rest format 2 on. */
const LEASE_IN_SESSION_TAG = 3;
/** 2: sessions, wait lines and keys' lock-delays are records of their own and each hold's key record names
 *  its session (in format 1 the rest record listed them all: a million holds under sessions made every batch
 *  sort and rewrite all of them). Format 1 is still read, and a store of it is rewritten whole at open
 *  (RecordsRestorer.outdated). */
const REST_FORMAT = 2;

/** One write of a batch: put `value` at `key`, or delete `key` when `value` is null. */
export interface RecordOp {
  key: Uint8Array;
  value: Uint8Array | null;
}

export class StoreRecordError extends Error {
  override readonly name = 'StoreRecordError';
}

function fail(message: string): never {
  throw new StoreRecordError(`corrupt applied-store record: ${message}`);
}

function reader(bytes: Uint8Array, what: string | (() => string)): ByteReader {
  return new ByteReader(
    bytes,
    (message, offset) =>
      new StoreRecordError(`corrupt applied-store record (${typeof what === 'string' ? what : what()}) at byte ${offset}: ${message}`),
  );
}

function prefixed(prefix: number, body: Uint8Array): Uint8Array {
  const key = new Uint8Array(body.length + 1);
  key[0] = prefix;
  key.set(body, 1);
  return key;
}

/**
 * Tracks a machine's changes for the store and encodes them. Attach it to the machine that applies entries;
 * a machine replaced wholesale (a snapshot installed) needs a new tracker, whose first batch is all().
 */
export class StoreRecords implements DedupListener {
  private dedupOps: RecordOp[] = [];
  private readonly scratch = new ByteWriter(256);
  private changedKeys: Set<string>;
  private changedSessions: Set<number>;
  private readonly changedLines = new Set<string>();
  private readonly changedDelays = new Set<string>();

  constructor(
    readonly machine: LockMachine,
    /** Order of the next remembered request: continues the store's, so records keep their order. */
    private dedupSeq = 0,
    /** Epochs the store counted before this machine's own list began (its leases have seen them all). */
    private readonly epochsBefore: readonly LeaseEpoch[] = [],
  ) {
    const parts = machine.parts;
    this.changedKeys = new Set();
    parts.changedKeys = this.changedKeys;
    this.changedSessions = new Set();
    parts.changedSessions = this.changedSessions;
    parts.lines.changed = this.changedLines;
    parts.delays.changedKeys = this.changedDelays;
    parts.dedup.listener = this;
  }

  /** Changes waiting for the next batch (keys and remembered requests). */
  get pending(): number {
    return this.changedKeys.size + this.changedSessions.size + this.changedLines.size + this.changedDelays.size + this.dedupOps.length;
  }

  /** Stop tracking (the machine was replaced). */
  detach(): void {
    const parts = this.machine.parts;
    if (parts.changedKeys === this.changedKeys) parts.changedKeys = null;
    if (parts.changedSessions === this.changedSessions) parts.changedSessions = null;
    if (parts.lines.changed === this.changedLines) parts.lines.changed = null;
    if (parts.delays.changedKeys === this.changedDelays) parts.delays.changedKeys = null;
    if (parts.dedup.listener === this) parts.dedup.listener = null;
  }

  remembered(bytes: Uint8Array, start: number, split: number, end: number, recordedAtMs: number): void {
    const value = this.scratch;
    value.clear();
    value.uint(this.dedupSeq++);
    value.uint(recordedAtMs);
    value.rawRange(bytes, split, end);
    this.dedupOps.push({ key: dedupRecordKey(bytes, start, split), value: value.finish() });
  }

  forgotten(bytes: Uint8Array, start: number, split: number): void {
    this.dedupOps.push({ key: dedupRecordKey(bytes, start, split), value: null });
  }

  /** The records changed since the last take(), with the rest record: one batch, the state at the machine's
   *  applied index. */
  take(): RecordOp[] {
    const ops: RecordOp[] = [];
    for (const id of this.changedSessions) ops.push(this.sessionOp(id));
    this.changedSessions.clear();
    for (const key of this.changedKeys) ops.push(this.keyOp(key));
    this.changedKeys.clear();
    for (const key of this.changedLines) ops.push(this.lineOp(key));
    this.changedLines.clear();
    for (const key of this.changedDelays) ops.push(this.delayOp(key));
    this.changedDelays.clear();
    for (const op of this.dedupOps) ops.push(op);
    this.dedupOps = [];
    ops.push({ key: REST_RECORD_KEY, value: this.rest() });
    return ops;
  }

  /** Every record of the state (a fresh store: a restored or migrated machine), the rest record last; clears
   *  what was pending, which they include. */
  all(): RecordOp[] {
    this.changedKeys.clear();
    this.changedSessions.clear();
    this.changedLines.clear();
    this.changedDelays.clear();
    this.dedupOps = [];
    const parts = this.machine.parts;
    const ops: RecordOp[] = [];
    for (const id of parts.sessions.keys()) ops.push(this.sessionOp(id));
    for (const key of parts.lines.keys()) ops.push(this.lineOp(key));
    for (const [key] of parts.delays.sortedKeyDelays()) ops.push(this.delayOp(key));
    for (const key of parts.leases.keys()) ops.push(this.keyOp(key));
    for (const free of parts.freeKeyLastTokens.values()) ops.push(this.keyOp(free.key));
    parts.dedup.forEachRecord((bytes, start, split, end, recordedAtMs) => {
      this.remembered(bytes, start, split, end, recordedAtMs);
    });
    for (const op of this.dedupOps) ops.push(op);
    this.dedupOps = [];
    ops.push({ key: REST_RECORD_KEY, value: this.rest() });
    return ops;
  }

  private sessionOp(id: number): RecordOp {
    const key = sessionRecordKey(id);
    const session = this.machine.parts.sessions.get(id);
    if (session === undefined) return { key, value: null }; // ended
    const out = this.scratch;
    out.clear();
    out.string(session.owner);
    this.writeLeaseTimes(out, session);
    out.uint(session.lockDelayMs);
    out.string(session.requestId);
    return { key, value: out.finish() };
  }

  /** A hold's or a session's times and the term starts it has seen, counted from the store's first record
   *  (a session's record has no token: its id is its record's key). */
  private writeLeaseTimes(out: ByteWriter, lease: Lease): void {
    out.uint(lease.ttlMs);
    out.uint(lease.expiresAtMs);
    out.uint(lease.observedMs);
    out.uint(lease.observeFromMs);
    out.uint(this.epochsBefore.length + lease.epochsSeen);
  }

  private lineOp(key: string): RecordOp {
    const recordKey = prefixed(WAIT_LINE_RECORD, encodeUtf8(key));
    const waiters = [...this.machine.parts.lines.lineOf(key)];
    if (waiters.length === 0) return { key: recordKey, value: null };
    const out = this.scratch;
    out.clear();
    out.uint(waiters.length);
    let previousTicket = 0;
    for (const w of waiters) {
      out.uint(w.ticket - previousTicket);
      previousTicket = w.ticket;
      out.string(w.owner);
      out.uint(w.ttlMs);
      out.string(w.requestId);
      out.uint(w.deadlineMs);
      out.uint(w.lockDelayMs);
      out.lengthPrefixed(w.value ?? NO_VALUE);
      out.uint(w.sessionId);
      out.uint(w.limit);
      out.byte(w.shared ? 1 : 0);
    }
    return { key: recordKey, value: out.finish() };
  }

  private delayOp(key: string): RecordOp {
    const recordKey = prefixed(KEY_DELAY_RECORD, encodeUtf8(key));
    const untilMs = this.machine.parts.delays.untilMs(key);
    if (untilMs === undefined) return { key: recordKey, value: null };
    const out = this.scratch;
    out.clear();
    out.uint(untilMs);
    return { key: recordKey, value: out.finish() };
  }

  private keyOp(key: string): RecordOp {
    const parts = this.machine.parts;
    const recordKey = prefixed(KEY_RECORD, encodeUtf8(key));
    const out = this.scratch;
    out.clear();
    const lease = parts.leases.get(key);
    if (lease !== undefined) {
      out.byte(LEASE_IN_SESSION_TAG);
      out.string(lease.owner);
      out.uint(lease.fencingToken);
      this.writeLeaseTimes(out, lease);
      // The hold's options ride its record: they change only with the hold (machine-leases.ts hold and
      // removeLease touch the key), and a million holds with values must not make the rest record big.
      out.uint(parts.delays.holdDelayOf(key));
      out.lengthPrefixed(parts.holdValues.get(key) ?? NO_VALUE);
      out.uint(lease.session instanceof Session ? lease.session.id : 0);
      return { key: recordKey, value: out.finish() };
    }
    const free = parts.freeKeyLastTokens.get(key);
    if (free !== undefined) {
      out.byte(FREE_TAG);
      out.uint(free.lastToken);
      out.uint(free.freedAtMs);
      return { key: recordKey, value: out.finish() };
    }
    return { key: recordKey, value: null }; // forgotten, or now a key with many holds (the rest record)
  }

  private rest(): Uint8Array {
    const epochs = [...this.epochsBefore, ...this.machine.parts.epochs];
    const out = new ByteWriter(256 + 16 * epochs.length);
    out.byte(REST_FORMAT);
    out.uint(this.dedupSeq);
    out.uint(epochs.length);
    for (const e of epochs) {
      out.uint(e.previousTermEndMs);
      out.uint(e.epochStartMs);
    }
    out.raw(this.machine.restSnapshot());
    return out.finish();
  }
}

/** A remembered request's record key from its identity, bytes[start, split): one array made, no slice of
 *  the identity first (an entry that forgets a whole table makes one a record). */
function dedupRecordKey(bytes: Uint8Array, start: number, split: number): Uint8Array {
  const key = new Uint8Array(split - start + 1);
  key[0] = DEDUP_RECORD;
  for (let i = start; i < split; i++) key[i - start + 1] = bytes[i]!;
  return key;
}

function sessionRecordKey(id: number): Uint8Array {
  const key = new Uint8Array(9);
  key[0] = SESSION_RECORD;
  new DataView(key.buffer).setBigUint64(1, BigInt(id));
  return key;
}

/** The store's records, as read back: the rest record and every session, key and remembered-request record. */
export interface StoredRecords {
  rest: Uint8Array;
  sessions: Iterable<[Uint8Array, Uint8Array]>;
  lines: Iterable<[Uint8Array, Uint8Array]>;
  keyDelays: Iterable<[Uint8Array, Uint8Array]>;
  keys: Iterable<[Uint8Array, Uint8Array]>;
  dedup: Iterable<[Uint8Array, Uint8Array]>;
}

/** A machine rebuilt from the store's records, with its tracker (which continues the store's counters). Throws
 *  StoreRecordError or SnapshotDecodeError on records it cannot read. */
export function restoreFromRecords(records: StoredRecords, options: Partial<LockMachineOptions>): StoreRecords {
  const restorer = new RecordsRestorer(records.rest, options);
  for (const [key, value] of records.sessions) restorer.session(key, value);
  for (const [key, value] of records.keys) restorer.key(key, value);
  for (const [key, value] of records.dedup) restorer.dedup(key, value);
  for (const [key, value] of records.lines) restorer.line(key, value);
  for (const [key, value] of records.keyDelays) restorer.keyDelay(key, value);
  return restorer.finish();
}

/** What a set of records holds, as a restored machine would count it. */
export interface RecordTally {
  keys: number;
  /** Holds: a key record's lease, and every hold of a key with many holds (the rest record's groups). */
  holds: number;
  sessions: number;
}

/**
 * The keys, holds and sessions of `records`, counted without building the machine: the rest record is
 * decoded and checked (it holds the groups, and a format 1 store's sessions), a key record is read only as
 * far as its tag. `snapshot save` prints this: restoring a million-lock backup to count it (what `status`
 * and `restore` do, to prove the file restores) is seconds of CPU and as much again of collection, which a
 * save beside a serving cluster should not add to the node's load (issue 36's save under load).
 */
export function tallyRecords(records: StoredRecords): RecordTally {
  const restorer = new RecordsRestorer(records.rest, {});
  const leaseTag = restorer.leaseTag;
  let keys = 0;
  let holds = restorer.groupHolds;
  for (const [, value] of records.keys) {
    keys++;
    if (value[0] === leaseTag) holds++;
  }
  let sessions = restorer.restSessions;
  for (const _ of records.sessions) sessions++;
  return { keys, holds, sessions };
}

/** A session being restored, and its owner's name as UTF-8 (what its holds' records carry). */
interface SessionOwner {
  readonly session: Session;
  readonly ownerBytes: Uint8Array;
}

/**
 * Rebuilds a machine from the store's records as they are read, one at a time, so a restart never holds a
 * million records as pairs: the rest record first (it says the index, the epochs and the order counter),
 * then the sessions (in the store's order: by id), then every key and remembered-request record in any
 * order, then finish().
 */
export class RecordsRestorer {
  private readonly state: DecodedState;
  /** The sessions by id, with their owner's UTF-8: a key record names the session its hold lives under, and
   *  a hold whose owner bytes are its session's takes the session's string (no string per hold decoded). */
  private readonly sessions = new Map<number, SessionOwner>();
  private readonly epochs: LeaseEpoch[] = [];
  private readonly dedupSeq: number;
  private readonly format: number;
  /** The remembered requests as read (in the store's key order), for finish() to hand over by sequence. */
  private readonly remembered = new RememberedRecords();
  /** The owners of holds of no session, each decoded once (owner-names.ts). */
  private readonly ownerNames = new OwnerNames();
  /** The key whose record is being read (errors name it; no closure per record). */
  private keyName = '';
  private readonly keyError = (message: string, offset: number): Error =>
    new StoreRecordError(`corrupt applied-store record (key ${JSON.stringify(this.keyName)}) at byte ${offset}: ${message}`);
  /** The readers of the key and remembered-request records, each restarted on every record: a million
   *  records made a reader each (and a remembered request's two an error closure each). */
  private readonly keyInput = new ByteReader(NO_VALUE, this.keyError);
  private readonly dedupInput = reader(NO_VALUE, 'remembered request');
  private readonly dedupIdentity = reader(NO_VALUE, 'remembered request identity');

  constructor(
    rest: Uint8Array,
    private readonly options: Partial<LockMachineOptions>,
  ) {
    const input = reader(rest, 'rest');
    this.format = input.byte();
    if (this.format !== 1 && this.format !== REST_FORMAT)
      input.fail(`rest record format ${this.format}; this build reads 1 and ${REST_FORMAT}`);
    this.dedupSeq = input.uint();
    const epochCount = input.uint();
    if (epochCount > input.remaining) input.fail(`${epochCount} epochs`);
    for (let i = 0; i < epochCount; i++) this.epochs.push({ previousTermEndMs: input.uint(), epochStartMs: input.uint() });
    const noRecords: DedupRecordSink = { reserve: () => {}, record: () => fail('the rest record holds remembered requests') };
    this.state = decodeState(input.raw(input.remaining), noRecords, options.readLevel ?? BUILD_LEVEL, this.format !== 1);
    if (this.format !== 1 && this.state.sessions.length > 0) input.fail('a format 2 rest record lists sessions');
    for (const session of this.state.sessions) this.sessions.set(session.id, { session, ownerBytes: encodeUtf8(session.owner) });
  }

  /** The holds of every key with many holds (the rest record's groups). */
  get groupHolds(): number {
    let holds = 0;
    for (const group of this.state.groups) holds += group.holds.length;
    return holds;
  }

  /** The sessions the rest record lists (format 1; a later format keeps each in a record of its own). */
  get restSessions(): number {
    return this.state.sessions.length;
  }

  /** The first byte of a key record that holds a lease (readKeyRecord), in this store's format. */
  get leaseTag(): number {
    return this.format === 1 ? LEASE_TAG : LEASE_IN_SESSION_TAG;
  }

  /** The records are of an older format: the store must be rewritten whole (what this build writes next
   *  would not agree with the records it leaves untouched). */
  get outdated(): boolean {
    return this.format !== REST_FORMAT;
  }

  /** A session record ('S' + id, its value); before the key records that name it. */
  session(key: Uint8Array, value: Uint8Array): void {
    if (this.format === 1) fail('a session record beside a format 1 rest record');
    if (key.length !== 9) fail('a session record with a bad key');
    const id = Number(new DataView(key.buffer, key.byteOffset, key.byteLength).getBigUint64(1));
    const input = reader(value, () => `session ${id}`);
    const last = this.state.sessions[this.state.sessions.length - 1];
    if (id < 1 || id > this.state.appliedIndex || (last !== undefined && last.id >= id)) input.fail(`id ${id}`);
    const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
    if (owner.length === 0) input.fail('empty owner');
    const ttlMs = input.uint();
    if (ttlMs < 1 || ttlMs > WIRE_LIMITS.maxTtlMs) input.fail(`ttlMs ${ttlMs}`);
    const expiresAtMs = input.uint();
    const observedMs = input.uint();
    const observeFromMs = input.uint();
    const seen = input.uint();
    if (seen > this.epochs.length) input.fail(`the session has seen ${seen} term starts of ${this.epochs.length}`);
    const lockDelayMs = input.uint();
    if (lockDelayMs > WIRE_LIMITS.maxLockDelayMs) input.fail(`lockDelayMs ${lockDelayMs}`);
    const requestId = input.string(WIRE_LIMITS.maxRequestIdBytes);
    input.end();
    const session = new Session(id, owner, ttlMs, expiresAtMs, observedMs, observeFromMs, lockDelayMs, requestId);
    for (let i = seen; i < this.epochs.length; i++) carryLease(session, this.epochs[i]!);
    this.state.sessions.push(session);
    this.sessions.set(id, { session, ownerBytes: encodeUtf8(owner) });
  }

  /** A key record ('k' + key, its value). */
  key(key: Uint8Array, value: Uint8Array): void {
    const name = decodeUtf8(key.subarray(1));
    if (name === null || name.length === 0 || key.length - 1 > WIRE_LIMITS.maxKeyBytes) fail('a key record with a bad key');
    this.keyName = name;
    this.readKeyRecord(name, value);
  }

  private readKeyRecord(key: string, value: Uint8Array): void {
    const input = this.keyInput;
    input.restart(value);
    const state = this.state;
    const appliedIndex = state.appliedIndex;
    const epochs = this.epochs;
    const tag = input.byte();
    if (tag === this.leaseTag) {
      // The owner is checked in place and made a string only for a hold of no session (or one whose session
      // is not its owner's, which fails below): a session's holds share the session's string.
      const ownerStart = input.skipLengthPrefixed(WIRE_LIMITS.maxOwnerBytes);
      const ownerEnd = input.position;
      const token = input.uint();
      if (ownerEnd === ownerStart || token < 1 || token > appliedIndex)
        input.fail(`lease of ${JSON.stringify(this.ownerAt(input, ownerStart, ownerEnd))} with token ${token}`);
      const ttlMs = input.uint();
      const expiresAtMs = input.uint();
      const observedMs = input.uint();
      const observeFromMs = input.uint();
      const seen = input.uint();
      if (seen > epochs.length) input.fail(`the lease has seen ${seen} term starts of ${epochs.length}`);
      const lockDelayMs = input.uint();
      if (lockDelayMs > WIRE_LIMITS.maxLockDelayMs) input.fail(`lockDelayMs ${lockDelayMs}`);
      const valueStart = input.skipLengthPrefixed(WIRE_LIMITS.maxValueBytes);
      const valueEnd = input.position;
      const sessionId = tag === LEASE_IN_SESSION_TAG ? input.uint() : 0;
      input.end();
      let owner: string;
      let session: Session | null = null;
      if (sessionId > 0) {
        // Attached here, not listed for load() to look each key up again (a million lookups at a restart).
        const found = this.sessions.get(sessionId);
        if (found === undefined || !input.rangeEquals(ownerStart, ownerEnd, found.ownerBytes))
          return input.fail(`held under session ${sessionId}, which it cannot be`);
        session = found.session;
        owner = found.session.owner;
      } else owner = this.ownerNames.nameOf(value, ownerStart, ownerEnd) ?? input.fail('invalid UTF-8');
      const lease = new Lease(key, owner, token, ttlMs, expiresAtMs, observedMs, observeFromMs);
      for (let i = seen; i < epochs.length; i++) carryLease(lease, epochs[i]!);
      if (session !== null) {
        lease.session = session;
        session.holds.add(lease);
      }
      state.leases.push(lease);
      if (lockDelayMs > 0) state.holdDelays.push([key, lockDelayMs]);
      if (valueEnd > valueStart) state.holdValues.push([key, input.copy(valueStart, valueEnd)]);
    } else if (tag === FREE_TAG) {
      const lastToken = input.uint();
      const freedAtMs = input.uint();
      if (lastToken > appliedIndex) input.fail(`last token ${lastToken} is beyond index ${appliedIndex}`);
      input.end();
      state.freeKeys.push({ key, lastToken, freedAtMs });
    } else input.fail(`unknown tag ${tag}`);
  }

  private ownerAt(input: ByteReader, start: number, end: number): string {
    return input.decodeUtf8(input.view(start, end));
  }

  /** A key record by its key's name, which the store decoded from the record's key (a restart reads a million
   *  of them as text: applied-store.ts scanTextKeys). The checks of key(), but the UTF-8: the decoder's. */
  keyNamed(name: string, value: Uint8Array): void {
    if (name.length === 0 || (name.length * 3 > WIRE_LIMITS.maxKeyBytes && utf8ByteLength(name) > WIRE_LIMITS.maxKeyBytes))
      fail('a key record with a bad key');
    this.keyName = name;
    this.readKeyRecord(name, value);
  }

  /** A wait line's record ('w' + key, its waiters). */
  line(key: Uint8Array, value: Uint8Array): void {
    const name = this.recordKeyName(key, 'wait line');
    const input = reader(value, () => `wait line ${JSON.stringify(name)}`);
    const count = input.uint();
    if (count < 1 || count > input.remaining) input.fail(`${count} waiters`);
    const appliedIndex = this.state.appliedIndex;
    let ticket = 0;
    for (let i = 0; i < count; i++) {
      const delta = input.uint();
      if (delta < 1) input.fail('tickets are not increasing');
      ticket += delta;
      if (ticket > appliedIndex) input.fail(`ticket ${ticket} is beyond index ${appliedIndex}`);
      const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
      if (owner.length === 0) input.fail('waiter owner is empty');
      const ttlMs = input.uint();
      const requestId = input.string(WIRE_LIMITS.maxRequestIdBytes);
      const deadlineMs = input.uint();
      const lockDelayMs = input.uint();
      if (lockDelayMs > WIRE_LIMITS.maxLockDelayMs) input.fail(`lockDelayMs ${lockDelayMs}`);
      const value = input.lengthPrefixed(WIRE_LIMITS.maxValueBytes);
      const sessionId = input.uint();
      if (sessionId > appliedIndex) input.fail(`waiter session ${sessionId} is beyond index ${appliedIndex}`);
      // A waiter under a session asks for no TTL of its own (its hold will live as long as the session).
      if (sessionId > 0 ? ttlMs !== 0 : ttlMs < 1 || ttlMs > WIRE_LIMITS.maxTtlMs) input.fail(`waiter ttlMs ${ttlMs}`);
      const limit = input.uint();
      if (limit < 1 || limit > WIRE_LIMITS.maxHoldLimit) input.fail(`limit ${limit}`);
      const shared = input.byte();
      if (shared > 1) input.fail(`shared ${shared}`);
      this.state.waiters.push(
        new Waiter(
          name,
          ticket,
          owner,
          ttlMs,
          requestId,
          deadlineMs,
          lockDelayMs,
          value.length > 0 ? value.slice() : null,
          sessionId,
          limit,
          shared === 1,
        ),
      );
    }
    input.end();
  }

  /** A key's lock-delay record ('x' + key, until when). */
  keyDelay(key: Uint8Array, value: Uint8Array): void {
    const name = this.recordKeyName(key, 'lock-delay');
    const input = reader(value, () => `lock-delay of ${JSON.stringify(name)}`);
    const untilMs = input.uint();
    input.end();
    this.state.keyDelays.push([name, untilMs]);
  }

  private recordKeyName(key: Uint8Array, what: string): string {
    if (this.format === 1) fail(`a ${what} record beside a format 1 rest record`);
    const name = decodeUtf8(key.subarray(1));
    if (name === null || name.length === 0 || key.length - 1 > WIRE_LIMITS.maxKeyBytes) fail(`a ${what} record with a bad key`);
    return name!;
  }

  /** A remembered-request record ('d' + identity, its value). */
  dedup(key: Uint8Array, value: Uint8Array): void {
    const input = this.dedupInput;
    input.restart(value);
    const seq = input.uint();
    if (seq >= this.dedupSeq) input.fail(`order ${seq} is not below the next, ${this.dedupSeq}`);
    const recordedAtMs = input.uint();
    const bodyStart = input.position;
    skipDedupBody(input);
    input.end();
    const id = this.dedupIdentity;
    id.restart(key);
    id.byte(); // the record kind
    skipDedupIdentity(id);
    id.end();
    this.remembered.add(seq, recordedAtMs, key, 1, value, bodyStart);
  }

  /** The machine, and its tracker continuing the store's counters. */
  finish(): StoreRecords {
    // In the order a snapshot lists them (the store's is by UTF-8 bytes, JavaScript's by UTF-16 units).
    this.state.waiters.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.ticket - b.ticket));
    this.state.keyDelays.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const machine = LockMachine.fromDecoded(this.options, (sink: DedupRecordSink) => {
      this.remembered.feed(sink);
      return this.state;
    });
    return new StoreRecords(machine, this.dedupSeq, this.epochs);
  }
}
