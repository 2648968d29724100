// The request fields of a semaphore or shared acquire (SPEC "Many holders"), checked before anything is sent.
import { status } from '@grpc/grpc-js';
import { InvalidRequestError } from './errors.js';

export function manyHoldsFields(opts: { limit?: number; shared?: boolean }): { limit?: number; shared?: boolean } {
  const limit = opts.limit ?? 1;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000)
    throw invalid(`acquire: limit must be an integer from 1 to 1000 (got ${String(opts.limit)})`);
  if (opts.shared !== undefined && typeof opts.shared !== 'boolean') throw invalid('acquire: shared must be a boolean');
  if (opts.shared === true && limit > 1)
    throw invalid("acquire: a shared hold is of a key with limit 1 (shared and exclusive holds); a semaphore's holds are all alike");
  return { ...(limit > 1 ? { limit } : {}), ...(opts.shared === true ? { shared: true } : {}) };
}

function invalid(message: string): InvalidRequestError {
  return new InvalidRequestError(message, status.INVALID_ARGUMENT);
}
