// A test-only wrapper around the node's state machine that corrupts snapshots on their way into its store
// (spec.ts snapshot.corruptStreams): the last byte of the last chunk of each of the next N snapshots — the
// checksum of a record stream — is flipped, as a bad link or buffer would hand it over after the Raft core
// took it. The last chunk, so that a stream the leader abandons for a newer one never uses one up. The store must refuse the stream (its count or checksum does not verify),
// keep its state, and the leader send the stream again; the node must not stop.
import type { SnapshotChunk } from '../raft/core/types.js';
import type { StateMachine, StoredStateMachine } from '../raft/fsm.js';
import type { SnapshotFaults } from './spec.js';

export interface ChunkCorruption {
  /** How many snapshots are still to be corrupted under the current setting. */
  left: number;
}

/** `fsm` with its store's receiveChunk corrupting a snapshot's last chunk while `corruption.left` > 0; the
 *  rest passes through. */
export function corruptingFsm<R>(fsm: StateMachine<R>, corruption: ChunkCorruption): StateMachine<R> {
  const stored = fsm.stored;
  return {
    apply: (entry) => fsm.apply(entry),
    snapshot: () => fsm.snapshot(),
    ...(fsm.beginSnapshot === undefined ? {} : { beginSnapshot: (sizeHint: number) => fsm.beginSnapshot!(sizeHint) }),
    restore: (data) => fsm.restore(data),
    ...(stored === undefined ? {} : { stored: corruptingStore(stored, corruption) }),
  };
}

function corruptingStore(stored: StoredStateMachine, corruption: ChunkCorruption): StoredStateMachine {
  const receiveChunk = stored.receiveChunk;
  if (receiveChunk === undefined) return stored;
  return {
    ...stored,
    receiveChunk: (chunk: SnapshotChunk) => {
      if (corruption.left <= 0 || !chunk.done || chunk.data.length === 0) return receiveChunk.call(stored, chunk);
      corruption.left--;
      const data = new Uint8Array(chunk.data); // a copy (a Buffer's slice is a view of the message)
      data[data.length - 1] = data[data.length - 1]! ^ 0x01;
      return receiveChunk.call(stored, { ...chunk, data });
    },
  };
}

/** The corruption a new setting asks for: counted afresh. */
export function corruptionOf(faults: SnapshotFaults | undefined): number {
  return faults?.corruptStreams ?? 0;
}
