// Seeded random lock entries, as a leader would propose them, for the tests that check a state written
// while entries keep applying: the sliced snapshot (machine-snapshot-slices.test.ts) and the applied store's
// records (store-records.test.ts). They hit every key's paths: acquires, renews and releases, expiries,
// forget entries, term starts (every lease changes, lazily), dedup records pruned by time and by the cap, and
// queued acquires replacing remembered refusals.
import { encodeCommand } from '../../../src/lock/index.js';
import type { LockCommand, LockMachineOptions } from '../../../src/lock/index.js';
import { SimRng } from '../../sim/rng.js';

export interface SlicedMachine {
  readonly appliedIndex: number;
  apply(index: number, term: number, data: Uint8Array): { type: string; acquired?: boolean };
  get(key: string): { held: boolean; owner: string; token: bigint; lastToken: bigint };
  expiredLeases(nowMs: number, limit: number): { key: string; token: bigint }[];
  snapshot(): Uint8Array;
  beginSnapshot(sizeHint?: number, sliceItems?: number): { step(): boolean; finish(): Uint8Array; cancel(): void };
}
export interface MachineClass {
  new (options?: Partial<LockMachineOptions>): SlicedMachine;
  restore(bytes: Uint8Array, options?: Partial<LockMachineOptions>): SlicedMachine;
}

// A small dedup table and window, so records are forgotten (by the cap and by time) during a snapshot.
export const OPTIONS: Partial<LockMachineOptions> = { dedupMaxEntries: 400, dedupWindowMs: 20_000 };
const KEYS = Array.from({ length: 6000 }, (_, i) => `job:${String(i).padStart(6, '0')}`);
const OWNERS = Array.from({ length: 12 }, (_, i) => `worker-${i}`);

/** Drives one machine with seeded random entries, as a leader would propose them. */
export class RandomLog {
  private readonly rng: SimRng;
  private term = 1;
  private clockMs = 1_000_000;
  private requests = 0;
  /** Acquires refused with a request id: the leader later offers them the key (a queued acquire), which
   *  replaces the remembered refusal with a grant. */
  private readonly refused: { key: string; owner: string; requestId: string }[] = [];

  constructor(
    readonly machine: SlicedMachine,
    seed: number,
    /** > 1: the first entry moves the cluster to this level (from 6 an acquire's record outlives the window
     *  while its owner holds the key: records remembered again as they are). */
    private level = 1,
  ) {
    this.rng = new SimRng(seed);
  }

  run(entries: number): void {
    if (this.level > 1) {
      this.apply({ type: 'clusterLevel', timeMs: this.clockMs, level: this.level });
      this.level = 1;
    }
    for (let i = 0; i < entries; i++) this.step();
  }

  private pick<T>(items: readonly T[]): T {
    return items[this.rng.int(items.length)]!;
  }

  private apply(command: LockCommand): void {
    const result = this.machine.apply(this.machine.appliedIndex + 1, this.term, encodeCommand(command));
    if (command.type === 'acquire' && command.requestId !== '' && result.type === 'acquire' && result.acquired === false) {
      this.refused.push({ key: command.key, owner: command.owner, requestId: command.requestId });
      if (this.refused.length > 200) this.refused.shift();
    }
  }

  private requestId(): string {
    // Mostly fresh ids, sometimes a retry of a recent one (a replay, or REQUEST_ID_REUSED).
    if (this.rng.float() < 0.15) return `r${Math.max(0, this.requests - this.rng.int(50))}`;
    return this.rng.float() < 0.2 ? '' : `r${++this.requests}`;
  }

  private step(): void {
    const timeMs = (this.clockMs += this.rng.int(40));
    const key = this.pick(KEYS);
    const view = this.machine.get(key);
    const owner = view.held && this.rng.float() < 0.8 ? view.owner : this.pick(OWNERS);
    const token = view.held ? view.token : view.lastToken > 0n ? view.lastToken : 1n;
    const roll = this.rng.float();
    if (roll < 0.004) {
      this.term++;
      this.apply({ type: 'termStart', timeMs });
    } else if (roll < 0.05 && this.refused.length > 0) {
      const offer = this.refused.splice(this.rng.int(this.refused.length), 1)[0]!;
      this.apply({ type: 'acquire', timeMs, ...offer, ttlMs: 30_000 + this.rng.int(300_000), queued: true });
    } else if (roll < 0.4) {
      // Some holds carry a value and a lock-delay (hold options: the store keeps them in the key's record).
      const options = this.rng.float() < 0.2 ? { value: Uint8Array.of(this.rng.int(256), 7), lockDelayMs: this.rng.int(2_000) } : {};
      this.apply({ type: 'acquire', timeMs, key, owner, ttlMs: 30_000 + this.rng.int(300_000), requestId: this.requestId(), ...options });
    } else if (roll < 0.6) {
      this.apply({ type: 'renew', timeMs, key, owner, token, ttlMs: 30_000 + this.rng.int(300_000), requestId: this.requestId() });
    } else if (roll < 0.8) {
      this.apply({ type: 'release', timeMs, key, owner, token, requestId: this.requestId() });
    } else if (roll < 0.97) {
      const due = this.machine.expiredLeases(timeMs, 1)[0];
      if (due !== undefined) this.apply({ type: 'expire', timeMs, key: due.key, token: due.token });
    } else {
      this.apply({ type: 'forget', timeMs, upToMs: timeMs - 5_000 - this.rng.int(20_000) });
    }
  }
}
