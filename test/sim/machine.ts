// The replicated state machine seen by the simulator (hashicorp/raft's FSM: apply, snapshot, restore),
// plus a digest so replicas can be compared cheaply at equal applied index. The lock machine plugs in
// here later; the default is a small "value set" machine good enough to check Raft itself.
import type { Entry } from '../../src/raft/core/types.js';
import type { SnapshotJob, StoredStateMachine } from '../../src/raft/fsm.js';

export interface SimStateMachine {
  /** Apply one committed entry (every kind: 'normal', 'noop', 'config'). The return value is handed to
   *  the client whose proposal this was (e.g. a lock machine's acquire result). */
  apply(entry: Entry): unknown;
  /** Serialize the full state (taken at the current applied index). */
  snapshot(): Uint8Array;
  /** Optional: snapshot() of the state as of now, written in slices while entries keep applying (what the
   *  driver's beginSnapshot runs). Without it the simulator hands the driver a one-slice job. */
  beginSnapshot?(sizeHint: number): SnapshotJob;
  /** Replace the state with a snapshot's (an empty array means the initial state). */
  restore(data: Uint8Array): void;
  /** A cheap fingerprint of the state; replicas at the same applied index must agree (===). Keep it
   *  O(1) per call (maintain it incrementally): the simulator asks after every applied entry. */
  digest(): number | string;
  /** Optional: the state kept in an applied store of its own (fsm.ts StoredStateMachine; the lock replica's). */
  readonly stored?: StoredStateMachine;
}

/** FNV-1a over bytes, seeded so it can be chained. */
export function fnv1a(bytes: Uint8Array, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const KIND_SEED: Record<Entry['kind'], number> = { normal: 0x811c9dc5, noop: 0x1234567, config: 0x7654321 };

/** Identity of an entry's content (kind + data), used by the committed-log invariants. */
export function entryHash(e: Entry): number {
  return fnv1a(e.data, KIND_SEED[e.kind]);
}

/** Client values are 8+ bytes: u32 valueId, u32 clientId, then padding (varies entry sizes). */
export function encodeValue(valueId: number, clientId: number, padding: number): Uint8Array {
  const out = new Uint8Array(8 + padding);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, valueId, true);
  dv.setUint32(4, clientId, true);
  for (let i = 0; i < padding; i++) out[8 + i] = (valueId + i) & 0xff;
  return out;
}

export function decodeValueId(data: Uint8Array): number {
  return data.length >= 4 ? (data[0]! | (data[1]! << 8) | (data[2]! << 16) | (data[3]! << 24)) >>> 0 : -1;
}

/**
 * Applies client values in log order. State: how many times each value id was applied, how many
 * normal entries were applied, and a rolling hash over the whole applied sequence (so two replicas that
 * applied the same values in a different order disagree).
 */
export class ValueSetMachine implements SimStateMachine {
  private counts = new Map<number, number>();
  private appliedCount = 0;
  private rolling = 0x811c9dc5;

  apply(entry: Entry): unknown {
    if (entry.kind !== 'normal') return undefined;
    const id = decodeValueId(entry.data);
    this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    this.appliedCount++;
    this.rolling = fnv1a(entry.data, Math.imul(this.rolling ^ this.appliedCount, 0x9e3779b1) >>> 0);
    return this.counts.get(id);
  }

  has(valueId: number): boolean {
    return this.counts.has(valueId);
  }

  timesApplied(valueId: number): number {
    return this.counts.get(valueId) ?? 0;
  }

  get size(): number {
    return this.appliedCount;
  }

  digest(): number {
    return (this.rolling ^ Math.imul(this.appliedCount, 0x85ebca6b)) >>> 0;
  }

  snapshot(): Uint8Array {
    const out = new Uint8Array(12 + 8 * this.counts.size);
    const dv = new DataView(out.buffer);
    dv.setUint32(0, this.rolling, true);
    dv.setUint32(4, this.appliedCount, true);
    dv.setUint32(8, this.counts.size, true);
    let at = 12;
    // Map iteration order is insertion order: deterministic, identical on every replica.
    for (const [id, n] of this.counts) {
      dv.setUint32(at, id, true);
      dv.setUint32(at + 4, n, true);
      at += 8;
    }
    return out;
  }

  restore(data: Uint8Array): void {
    this.counts = new Map();
    this.appliedCount = 0;
    this.rolling = 0x811c9dc5;
    if (data.length === 0) return;
    const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
    this.rolling = dv.getUint32(0, true);
    this.appliedCount = dv.getUint32(4, true);
    const n = dv.getUint32(8, true);
    if (data.length !== 12 + 8 * n) throw new Error(`ValueSetMachine.restore: ${data.length} bytes for ${n} values`);
    for (let k = 0, at = 12; k < n; k++, at += 8) this.counts.set(dv.getUint32(at, true), dv.getUint32(at + 4, true));
  }
}
