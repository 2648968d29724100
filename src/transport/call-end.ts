// Why a call ended on the caller's side, carried as the reason of the AbortSignal a lock call is served
// with. The difference decides what happens to a blocking acquire's place in line (SPEC "A waiter's place
// outlives its connection"; src/lock/leader/detached-waiters.ts):
// - CallCancelled: the caller said so — a Lock/Stream `cancel` message (the client library sends one when
//   its signal aborts or an attempt's deadline passes), or a follower's forwarded `cancel`. The waiter
//   leaves its line at once.
// - CallDetached: the connection it came on broke — its Lock/Stream or a follower's Forward stream ended,
//   reset or failed, or a unary call was cancelled (gRPC cannot tell a client's cancel of a unary call from
//   a lost connection, so it counts as the latter). The waiter keeps its place: under a session while the
//   session lives, without one for a grace.

import type { CallSignal } from '../wire/call-signal.js';

// The signal a lock call is served with (src/wire/call-signal.ts), named here for the lock service, which
// may import how a call ended but not the wire module.
export type { CallSignal };

export class CallCancelled extends Error {
  constructor() {
    super('cancelled by the caller');
    this.name = 'CallCancelled';
  }
}

export class CallDetached extends Error {
  constructor() {
    super("the caller's connection broke");
    this.name = 'CallDetached';
  }
}

/** The reason to abort a call with when its connection broke. One instance: it carries no detail. */
export const DETACHED = new CallDetached();

/** The reason to abort a call with when its caller cancelled it. */
export const CANCELLED = new CallCancelled();

/** How a call ended, from its signal's reason (or a grpc-js 'cancelled' event's argument): anything but an
 *  explicit CallCancelled is a broken connection. */
export function endReason(reason: unknown): CallCancelled | CallDetached {
  return reason instanceof CallCancelled ? CANCELLED : DETACHED;
}

/** Whether an aborted call's signal says its connection broke (reason CallDetached). A plain abort() is a
 *  cancel: the lock simulation's clients cancel that way. */
export function isDetached(signal: CallSignal): boolean {
  return signal.aborted && signal.reason instanceof CallDetached;
}
