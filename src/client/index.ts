// Public surface of the leasehold TypeScript client.
export { LockClient, type AcquireOptions, type HolderInfo, type ListedLockInfo, type LockClientOptions, type LockInfo, type SessionOptions } from './client.js';
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
