// The leader's commit notices held back (appends the core marked `commitOnly`: nothing to replicate, only
// a new commit index), one per follower, for NOTICE_HOLD_MS. A later append to that follower carries the
// commit index too and replaces its notice; otherwise the notice leaves when the hold ends. Under steady
// traffic the next proposal's append comes within a millisecond, so most notices never travel: sent at
// once, each one cost both followers a message, a Ready and an answer, and the leader two answers to
// read, on every commit — and woke the followers just as the leader answered its client (bench --trace).
// Holding one is safe: Raft tolerates any delay or loss of an append without entries, a follower's commit
// index never moves back, and reads confirm leadership with their own heartbeats, which are never held.
import type { Message, NodeId } from './core/types.js';
import type { Scheduler, TimerHandle } from './env.js';
import { mark } from '../trace/stages.js';

/** How long a commit notice waits for a later append to carry the commit index instead. */
const NOTICE_HOLD_MS = 5;

export interface CommitNoticeHost {
  scheduler: Scheduler;
  /** The node stopped: nothing leaves. */
  stopped(): boolean;
  /** Still leading: a notice of a term that is over is dropped (the new leader says what commits). */
  leading(): boolean;
  send(messages: Message[]): void;
}

export class CommitNotices {
  private readonly held = new Map<NodeId, Message>();
  private timer: TimerHandle | null = null;

  constructor(private readonly host: CommitNoticeHost) {}

  /** Takes the commit notices out of `messages` and holds them; returns the rest. */
  hold(messages: Message[]): Message[] {
    if (!messages.some((m) => m.type === 'AppendEntries' && m.commitOnly === true)) return messages;
    const rest: Message[] = [];
    for (const m of messages) {
      if (m.type === 'AppendEntries' && m.commitOnly === true) this.held.set(m.to, m);
      else rest.push(m);
    }
    this.timer ??= this.host.scheduler.after(NOTICE_HOLD_MS, () => this.flush());
    return rest;
  }

  /** `messages` are being sent: an append to a follower replaces the notice held for it. */
  sending(messages: Message[]): void {
    if (this.held.size === 0) return;
    for (const m of messages) if (m.type === 'AppendEntries') this.held.delete(m.to);
  }

  /** The node stops: nothing held leaves. */
  stop(): void {
    this.timer?.cancel();
    this.held.clear();
  }

  private flush(): void {
    this.timer = null;
    if (this.host.stopped() || this.held.size === 0) return;
    const notices = [...this.held.values()];
    this.held.clear();
    if (!this.host.leading()) return;
    mark('loop.send-notices');
    this.host.send(notices);
  }
}
