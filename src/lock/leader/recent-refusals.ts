// Acquire refusals the leader decided itself, without a log entry (wait deadline passed, refused behind
// waiters), by (owner, request_id): bounded in count and age, oldest forgotten first. A late duplicate of
// such a request must not be queued or granted after its caller was told "not acquired". Time is the
// injected `nowMs` of the event being handled, never a clock read here.
import type { AcquireResult } from '../types.js';

export class RecentRefusals {
  private readonly byRequest = new Map<string, { result: AcquireResult; atMs: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly maxAgeMs: number,
  ) {}

  get size(): number {
    return this.byRequest.size;
  }

  set(owner: string, requestId: string, result: AcquireResult, nowMs: number): void {
    if (requestId === '') return;
    const k = requestKey(owner, requestId);
    this.byRequest.delete(k); // re-insert: Map order is age order
    this.byRequest.set(k, { result, atMs: nowMs });
    this.prune(nowMs);
  }

  get(owner: string, requestId: string, nowMs: number): AcquireResult | undefined {
    if (requestId === '') return undefined;
    const hit = this.byRequest.get(requestKey(owner, requestId));
    if (!hit || nowMs - hit.atMs > this.maxAgeMs) return undefined;
    return { ...hit.result, replayed: true };
  }

  private prune(nowMs: number): void {
    for (const [k, v] of this.byRequest) {
      if (this.byRequest.size <= this.maxEntries && nowMs - v.atMs <= this.maxAgeMs) break;
      this.byRequest.delete(k);
    }
  }
}

/** One request, whatever call carries it: (owner, request_id). Length-prefixed so (owner "a", id "bc")
 *  and (owner "ab", id "c") never collide. */
export function requestKey(owner: string, requestId: string): string {
  return `${owner.length}:${owner}${requestId}`;
}
