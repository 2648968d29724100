// Snapshot encoding of the whole lock state: exact, compact and canonical.
//
// Canonical = the bytes depend only on the state, not on the order things happened in: leases, free keys
// and owners are sorted (JS string order, deterministic everywhere), so two replicas in the same state
// produce identical bytes and can be compared by snapshot bytes or digest. The dedup table is the one part
// kept in insertion order, because that order IS state: it decides which records are forgotten first.
//
// Layout (uvarint unless noted; "key" = shared-prefix length with the previous key + suffix bytes):
//   magic "LHS" version:u8
//   appliedIndex nowMs epochTerm epochStartMs
//   ownerCount owner:str*                                 sorted, distinct (leases refer to them by index)
//   leaseCount (key ownerIndex token ttlMs deadline-now:svarint observedMs now-observeFrom)*   sorted by key
//   freeKeyCount (key lastToken now-freedAt)*                                               sorted by key
//   forgottenWatermark                                            (version 2; version 1 has neither it nor freedAt)
//   dedupCount (owner:str requestId:str now-recordedAt type:u8 key:str token:uvarint64 outcome)*  oldest first
// Times are stored relative to nowMs: a deadline is then ~2-3 bytes instead of 6, and sorted keys that
// share a prefix ("invoice:000123…") cost only their differing tail.
import { ByteReader, ByteWriter, writeUtf8 } from './bytes.js';
import type { DedupOperation, DedupRecord } from './dedup.js';
import { Lease } from './lease.js';
import { WIRE_LIMITS } from './commands.js';
import type { RefusalReason } from './types.js';

const MAGIC = [0x4c, 0x48, 0x53]; // "LHS"
/** 2: free keys carry the time they were freed, and the forgotten-keys watermark follows them. Version 1
 *  snapshots still decode: their free keys count as freed at the snapshot's time (kept a full retention
 *  from there, never forgotten early), with watermark 0. */
const VERSION = 2;

export class SnapshotDecodeError extends Error {
  override readonly name = 'SnapshotDecodeError';
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`corrupt lock snapshot at byte ${offset}: ${message}`);
  }
}

export interface MachineStateData {
  appliedIndex: number;
  nowMs: number;
  /** Raft term of the current lease epoch (the term whose first entry last started one). */
  epochTerm: number;
  /** Log time at which the current lease epoch started. */
  epochStartMs: number;
  leases: Iterable<Lease>;
  /** Keys with no lease, the highest token ever issued for each, and when (log time) it was freed. */
  freeKeyLastTokens: Iterable<[string, FreeKey]>;
  /** At least the last token of every key forgotten so far (see machine.ts, forget). */
  forgottenWatermark: number;
  /** Oldest first. */
  dedup: Iterable<DedupRecord>;
}

export interface DecodedState extends MachineStateData {
  leases: Lease[];
  freeKeyLastTokens: [string, FreeKey][];
  dedup: DedupRecord[];
}

export interface FreeKey {
  lastToken: number;
  freedAtMs: number;
}

const REASONS: readonly RefusalReason[] = ['UNSPECIFIED', 'NOT_HELD', 'WRONG_OWNER', 'WRONG_TOKEN', 'EXPIRED'];
const DEDUP_TYPES: readonly DedupOperation[] = ['acquire', 'renew', 'release'];

function byKey<T extends { key: string }>(a: T, b: T): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

export function encodeState(state: MachineStateData): Uint8Array {
  const leases = [...state.leases].sort(byKey);
  const freeKeys = [...state.freeKeyLastTokens].map(([key, free]) => ({ key, ...free })).sort(byKey);
  const owners = [...new Set(leases.map((lease) => lease.owner))].sort();
  const ownerIndex = new Map(owners.map((owner, i) => [owner, i]));
  const now = state.nowMs;

  const out = new ByteWriter(1024 + leases.length * 24 + freeKeys.length * 8);
  for (const b of MAGIC) out.byte(b);
  out.byte(VERSION);
  out.uint(state.appliedIndex);
  out.uint(now);
  out.uint(state.epochTerm);
  out.uint(state.epochStartMs);

  out.uint(owners.length);
  for (const owner of owners) out.string(owner);

  out.uint(leases.length);
  const leaseKeys = new PrefixKeyWriter(out);
  for (const lease of leases) {
    leaseKeys.write(lease.key);
    out.uint(ownerIndex.get(lease.owner)!);
    out.uint(lease.fencingToken);
    out.uint(lease.ttlMs);
    out.sint(lease.leaseDeadlineMs - now);
    out.uint(lease.observedMs);
    out.uint(now - lease.observeFromMs);
  }

  out.uint(freeKeys.length);
  const freeKeyWriter = new PrefixKeyWriter(out);
  for (const { key, lastToken, freedAtMs } of freeKeys) {
    freeKeyWriter.write(key);
    out.uint(lastToken);
    out.uint(now - freedAtMs);
  }
  out.uint(state.forgottenWatermark);

  const dedup = [...state.dedup];
  out.uint(dedup.length);
  for (const record of dedup) {
    out.string(record.owner);
    out.string(record.requestId);
    out.uint(now - record.recordedAtMs);
    out.byte(DEDUP_TYPES.indexOf(record.type));
    out.string(record.key);
    out.bigUint(record.token);
    switch (record.type) {
      case 'acquire': {
        const o = record.outcome;
        out.byte(o.acquired ? 1 : 0);
        out.bigUint(o.token);
        out.uint(o.ttlMs);
        out.uint(o.expiresAtMs);
        out.string(o.holderOwner);
        out.uint(o.holderTtlMs);
        break;
      }
      case 'renew': {
        const o = record.outcome;
        out.byte(o.renewed ? 1 : 0);
        out.uint(o.ttlMs);
        out.uint(o.expiresAtMs);
        out.byte(REASONS.indexOf(o.reason));
        break;
      }
      case 'release': {
        const o = record.outcome;
        out.byte(o.released ? 1 : 0);
        out.byte(REASONS.indexOf(o.reason));
        break;
      }
    }
  }
  return out.finish();
}

/** Strict decode: any inconsistency (bad ordering, dangling owner index, token from the future) throws. */
export function decodeState(bytes: Uint8Array): DecodedState {
  const input = new ByteReader(bytes, (message, offset) => new SnapshotDecodeError(message, offset));
  for (const b of MAGIC) if (input.byte() !== b) input.fail('not a lock snapshot (bad magic)');
  const version = input.byte();
  if (version !== VERSION && version !== 1) input.fail(`unsupported snapshot version ${version}`);
  const appliedIndex = input.uint();
  const nowMs = input.uint();
  const epochTerm = input.uint();
  const epochStartMs = input.uint();
  if (epochStartMs > nowMs) input.fail('epoch starts after the snapshot time');

  const ownerCount = countOf(input);
  const owners: string[] = [];
  for (let i = 0; i < ownerCount; i++) {
    const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
    if (owner.length === 0 || (i > 0 && !(owners[i - 1]! < owner))) input.fail('owners are not sorted and distinct');
    owners.push(owner);
  }

  const checkToken = (token: number) => {
    if (token < 1 || token > appliedIndex) input.fail(`token ${token} was not issued by index ${appliedIndex}`);
  };

  const leaseCount = countOf(input);
  const leases: Lease[] = [];
  const leaseKeys = new PrefixKeyReader(input);
  for (let i = 0; i < leaseCount; i++) {
    const key = leaseKeys.read();
    const ownerAt = input.uint();
    if (ownerAt >= owners.length) input.fail(`owner index ${ownerAt} out of range`);
    const fencingToken = input.uint();
    checkToken(fencingToken);
    const ttlMs = input.uint();
    const deadlineMs = nowMs + input.sint();
    const observedMs = input.uint();
    const observeFromMs = nowMs - input.uint();
    if (deadlineMs < 0 || observeFromMs < 0) input.fail('lease time out of range');
    leases.push(new Lease(key, owners[ownerAt]!, fencingToken, ttlMs, deadlineMs, observedMs, observeFromMs));
  }

  const freeCount = countOf(input);
  const freeKeyLastTokens: [string, FreeKey][] = [];
  const freeKeys = new PrefixKeyReader(input);
  for (let i = 0; i < freeCount; i++) {
    const key = freeKeys.read();
    const lastToken = input.uint();
    checkToken(lastToken);
    const freedAtMs = version === 1 ? nowMs : nowMs - input.uint();
    if (freedAtMs < 0) input.fail('free key time out of range');
    freeKeyLastTokens.push([key, { lastToken, freedAtMs }]);
  }
  const forgottenWatermark = version === 1 ? 0 : input.uint();
  if (forgottenWatermark > appliedIndex) input.fail(`watermark ${forgottenWatermark} is beyond index ${appliedIndex}`);

  const dedupCount = countOf(input);
  const dedup: DedupRecord[] = [];
  let previousRecordedAtMs = 0;
  for (let i = 0; i < dedupCount; i++) {
    const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
    const requestId = input.string(WIRE_LIMITS.maxRequestIdBytes);
    const recordedAtMs = nowMs - input.uint();
    if (recordedAtMs < previousRecordedAtMs) input.fail('dedup records are not in time order');
    previousRecordedAtMs = recordedAtMs;
    const type = DEDUP_TYPES[input.byte()] ?? input.fail('unknown dedup record type');
    const key = input.string(WIRE_LIMITS.maxKeyBytes);
    const token = input.bigUint();
    const identity = { owner, requestId, recordedAtMs, key, token };
    switch (type) {
      case 'acquire':
        dedup.push({
          ...identity,
          type,
          outcome: {
            acquired: flag(input),
            token: input.bigUint(),
            ttlMs: input.uint(),
            expiresAtMs: input.uint(),
            holderOwner: input.string(WIRE_LIMITS.maxOwnerBytes),
            holderTtlMs: input.uint(),
          },
        });
        break;
      case 'renew':
        dedup.push({
          ...identity,
          type,
          outcome: { renewed: flag(input), ttlMs: input.uint(), expiresAtMs: input.uint(), reason: reason(input) },
        });
        break;
      case 'release':
        dedup.push({ ...identity, type, outcome: { released: flag(input), reason: reason(input) } });
        break;
    }
  }
  input.end();
  return { appliedIndex, nowMs, epochTerm, epochStartMs, leases, freeKeyLastTokens, forgottenWatermark, dedup };
}

/** A count can never exceed the bytes left (every element takes at least one), which stops a corrupt
 *  count from making us allocate or loop for billions of elements. */
function countOf(input: ByteReader): number {
  const count = input.uint();
  if (count > input.remaining) input.fail(`count ${count} exceeds the remaining ${input.remaining} bytes`);
  return count;
}

function flag(input: ByteReader): boolean {
  const b = input.byte();
  if (b > 1) input.fail(`bad boolean ${b}`);
  return b === 1;
}

function reason(input: ByteReader): RefusalReason {
  return REASONS[input.byte()] ?? input.fail('unknown refusal reason');
}

// Scratch size for one key's UTF-8: a key is at most 512 bytes, and a JS string of n units encodes to at
// most 3n bytes, so 3 * 512 covers any key the codec accepted.
const KEY_SCRATCH_BYTES = WIRE_LIMITS.maxKeyBytes * 3;

/** Writes sorted keys as (shared prefix length with the previous key's UTF-8, remaining bytes). Two scratch
 *  buffers swap roles, so a million keys cost no allocation. */
class PrefixKeyWriter {
  private current = new Uint8Array(KEY_SCRATCH_BYTES);
  private previous = new Uint8Array(KEY_SCRATCH_BYTES);
  private previousLength = 0;
  constructor(private readonly out: ByteWriter) {}

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
