// Lock/List on the wire (SPEC "List"): the locks held or waited on under a prefix, a page at a time, from
// this node's applied state after a read barrier (ReadIndex through the leader), like a Watch — so any
// node serves it and a List after a write shows that write. Each lease is judged at log time.
import * as grpc from '@grpc/grpc-js';
import type { LockMachine } from '../../lock/machine.js';
import { validateList } from '../../lock/validate.js';
import type { WireInput } from '../../wire/scalars.js';
import type { ListedLock, ListRequest, ListResponse } from '../../wire/lock.js';
import { holderToWire, holdersOf } from './holders-view.js';
import { statusError } from './status-error.js';
import { invalidReason } from './strict-decode.js';

export interface ListServing {
  /** The applied lock state (read through on every use: a snapshot restore replaces it). */
  machine(): LockMachine;
  readBarrier(timeoutMs: number): Promise<number>;
  barrierTimeoutMs: number;
}

const EMPTY = new Uint8Array(0);

/** `onInvalid` counts a request refused as malformed or out of bounds (leasehold_lock_operations_total). */
export function serveList(
  call: grpc.ServerUnaryCall<ListRequest, WireInput<ListResponse>>,
  cb: grpc.sendUnaryData<WireInput<ListResponse>>,
  serving: ListServing | undefined,
  onInvalid?: () => void,
): void {
  if (serving === undefined) return cb(statusError(grpc.status.UNIMPLEMENTED, 'this node serves no List'));
  const refuse = (details: string): void => {
    onInvalid?.();
    cb(statusError(grpc.status.INVALID_ARGUMENT, details));
  };
  const invalid = invalidReason(call.request);
  if (invalid !== undefined) return refuse(`malformed list request: ${invalid}`);
  const v = validateList({ prefix: call.request.prefix, limit: call.request.limit, pageToken: call.request.page_token });
  if (!v.ok) return refuse(v.error.message);
  const { prefix, limit, afterKey } = v.value;
  serving.readBarrier(serving.barrierTimeoutMs).then(
    () => {
      const m = serving.machine();
      // One more than the page: whether there is a next page.
      const keys = m.listKeys(prefix, afterKey, limit + 1);
      const page = keys.slice(0, limit);
      const locks: WireInput<ListedLock>[] = page.map((key) => {
        const view = m.get(key);
        return {
          key,
          holders: holdersOf(view, m.valueOf(key)).map(holderToWire),
          waiters: m.waiterCountOf(key),
          last_token: view.lastToken.toString(),
        };
      });
      cb(null, { locks, next_page_token: keys.length > limit ? page[page.length - 1]! : '', index: String(m.appliedIndex) });
    },
    (err: unknown) =>
      cb(
        statusError(
          grpc.status.UNAVAILABLE,
          `list: cannot confirm this node is up to date (${err instanceof Error ? err.message : String(err)}); retry, maybe on another node`,
        ),
      ),
  );
}
