// A lock service failure as the gRPC status its caller gets (the client maps each code to its own error:
// UNAVAILABLE retry elsewhere, FAILED_PRECONDITION rejected, RESOURCE_EXHAUSTED a limit, INVALID_ARGUMENT
// a request that contradicts the replicated state); anything else is INTERNAL, and logged.
import { status } from '@grpc/grpc-js';
import {
  AdmissionLimitError,
  ConflictingRequestError,
  LeaderUnavailableError,
  RequestRejectedError,
} from '../../lock-on-raft/lock-service.js';
import type { NodeLogger } from '../../raft/logger.js';

export function callFailure(err: unknown, logger: NodeLogger): { code: number; details: string } {
  const fail = (code: number, details: string) => ({ code, details });
  if (err instanceof LeaderUnavailableError) return fail(status.UNAVAILABLE, err.message);
  if (err instanceof RequestRejectedError) return fail(status.FAILED_PRECONDITION, err.message);
  if (err instanceof AdmissionLimitError) return fail(status.RESOURCE_EXHAUSTED, err.message);
  if (err instanceof ConflictingRequestError) return fail(status.INVALID_ARGUMENT, err.message);
  logger.error({ err: String(err) }, 'unexpected error serving a lock call');
  return fail(status.INTERNAL, `internal error: ${(err as Error)?.message ?? String(err)}`);
}
