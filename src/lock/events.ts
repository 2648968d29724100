// What changed in the lock state, entry by entry: the feed behind Watch (SPEC "Watch"). The machine
// calls its sink while it applies an entry, so events come in log order and every replica that applies
// the same entries sees the same events. They are derived, never state: no snapshot carries them, and
// a machine with no sink does nothing for them.
//
// One entry can cause several events (a release that hands the key to the next waiter: RELEASED, then
// ACQUIRED; a session's end: every waiter DEQUEUED, then each hold RELEASED or EXPIRED with its hand-off).

export type LockEventKind = 'ACQUIRED' | 'RELEASED' | 'EXPIRED' | 'REVOKED' | 'RENEWED' | 'QUEUED' | 'DEQUEUED';

export interface LockEvent {
  /** The entry that caused it. */
  index: number;
  key: string;
  kind: LockEventKind;
  owner: string;
  /** The hold's fencing token; 0n for QUEUED and DEQUEUED. */
  token: bigint;
  /** The session the hold (or waiter) lives under; 0 = none. */
  sessionId: number;
  /** The hold's (or the waiter's) value; null = none. */
  value: Uint8Array | null;
  shared: boolean;
}

export type LockEventSink = (event: LockEvent) => void;
