// Why a proposal or a read did not go through, as the driver reports it. The server maps each onto a
// gRPC status (UNAVAILABLE: retry with the same request_id, maybe elsewhere).
import type { NodeId } from './core/types.js';

export class NotLeaderError extends Error {
  constructor(
    readonly leaderId: NodeId | null,
    reason = 'not the leader',
  ) {
    super(leaderId ? `${reason}; the leader is ${leaderId}` : `${reason}; no leader is known`);
    this.name = 'NotLeaderError';
  }
}

/** The proposal's entry was replaced by another leader's entry: it will never apply. */
export class ProposalDroppedError extends Error {
  constructor(index: number) {
    super(`the proposal at index ${index} was superseded after a leader change; retry`);
    this.name = 'ProposalDroppedError';
  }
}

export class ProposalTimeoutError extends Error {
  /** `index`: where the entry sits in this leader's log; it may still commit there. */
  constructor(
    timeoutMs: number,
    readonly index = 0,
  ) {
    super(`the write was not confirmed within ${timeoutMs} ms; its outcome is unknown — retry with the same request_id`);
    this.name = 'ProposalTimeoutError';
  }
}

export class ReadTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`could not confirm leadership for a linearizable read within ${timeoutMs} ms (no quorum?)`);
    this.name = 'ReadTimeoutError';
  }
}

export class NodeStoppedError extends Error {
  constructor() {
    super('the node is shutting down');
    this.name = 'NodeStoppedError';
  }
}

/** A membership change the leader refused: `pending` and `not-ready` pass with time (retry), `invalid`
 *  never will (FAILED_PRECONDITION on the wire). */
export class ConfChangeRefusedError extends Error {
  constructor(
    readonly kind: 'pending' | 'not-ready' | 'invalid',
    message: string,
  ) {
    super(message);
    this.name = 'ConfChangeRefusedError';
  }
}
