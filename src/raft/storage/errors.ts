// Typed storage errors. Each message says what is wrong and what an operator or caller can do about it.

/** Data on disk cannot be trusted (CRC mismatch, missing snapshot). Starting the node would be unsafe.
 *  The store's verdict, fatal: every later call is refused with it. */
export class StorageCorruptionError extends Error {
  override readonly name = 'StorageCorruptionError';
}

/** One record (a value or a WAL frame) fails its CRC or does not parse: what the codec finds, not yet a
 *  verdict. The store that read it decides: WalStorage (the node's) turns a bad frame with a whole frame
 *  after it into a StorageCorruptionError that says where and what an operator can do (dropping it would
 *  forget a vote or an acknowledged entry), while a torn last write is no error (wal-frame.ts); LevelStorage,
 *  reading an older data dir, ends the log at a bad entry (the leader resends the rest). */
export class CorruptRecordError extends Error {
  override readonly name = 'CorruptRecordError';
}

/** The caller broke a log rule (gap, overlap with the snapshot, out-of-order snapshot). Nothing was written. */
export class InvalidBatchError extends Error {
  override readonly name = 'InvalidBatchError';
}

/** compact() with a snapshot older than the stored one: it would move the log backwards. Nothing was written. */
export class SnapshotOutOfDateError extends Error {
  override readonly name = 'SnapshotOutOfDateError';
}

/** The store was closed; reopen it to continue. */
export class StorageClosedError extends Error {
  override readonly name = 'StorageClosedError';
}

/**
 * An earlier write failed. After a failed fsync the on-disk state is unknown (it may or may not hold the
 * batch), so the in-memory view of the log cannot be trusted either: every later write is refused until
 * the store is reopened and reloaded from disk.
 */
export class StorageFailedError extends Error {
  override readonly name = 'StorageFailedError';
}

/** MemoryStorage only: a simulated crash dropped this write before it was synced. */
export class StorageCrashedError extends Error {
  override readonly name = 'StorageCrashedError';
}
