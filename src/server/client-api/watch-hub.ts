// The node's side of Watch (SPEC "Watch"): the lock machine's events as this node applies them
// (lock/events.ts), one bounded history, and the open watchers as cursors into it.
//
// Order and gaps: events are recorded while entries apply, in log order, each with a sequence number. A
// watcher is a cursor into that sequence: it is sent the events at its cursor while its transport takes
// them, and when the transport is full it waits for the transport to drain — it holds no copy of
// anything. So a watcher sees every event after its start, once, in order; and the only memory a slow
// watcher costs is the history everyone shares. A watcher that falls so far behind that the history
// drops events it has not been sent is cut off (backlog): resuming from the last index it read is then
// the client's business, and the node answers OUT_OF_RANGE if that is older than what it keeps.
// A snapshot installed from the leader replaces the state without events (reset): every open watch ends
// UNAVAILABLE and the history starts over at the snapshot's index.
import type { LockEvent } from '../../lock/events.js';

export interface WatchFilter {
  /** One key (exact), or null for a prefix watch. */
  key: string | null;
  /** Every key starting with it ('' = all); ignored when `key` is set. */
  prefix: string;
  includeRenewals: boolean;
}

export interface WatchSink {
  /** Hands one event to the watcher's transport; false when the transport is full (then `onDrain`). */
  write(event: LockEvent): boolean;
  /** Calls `fn` once when the transport has room again. */
  onDrain(fn: () => void): void;
  /** Everything up to `index` has been delivered (sent once: when the watcher first catches up). */
  progress(index: number): void;
  /** The watch is over: `reason` says why (the transport ends the stream with it). */
  end(reason: WatchEnd): void;
}

export interface WatchEnd {
  code: 'backlog' | 'reset' | 'closed';
  message: string;
}

export class OutOfRangeError extends Error {
  constructor(
    readonly afterIndex: number,
    /** The oldest index a watch can resume after here. */
    readonly oldestAfterIndex: number,
  ) {
    super(
      `after_index ${afterIndex} is older than the history this node keeps: it can resume after index ${oldestAfterIndex} or later (events before that are gone; read the current state with Get and watch from there)`,
    );
    this.name = 'OutOfRangeError';
  }
}

export class TooManyWatchersError extends Error {
  constructor(readonly limit: number) {
    super(`limit watch.maxWatchers (${limit}) reached on this node: close a watch or use another node`);
    this.name = 'TooManyWatchersError';
  }
}

export interface WatchHubOptions {
  historyEvents: number;
  maxWatchers: number;
  /** The node's applied index (what PROGRESS reports once a watcher has caught up). */
  appliedIndex(): number;
}

interface Watcher {
  filter: WatchFilter;
  sink: WatchSink;
  /** Sequence number of the next event to look at. */
  cursor: number;
  /** Waiting for its transport to drain. */
  blocked: boolean;
  /** PROGRESS has been sent (it is sent once, when it first catches up). */
  synced: boolean;
}

export class WatchHub {
  /** The history: sequence numbers [firstSeq, nextSeq) in a ring of `historyEvents` slots. */
  private readonly ring: (LockEvent | undefined)[];
  private firstSeq = 0;
  private nextSeq = 0;
  /** Every event of an entry after this index is in the history. */
  private keptAfterIndex = 0;
  private readonly watchers = new Set<Watcher>();
  /** Inside record(): an entry is being applied, so the applied index may count events not recorded yet. */
  private recording = false;

  constructor(private readonly opts: WatchHubOptions) {
    this.ring = new Array<LockEvent | undefined>(opts.historyEvents);
  }

  get watcherCount(): number {
    return this.watchers.size;
  }

  /** The oldest index a watch can resume after. */
  get oldestAfterIndex(): number {
    return this.keptAfterIndex;
  }

  /** One event, as its entry applies: kept, and sent to every watcher that is keeping up. */
  record(event: LockEvent): void {
    const cap = this.ring.length;
    if (this.nextSeq - this.firstSeq === cap) {
      // The oldest goes; a resume from before its index could no longer be served without a gap.
      this.keptAfterIndex = this.ring[this.firstSeq % cap]!.index;
      this.ring[this.firstSeq % cap] = undefined;
      this.firstSeq++;
    }
    this.ring[this.nextSeq % cap] = event;
    this.nextSeq++;
    this.recording = true;
    try {
      for (const w of this.watchers) {
        if (w.cursor < this.firstSeq) this.cut(w);
        else if (!w.blocked) this.pump(w);
      }
    } finally {
      this.recording = false;
    }
  }

  /** The state was replaced without events (a snapshot installed at `index`): history starts over, and
   *  every open watch ends — it would otherwise miss what the snapshot changed. */
  reset(index: number): void {
    this.ring.fill(undefined);
    this.firstSeq = this.nextSeq;
    this.keptAfterIndex = index;
    const open = [...this.watchers];
    this.watchers.clear();
    for (const w of open)
      w.sink.end({
        code: 'reset',
        message: `this node installed a snapshot at index ${index} and cannot replay what it changed; resume the watch (on another node if this one refuses)`,
      });
  }

  /**
   * Opens a watch that has passed its read barrier: sends the kept events after `afterIndex` (0 = none:
   * from now) as the transport takes them, PROGRESS once caught up, then the live feed until `close()`.
   * Throws OutOfRangeError or TooManyWatchersError.
   */
  open(filter: WatchFilter, afterIndex: number, sink: WatchSink): { close(): void } {
    if (this.watchers.size >= this.opts.maxWatchers) throw new TooManyWatchersError(this.opts.maxWatchers);
    if (afterIndex > 0 && afterIndex < this.keptAfterIndex) throw new OutOfRangeError(afterIndex, this.keptAfterIndex);
    let cursor = this.nextSeq;
    if (afterIndex > 0) {
      // The first kept event after `afterIndex` (indexes only grow along the sequence).
      let lo = this.firstSeq;
      let hi = this.nextSeq;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.at(mid).index <= afterIndex) lo = mid + 1;
        else hi = mid;
      }
      cursor = lo;
    }
    const w: Watcher = { filter, sink, cursor, blocked: false, synced: false };
    this.watchers.add(w);
    this.pump(w);
    return { close: () => this.watchers.delete(w) };
  }

  /** The node is stopping: every watch ends. */
  closeAll(message: string): void {
    const open = [...this.watchers];
    this.watchers.clear();
    for (const w of open) w.sink.end({ code: 'closed', message });
  }

  private at(seq: number): LockEvent {
    return this.ring[seq % this.ring.length]!;
  }

  /** Sends `w` what it has not been sent, while its transport takes it. */
  private pump(w: Watcher): void {
    while (w.cursor < this.nextSeq) {
      if (w.cursor < this.firstSeq) return this.cut(w);
      const e = this.at(w.cursor++);
      if (!matches(w.filter, e)) continue;
      if (!w.sink.write(e)) {
        w.blocked = true;
        w.sink.onDrain(() => {
          w.blocked = false;
          if (this.watchers.has(w)) this.pump(w);
        });
        return;
      }
    }
    if (!w.synced && !this.recording) {
      w.synced = true;
      w.sink.progress(this.opts.appliedIndex());
    }
  }

  private cut(w: Watcher): void {
    this.watchers.delete(w);
    w.sink.end({
      code: 'backlog',
      message: `the watcher fell more than watch.historyEvents (${this.ring.length}) events behind; resume from the last index it read`,
    });
  }
}

function matches(filter: WatchFilter, e: LockEvent): boolean {
  if (e.kind === 'RENEWED' && !filter.includeRenewals) return false;
  return filter.key !== null ? e.key === filter.key : e.key.startsWith(filter.prefix);
}
