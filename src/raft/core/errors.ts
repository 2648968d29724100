// The errors the pure core throws. Each is a bug or bad data, never a condition of normal operation (those
// are results: ProposeResult, ConfChangeResult, compact()'s null); the driver stops on them. PURE.

/** A configuration (a configuration entry, or snapshot metadata) that does not decode: with it unread this
 *  node would not know its membership. */
export class MalformedConfError extends Error {
  override readonly name = 'MalformedConfError';
}

/** A Raft safety rule found broken in this node's own state (e.g. a committed entry about to be replaced):
 *  going on would diverge from what a quorum has. */
export class RaftInvariantError extends Error {
  override readonly name = 'RaftInvariantError';
}

/** compact() asked to drop the log past what it may: beyond the applied index, beyond the durable log, or
 *  at an index the log does not hold. A bug in the caller; nothing was changed. */
export class CompactionRangeError extends Error {
  override readonly name = 'CompactionRangeError';
}
