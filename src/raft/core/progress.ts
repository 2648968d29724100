// The leader's view of one follower (etcd-io/raft "Progress"): how far it matches, what to send next,
// and whether we are probing, pipelining, or streaming it a snapshot.
import type { NodeId } from './types.js';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

/** One member's progress as the leader reports it to the rest of the node (status, metrics, the dashboard,
 *  hand-over and membership decisions, the simulator's report): a copy, never the live Progress. */
export interface ProgressView {
  match: number;
  next: number;
  state: ProgressState;
}

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** Probe: one AppendEntries at a time; paused until its answer (or the next heartbeat). */
  probeSent = false;
  /** Replicate: last index of each AppendEntries in flight, oldest first. */
  inflight: number[] = [];
  /** Snapshot: which snapshot we are streaming and the next byte offset to send. */
  snapshotIndex = 0;
  snapshotOffset = 0;
  /** Heard from since the last CheckQuorum round. */
  recentActive = false;
  /** Leader ticks since `match` last advanced (detects appends lost in flight while pipelining). */
  ticksWithoutProgress = 0;

  constructor(
    readonly id: NodeId,
    lastIndex: number,
  ) {
    this.next = lastIndex + 1;
  }

  becomeProbe(): void {
    if (this.state === 'snapshot') {
      this.next = Math.max(this.match + 1, this.snapshotIndex + 1);
    } else {
      this.next = this.match + 1;
    }
    this.state = 'probe';
    this.probeSent = false;
    this.inflight = [];
  }

  becomeReplicate(): void {
    this.state = 'replicate';
    this.next = this.match + 1;
    this.inflight = [];
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.state = 'snapshot';
    this.snapshotIndex = snapshotIndex;
    this.snapshotOffset = 0;
    this.inflight = [];
  }

  /** A success answer: returns true when match moved forward. */
  maybeUpdate(matchIndex: number): boolean {
    let updated = false;
    if (matchIndex > this.match) {
      this.match = matchIndex;
      this.ticksWithoutProgress = 0;
      updated = true;
    }
    if (this.next < matchIndex + 1) this.next = matchIndex + 1;
    this.probeSent = false;
    while (this.inflight.length > 0 && this.inflight[0]! <= matchIndex) this.inflight.shift();
    return updated;
  }

  isPaused(maxInflight: number): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflight.length >= maxInflight;
      case 'snapshot':
        return true;
    }
  }

  sentEntries(lastIndex: number): void {
    if (this.state === 'replicate') {
      this.next = lastIndex + 1;
      this.inflight.push(lastIndex);
    } else {
      this.probeSent = true;
    }
  }
}
