// The lock leader: the pure logic a node runs while it leads (see leader.ts for the rules it implements) —
// a step function, events in (calls, applied results, role changes, ticks of injected time), commands out
// (proposals, answers, wake-ups). PURE, under src/lock's rules: it imports only src/lock and the Raft
// core's types. Who may import it: the lock service (src/lock-on-raft/lock-service.ts), the simulator
// and tests.
export { LockLeader } from './leader.js';
export { NO_ADMISSION_LIMITS, limitMessage, type AdmissionLimits } from './admission-limits.js';
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
