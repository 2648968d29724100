// The server's side of calls multiplexed by call_id on one stream — a client's Lock/Stream, a follower's
// Forward stream — with no transport in it (the simulator runs it over simulated streams). Rules:
// - a call is served while it is in flight; its answer is written once, under its own call_id, and only
//   while it is still in flight (a cancelled call, or one of a stream that went away, gets none);
// - a `cancel` message aborts its call as cancelled (call-end.ts): the caller said so;
// - the stream going away (ended, reset, failed) aborts every call in flight as detached: their
//   connection broke, which is no cancel (a waiter keeps its place for the client's retry);
// - a call_id already in flight, or one call too many, is refused without touching the one in flight.

import { CallAbort, type CallSignal } from '../wire/call-signal.js';
import { CANCELLED, DETACHED } from './call-end.js';

export type MuxStart = { signal: CallSignal } | { refused: 'duplicate' | 'full' | 'closed' };

export class CallMux<A> {
  private readonly inFlight = new Map<string, CallAbort>();
  private open = true;

  constructor(
    /** Writes one answer on the stream (the caller builds it with its call_id). */
    private readonly write: (answer: A) => void,
    private readonly maxInFlight = Infinity,
  ) {}

  get size(): number {
    return this.inFlight.size;
  }

  get isOpen(): boolean {
    return this.open;
  }

  /** A new call `id`: the signal to serve it with, or why it is refused. */
  start(id: string): MuxStart {
    if (!this.open) return { refused: 'closed' };
    if (this.inFlight.has(id)) return { refused: 'duplicate' };
    if (this.inFlight.size >= this.maxInFlight) return { refused: 'full' };
    const abort = new CallAbort();
    this.inFlight.set(id, abort);
    return { signal: abort };
  }

  /** Call `id` (served with `signal`) is answered: written if it is still in flight; true if it was. */
  finish(id: string, signal: CallSignal, answer: A): boolean {
    if (this.inFlight.get(id) !== signal) return false; // cancelled, or the stream went away
    this.inFlight.delete(id);
    if (this.open) this.write(answer);
    return true;
  }

  /** An answer that belongs to no call in flight (a refusal of a message). */
  reply(answer: A): void {
    if (this.open) this.write(answer);
  }

  /** The caller cancelled call `id`: no answer follows. */
  cancel(id: string): void {
    this.inFlight.get(id)?.abort(CANCELLED);
    this.inFlight.delete(id);
  }

  /** The stream went away: every call in flight ends as detached. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    const calls = [...this.inFlight.values()];
    this.inFlight.clear();
    for (const a of calls) a.abort(DETACHED);
  }
}
