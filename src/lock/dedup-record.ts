// One remembered outcome of the dedup table (dedup.ts): who asked (owner, request_id), when, for which key
// and token, and the outcome it got. Its bytes are dedup-codec.ts's.
import type { AcquireOutcome, ReleaseOutcome, RenewOutcome, RevokeOutcome } from './types.js';

export interface DedupIdentity {
  owner: string;
  requestId: string;
  /** Log time when the first outcome was produced. */
  recordedAtMs: number;
  key: string;
  /** What the request named besides its key, part of its identity: the token for renew/release (revoke:
   *  0n = every hold); for an acquire its terms from cluster level 6 (`acquireTerms`), 0n before. */
  token: bigint;
}

export type DedupRecord = DedupIdentity &
  (
    | { type: 'acquire'; outcome: AcquireOutcome }
    | { type: 'renew'; outcome: RenewOutcome }
    | { type: 'release'; outcome: ReleaseOutcome }
    | { type: 'revoke'; outcome: RevokeOutcome }
  );

export type DedupOperation = DedupRecord['type'];
