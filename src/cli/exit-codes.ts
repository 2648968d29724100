// One place that turns any failure of a client command into SPEC's exit code and a message a person can
// act on. Every client command (acquire, renew, release, get, status, members, transfer-leader, …) ends
// through here:
//   0 done · 1 usage error or INVALID_ARGUMENT (client- or server-side) · 2 the cluster could not answer
//   (no leader, no quorum, unreachable, deadline) · 3 refused (held by another, wrong owner/token, not held,
//   an impossible change) · 4 permission denied or unauthenticated.
// `serve` has one code of its own: 70, the node stopped because it cannot go on (storage failed, an entry
// of a newer build) — sysexits' EX_SOFTWARE, apart from the codes above: a supervisor restarts it, and an
// operator reading the code knows it was the node's own decision.
import * as grpc from '@grpc/grpc-js';
import { CommanderError, InvalidArgumentError } from 'commander';
import { InvalidRequestError, LeaseholdError, LockLostError, LockNotAcquiredError, UnavailableError } from '../client/errors.js';
import { RpcError } from '../client/rpc.js';
import { WatchHistoryLostError } from '../client/watch.js';
import { causeChain } from '../server/assembly/error-causes.js';

export const EXIT = Object.freeze({ OK: 0, USAGE: 1, UNAVAILABLE: 2, REFUSED: 3, DENIED: 4, NODE_FAILED: 70 } as const);
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Bad usage found by the CLI itself (a malformed token or endpoint, a missing argument): exit 1. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** No endpoint could even be connected to: exit 2, naming what was tried. */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
  constructor(
    readonly endpoints: readonly string[],
    readonly lastError: string,
  ) {
    super(
      `could not reach any node of the cluster (tried ${endpoints.join(', ')}; last error: ${lastError}). ` +
        'Check --endpoints (or LEASEHOLD_ENDPOINTS) and that the nodes are running',
    );
  }
}

/** A refusal the command decided from an answer (not acquired, not renewed, …): exit 3. */
export class RefusedError extends Error {
  override name = 'RefusedError';
}

/** The exit code of a gRPC status code, as SPEC maps them. */
export function exitCodeForStatus(code: grpc.status): ExitCode {
  switch (code) {
    case grpc.status.OK:
      return EXIT.OK;
    case grpc.status.INVALID_ARGUMENT:
    case grpc.status.OUT_OF_RANGE:
      return EXIT.USAGE;
    case grpc.status.FAILED_PRECONDITION:
    case grpc.status.RESOURCE_EXHAUSTED:
    case grpc.status.ALREADY_EXISTS:
    case grpc.status.NOT_FOUND:
      return EXIT.REFUSED;
    case grpc.status.PERMISSION_DENIED:
    case grpc.status.UNAUTHENTICATED:
      return EXIT.DENIED;
    default:
      // UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ABORTED, INTERNAL, UNKNOWN, UNIMPLEMENTED, DATA_LOSS.
      return EXIT.UNAVAILABLE;
  }
}

function rpcCause(err: unknown): RpcError | null {
  return causeChain(err).find((e): e is RpcError => e instanceof RpcError) ?? null;
}

/** The exit code of anything a client command can throw. Unknown errors count as usage errors (1). */
export function exitCodeFor(err: unknown): ExitCode {
  if (err instanceof UsageError || err instanceof InvalidArgumentError) return EXIT.USAGE;
  if (err instanceof CommanderError) return EXIT.USAGE;
  if (err instanceof UnreachableError || err instanceof UnavailableError) return EXIT.UNAVAILABLE;
  if (err instanceof RefusedError || err instanceof LockNotAcquiredError || err instanceof LockLostError) return EXIT.REFUSED;
  if (err instanceof WatchHistoryLostError) return EXIT.USAGE; // the index asked for is older than any node keeps
  if (err instanceof InvalidRequestError) return exitCodeForStatus(err.code);
  if (err instanceof RpcError) return exitCodeForStatus(err.code);
  const cause = rpcCause(err);
  if (cause) return exitCodeForStatus(cause.code);
  if (err instanceof LeaseholdError) return EXIT.UNAVAILABLE;
  return EXIT.USAGE;
}

/** What to tell the user, with the next step where there is an obvious one. */
export function explain(err: unknown, endpoints: readonly string[] = []): string {
  if (err instanceof RpcError) {
    const code = grpc.status[err.code] ?? String(err.code);
    switch (exitCodeFor(err)) {
      case EXIT.USAGE:
        return `the cluster refused the request as invalid: ${err.details}`;
      case EXIT.DENIED:
        return `permission denied (${code}): ${err.details}`;
      case EXIT.REFUSED:
        return `refused (${code}): ${err.details}`;
      default:
        return (
          `the cluster did not answer (${code}: ${err.details})` +
          (endpoints.length > 0 ? `; tried ${endpoints.join(', ')}` : '') +
          '. Check that a majority of the nodes is up (leasehold status), and --endpoints'
        );
    }
  }
  return err instanceof Error ? err.message : String(err);
}

/** Prints `leasehold: <explanation>` on stderr and sets the exit code; returns it. */
export function reportError(err: unknown, endpoints: readonly string[] = []): ExitCode {
  const code = exitCodeFor(err);
  process.stderr.write(`leasehold: ${explain(err, endpoints)}\n`);
  process.exitCode = code;
  return code;
}
