// Shared by the crash test and its child writer: the operations the child performs, and a pure model of
// what the store must hold after any prefix of them. The child prints each operation before issuing it
// and an ack after it resolves; the parent replays the same operations through this model, so it knows
// exactly which states a crash may leave behind.
import { createHash } from 'node:crypto';
import type { Entry, HardState, Snapshot } from '../../../src/raft/core/types.js';
import { SimRng } from '../../sim/rng.js';

export const VOTERS = ['n1', 'n2', 'n3'];

export type CrashOp =
  | {
      seq: number;
      kind: 'save';
      hardState: HardState;
      /** 'boot' = the bootstrap snapshot at 0; 'leader' = an InstallSnapshot from the leader. */
      snapshot: { source: 'boot' | 'leader'; index: number; term: number } | null;
      /** Entries first..last of `term` (none when first > last). */
      first: number;
      last: number;
      term: number;
    }
  | { seq: number; kind: 'compact'; index: number };

export interface ModelState {
  hardState: HardState | null;
  snapshot: Snapshot | null;
  entries: Entry[];
}

export const EMPTY: ModelState = { hardState: null, snapshot: null, entries: [] };

/** Entry content is a function of (index, term): a wrong or stale byte anywhere shows up as a mismatch. */
export function entryFor(index: number, term: number): Entry {
  const length = (index * 31 + term * 17) % 97;
  const data = new Uint8Array(length);
  for (let j = 0; j < length; j++) data[j] = (index * 7 + term * 13 + j) & 0xff;
  return { index, term, kind: index % 10 === 0 ? 'noop' : 'normal', data };
}

export function entriesFor(op: Extract<CrashOp, { kind: 'save' }>): Entry[] {
  const out: Entry[] = [];
  for (let i = op.first; i <= op.last; i++) out.push(entryFor(i, op.term));
  return out;
}

export function snapshotFor(op: Extract<CrashOp, { kind: 'save' }>): Snapshot | null {
  if (!op.snapshot) return null;
  const { source, index, term } = op.snapshot;
  const data = source === 'boot' ? new Uint8Array(0) : digest([`leader ${index} ${term}`]);
  return { meta: { index, term, conf: { clusterId: '', voters: [...VOTERS], learners: [], addresses: {}, removed: [] } }, data };
}

/** A compaction folds the compacted entries into the snapshot data (a hash chain), so the snapshot
 *  itself proves that every acknowledged entry it replaced had the right content. */
export function compactSnapshot(state: ModelState, index: number): Snapshot {
  const prev = state.snapshot;
  if (!prev) throw new Error('compact before bootstrap');
  const folded = state.entries.filter((e) => e.index <= index);
  const term = index === prev.meta.index ? prev.meta.term : folded[folded.length - 1]!.term;
  const parts: Array<string | Uint8Array> = [prev.data];
  for (const e of folded) parts.push(`${e.index}/${e.term}/${e.kind}/`, e.data);
  return {
    meta: { index, term, conf: { clusterId: '', voters: [...VOTERS], learners: [], addresses: {}, removed: [] } },
    data: digest(parts),
  };
}

/** The state after `op`, following the RaftStorage rules (the model of a correct store). */
export function applyOp(state: ModelState, op: CrashOp): ModelState {
  if (op.kind === 'compact') {
    return { ...state, snapshot: compactSnapshot(state, op.index), entries: state.entries.filter((e) => e.index > op.index) };
  }
  const snapshot = snapshotFor(op);
  let entries = snapshot ? [] : state.entries;
  if (op.first <= op.last) entries = entries.filter((e) => e.index < op.first).concat(entriesFor(op));
  return { hardState: op.hardState, snapshot: snapshot ?? state.snapshot, entries };
}

export function lastIndex(state: ModelState): number {
  return state.entries.length > 0 ? state.entries[state.entries.length - 1]!.index : (state.snapshot?.meta.index ?? 0);
}

/** A canonical text form: two states are equal exactly when their descriptions are. */
export function describe(state: ModelState | null): string {
  if (state === null || (state.snapshot === null && state.hardState === null && state.entries.length === 0)) return 'empty';
  const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
  const s = state.snapshot;
  return [
    `hs ${JSON.stringify(state.hardState)}`,
    s ? `snap ${s.meta.index}/${s.meta.term} [${s.meta.conf.voters.join(',')}] ${hex(s.data)}` : 'snap none',
    ...state.entries.map((e) => `e ${e.index}/${e.term}/${e.kind} ${hex(e.data)}`),
  ].join('\n');
}

/** A one-line summary for failure messages. */
export function summarize(state: ModelState | null): string {
  if (state === null) return 'empty';
  const first = state.entries[0]?.index ?? '-';
  return `hs=${JSON.stringify(state.hardState)} snap=${state.snapshot?.meta.index ?? 'none'} entries=${first}..${lastIndex(state)} (${state.entries.length})`;
}

function digest(parts: Array<string | Uint8Array>): Uint8Array {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
}

/** Floats in [0, 1) from the tests' one seeded PRNG, so a failing run can be replayed from its printed seed. */
export function seededRandom(seed: number): () => number {
  const rng = new SimRng(seed);
  return () => rng.float();
}
