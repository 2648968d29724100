// The messages a caller gets when the leader cannot serve it. One place, so the adapter and the
// simulator report the same words (gRPC UNAVAILABLE unless said otherwise).
import type { CallFailure, ProposalError } from './types.js';

export function notLeader(leaderId: string | null): CallFailure {
  return {
    kind: 'unavailable',
    message: leaderId
      ? `not the leader (leader is ${leaderId}); retry there`
      : 'no leader is elected right now (election in progress or no quorum); retry',
    leaderId,
  };
}

export function unavailable(message: string): CallFailure {
  return { kind: 'unavailable', message, leaderId: null };
}

export const LEADERSHIP_CHANGED = 'leadership changed while waiting for the lock; retry';
export const SHUTTING_DOWN = 'the node is shutting down; retry on another node';
export const STILL_STARTING = 'the new leader is still starting its term; retry';
export const CALLER_WENT_AWAY = 'the caller went away';
export const CALL_DEADLINE_PASSED = "the call's deadline passed while it waited in line";

/** A failed proposal or read barrier, as the caller who asked for it should see it. */
export function proposalFailure(err: ProposalError): CallFailure {
  switch (err.kind) {
    case 'not-leader':
      return notLeader(err.leaderId ?? null);
    case 'timeout':
      return unavailable(`${err.message} (is a quorum of nodes reachable?)`);
    case 'dropped':
    case 'read-timeout':
      return unavailable(err.message);
    case 'stopped':
      return unavailable(SHUTTING_DOWN);
    case 'internal':
      return { kind: 'internal', message: err.message, leaderId: null };
  }
}
