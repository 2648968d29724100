// Term starts reach leases lazily (machine.ts settle + EndByHeap). This test checks the lazy machine against
// an eager model that applies every epoch to every lease at its term start (epoch.ts carryLease), as the
// machine did before: after each step every key reads the same, a term start reports the same counts, and
// expiredLeases() names exactly the leases the model says are past their deadline. Elections are frequent
// and TTLs short against them, so leases are extended many times and many end by the observed-time rule.
import { describe, expect, it } from 'vitest';
import { encodeCommand, LockMachine } from '../../../src/lock/index.js';
import type { LockCommand } from '../../../src/lock/index.js';
import { carryLease, type LeaseTimes } from '../../../src/lock/epoch.js';
import { SimRng } from '../../sim/rng.js';

const KEYS = Array.from({ length: 300 }, (_, i) => `k${i}`);
const OWNERS = ['a', 'b', 'c'];

interface ModelLease extends LeaseTimes {
  owner: string;
  token: bigint;
}

class EagerModel {
  readonly leases = new Map<string, ModelLease>();
  nowMs = 0;

  grant(key: string, owner: string, token: bigint, ttlMs: number): void {
    this.leases.set(key, { owner, token, ttlMs, expiresAtMs: this.nowMs + ttlMs, observedMs: 0, observeFromMs: this.nowMs });
  }

  termStart(stampMs: number): { extended: number; ended: number } {
    const P = this.nowMs;
    const T = Math.max(P, stampMs);
    const counts = { extended: 0, ended: 0 };
    for (const lease of this.leases.values()) {
      const r = carryLease(lease, { previousTermEndMs: P, epochStartMs: T });
      if (r !== null) counts[r]++;
    }
    this.nowMs = T;
    return counts;
  }

  due(atMs: number): string[] {
    return [...this.leases]
      .filter(([, l]) => l.expiresAtMs <= atMs)
      .map(([k]) => k)
      .sort();
  }
}

function run(seed: number, steps: number): { termStarts: number; ended: number; checks: number } {
  const rng = new SimRng(seed);
  const machine = new LockMachine();
  const model = new EagerModel();
  let clockMs = 1_000;
  let termStarts = 0;
  let ended = 0;
  let checks = 0;
  let raftTerm = 1;
  // An epoch starts at the first entry of a higher raft term (the new leader's termStart).
  const apply = (command: LockCommand) =>
    machine.apply(machine.appliedIndex + 1, command.type === 'termStart' ? ++raftTerm : raftTerm, encodeCommand(command));
  for (let step = 0; step < steps; step++) {
    clockMs += rng.int(30);
    // A leader's stamp can run behind log time (clamped) or ahead of it.
    const stampMs = clockMs + rng.int(400) - 150;
    const key = KEYS[rng.int(KEYS.length)]!;
    const held = model.leases.get(key);
    const roll = rng.float();
    if (roll < 0.04) {
      const r = apply({ type: 'termStart', timeMs: stampMs });
      const want = model.termStart(stampMs);
      termStarts++;
      ended += want.ended;
      expect(r, `seed ${seed} step ${step}: term start counts`).toMatchObject({ leasesExtended: want.extended, leasesEnded: want.ended });
    } else if (roll < 0.45) {
      const owner = OWNERS[rng.int(OWNERS.length)]!;
      const ttlMs = 100 + rng.int(900);
      const r = apply({ type: 'acquire', timeMs: stampMs, key, owner, ttlMs, requestId: '' });
      model.nowMs = Math.max(model.nowMs, stampMs);
      if (r.type === 'acquire' && r.acquired) model.grant(key, owner, r.token, ttlMs);
    } else if (roll < 0.7 && held) {
      const ttlMs = 100 + rng.int(900);
      const r = apply({ type: 'renew', timeMs: stampMs, key, owner: held.owner, token: held.token, ttlMs, requestId: '' });
      model.nowMs = Math.max(model.nowMs, stampMs);
      if (r.type === 'renew' && r.renewed) model.grant(key, held.owner, held.token, ttlMs);
    } else if (roll < 0.8 && held) {
      const r = apply({ type: 'release', timeMs: stampMs, key, owner: held.owner, token: held.token, requestId: '' });
      model.nowMs = Math.max(model.nowMs, stampMs);
      if (r.type === 'release' && r.released) model.leases.delete(key);
    } else {
      // The leader proposes what the machine says is due; the model must agree on the whole set.
      const atMs = Math.max(stampMs, machine.logNowMs);
      const due = machine
        .expiredLeases(atMs, 10_000)
        .map((d) => d.key)
        .sort();
      expect(due, `seed ${seed} step ${step}: expiredLeases(${atMs})`).toEqual(model.due(Math.max(atMs, model.nowMs)));
      const first = machine.expiredLeases(atMs, 1)[0];
      if (first !== undefined) {
        apply({ type: 'expire', timeMs: stampMs, key: first.key, token: first.token });
        model.nowMs = Math.max(model.nowMs, stampMs);
        model.leases.delete(first.key);
      }
    }
    expect(machine.logNowMs).toBe(model.nowMs);
    if (step % 50 === 0) {
      checks++;
      for (const k of KEYS) {
        const lease = model.leases.get(k);
        const view = machine.get(k);
        const live = lease !== undefined && lease.expiresAtMs > model.nowMs;
        expect(view.held, `seed ${seed} step ${step}: ${k} held`).toBe(live);
        if (live) expect(view.expiresAtMs, `seed ${seed} step ${step}: ${k} deadline`).toBe(lease.expiresAtMs);
      }
    }
  }
  return { termStarts, ended, checks };
}

describe('term starts applied lazily equal term starts applied to every lease', () => {
  it('30 seeds of random traffic with frequent elections read, count and expire as the eager rule', () => {
    let totalEnded = 0;
    let totalStarts = 0;
    for (let seed = 1; seed <= 30; seed++) {
      const r = run(seed, 2000);
      totalEnded += r.ended;
      totalStarts += r.termStarts;
    }
    // The test proves something only if elections extended leases and the observed-time rule ended some.
    expect(totalStarts).toBeGreaterThan(1000);
    expect(totalEnded).toBeGreaterThan(50);
  });
});
