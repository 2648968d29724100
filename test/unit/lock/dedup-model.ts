// A plain model of the dedup table (dedup.ts) and random records for it: the arena table's tests compare the
// two (dedup-table.test.ts, dedup-expiry.test.ts).
import type { DedupRecord } from '../../../src/lock/dedup-record.js';
import type { SimRng } from '../../sim/rng.js';

/** The table as a Map and a FIFO of record objects (what the arena table replaced), and what its listener
 *  would hear: `+owner/request@time` remembered, `-owner/request` forgotten. */
export class ModelTable {
  readonly byPair = new Map<string, DedupRecord>();
  queue: DedupRecord[] = [];
  readonly heard: string[] = [];
  constructor(
    readonly windowMs: number,
    readonly maxEntries: number,
  ) {}
  private current(r: DedupRecord): boolean {
    return this.byPair.get(`${r.owner}\u0000${r.requestId}`) === r;
  }
  private forgetOldest(): void {
    const r = this.queue.shift()!;
    if (!this.current(r)) return;
    this.byPair.delete(`${r.owner}\u0000${r.requestId}`);
    this.heard.push(`-${r.owner}/${r.requestId}`);
  }
  /** `keep` as DedupTable.prune asks it: of a current acquire's record, which is remembered again at `nowMs`. */
  prune(nowMs: number, keep?: (owner: string, key: string) => boolean): void {
    while (this.queue.length > 0 && this.queue[0]!.recordedAtMs + this.windowMs <= nowMs) {
      const r = this.queue[0]!;
      if (keep !== undefined && this.current(r) && r.type === 'acquire' && keep(r.owner, r.key))
        this.remember({ ...r, recordedAtMs: nowMs });
      this.forgetOldest();
    }
  }
  remember(r: DedupRecord): void {
    this.byPair.set(`${r.owner}\u0000${r.requestId}`, r);
    this.queue.push(r);
    this.heard.push(`+${r.owner}/${r.requestId}@${r.recordedAtMs}`);
    while (this.byPair.size > this.maxEntries) this.forgetOldest();
  }
  inOrder(): DedupRecord[] {
    return this.queue.filter((r) => this.current(r));
  }
}

/** A random record of any type for the pair. */
export function record(rng: SimRng, owner: string, requestId: string, recordedAtMs: number): DedupRecord {
  const key = `key-${rng.int(50)}`;
  switch (rng.int(4)) {
    case 3:
      // A revoke's (cluster level 5): the tokens it ended, none to a few (token 0 = every hold).
      return {
        owner,
        requestId,
        recordedAtMs,
        key,
        token: BigInt(rng.int(3)),
        type: 'revoke',
        outcome: { revoked: Array.from({ length: rng.int(4) }, () => BigInt(1 + rng.int(1e9))) },
      };
    case 0:
      return {
        owner,
        requestId,
        recordedAtMs,
        key,
        token: 0n,
        type: 'acquire',
        outcome: {
          acquired: rng.int(2) === 0,
          token: BigInt(rng.int(1e9)),
          ttlMs: rng.int(1e6),
          expiresAtMs: recordedAtMs + 5,
          holderOwner: rng.int(2) === 0 ? '' : `h${rng.int(9)}`,
          holderTtlMs: rng.int(999),
        },
      };
    case 1:
      return {
        owner,
        requestId,
        recordedAtMs,
        key,
        token: (1n << 63n) + BigInt(rng.int(99)),
        type: 'renew',
        outcome: { renewed: true, ttlMs: 7, expiresAtMs: recordedAtMs + 7, reason: 'UNSPECIFIED' },
      };
    default:
      return {
        owner,
        requestId,
        recordedAtMs,
        key,
        token: BigInt(1 + rng.int(99)),
        type: 'release',
        outcome: { released: false, reason: 'WRONG_TOKEN' },
      };
  }
}
