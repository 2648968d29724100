// client.watch(): Lock/Watch as an async iterator that resumes by itself (SPEC "Watch").
//
// The iterator remembers the highest index it has seen (events and PROGRESS alike) and, when its stream
// breaks — the node died, restarted, installed a snapshot, cut us off as too slow, or is shutting
// down — opens the watch again on the next endpoint with after_index = that index: the node replays
// what it still keeps after it, so the caller sees every event once, in order, with no gap. A node
// whose history no longer reaches back that far answers OUT_OF_RANGE; if every endpoint does, the gap
// cannot be closed and the iterator throws WatchHistoryLostError (read the state with get() and watch
// again from there).
//
// Memory: events the caller has not taken yet wait here, at most QUEUE_HIGH of them; beyond that the
// stream is paused, so HTTP/2 flow control holds the node back, and a node that then has more than its
// backlog bound for us cuts us off — which we survive by resuming, like any other break.
import * as grpc from '@grpc/grpc-js';
import type { WatchEvent, WatchKind } from '../wire/lock.js';
import { InvalidRequestError, LeaseholdError } from './errors.js';
import { sleep, type EndpointPool } from './rpc.js';

export interface WatchOptions {
  /** Watch every key starting with the target (default false: the one key). */
  prefix?: boolean;
  /** Deliver the events of entries after this index (resume); default: from now. */
  afterIndex?: bigint | number;
  /** Also deliver RENEWED events (default false). */
  includeRenewals?: boolean;
  /** Also yield PROGRESS events (index only: the watch has seen everything up to it). Default false. */
  includeProgress?: boolean;
  /** Ends the iteration (the for-await loop finishes normally). */
  signal?: AbortSignal;
  /** Told about each reconnect: the endpoint that failed and why. */
  onReconnect?: (info: { endpoint: string; code: grpc.status; details: string }) => void;
}

export interface LockEventInfo {
  /** The Raft index of the entry that caused it. */
  index: bigint;
  key: string;
  kind: WatchKind;
  owner: string;
  token: bigint;
  sessionId: bigint;
  value: Uint8Array;
  shared: boolean;
}

/** Every endpoint's history has moved past the index the watch must resume after. */
export class WatchHistoryLostError extends LeaseholdError {
  override name = 'WatchHistoryLostError';
  constructor(
    readonly afterIndex: bigint,
    details: string,
  ) {
    super(
      `the watch cannot resume after index ${afterIndex}: no node keeps events that old any more (${details}); read the current state with get() and start a new watch`,
    );
  }
}

const QUEUE_HIGH = 1000;
const QUEUE_LOW = 100;
const MAX_BACKOFF_MS = 1000;

export async function* watchEvents(
  pool: EndpointPool,
  target: string,
  opts: WatchOptions = {},
): AsyncGenerator<LockEventInfo, void, undefined> {
  if (typeof target !== 'string' || (target === '' && opts.prefix !== true))
    throw new InvalidRequestError('watch: key must be a non-empty string (or use prefix: true)', grpc.status.INVALID_ARGUMENT);
  // Every event of every entry up to `done` has been delivered; of entry `partial` (above it), the
  // first `partialCount`. An entry's events come in the same order from every node (the machine
  // decides them), so a resume after `done` skips that many of `partial`'s.
  let done = BigInt(opts.afterIndex ?? 0);
  if (done < 0n) throw new InvalidRequestError(`watch: afterIndex must be >= 0 (got ${done})`, grpc.status.INVALID_ARGUMENT);
  let partial = -1n;
  let partialCount = 0;
  const signal = opts.signal;
  let failures = 0;
  let outOfRange = 0;
  while (!signal?.aborted) {
    const order = pool.endpointOrder();
    const ep = order[failures % order.length]!;
    const request = {
      key: opts.prefix ? '' : target,
      prefix: opts.prefix ? target : '',
      after_index: done.toString(),
      include_renewals: opts.includeRenewals === true,
    };
    const stream = pool.openWatch(ep, request);
    const queue: WatchEvent[] = [];
    let ended: { code: grpc.status; details: string } | null = null;
    let wake: (() => void) | null = null;
    const notify = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    stream.on('data', (e: WatchEvent) => {
      queue.push(e);
      if (queue.length >= QUEUE_HIGH) stream.pause();
      notify();
    });
    stream.on('error', (err: grpc.ServiceError) => {
      ended = { code: err.code, details: err.details };
      notify();
    });
    stream.on('end', () => {
      ended ??= { code: grpc.status.UNAVAILABLE, details: 'the node ended the watch' };
      notify();
    });
    const onAbort = () => {
      stream.cancel();
      notify();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    let skip = partialCount; // of entry `partial`, already delivered before this stream
    try {
      for (;;) {
        const e = queue.shift();
        if (e === undefined) {
          if (ended !== null || signal?.aborted) break;
          await new Promise<void>((resolve) => (wake = resolve));
          continue;
        }
        if (queue.length === QUEUE_LOW) stream.resume();
        const index = BigInt(e.index);
        if (e.kind === 'PROGRESS') {
          // Everything up to `index` has been delivered on this stream.
          if (index > done) done = index;
          if (partial <= done) {
            partial = -1n;
            partialCount = 0;
            skip = 0;
          }
          failures = 0;
          outOfRange = 0;
          if (opts.includeProgress) yield infoOf(e);
          continue;
        }
        if (index <= done) continue; // delivered before the reconnect
        if (index === partial) {
          if (skip > 0) {
            skip--;
            continue;
          }
          partialCount++;
        } else {
          // A later entry: the one before it is complete.
          if (partial > done) done = partial;
          partial = index;
          partialCount = 1;
          skip = 0;
        }
        yield infoOf(e);
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      stream.cancel();
    }
    if (signal?.aborted) return;
    const end: { code: grpc.status; details: string } = ended ?? { code: grpc.status.UNAVAILABLE, details: 'stream ended' };
    if (end.code === grpc.status.INVALID_ARGUMENT) throw new InvalidRequestError(`watch "${target}": ${end.details}`, end.code);
    if (end.code === grpc.status.OUT_OF_RANGE) {
      outOfRange++;
      if (outOfRange >= order.length) throw new WatchHistoryLostError(done, end.details);
    }
    opts.onReconnect?.({ endpoint: ep, code: end.code, details: end.details });
    failures++;
    if (failures % order.length === 0) await sleep(Math.min(50 * (failures / order.length), MAX_BACKOFF_MS), signal);
  }
}

function infoOf(e: WatchEvent): LockEventInfo {
  return {
    index: BigInt(e.index),
    key: e.key,
    kind: e.kind,
    owner: e.owner,
    token: BigInt(e.token),
    sessionId: BigInt(e.session_id),
    value: e.value,
    shared: e.shared,
  };
}
