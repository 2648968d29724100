// Tells "the cluster is unreachable" (nothing accepts a connection: a wrong --endpoints, nodes down) from
// "the cluster is busy" (nodes answer UNAVAILABLE during an election). The first ends a command after a
// short grace with the endpoints it tried; the second is retried until --timeout.
import * as grpc from '@grpc/grpc-js';
import { UnreachableError } from './exit-codes.js';
import { formatDuration } from './duration.js';

/** How long every endpoint may refuse connections before a command gives up (a node may be restarting). */
const CONNECT_GRACE_MS = 2000;

const CONNECTION_FAILURE =
  /No connection established|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|Name resolution failed|getaddrinfo|EHOSTUNREACH|ENETUNREACH|ECONNRESET|Failed to connect/i;

function isConnectionFailure(code: number, details: string): boolean {
  return code === grpc.status.UNAVAILABLE && CONNECTION_FAILURE.test(details);
}

export class ReachWatch {
  private readonly controller = new AbortController();
  private readonly failing = new Map<string, string>();
  private noted = false;
  private readonly startedAt: number;

  constructor(
    private readonly endpoints: readonly string[],
    private readonly say: (msg: string) => void,
    private readonly graceMs = CONNECT_GRACE_MS,
    /** The clock the grace is measured on (a test passes its own). */
    private readonly nowMs: () => number = Date.now,
  ) {
    this.startedAt = nowMs();
  }

  /** Aborts once every endpoint has refused connections for the grace period. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The UnreachableError the signal was aborted with, or null. */
  get unreachable(): UnreachableError | null {
    return this.controller.signal.aborted ? (this.controller.signal.reason as UnreachableError) : null;
  }

  /** Feed every failed attempt (EndpointPool's onRetry, or the client's retry log lines). */
  attemptFailed(endpoint: string, code: number, details: string): void {
    if (isConnectionFailure(code, details)) this.failing.set(endpoint, details);
    else this.failing.delete(endpoint); // it answered, even if only "no leader": keep waiting
    if (this.failing.size < new Set(this.endpoints).size || this.controller.signal.aborted) return;
    const last = short(details);
    if (this.nowMs() - this.startedAt >= this.graceMs) {
      this.controller.abort(new UnreachableError(this.endpoints, last));
    } else if (!this.noted) {
      this.noted = true;
      this.say(`cannot connect to ${this.endpoints.join(', ')} (${last}); retrying for up to ${formatDuration(this.graceMs)}`);
    }
  }
}

/** grpc-js wraps the socket error in a long sentence; keep the part that names the cause. */
function short(details: string): string {
  const m = /(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ECONNRESET)(?: [^\s,;)]*[^\s,;).])?/.exec(details);
  if (m) return m[1] === 'ECONNREFUSED' ? `connection refused: ${m[0]}` : m[0];
  const dns = /Name resolution failed for target \S+/.exec(details);
  if (dns) return dns[0];
  return details.length > 160 ? `${details.slice(0, 160)}…` : details;
}
