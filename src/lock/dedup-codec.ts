// The bytes of one remembered outcome, as the snapshot stores it (snapshot.ts):
//   owner:str requestId:str | now-recordedAt | type:u8 key:str token:uvarint64 outcome
// type 0 acquire, 1 renew, 2 release, 3 revoke (cluster level 5, snapshot version 9: its outcome is
// count:uvarint token:uvarint64*, the tokens it ended in token order).
// The dedup table keeps every record in exactly these bytes (without the time, which it keeps apart), so
// a record costs about its snapshot size in memory and a snapshot copies records instead of re-encoding.
import { ByteReader, type ByteWriter } from './bytes.js';
import { WIRE_LIMITS } from './commands.js';
import type { DedupOperation, DedupRecord } from './dedup-record.js';
import { REFUSAL_REASONS, type RefusalReason } from './types.js';

const DEDUP_TYPES: readonly DedupOperation[] = ['acquire', 'renew', 'release', 'revoke'];
/** An acquire's type byte (its index in DEDUP_TYPES). */
const ACQUIRE_TYPE = 0;
/** A revoke ends at most one key's holds: no more than a semaphore's limit. */
const MAX_REVOKED = WIRE_LIMITS.maxHoldLimit;

/** The identity part: what a lookup by (owner, request_id) compares. */
export function writeDedupIdentity(out: ByteWriter, owner: string, requestId: string): void {
  out.string(owner);
  out.string(requestId);
}

/** Everything after the identity and the time. */
export function writeDedupBody(out: ByteWriter, record: DedupRecord): void {
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
      out.byte(REFUSAL_REASONS.indexOf(o.reason));
      break;
    }
    case 'release': {
      const o = record.outcome;
      out.byte(o.released ? 1 : 0);
      out.byte(REFUSAL_REASONS.indexOf(o.reason));
      break;
    }
    case 'revoke':
      out.uint(record.outcome.revoked.length);
      for (const token of record.outcome.revoked) out.bigUint(token);
      break;
  }
}

export function readDedupIdentity(input: ByteReader): { owner: string; requestId: string } {
  return { owner: input.string(WIRE_LIMITS.maxOwnerBytes), requestId: input.string(WIRE_LIMITS.maxRequestIdBytes) };
}

/**
 * An acquire's owner and key, read from its record's bytes (identity at `start`, body at `split`) without the
 * rest of it, or null for a record of another type — read from the type byte alone. What the dedup table's
 * prune asks its keep rule about (cluster level 6 keeps acquires' records only): decoding every expired record
 * whole, bigints and outcome objects, was most of the CPU of an entry that forgot a 250,000-record table.
 */
export function readAcquireOwnerKey(
  bytes: Uint8Array,
  start: number,
  split: number,
  end: number,
  error: (message: string, offset: number) => Error,
): { owner: string; key: string } | null {
  if (bytes[split] !== ACQUIRE_TYPE) return null;
  const input = new ByteReader(bytes.subarray(start, end), error);
  const owner = input.string(WIRE_LIMITS.maxOwnerBytes);
  input.skipLengthPrefixed(WIRE_LIMITS.maxRequestIdBytes);
  input.byte();
  return { owner, key: input.string(WIRE_LIMITS.maxKeyBytes) };
}

/** Strict: a bad type, flag or reason throws the reader's error. */
export function readDedupBody(input: ByteReader, identity: { owner: string; requestId: string; recordedAtMs: number }): DedupRecord {
  const type = DEDUP_TYPES[input.byte()] ?? input.fail('unknown dedup record type');
  const key = input.string(WIRE_LIMITS.maxKeyBytes);
  const token = input.bigUint();
  const base = { ...identity, key, token };
  switch (type) {
    case 'acquire':
      return {
        ...base,
        type,
        outcome: {
          acquired: flag(input),
          token: input.bigUint(),
          ttlMs: input.uint(),
          expiresAtMs: input.uint(),
          holderOwner: input.string(WIRE_LIMITS.maxOwnerBytes),
          holderTtlMs: input.uint(),
        },
      };
    case 'renew':
      return { ...base, type, outcome: { renewed: flag(input), ttlMs: input.uint(), expiresAtMs: input.uint(), reason: reason(input) } };
    case 'release':
      return { ...base, type, outcome: { released: flag(input), reason: reason(input) } };
    case 'revoke': {
      const revoked: bigint[] = [];
      for (let i = revokedCount(input); i > 0; i--) revoked.push(input.bigUint());
      return { ...base, type, outcome: { revoked } };
    }
  }
}

/**
 * Checks the body readDedupBody would read — the same fields, limits and errors — without building the
 * record: a restore copies a checked record's bytes straight into the dedup table (they are canonical, so
 * they are exactly what writeDedupBody would write for it). `revokes`: whether the snapshot's version has
 * revoke records (9, cluster level 5); an older one has none.
 */
export function skipDedupBody(input: ByteReader, revokes = true): void {
  const type = DEDUP_TYPES[input.byte()] ?? input.fail('unknown dedup record type');
  if (type === 'revoke' && !revokes) input.fail('a revoke dedup record in a snapshot version older than 9');
  input.skipString(WIRE_LIMITS.maxKeyBytes);
  input.skipBigUint();
  if (type === 'revoke') {
    for (let i = revokedCount(input); i > 0; i--) input.skipBigUint();
    return;
  }
  flag(input);
  switch (type) {
    case 'acquire':
      input.skipBigUint();
      input.uint();
      input.uint();
      input.skipString(WIRE_LIMITS.maxOwnerBytes);
      input.uint();
      return;
    case 'renew':
      input.uint();
      input.uint();
      reason(input);
      return;
    case 'release':
      reason(input);
      return;
  }
}

/** Checks the identity readDedupIdentity would read, without making its strings. */
export function skipDedupIdentity(input: ByteReader): void {
  input.skipString(WIRE_LIMITS.maxOwnerBytes);
  input.skipString(WIRE_LIMITS.maxRequestIdBytes);
}

function revokedCount(input: ByteReader): number {
  const count = input.uint();
  if (count > MAX_REVOKED) input.fail(`a revoke of ${count} holds (at most ${MAX_REVOKED})`);
  return count;
}

function flag(input: ByteReader): boolean {
  const b = input.byte();
  if (b > 1) input.fail(`bad boolean ${b}`);
  return b === 1;
}

function reason(input: ByteReader): RefusalReason {
  return REFUSAL_REASONS[input.byte()] ?? input.fail('unknown refusal reason');
}
