// A follower's side of its Forward stream to the leader, with no transport in it: calls multiplexed by
// call_id on one long-lived stream, answers in any order (forward.ts opens the stream over gRPC; the
// simulator over a simulated connection that can reset, delay and duplicate).
//
// Failure rules: every call is settled exactly once, with the answer under its own call_id. A stream that
// breaks fails its calls with UNAVAILABLE at once, and the next call opens a new stream; the client
// retries with the same request_id, so an outcome lost with the stream is recovered through dedup. A call
// carries what is left of its caller's deadline (`timeout_ms`), so the leader never holds it after its
// caller gave up, and it outlives neither that deadline here (DEADLINE_EXCEEDED, after a short grace for
// the answer on its way) nor its caller (a cancel goes to the leader).
import { mark } from '../trace/stages.js';
import type { LockCallName } from '../wire/lock.js';

/** gRPC status codes used here (the module has no gRPC in it). */
const OK = 0;
const CANCELLED_CODE = 1;
const DEADLINE_EXCEEDED = 4;
const UNAVAILABLE = 14;

/** The leader's answer to one forwarded call, as the follower hands it back to its client. */
export interface ForwardedReply<P = unknown> {
  code: number;
  details: string;
  /** The response message when code is OK. */
  response: P | null;
}

/** One message on the stream, follower to leader: a call, or the cancel of one. */
export interface ForwardMessage {
  call_id: string;
  cancel?: boolean;
  /** What is left of the caller's deadline (ms, at most a uint32). */
  timeout_ms?: number;
  method?: LockCallName;
  request?: unknown;
}

/** One message on the stream, leader to follower. */
export interface ForwardAnswerMessage<P> extends ForwardedReply<P> {
  call_id: string;
}

/** An open stream: write messages on it, or give up on it. */
export interface ForwardLink {
  write(message: ForwardMessage): void;
  /** Stop using it (reset): no answer of it is delivered any more. */
  abandon(): void;
}

/** Opens a new stream; its answers and its end are reported to the callbacks. */
export type OpenForwardLink<P> = (onAnswer: (answer: ForwardAnswerMessage<P>) => void, onBreak: (why: string) => void) => ForwardLink;

export interface ForwardTimers {
  after(ms: number, fn: () => void): { cancel(): void };
}

/** How long past the client's own deadline the follower waits for the leader's answer to arrive. */
export const ANSWER_GRACE_MS = 200;

interface PendingCall<P> {
  settle(reply: ForwardedReply<P>): void;
}

export class ForwardCalls<P = unknown> {
  private link: ForwardLink | null = null;
  private nextCallId = 1;
  private readonly pending = new Map<string, PendingCall<P>>();
  private closed = false;

  constructor(
    private readonly openLink: OpenForwardLink<P>,
    private readonly leaderId: string,
    private readonly timers: ForwardTimers,
  ) {}

  /** Calls waiting for an answer (tests, metrics). */
  get inFlight(): number {
    return this.pending.size;
  }

  call(method: LockCallName, request: unknown, timeoutMs: number, signal?: AbortSignal): Promise<ForwardedReply<P>> {
    if (this.closed) return Promise.resolve(unavailable(`the link to leader ${this.leaderId} is closed`));
    const link = this.open();
    const callId = String(this.nextCallId++);
    return new Promise<ForwardedReply<P>>((resolve) => {
      let done = false;
      const settle = (reply: ForwardedReply<P>) => {
        if (done) return;
        done = true;
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        this.pending.delete(callId);
        resolve(reply);
      };
      const timer = this.timers.after(timeoutMs + ANSWER_GRACE_MS, () =>
        settle({ code: DEADLINE_EXCEEDED, details: `no answer from leader ${this.leaderId} within ${timeoutMs} ms`, response: null }),
      );
      const onAbort = () => {
        if (this.link === link) link.write({ call_id: callId, cancel: true });
        settle({ code: CANCELLED_CODE, details: 'cancelled by the caller', response: null });
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(callId, { settle });
      const timeout = Math.max(1, Math.min(0xffffffff, Math.floor(timeoutMs)));
      mark('call.forward');
      link.write({ call_id: callId, timeout_ms: timeout, method, request });
    });
  }

  /** Fail what is pending and stop (the link closed or reconnects with new credentials). */
  close(): void {
    this.closed = true;
    this.reset(`the link to leader ${this.leaderId} closed`);
  }

  private open(): ForwardLink {
    if (this.link) return this.link;
    const link = this.openLink(
      (answer) => {
        if (this.link !== link) return;
        mark('fwd.reply');
        const p = this.pending.get(answer.call_id);
        if (!p) return; // timed out or cancelled here already
        p.settle({ code: answer.code, details: answer.details, response: answer.code === OK ? answer.response : null });
      },
      (why) => {
        if (this.link !== link) return;
        this.reset(why);
      },
    );
    this.link = link;
    return link;
  }

  private reset(why: string): void {
    const link = this.link;
    this.link = null;
    link?.abandon();
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.settle(unavailable(`${why}; retry`));
  }
}

function unavailable<P>(details: string): ForwardedReply<P> {
  return { code: UNAVAILABLE, details, response: null };
}
