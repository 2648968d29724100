// A follower's side of its Forward stream to the leader, with no transport in it: calls multiplexed by
// call_id on one long-lived stream, answers in any order (wire/caller-mux.ts, the multiplexer the client's
// Lock/Stream uses too; forward.ts opens the stream over gRPC; the simulator over a simulated connection
// that can reset, delay and duplicate).
//
// Failure rules: every call is settled exactly once, with the answer under its own call_id. A stream that
// breaks fails its calls with UNAVAILABLE at once, and the next call opens a new stream; the client
// retries with the same request_id, so an outcome lost with the stream is recovered through dedup. A call
// carries what is left of its caller's deadline (`timeout_ms`), so the leader never holds it after its
// caller gave up, and it outlives neither that deadline here (DEADLINE_EXCEEDED, after a short grace for
// the answer on its way) nor its caller (a cancel goes to the leader).
import { mark } from '../trace/stages.js';
import { CallerMux, type MuxStream, type MuxTimers } from '../wire/caller-mux.js';
import type { AnswerEnvelope } from '../wire/call-envelope.js';
import type { LockCallName } from '../wire/lock.js';
import type { CallSignal } from '../wire/call-signal.js';

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

/** One message on the stream, follower to leader: a call, or the cancel of one (a ForwardedCall without
 *  the sender's header, which the stream adds). */
export interface ForwardMessage {
  callId: string;
  cancel?: boolean;
  /** What is left of the caller's deadline (ms, at most a uint32). */
  timeoutMs?: number;
  name?: LockCallName;
  /** The request's bytes, as the client sent them (or as a unary call's request encodes). */
  body?: Uint8Array;
}

/** One message on the stream, leader to follower: a ForwardedAnswer, its response left as bytes. */
export type ForwardAnswerMessage = Pick<AnswerEnvelope, 'callId' | 'code' | 'details' | 'body'>;

/** Opens a new stream; its answers and its end are reported to the callbacks. */
export type OpenForwardStream = (
  onAnswer: (answer: ForwardAnswerMessage) => void,
  onBreak: (why: string) => void,
) => MuxStream<ForwardMessage>;

export type ForwardTimers = MuxTimers;

/** How long past the client's own deadline the follower waits for the leader's answer to arrive. */
export const ANSWER_GRACE_MS = 200;

/**
 * Whether a call with `timeLeftMs` left of its caller's deadline is past it: not forwarded at all, but
 * answered DEADLINE_EXCEEDED at once (`expiredBeforeForwarding`). Every forwarding path asks this one rule
 * (server/client-api lock-calls.ts and cluster-api.ts before they pick a way to the leader, `call` below),
 * and the node that would serve a lock call asks it before anything is proposed (lock-calls.ts handle).
 *
 * At or before 0 ms: the caller is being answered DEADLINE_EXCEEDED anyway (its deadline timers, its
 * client's and grpc-js's on this server, are due), so no answer of the leader's can reach it in time,
 * while whatever the leader starts for it (an acquire granted, a release committed) still takes effect
 * behind its back. Nor can such a call be sent as it is: the wire has no 0 ms (timeout_ms 0 is "none" on
 * a Lock/Stream, 1 ms at a leader reading a Forward stream), so it would go as 1 ms the caller does not
 * have. 1 ms left is still forwarded: the caller is still waiting, and a quick answer (a read, a retry
 * the leader's dedup table answers) can make it.
 */
export function pastDeadline(timeLeftMs: number): boolean {
  return timeLeftMs <= 0;
}

/** The detail of the DEADLINE_EXCEEDED a call past its caller's deadline is answered (`pastDeadline`). */
export function expiredBeforeForwardingDetails(leaderId: string): string {
  return `deadline expired before the call could be forwarded to leader ${leaderId}`;
}

/** The reply to a call past its caller's deadline, which was not forwarded (`pastDeadline`). */
export function expiredBeforeForwarding<P>(leaderId: string): ForwardedReply<P> {
  return { code: DEADLINE_EXCEEDED, details: expiredBeforeForwardingDetails(leaderId), response: null };
}

export class ForwardCalls {
  private readonly mux: CallerMux<ForwardMessage, ForwardAnswerMessage, string, ForwardedReply<Uint8Array>>;
  private closed = false;

  constructor(
    openStream: OpenForwardStream,
    private readonly leaderId: string,
    timers: ForwardTimers,
  ) {
    this.mux = new CallerMux(
      (onAnswer, onBreak) =>
        openStream((answer) => {
          mark('fwd.reply');
          onAnswer(answer.callId, answer);
        }, onBreak),
      timers,
      (callId) => ({ callId, cancel: true }),
      (why) => unavailable(`${why}; retry`),
    );
  }

  /** Calls waiting for an answer (tests, metrics). */
  get inFlight(): number {
    return this.mux.inFlight;
  }

  call(name: LockCallName, body: Uint8Array, timeoutMs: number, signal?: CallSignal): Promise<ForwardedReply<Uint8Array>> {
    // lock-calls.ts answers such a call before it gets here; this keeps any other caller from sending a
    // call with no time left as 1 ms, under a local limit shorter than the grace (or negative).
    if (pastDeadline(timeoutMs)) return Promise.resolve(expiredBeforeForwarding(this.leaderId));
    if (this.closed) return Promise.resolve(unavailable(`the link to leader ${this.leaderId} is closed`));
    return this.mux.call({
      message: (callId) => {
        mark('call.forward');
        return { callId, timeoutMs: Math.max(1, Math.min(0xffffffff, Math.floor(timeoutMs))), name, body };
      },
      signal,
      // The leader drops the call when its timeout_ms runs out: no cancel is needed at the limit.
      limitMs: timeoutMs + ANSWER_GRACE_MS,
      timedOut: () => ({
        code: DEADLINE_EXCEEDED,
        details: `no answer from leader ${this.leaderId} within ${timeoutMs} ms`,
        response: null,
      }),
      cancelAtLimit: false,
      cancelled: () => ({ code: CANCELLED_CODE, details: 'cancelled by the caller', response: null }),
      answered: (answer) => ({ code: answer.code, details: answer.details, response: answer.code === OK ? (answer.body ?? EMPTY) : null }),
    });
  }

  /** Fail what is pending and stop (the link closed or reconnects with new credentials). */
  close(): void {
    this.closed = true;
    this.mux.reset(`the link to leader ${this.leaderId} closed`);
  }
}

const EMPTY = new Uint8Array(0);

function unavailable<P>(details: string): ForwardedReply<P> {
  return { code: UNAVAILABLE, details, response: null };
}
