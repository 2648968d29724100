// The lock state machine: the replicated application every node applies Raft entries to (machine.ts and
// its parts; commands, snapshots, validation, events), and in leader/ the lock-leader logic. PURE: no Node
// built-in, no npm package, no clock, timer, randomness or I/O; it imports only src/lock and the Raft
// core's types (`npm run lint`, `npm run purity`). Who may import it: the lock machine on Raft
// (src/lock-on-raft), the server (the gRPC and dashboard views), the wire module (RefusalReason, a type),
// the simulator and tests. The rules it keeps for leases across terms are argued in LEASES.md.
export { LockMachine, LockApplyOrderError } from './machine.js';
export {
  encodeCommand,
  decodeCommand,
  wireLimitViolation,
  CommandDecodeError,
  UnknownCommandError,
  NEWEST_COMMAND_TAG,
  CommandEncodeError,
  WIRE_LIMITS,
} from './commands.js';
export type {
  LockCommand,
  LockCommandType,
  AcquireCommand,
  RenewCommand,
  RenewItem,
  RenewsCommand,
  ReleaseCommand,
  ExpireCommand,
  TermStartCommand,
  CheckpointCommand,
} from './commands.js';
export {
  validateAcquire,
  validateRenew,
  validateRelease,
  validateGet,
  validateOpenSession,
  validateSessionCall,
  ValidationError,
  DEFAULT_LOCK_LIMITS,
} from './validate.js';
export type {
  LockLimits,
  LockFieldName,
  Validated,
  AcquireInput,
  RenewInput,
  ReleaseInput,
  GetInput,
  ValidAcquire,
  ValidRenew,
  ValidRelease,
  ValidGet,
  ValidOpenSession,
  ValidSessionCall,
} from './validate.js';
export { SnapshotDecodeError } from './snapshot.js';
export { fingerprint64 } from './digest.js';
export { MAX_UINT64 } from './bytes.js';
export { BUILD_LEVEL, BASE_LEVEL, LEVEL_CLOCK_PROGRESS, lowestReadLevel } from './versions.js';
export { DEFAULT_LOCK_MACHINE_OPTIONS } from './types.js';
export type {
  RefusalReason,
  LockErrorCode,
  AcquireOutcome,
  RenewOutcome,
  ReleaseOutcome,
  RevokeOutcome,
  AcquireResult,
  RenewResult,
  RenewsResult,
  ReleaseResult,
  ExpireResult,
  TermStartResult,
  CheckpointResult,
  ErrorResult,
  OpenSessionResult,
  RenewSessionResult,
  SessionEndResult,
  LockResult,
  LockView,
  HolderView,
  DueLease,
  LockMachineOptions,
} from './types.js';
