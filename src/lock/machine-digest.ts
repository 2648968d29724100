// The machine's state as bytes (snapshot.ts's canonical encoding, written by snapshot-writer.ts): whole, in
// slices while entries go on applying, or without its keys and remembered requests (the applied store's rest
// record; store-records.ts keeps those one record each). Replicas in the same state write the same bytes, so
// the digest (a fingerprint of them) compares replicas.
import { DedupTable } from './dedup.js';
import { fingerprint64 } from './digest.js';
import { carryLease } from './epoch.js';
import type { LeaseTimes } from './epoch.js';
import { FreeKeys } from './free-keys.js';
import { KeyBuckets } from './key-buckets.js';
import type { Lease } from './lease.js';
import type { MachineState } from './machine-state.js';
import { SnapshotWriter } from './snapshot-writer.js';
import { LEVEL_CLOCK_PROGRESS } from './versions.js';

/** A snapshot being written in slices (LockMachine.beginSnapshot). */
export interface LockSnapshotJob {
  /** The index whose state the snapshot holds. */
  readonly appliedIndex: number;
  /** One slice of work; true when the snapshot is complete. */
  step(): boolean;
  /** The snapshot bytes, once step() returned true. */
  finish(): Uint8Array;
  /** Abandon it. */
  cancel(): void;
}

/** The whole state's snapshot bytes in one go; `withKeys` false: the rest record (LockMachine.restSnapshot). */
export function snapshotOf(s: MachineState, withKeys = true): Uint8Array {
  const writer = openWriter(s, 0, withKeys);
  while (!writer.step(Number.MAX_SAFE_INTEGER));
  return writer.finish();
}

/** 64-bit hex fingerprint of snapshotOf(s). */
export function digestOf(s: MachineState): string {
  return fingerprint64(snapshotOf(s));
}

/** LockMachine.beginSnapshot. */
export function beginSnapshot(s: MachineState, sizeHint: number, sliceItems: number): LockSnapshotJob {
  s.writer?.close();
  // A state that grew since the last snapshot (a fill) outgrows a hint of the last size: the buffer then
  // doubles by copying (40 MB for a million keys) and the result is copied again to its size, 300-400 ms of
  // a node's stalls. The last snapshot's bytes per item, times the items now, sizes it well.
  const items = snapshotItems(s);
  const writer = openWriter(s, Math.max(sizeHint, Math.ceil(s.snapshotBytesPerItem * items)));
  s.writer = writer;
  const release = () => {
    writer.close();
    if (s.writer === writer) s.writer = null;
  };
  return {
    appliedIndex: s.appliedIndex,
    step: () => writer.step(sliceItems),
    finish: () => {
      release();
      const bytes = writer.finish();
      if (items > 0) s.snapshotBytesPerItem = bytes.length / items;
      return bytes;
    },
    cancel: release,
  };
}

/** What a snapshot's size grows with: keys held or remembered free, and dedup records. */
function snapshotItems(s: MachineState): number {
  return s.leases.size + s.groupHoldCount + s.freeKeyLastTokens.size + s.dedup.size;
}

function openWriter(s: MachineState, sizeHint: number, withKeys = true): SnapshotWriter {
  const header = {
    appliedIndex: s.appliedIndex,
    nowMs: s.logNowMs,
    epochTerm: s.epochTerm,
    epochStartMs: s.epochStartMs,
    forgottenWatermark: s.forgottenWatermark,
    clusterLevel: s.clusterLevel,
    termLastStampMs: s.clusterLevel >= LEVEL_CLOCK_PROGRESS ? s.termLastStampMs : 0,
    ranMembers: [...s.ranMembers].sort(),
  };
  return new SnapshotWriter(
    {
      header,
      leases: withKeys ? s.leases : noLeases(),
      freeKeys: withKeys ? s.freeKeyLastTokens : noFreeKeys(),
      dedup: withKeys ? s.dedup : new DedupTable(s.options.dedupWindowMs, s.options.dedupMaxEntries),
      timesOf: timesAsOfNow(s),
      waiters: s.lines,
      delays: s.delays,
      values: s.holdValues,
      sessions: s.sessions,
      // Without the keys: the applied store's rest record, which keeps none of what has records of its own.
      restRecord: !withKeys,
      groups: s.groups,
    },
    sizeHint,
  );
}

// The rest record (written with every batch of the applied store, ~10 a second under load) has no keys: one
// empty table of each kind serves every such writer, which only reads them. A fresh KeyBuckets is 48 KB of
// bucket arrays, and a FreeKeys holds another.
let emptyLeases: KeyBuckets<Lease> | undefined;
let emptyFreeKeys: FreeKeys | undefined;
const noLeases = () => (emptyLeases ??= new KeyBuckets<Lease>());
const noFreeKeys = () => (emptyFreeKeys ??= new FreeKeys());

/**
 * A lease's times as of now, for a snapshot opened now: its unseen epochs applied to a copy, the lease
 * untouched (a read must not change what a snapshot in progress has yet to copy). Epochs added later are
 * not applied: settle() copies a lease's section (beforeKeyWrite) before it applies one.
 */
function timesAsOfNow(s: MachineState): (lease: Lease) => LeaseTimes {
  const epochs = s.epochs;
  const upTo = epochs.length;
  return (lease) => {
    if (lease.epochsSeen === upTo) return lease;
    if (lease.epochsSeen > upTo) throw new Error(`lease ${JSON.stringify(lease.key)} has seen epochs the snapshot has not`);
    const times: LeaseTimes = {
      ttlMs: lease.ttlMs,
      expiresAtMs: lease.expiresAtMs,
      observedMs: lease.observedMs,
      observeFromMs: lease.observeFromMs,
    };
    for (let i = lease.epochsSeen; i < upTo; i++) carryLease(times, epochs[i]!);
    return times;
  };
}
