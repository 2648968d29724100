// The caller's side of calls multiplexed by call_id on one long-lived bidi stream — a client's Lock/Stream
// (client/lock-stream.ts), a follower's Forward stream (transport/forward-calls.ts) — with no transport and
// no clock in it: the stream is opened and timers are set through the functions it is given, so the
// simulator runs it over simulated streams and virtual time. The served side is transport/call-mux.ts.
//
// Rules, the same on both streams:
// - the stream opens with the first call and is reused by the next ones; answers come in any order, and
//   each settles only the call under its own call_id, once;
// - a call ends at its own time limit or when its caller's signal aborts; an abort (and, if the caller
//   asks, a time limit) sends the other side a cancel on the stream, if it is still the one in use, so the
//   other side stops serving a call nobody waits for;
// - a stream that breaks fails every call in flight at once (their outcome is unknown: the caller retries
//   with the same request_id, and dedup answers the first outcome), and the next call opens a new stream.

import type { CallSignal } from './call-signal.js';

/** An open stream: write messages on it, or give up on it (no answer of it is delivered any more). */
export interface MuxStream<M> {
  write(message: M): void;
  abandon(): void;
}

/** Opens a new stream; its answers (with their call_id) and its end are reported to the callbacks. */
export type OpenMuxStream<M, A, B> = (onAnswer: (callId: string, answer: A) => void, onBreak: (why: B) => void) => MuxStream<M>;

export interface MuxTimers {
  after(ms: number, fn: () => void): { cancel(): void };
}

/** One call: its message, when it gives up, and what each of its ends resolves to. */
export interface MuxCall<M, A, R> {
  /** The message that carries the call under `callId`. */
  message(callId: string): M;
  /** The caller's signal: its abort ends the call with `cancelled` and sends a cancel. */
  signal?: CallSignal | undefined;
  /** After this long the call ends with `timedOut()`. */
  limitMs: number;
  timedOut(): R;
  /** Whether the time limit sends a cancel too (the other side does not know the limit). */
  cancelAtLimit: boolean;
  cancelled(): R;
  /** Its answer arrived. */
  answered(answer: A): R;
}

export class CallerMux<M, A, B, R> {
  private stream: MuxStream<M> | null = null;
  private nextCallId = 1;
  private readonly pending = new Map<string, { answer(answer: A): void; fail(why: B): void }>();

  constructor(
    private readonly openStream: OpenMuxStream<M, A, B>,
    private readonly timers: MuxTimers,
    /** The message that cancels call `callId`. */
    private readonly cancelMessage: (callId: string) => M,
    /** What a call in flight resolves to when its stream breaks or the mux is reset. */
    private readonly broken: (why: B) => R,
    /** Told when the stream in use breaks (before its calls fail). */
    private readonly onBreak: (why: B) => void = () => {},
  ) {}

  /** Calls waiting for their answer. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** One call on the stream (opened if there is none); resolves once, never rejects. */
  call(c: MuxCall<M, A, R>): Promise<R> {
    const stream = this.open();
    const callId = String(this.nextCallId++);
    return new Promise<R>((resolve) => {
      let done = false;
      const settle = (result: R) => {
        if (done) return;
        done = true;
        timer.cancel();
        c.signal?.removeEventListener('abort', onAbort);
        this.pending.delete(callId);
        resolve(result);
      };
      const giveUp = (result: R, cancel: boolean) => {
        if (done) return;
        if (cancel && this.stream === stream) stream.write(this.cancelMessage(callId));
        settle(result);
      };
      const timer = this.timers.after(c.limitMs, () => giveUp(c.timedOut(), c.cancelAtLimit));
      const onAbort = () => giveUp(c.cancelled(), true);
      c.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(callId, { answer: (a) => settle(c.answered(a)), fail: (why) => settle(this.broken(why)) });
      stream.write(c.message(callId));
    });
  }

  /** Fails every call in flight with `why` and gives up the stream; the next call opens a new one. */
  reset(why: B): void {
    const stream = this.stream;
    this.stream = null;
    stream?.abandon();
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.fail(why);
  }

  private open(): MuxStream<M> {
    if (this.stream) return this.stream;
    const stream = this.openStream(
      (callId, answer) => {
        if (this.stream !== stream) return;
        this.pending.get(callId)?.answer(answer); // none: timed out or cancelled here already
      },
      (why) => {
        if (this.stream !== stream) return;
        this.onBreak(why);
        this.reset(why);
      },
    );
    this.stream = stream;
    return stream;
  }
}
