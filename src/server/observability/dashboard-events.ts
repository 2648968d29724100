// GET /api/events: the node's watch feed as Server-Sent Events, for the dashboard's live updates. The same
// path as Lock/Watch (watch-server.ts): a read barrier, then a cursor on the node's WatchHub, so a stream
// opened after a page read at index i (after_index=i) misses nothing after it, and a stream that resumes
// with Last-Event-ID (what a browser's EventSource sends when it reconnects) continues without a gap.
//
// Memory stays bounded per stream and in number:
// - the hub holds no copy per watcher: when the socket's buffer is full (res.write returns false) the
//   cursor waits for 'drain', so a stream holds at most one buffer's worth (16 KiB) plus one event;
// - a client whose socket takes nothing for STALL_MS is cut off (its slot and cursor freed), and one that
//   falls further behind than the hub's history is cut off by the hub (`event: end`, reason backlog);
// - every stream is a hub watcher, so it counts against watch.maxWatchers like a gRPC watch, and on top
//   of that at most MAX_EVENT_STREAMS are open per node (those still waiting for their barrier included):
//   a dashboard is for a few operators' tabs, and without this cap browser tabs left open could take the
//   watch slots applications need.
// Closing the connection closes the cursor.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { validateWatch } from '../../lock/validate.js';
import { BadQueryError, flag, wholeNumber } from './dashboard-query.js';
import { eventJson } from './dashboard-values.js';
import { replyText } from './http-reply.js';
import { OutOfRangeError, TooManyWatchersError, type WatchEnd, type WatchHub } from '../client-api/watch-hub.js';

export interface EventStreamSources {
  hub: WatchHub;
  readBarrier(timeoutMs: number): Promise<number>;
  barrierTimeoutMs: number;
}

export interface EventStreamLimits {
  /** Event streams open at once on this node. */
  maxStreams: number;
  /** A stream whose socket accepts nothing for this long is cut off. */
  stallMs: number;
  /** A comment line this often keeps an idle stream open through proxies and finds dead peers. */
  keepaliveMs: number;
}

const EVENT_STREAM_LIMITS: EventStreamLimits = { maxStreams: 32, stallMs: 15_000, keepaliveMs: 15_000 };

export const EVENT_PARAMETERS = ['prefix', 'after_index', 'renewals'] as const;

/** How long an ending stream may take to flush its last message before its socket is destroyed. */
const FINAL_FLUSH_MS = 2000;
/** What a browser waits before it reconnects a dropped stream (the SSE `retry:` field). */
const RECONNECT_MS = 2000;

export class DashboardEvents {
  private streams = 0;

  constructor(
    private readonly src: EventStreamSources,
    private readonly limits: EventStreamLimits = EVENT_STREAM_LIMITS,
  ) {}

  get openStreams(): number {
    return this.streams;
  }

  /** Serves one stream. Throws BadQueryError (before anything is written) for a malformed request. */
  serve(req: IncomingMessage, res: ServerResponse, query: Map<string, string>): void {
    const renewals = flag('renewals', query.get('renewals'), false);
    const lastEventId = req.headers['last-event-id'];
    // A browser reconnecting sends Last-Event-ID: it supersedes the after_index of the URL it first opened.
    const afterIndex =
      typeof lastEventId === 'string' && lastEventId !== ''
        ? wholeNumber('Last-Event-ID', lastEventId, { min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 })
        : wholeNumber('after_index', query.get('after_index'), { min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 });
    const v = validateWatch({ key: '', prefix: query.get('prefix') ?? '', afterIndex, includeRenewals: renewals });
    if (!v.ok) throw new BadQueryError(v.error.field, v.error.message);
    if (this.streams >= this.limits.maxStreams) {
      return replyText(
        res,
        503,
        `too many dashboard event streams on this node (${this.limits.maxStreams}): close another dashboard tab, or open the dashboard of another node`,
      );
    }
    this.streams++;
    new EventStream(this.src, this.limits, res, () => this.streams--).start(
      { key: null, prefix: v.value.prefix, includeRenewals: v.value.includeRenewals },
      v.value.afterIndex,
    );
  }
}

/** One open stream: its cursor, its timers, and its end. */
class EventStream {
  private over = false;
  private started = false;
  private cursor: { close(): void } | null = null;
  private stallTimer: NodeJS.Timeout | null = null;
  private readonly keepalive: NodeJS.Timeout;

  constructor(
    private readonly src: EventStreamSources,
    private readonly limits: EventStreamLimits,
    private readonly res: ServerResponse,
    private readonly released: () => void,
  ) {
    res.on('close', () => this.finish());
    this.keepalive = setInterval(() => {
      // Skipped while the socket is full: a keepalive must not grow a stalled client's buffer.
      if (this.started && !this.res.writableNeedDrain) this.res.write(': keepalive\n\n');
    }, limits.keepaliveMs);
    this.keepalive.unref();
  }

  start(filter: { key: null; prefix: string; includeRenewals: boolean }, afterIndex: number): void {
    this.src.readBarrier(this.src.barrierTimeoutMs).then(
      () => {
        if (this.over) return;
        try {
          this.cursor = this.src.hub.open(filter, afterIndex, {
            write: (e) => this.send(`id: ${e.index}\ndata: ${JSON.stringify(eventJson(e))}\n\n`),
            onDrain: (fn) =>
              this.res.once('drain', () => {
                this.clearStall();
                if (!this.over) fn();
              }),
            // Everything up to `index` is delivered: its id lets a reconnect resume from there.
            progress: (index) => this.send(`id: ${index}\nevent: progress\ndata: ${JSON.stringify({ index })}\n\n`),
            end: (reason) => this.end(reason),
          });
        } catch (err) {
          // Thrown before the hub wrote anything: the answer can still be a plain status.
          if (err instanceof OutOfRangeError)
            return this.refuse(410, `${err.message.replace('after_index', 'after_index (or Last-Event-ID)')}`);
          if (err instanceof TooManyWatchersError) return this.refuse(503, err.message);
          return this.refuse(500, `events: ${err instanceof Error ? err.message : String(err)}`);
        }
        this.head();
      },
      (err: unknown) =>
        this.refuse(
          503,
          `events: cannot confirm this node is up to date (${err instanceof Error ? err.message : String(err)}); retry, maybe on another node`,
        ),
    );
  }

  private head(): void {
    if (this.started || this.over) return;
    this.started = true;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // Proxies (nginx) must pass each message on as it comes, not buffer the stream.
      'x-accel-buffering': 'no',
    });
    this.res.write(`retry: ${RECONNECT_MS}\n\n`);
  }

  /** false when the socket's buffer is full: the hub then waits for drain, and the stall clock runs. */
  private send(text: string): boolean {
    if (this.over) return true;
    this.head();
    if (this.res.write(text)) return true;
    this.stallTimer ??= setTimeout(() => {
      // Took nothing for stallMs: free the slot and the cursor; the client reconnects from its last id.
      this.res.destroy();
    }, this.limits.stallMs);
    return false;
  }

  private clearStall(): void {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }

  /** The hub ended the watch (cut off for lagging, a snapshot install, the node stopping): say why, then close. */
  private end(reason: WatchEnd): void {
    if (this.over) return;
    this.cursor = null;
    this.head();
    this.res.end(`event: end\ndata: ${JSON.stringify({ reason: reason.code, message: reason.message })}\n\n`);
    // A stalled client may never take that last message: then its socket goes.
    const flushed = setTimeout(() => this.res.destroy(), FINAL_FLUSH_MS);
    flushed.unref();
    this.res.once('finish', () => clearTimeout(flushed));
    this.finish();
  }

  private refuse(status: number, message: string): void {
    if (this.over) return;
    replyText(this.res, status, message);
    this.finish();
  }

  private finish(): void {
    if (this.over) return;
    this.over = true;
    this.cursor?.close();
    this.cursor = null;
    this.clearStall();
    clearInterval(this.keepalive);
    this.released();
  }
}
