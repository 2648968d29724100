// Public surface of the pure lock-leader module (see leader.ts for the rules it implements).
export { LockLeader } from './leader.js';
export { NO_LOCK_LIMITS, limitMessage, type LockLimitSettings } from './admission.js';
export { DEFAULT_LOCK_LEADER_CONFIG } from './types.js';
export type {
  CallId,
  ProposalId,
  LockStateView,
  ClientRequest,
  ClientAnswer,
  ProposalErrorKind,
  ProposalError,
  FailureKind,
  CallFailure,
  LeaderEvent,
  LeaderCommand,
  LockLeaderConfig,
} from './types.js';
