// Lock/Watch on the wire (SPEC "Watch"): validate, pass a read barrier, then hand the stream to the
// node's WatchHub. Any node serves it from its own applied state; the barrier (ReadIndex, through the
// leader) is what makes a watch opened after a Get never show older state than that Get.
import * as grpc from '@grpc/grpc-js';
import type { LockEvent } from '../../lock/events.js';
import { validateWatch } from '../../lock/validate.js';
import type { WireInput } from '../../wire/scalars.js';
import type { WatchEvent, WatchRequest } from '../../wire/lock.js';
import { statusError } from './status-error.js';
import { invalidReason } from './strict-decode.js';
import { OutOfRangeError, TooManyWatchersError, type WatchHub } from './watch-hub.js';

export interface WatchServing {
  hub: WatchHub;
  /** Resolves once this node has applied everything committed when it was called (ReadIndex). */
  readBarrier(timeoutMs: number): Promise<number>;
  barrierTimeoutMs: number;
}

export type WatchCall = grpc.ServerWritableStream<WatchRequest, WireInput<WatchEvent>>;

/** `onInvalid` counts a request refused as malformed or out of bounds (leasehold_lock_operations_total). */
export function serveWatch(call: WatchCall, serving: WatchServing | undefined, onInvalid?: () => void): void {
  const fail = (code: grpc.status, details: string): void => {
    call.emit('error', statusError(code, details));
  };
  if (serving === undefined) return fail(grpc.status.UNIMPLEMENTED, 'this node serves no watches');
  const invalid = invalidReason(call.request);
  if (invalid !== undefined) {
    onInvalid?.();
    return fail(grpc.status.INVALID_ARGUMENT, `malformed watch request: ${invalid}`);
  }
  const r = call.request;
  const v = validateWatch({ key: r.key, prefix: r.prefix, afterIndex: r.after_index, includeRenewals: r.include_renewals });
  if (!v.ok) {
    onInvalid?.();
    return fail(grpc.status.INVALID_ARGUMENT, v.error.message);
  }
  let over = false;
  let handle: { close(): void } | null = null;
  const stop = () => {
    over = true;
    handle?.close();
    handle = null;
  };
  call.on('cancelled', stop);
  call.on('close', stop);
  serving.readBarrier(serving.barrierTimeoutMs).then(
    () => {
      if (over) return;
      try {
        handle = serving.hub.open(
          { key: v.value.key, prefix: v.value.prefix, includeRenewals: v.value.includeRenewals },
          v.value.afterIndex,
          {
            // false: grpc-js's buffer is full (the client is not reading as fast): the hub waits for drain.
            write: (e) => over || call.write(eventToWire(e)),
            onDrain: (fn) => call.once('drain', fn),
            progress: (index) => {
              if (!over) call.write(progressEvent(index));
            },
            end: (reason) => {
              if (over) return;
              stop();
              // No more writes: what is queued goes out as the client reads, then the status.
              fail(reason.code === 'backlog' ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.UNAVAILABLE, reason.message);
            },
          },
        );
      } catch (err) {
        if (err instanceof OutOfRangeError) return fail(grpc.status.OUT_OF_RANGE, err.message);
        if (err instanceof TooManyWatchersError) return fail(grpc.status.RESOURCE_EXHAUSTED, err.message);
        throw err;
      }
    },
    (err: unknown) => {
      if (!over)
        fail(
          grpc.status.UNAVAILABLE,
          `watch: cannot confirm this node is up to date (${err instanceof Error ? err.message : String(err)}); retry, maybe on another node`,
        );
    },
  );
}

function eventToWire(e: LockEvent): WireInput<WatchEvent> {
  return {
    index: String(e.index),
    key: e.key,
    kind: e.kind,
    owner: e.owner,
    token: e.token.toString(),
    session_id: String(e.sessionId),
    ...(e.value !== null ? { value: e.value } : {}),
    shared: e.shared,
  };
}

function progressEvent(index: number): WireInput<WatchEvent> {
  return { index: String(index), kind: 'PROGRESS' };
}
