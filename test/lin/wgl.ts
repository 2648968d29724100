// Wing–Gong linearizability checking with Lowe's memoisation (the "WGL" algorithm Porcupine implements).
//
// Given operations with real-time intervals [call, ret] and a sequential model, search for a total order that
// (1) respects real time: if a returned before b was called, a comes first; and (2) the model accepts, step by
// step, with the recorded outputs. The search walks a doubly linked list of call/return events: at a call it
// tries to linearize that operation now (the model must accept it), at a return it must already have
// linearized that operation, else it backtracks. A cache of (set of linearized ops, model state) pairs already
// explored prunes the search — the same set reached in the same state has the same future.
//
// Operations whose outcome is unknown are not given to this checker unless their effect was observed; then
// their `ret` is the end of the first observation (they must have taken effect before it), see mutex-model.ts.

export interface Model<S, Op> {
  init(): S;
  /** The state after `op` from `s`, or null if the model cannot produce op's recorded output from `s`. */
  step(s: S, op: Op): S | null;
  /** A string that identifies the state exactly (two states with the same key are the same state). */
  key(s: S): string;
}

export interface TimedOp<Op> {
  callMs: number;
  retMs: number;
  op: Op;
}

export type WglResult =
  | { linearizable: true; explored: number }
  | {
      linearizable: false;
      explored: number;
      /** The operation that could not be linearized after the longest valid prefix (index into the input). */
      stuckAt: number;
      /** The longest prefix of a linearization found (indexes into the input), for the report. */
      longestPrefix: number[];
    }
  | { linearizable: 'unknown'; explored: number; reason: string };

interface Entry {
  id: number;
  isCall: boolean;
  time: number;
  match: Entry | null;
  prev: Entry | null;
  next: Entry | null;
}

class Bitset {
  readonly words: Uint32Array;
  constructor(n: number) {
    this.words = new Uint32Array(Math.ceil(n / 32) || 1);
  }
  set(i: number): void {
    this.words[i >>> 5]! |= 1 << (i & 31);
  }
  clear(i: number): void {
    this.words[i >>> 5]! &= ~(1 << (i & 31));
  }
  hash(): number {
    let h = 0x811c9dc5;
    for (const w of this.words) h = Math.imul(h ^ w, 0x01000193);
    return h >>> 0;
  }
  equals(other: Uint32Array): boolean {
    for (let i = 0; i < this.words.length; i++) if (this.words[i] !== other[i]) return false;
    return true;
  }
}

export function checkLinearizable<S, Op>(
  ops: readonly TimedOp<Op>[],
  model: Model<S, Op>,
  opts: { budgetMs?: number; maxExplored?: number } = {},
): WglResult {
  const started = Date.now();
  const budgetMs = opts.budgetMs ?? 10_000;
  const maxExplored = opts.maxExplored ?? 5_000_000;
  for (const [i, o] of ops.entries()) {
    if (!Number.isFinite(o.callMs) || !Number.isFinite(o.retMs) || o.retMs < o.callMs) {
      throw new Error(`checkLinearizable: op ${i} has a bad interval [${o.callMs}, ${o.retMs}]`);
    }
  }

  // Events in time order; at equal times calls come first, so touching intervals count as concurrent.
  const events: Entry[] = [];
  for (const [id, o] of ops.entries()) {
    const call: Entry = { id, isCall: true, time: o.callMs, match: null, prev: null, next: null };
    const ret: Entry = { id, isCall: false, time: o.retMs, match: null, prev: null, next: null };
    call.match = ret;
    events.push(call, ret);
  }
  events.sort((a, b) => a.time - b.time || (a.isCall === b.isCall ? a.id - b.id : a.isCall ? -1 : 1));
  const head: Entry = { id: -1, isCall: false, time: -Infinity, match: null, prev: null, next: null };
  let last = head;
  for (const e of events) {
    last.next = e;
    e.prev = last;
    last = e;
  }

  const lift = (e: Entry) => {
    e.prev!.next = e.next;
    if (e.next) e.next.prev = e.prev;
    const m = e.match!;
    m.prev!.next = m.next;
    if (m.next) m.next.prev = m.prev;
  };
  const unlift = (e: Entry) => {
    const m = e.match!;
    m.prev!.next = m;
    if (m.next) m.next.prev = m;
    e.prev!.next = e;
    if (e.next) e.next.prev = e;
  };

  const linearized = new Bitset(ops.length);
  const cache = new Map<string, Uint32Array[]>();
  const seen = (stateKey: string): boolean => {
    const k = `${linearized.hash()}|${stateKey}`;
    const list = cache.get(k);
    if (list) {
      for (const bits of list) if (linearized.equals(bits)) return true;
      list.push(linearized.words.slice());
    } else {
      cache.set(k, [linearized.words.slice()]);
    }
    return false;
  };

  const stack: { entry: Entry; state: S }[] = [];
  let state = model.init();
  let entry = head.next;
  let explored = 0;
  let longest: number[] = [];
  let blockedAt = -1;

  while (head.next !== null) {
    if (entry === null) throw new Error('checkLinearizable: walked off the event list (a call without its return)');
    if ((++explored & 1023) === 0 && Date.now() - started > budgetMs) {
      return { linearizable: 'unknown', explored, reason: `search budget of ${budgetMs} ms exhausted` };
    }
    if (explored > maxExplored) return { linearizable: 'unknown', explored, reason: `explored more than ${maxExplored} steps` };
    if (entry.isCall) {
      const next = model.step(state, ops[entry.id]!.op);
      if (next !== null) {
        linearized.set(entry.id);
        if (!seen(model.key(next))) {
          stack.push({ entry, state });
          state = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized.clear(entry.id);
      }
      entry = entry.next;
    } else {
      // A return whose operation we could not linearize before it: undo the last choice. Remember the deepest
      // such dead end: its prefix and blocked operation make the most useful report.
      if (stack.length >= longest.length) {
        longest = stack.map((s) => s.entry.id);
        blockedAt = entry.id;
      }
      const top = stack.pop();
      if (!top) return { linearizable: false, explored, stuckAt: blockedAt, longestPrefix: longest };
      state = top.state;
      linearized.clear(top.entry.id);
      unlift(top.entry);
      entry = top.entry.next;
    }
  }
  return { linearizable: true, explored };
}
