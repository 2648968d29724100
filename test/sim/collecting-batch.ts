// A chained batch for the stand-in stores (the simulator's state-db.ts, the unit tests' crash-db.ts): ops are
// copied as they come, as classic-level copies them into its native batch, and land only when write() hands
// them all to `write` as one array batch; a batch written or closed takes no more.
import type { RecordBatch } from '../../src/state/applied-store.js';

export type BatchOp = { type: 'put'; key: Uint8Array; value: Uint8Array } | { type: 'del'; key: Uint8Array };

export interface CollectingBatchHooks {
  /** Before each op is taken (the simulator arms its crash-while-fed here). */
  onOp?: (op: BatchOp) => void;
  /** When the batch is closed unwritten. */
  onClose?: () => void;
}

export function collectingBatch(write: (ops: BatchOp[]) => Promise<void>, hooks: CollectingBatchHooks = {}): RecordBatch {
  const ops: BatchOp[] = [];
  let open = true;
  const take = (op: BatchOp) => {
    if (!open) throw new Error('the chained batch was written or closed');
    hooks.onOp?.(op);
    ops.push(op);
  };
  return {
    put: (key, value) => take({ type: 'put', key: key.slice(), value: value.slice() }),
    del: (key) => take({ type: 'del', key: key.slice() }),
    write: () => {
      if (!open) throw new Error('the chained batch was written or closed');
      open = false;
      return write(ops);
    },
    close: () => {
      open = false;
      ops.length = 0;
      hooks.onClose?.();
      return Promise.resolve();
    },
  };
}
