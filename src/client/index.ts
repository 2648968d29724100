// The leasehold TypeScript client, the package's main entry (`leasehold`, `leasehold/client`): LockClient
// (lock calls on one Lock/Stream per endpoint, endpoint failover, retries with the same request_id,
// auto-renew), the LockHandles and LockSessions it hands out, watch, election, TLS and the errors they
// throw. Who may import it: applications, src/cli, src/fencing, tests and scripts; never src/server. It
// imports only its own files, the wire contract of Lock and Cluster (src/wire/lock.ts, cluster.ts,
// scalars.ts), gRPC and Node — nothing of server, raft, lock or transport (eslint.config.js).
export {
  LockClient,
  type AcquireOptions,
  type HolderInfo,
  type ListedLockInfo,
  type LockClientOptions,
  type LockInfo,
  type SessionOptions,
} from './client.js';
export { LockSession, SessionLostError, type SessionState, type SessionAcquireOptions, type SessionCloseResult } from './session.js';
export { LockHandle, type LockState, type ReleaseResult, type RenewedEvent, type LockHandleEvents } from './handle.js';
export {
  LeaseholdError,
  LockNotAcquiredError,
  LockLostError,
  LockReleasedError,
  UnavailableError,
  InvalidRequestError,
  LimitExceededError,
  PermissionDeniedError,
  type LostReason,
} from './errors.js';
export { WatchHistoryLostError, type LockEventInfo, type WatchOptions } from './watch.js';
export { electionKey, type CampaignOptions, type LeaderInfo, type Leadership } from './election.js';
export type { ClientLogger } from './logger.js';
export { clientTlsCredentials, type ClientTlsOptions } from './tls.js';
