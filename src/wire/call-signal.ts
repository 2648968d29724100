// What serving or forwarding one lock call needs of its caller's end: whether it ended, why (the reason:
// src/transport/call-end.ts), and a listener for when it does. A structural subset of AbortSignal, so a
// caller's own AbortSignal fits wherever one exists (a client library's, a test's).
//
// CallAbort is the one a stream makes for each call it multiplexes (a client's Lock/Stream, a follower's
// Forward stream, a forwarded call). Why not an AbortController: it is an EventTarget, and making one and
// reading its signal allocates the controller, the signal, its listener bookkeeping and an Event at abort
// — per call, on every node a call passes. A leader's profile at 1,000 renews/s put 2.4 % of its busy time
// in `createAbortSignal` alone. Almost no call is ever aborted; this is two fields until one is.

export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class CallAbort implements CallSignal {
  aborted = false;
  reason: unknown = undefined;
  // Nearly every call has at most one listener (the lock service's, or a forward's): kept without an array.
  private first: (() => void) | null = null;
  private more: (() => void)[] | null = null;

  /** As AbortSignal's: a listener added after the abort is never called, and each is called once. */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    if (this.first === null && this.more === null) this.first = listener;
    else (this.more ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    if (this.first === listener) this.first = null;
    else if (this.more !== null) {
      const i = this.more.indexOf(listener);
      if (i >= 0) this.more.splice(i, 1);
    }
  }

  /** Ends the call with `reason`; only the first abort counts. Listeners run in the order they were added;
   *  one that throws does not keep the others from running (the first error is thrown after them). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.first === null ? (this.more ?? []) : [this.first, ...(this.more ?? [])];
    this.first = null;
    this.more = null;
    let thrown: { error: unknown } | null = null;
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        thrown ??= { error };
      }
    }
    if (thrown !== null) throw thrown.error;
  }
}
