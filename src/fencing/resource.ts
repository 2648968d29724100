// The protected-resource side of fencing (SPEC "The three mechanisms", article "Fencing відповідає на
// питання..."): the resource itself checks the token, ATOMICALLY with the write, and keeps the highest token
// it has accepted per resource. A lease alone cannot stop a holder that was paused, partitioned or slow —
// it may still write after its lease ended; only the resource can refuse that write.

/** A write outcome. `accepted: false` means the token was older than one already accepted: a stale holder. */
export interface FencedWriteResult {
  accepted: boolean;
  /** The highest token the resource has accepted for this id after this call (ours if accepted). */
  lastToken: bigint;
}

export interface FencedRecord<V> {
  value: V;
  /** The token of the write that stored `value`. */
  token: bigint;
}

/**
 * A resource that takes writes only with a fencing token not older than any it has accepted before.
 * Implementations must make "compare with the last token, then write value and token" one atomic step:
 * check-then-write as two steps lets two writers both pass the check (the article's "dangerous scheme").
 */
export interface FencedResource<V> {
  write(resourceId: string, token: bigint, value: V): Promise<FencedWriteResult>;
  read(resourceId: string): Promise<FencedRecord<V> | null>;
}

/**
 * Whether a write carrying the same token as the last accepted one is taken.
 * - 'accept' (default): the same lease may write many times (a multi-step critical section, or a retry of a
 *   write whose answer was lost). Safe: tokens are unique per acquire, so an equal token is the same holder;
 *   every OLDER token is refused once a newer one has written.
 * - 'reject': each token writes at most once (the article's toy model, `token <= lastToken` refused).
 */
export type SameTokenPolicy = 'accept' | 'reject';

export interface FencingOptions {
  sameToken?: SameTokenPolicy;
}

/** Thrown by `assertAccepted` (and helpers that want an exception rather than a result). */
export class StaleTokenError extends Error {
  override name = 'StaleTokenError';
  constructor(
    readonly resourceId: string,
    readonly token: bigint,
    readonly lastToken: bigint,
  ) {
    super(
      `write to ${JSON.stringify(resourceId)} with fencing token ${token} was rejected: token ${lastToken} already wrote there. ` +
        'This process no longer holds the lock (its lease ended, e.g. after a pause or a partition); stop, and acquire the lock again',
    );
  }
}

export function assertAccepted(resourceId: string, token: bigint, result: FencedWriteResult): void {
  if (!result.accepted) throw new StaleTokenError(resourceId, token, result.lastToken);
}

/** Does `token` pass against `lastToken` under `policy`? The one comparison every store makes. */
export function tokenPasses(token: bigint, lastToken: bigint, policy: SameTokenPolicy): boolean {
  return policy === 'accept' ? token >= lastToken : token > lastToken;
}

const MAX_UINT64 = (1n << 64n) - 1n;

/** A fencing token must be a uint64 > 0 (0 means "no token" on the wire). */
export function checkFencingToken(token: bigint): void {
  if (typeof token !== 'bigint' || token <= 0n || token > MAX_UINT64) {
    throw new RangeError(`fencing token must be a bigint in 1..2^64-1 (got ${String(token)})`);
  }
}

/**
 * A uint64 as 20 zero-padded decimal digits: text order equals numeric order, so any store (LevelDB keys,
 * a SQL TEXT column under binary collation) compares tokens correctly without 64-bit integer support.
 */
export function tokenToText(token: bigint): string {
  return token.toString().padStart(20, '0');
}

export function tokenFromText(text: string): bigint {
  return BigInt(text);
}
