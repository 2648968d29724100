// A chaos-run observer of the replicated wait lines (SPEC "The wait queue is replicated", "Watch"): one
// Watch over every key, straight to the nodes (not through the workers' fault proxies; node faults still
// break it, and the client's watch resumes after the last index it saw). Each QUEUED event — a blocking
// acquire's entry put its owner in a key's line — joins the history as a 'queued' observation at the moment
// it was received. Watch events come from applied (so committed) entries only, so an acquire invoked after
// that moment has every attempt in the log after it: the fifo-order rule (checker.ts) needs nothing else.
// When it has to start again from "now" (its history gone on every node), events may be missed: it records
// that gap (a 'queued' observation with no owner, from the last event before to the first after), and the
// fifo-order rule judges no waiter whose time in line meets one.
import { LockClient } from '../../src/client/index.js';
import type { HistoryRecorder } from './history.js';

export class QueueWatcher {
  /** QUEUED events recorded. */
  observed = 0;
  /** Times the watch had to start again from "now" (its history was gone on every node). */
  restarts = 0;
  private readonly client: LockClient;
  private readonly stop = new AbortController();
  private running: Promise<void> | null = null;

  constructor(
    endpoints: readonly string[],
    private readonly recorder: HistoryRecorder,
  ) {
    this.client = new LockClient({ endpoints, clientId: 'queue-watch', attemptTimeoutMs: 1000, timeoutMs: 4000 });
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Since when events may have been missed (the last one received before the watch broke), or null. */
  private gapSince: number | null = null;
  private lastEventAt = 0;

  private async loop(): Promise<void> {
    this.lastEventAt = this.recorder.now();
    while (!this.stop.signal.aborted) {
      try {
        for await (const ev of this.client.watch('', { prefix: true, signal: this.stop.signal })) {
          const at = this.recorder.now();
          this.closeGap(at);
          this.lastEventAt = at;
          if (ev.kind !== 'QUEUED') continue;
          this.recorder.record({
            process: 'watch',
            type: 'queued',
            key: ev.key,
            via: 'watch',
            owner: ev.owner,
            logIndex: ev.index,
            invokeMs: at,
            completeMs: at,
            outcome: 'ok',
          });
          this.observed++;
        }
      } catch {
        // WatchHistoryLostError, or a closed client: start again from now (events in between are missed).
        if (this.stop.signal.aborted) break;
        this.restarts++;
        this.gapSince ??= this.lastEventAt;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** A gap ends with the first event received after it (anything the new watch missed came before that):
   *  recorded as a 'queued' observation with no owner, which the fifo-order rule reads as "unseen". */
  private closeGap(at: number): void {
    if (this.gapSince === null) return;
    this.recorder.record({
      process: 'watch',
      type: 'queued',
      key: '',
      via: 'watch',
      owner: '',
      invokeMs: this.gapSince,
      completeMs: at,
      outcome: 'ok',
    });
    this.gapSince = null;
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.running?.catch(() => undefined);
    this.closeGap(this.recorder.now());
    this.client.close();
  }
}
