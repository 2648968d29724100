// Arguments of the client commands, checked before anything is sent, with messages that say what to do.
import { InvalidArgumentError } from 'commander';
import { endpointProblems } from '../client/endpoints.js';
import { parseEndpoints } from '../client/rpc.js';
import { UsageError } from './exit-codes.js';

const MAX_TOKEN = (1n << 64n) - 1n;

/** --token: the decimal fencing token acquire printed. */
export function parseToken(value: string, field = '--token'): string {
  const v = value.trim();
  if (!/^\d{1,20}$/.test(v) || BigInt(v) === 0n || BigInt(v) > MAX_TOKEN) {
    throw new InvalidArgumentError(
      `${field}: expected the fencing token that acquire printed, a whole number from 1 to ${MAX_TOKEN} (got "${value}")`,
    );
  }
  return BigInt(v).toString();
}

/** --endpoints: host:port,...; every mistake named at once. */
export function checkEndpoints(list: string): string[] {
  const endpoints = parseEndpoints(list);
  if (endpoints.length === 0)
    throw new UsageError('--endpoints: give at least one host:port of a leasehold node (or set LEASEHOLD_ENDPOINTS)');
  const problems = endpointProblems(endpoints);
  if (problems.length > 0) throw new UsageError(`--endpoints: ${problems.join('; ')}`);
  return endpoints;
}

/** --limit of acquire and run: how many may hold the key at once (a semaphore; 1 = a mutex). */
export function parseHoldLimit(value: string): number {
  const v = value.trim();
  if (!/^\d{1,4}$/.test(v) || Number(v) < 1 || Number(v) > 1000)
    throw new InvalidArgumentError(`--limit: expected how many may hold the key at once, a whole number from 1 to 1000 (got "${value}")`);
  return Number(v);
}
