// A state machine for the driver's tests that keeps its values in a "store" of its own and streams it
// (fsm.ts StoredStateMachine): a small stand-in for the applied store (JSON values and a byte sum as the
// checksum); the applied store's own stream and checks are test/unit/state's and the sim's. Its store is
// this object: a node restarted over it (RaftNode.start with the same instance) finds the values and the
// point it had, as a restart finds src/state's store.
import { decodeConfEntry } from '../../../src/raft/core/conf.js';
import type { ConfState, Entry, Snapshot, SnapshotChunk, SnapshotMeta } from '../../../src/raft/core/types.js';
import type { ChunkVerdict, SnapshotStream, StateMachine, StoredStateMachine } from '../../../src/raft/fsm.js';

export const enc = (s: string) => new TextEncoder().encode(s);
const sum = (bytes: Uint8Array) => bytes.reduce((a, b) => (a + b) >>> 0, 0);

/** A list of values kept in a "store" of its own: a stream is the JSON of the values with a 4-byte sum. */
export class StoredList implements StateMachine<number> {
  values: string[] = [];
  private point: SnapshotMeta | null = null;
  private incoming: number[] | null = null;
  /** What the store went through: streams opened for followers, received ones refused, thrown away, installed. */
  readonly seen = { refused: 0, discarded: 0, installed: 0, streamsOpened: 0 };
  readonly stored: StoredStateMachine;
  /** Every point persist() reported durable, in order. */
  readonly persisted: number[] = [];

  /** `persistLagEntries`: persist() reports a point that many entries below what is applied, as the applied
   *  store's write-behind does while its newest batch is still in flight (0: exactly what is applied). */
  constructor(private readonly persistLagEntries = 0) {
    this.stored = {
      open: () => Promise.resolve(this.point),
      install: (snapshot: Snapshot) => {
        this.values = snapshot.data.length === 0 ? [] : (JSON.parse(new TextDecoder().decode(snapshot.data)) as string[]);
        this.point = snapshot.meta;
        return Promise.resolve();
      },
      persist: () => {
        const index = Math.max(0, (this.point?.index ?? 0) - this.persistLagEntries);
        this.persisted.push(index);
        return Promise.resolve(index);
      },
      openStream: (chunkBytes: number) => {
        this.seen.streamsOpened++;
        return Promise.resolve(this.stream(chunkBytes));
      },
      receiveChunk: (chunk: SnapshotChunk) => Promise.resolve(this.receive(chunk)),
      installReceived: (meta: SnapshotMeta) => {
        const bytes = Uint8Array.from(this.incoming!);
        this.incoming = null;
        this.values = JSON.parse(new TextDecoder().decode(bytes.subarray(0, bytes.length - 4))) as string[];
        this.point = meta;
        this.seen.installed++;
        return Promise.resolve();
      },
      discardReceived: () => {
        this.incoming = null;
        this.seen.discarded++;
        return Promise.resolve();
      },
    };
  }

  apply(e: Entry): number {
    if (e.kind === 'normal') this.values.push(new TextDecoder().decode(e.data));
    const conf: ConfState = e.kind === 'config' ? decodeConfEntry(e.data).conf : this.point!.conf;
    this.point = { index: e.index, term: e.term, conf };
    return this.values.length;
  }
  snapshot(): Uint8Array {
    return enc(JSON.stringify(this.values));
  }
  restore(): void {
    throw new Error('a stored machine is restored from its store');
  }

  private stream(chunkBytes: number): SnapshotStream {
    const body = enc(JSON.stringify(this.values));
    const data = new Uint8Array(body.length + 4);
    data.set(body);
    new DataView(data.buffer).setUint32(body.length, sum(body));
    return {
      meta: this.point!,
      chunkAt: (offset: number) =>
        Promise.resolve(
          offset >= data.length ? null : { data: data.slice(offset, offset + chunkBytes), last: offset + chunkBytes >= data.length },
        ),
      close: () => Promise.resolve(),
    };
  }

  private receive(chunk: SnapshotChunk): ChunkVerdict {
    if (chunk.offset === 0) this.incoming = [];
    this.incoming!.push(...chunk.data);
    if (!chunk.done) return { ok: true };
    const bytes = Uint8Array.from(this.incoming!);
    const body = bytes.subarray(0, bytes.length - 4);
    if (new DataView(bytes.buffer).getUint32(body.length) === sum(body)) return { ok: true };
    this.incoming = null;
    this.seen.refused++;
    return { ok: false, reason: 'the sum differs' };
  }
}
