// The writer the crash test kills with SIGKILL. Usage:
//   node --import ./test/unit/storage/ts-register.mjs test/unit/storage/crash-child.ts <dir> <seed> <level|wal>
// It reopens the store, then writes forever with up to MAX_IN_FLIGHT calls outstanding (to exercise
// the internal queue), printing `op <json>` BEFORE each call and `ack <seq>` after it resolves.
// writeSync on the stdout pipe puts the line in the kernel before the next step, so SIGKILL cannot
// lose a line that was written — the parent sees every acknowledged write, and every issued one.
import { writeSync } from 'node:fs';
import { LevelStorage } from '../../../src/raft/storage/leveldb.js';
import { WalStorage } from '../../../src/raft/storage/wal-storage.js';
import {
  applyOp,
  compactSnapshot,
  EMPTY,
  entriesFor,
  lastIndex,
  seededRandom,
  snapshotFor,
  type CrashOp,
  type ModelState,
} from './crash-model.js';

const MAX_IN_FLIGHT = 4;
const SELF_DESTRUCT_MS = 30_000; // never outlive a parent that died without killing us

const [dir, seedArg, kind] = process.argv.slice(2);
if (!dir || !seedArg || (kind !== 'level' && kind !== 'wal')) throw new Error('usage: crash-child.ts <dir> <seed> <level|wal>');
const random = seededRandom(Number(seedArg));
const int = (n: number): number => Math.floor(random() * n);
const say = (line: string): void => {
  writeSync(1, line + '\n');
};
setTimeout(() => process.exit(3), SELF_DESTRUCT_MS).unref();

/** Picks the next operation from the state the store will have once all issued calls applied. */
function nextOp(state: ModelState, seq: number): CrashOp {
  if (!state.snapshot) {
    return {
      seq,
      kind: 'save',
      hardState: { term: 1, votedFor: 'n1', commitIndex: 0 },
      snapshot: { source: 'boot', index: 0, term: 0 },
      first: 1,
      last: 0,
      term: 1,
    };
  }
  const hs = state.hardState ?? { term: 1, votedFor: null, commitIndex: 0 };
  const last = lastIndex(state);
  const snapIndex = state.snapshot.meta.index;
  const r = random();
  if (r < 0.06 && hs.commitIndex > snapIndex) return { seq, kind: 'compact', index: hs.commitIndex };
  if (r < 0.09) {
    // InstallSnapshot from a leader ahead of us: the whole log is replaced.
    const term = hs.term + int(2);
    const index = last + 1 + int(4);
    const count = int(4);
    return {
      seq,
      kind: 'save',
      hardState: { term, votedFor: null, commitIndex: index },
      snapshot: { source: 'leader', index, term },
      first: index + 1,
      last: index + count,
      term,
    };
  }
  let term = hs.term;
  let first = last + 1;
  if (r < 0.25) {
    // A new leader overwrites our uncommitted suffix (Raft §5.3); never a committed entry.
    term += 1;
    first = Math.max(hs.commitIndex + 1, snapIndex + 1, last - int(6));
  }
  const newLast = first + int(20);
  const commitIndex = Math.max(hs.commitIndex, Math.min(newLast, hs.commitIndex + int(15)));
  return {
    seq,
    kind: 'save',
    hardState: { term, votedFor: `n${1 + (term % 3)}`, commitIndex },
    snapshot: null,
    first,
    last: newLast,
    term,
  };
}

const storage = kind === 'wal' ? await WalStorage.open(dir) : await LevelStorage.open(dir);
const loaded = await storage.load();
let state: ModelState = loaded ?? EMPTY;
say(`ready`);

let inFlight = 0;
let wake: (() => void) | null = null;
for (let seq = 1; ; seq++) {
  while (inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => (wake = resolve));
  const op = nextOp(state, seq);
  const before = state;
  state = applyOp(state, op);
  say(`op ${JSON.stringify(op)}`);
  const call =
    op.kind === 'compact'
      ? storage.compact(compactSnapshot(before, op.index))
      : storage.save({ hardState: op.hardState, snapshot: snapshotFor(op), entries: entriesFor(op) });
  inFlight++;
  call.then(
    () => {
      say(`ack ${op.seq}`);
      inFlight--;
      wake?.();
    },
    (err: unknown) => {
      say(`fail ${op.seq} ${err instanceof Error ? err.message : String(err)}`);
      process.exit(2);
    },
  );
}
