// A small seeded PRNG for the simulation: xoshiro128** seeded through splitmix32.
//
// Why hand-written instead of Math.random or a library: the whole point of the simulator is that ONE
// integer seed reproduces a run bit for bit — on any machine, any Node version, forever. Math.random
// cannot be seeded, and a dependency could change its stream in a minor release. xoshiro128** is tiny,
// fast on 32-bit integer math (Math.imul), has a 2^128-1 period and passes BigCrush; splitmix32 turns
// (seed, stream) into well-mixed state so that derived streams (one per node, network, faults, clients)
// are independent: adding a draw to one stream never shifts the others.
import type { Rng } from '../../src/raft/core/types.js';

function splitmix32(state: { s: number }): number {
  state.s = (state.s + 0x9e3779b9) | 0;
  let z = state.s;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** Mix a string label into a 32-bit integer (FNV-1a), to name derived streams. */
export function hashLabel(label: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) {
    h ^= label.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export class SimRng implements Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, stream = 0) {
    const st = { s: (seed ^ Math.imul(stream + 1, 0x27d4eb2f)) | 0 };
    // Fold the high bits of large seeds in too (seeds are integers up to 2^53).
    st.s = (st.s ^ Math.floor(seed / 0x100000000)) | 0;
    this.a = splitmix32(st);
    this.b = splitmix32(st);
    this.c = splitmix32(st);
    this.d = splitmix32(st);
    if ((this.a | this.b | this.c | this.d) === 0) this.d = 1; // the all-zero state is a fixed point
  }

  /** An independent stream for `label` derived from the same seed. */
  static derive(seed: number, label: string): SimRng {
    return new SimRng(seed, hashLabel(label));
  }

  /** Next 32-bit unsigned integer (xoshiro128**). */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.b, 5), 7), 9) >>> 0;
    const t = this.b << 9;
    this.c ^= this.a;
    this.d ^= this.b;
    this.b ^= this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = rotl(this.d, 11);
    return result;
  }

  /** Uniform float in [0, 1). */
  float(): number {
    return this.nextU32() / 0x100000000;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('SimRng.pick: empty list');
    return items[this.int(items.length)]!;
  }

  /** Fisher–Yates, in place; returns the same array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = items[i]!;
      items[i] = items[j]!;
      items[j] = tmp;
    }
    return items;
  }

  /** Exponentially distributed value with the given mean (for inter-arrival times). */
  exp(mean: number): number {
    return -Math.log(1 - this.float()) * mean;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
