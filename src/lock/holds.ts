// Keys with many holds (SPEC "Many holders"): a counting semaphore of `limit` holds, or a shared (read) /
// exclusive (write) lock. A mutex key keeps its one Lease in the machine's `leases` map, untouched; a key
// becomes a KeyGroup when a request with limit >= 2 or `shared` meets it, and stays one while it has holds
// or waiters. Rules, judged by the machine at the log time of the entry (machine.ts `many`, applied by
// machine-group-entries.ts and machine-hand-off.ts):
//  - limit: every request on a key names the key's limit while it has holds or waiters (1 for a mutex or a
//    shared/exclusive key); another limit is refused, naming the current one (LIMIT_MISMATCH).
//  - admission: a request fits when nobody waits ahead of it (FIFO: a newcomer never overtakes the line)
//    and — limit >= 2: fewer than `limit` live holds; limit 1, shared: every live hold is shared; limit 1,
//    exclusive: no live hold. So a shared request behind a waiting exclusive one waits (no writer starvation).
//  - hand-off: when a hold ends, the line's heads are granted in ticket order for as long as each fits (a run
//    of shared requests, or up to the free slots), each with its own token = the entry's index. Heads whose
//    wait deadline passed, or whose session ended, leave refused on the way.
//  - tokens: every hold has its own fencing token, strictly increasing per key: the index of the entry that
//    granted it. So an entry grants at most one hold per key; when it frees room for several heads (a run
//    of readers, slots freed together) the rest are granted by the leader's `handOff {key}` entries, one
//    each (machine-groups.ts grantableKeys).
//  - one hold per owner per key: an owner's new acquire supersedes its live hold of the same mode (its old
//    token dies); of the other mode it is refused (HOLD_MODE_MISMATCH): release first — an in-place upgrade
//    from shared to exclusive is how read/write locks deadlock.
//  - a hold past its deadline counts for nothing: the entry that meets it ends it (EXPIRED, its lock-delay
//    starting from its end), as an expire entry would.
import { Lease } from './lease.js';

/** One hold of a KeyGroup. A Lease (so epochs, heaps and sessions carry it as any lease) with what a
 *  mutex key keeps per key instead: its mode, lock-delay and value. */
export class GroupHold extends Lease {
  constructor(
    key: string,
    owner: string,
    token: number,
    ttlMs: number,
    expiresAtMs: number,
    observedMs: number,
    observeFromMs: number,
    readonly shared: boolean,
    /** The lock-delay the key enters when this hold EXPIRES (machine.ts `delay`); 0 = none. */
    readonly lockDelayMs: number,
    /** Stored with the hold (AcquireRequest.value); null = none. */
    readonly value: Uint8Array | null,
  ) {
    super(key, owner, token, ttlMs, expiresAtMs, observedMs, observeFromMs);
  }
}

/** What a request asks of a key's holds. */
export interface HoldRequest {
  owner: string;
  /** 1 = exclusive or shared; >= 2 = a semaphore of that many. */
  limit: number;
  shared: boolean;
}

export class KeyGroup {
  /** In token order (grants only append: a token is its entry's index, above every earlier one). */
  readonly holds: GroupHold[] = [];

  constructor(
    readonly key: string,
    readonly limit: number,
    /** The highest token ever issued for the key, kept so a group that empties frees the key with it. */
    public lastToken: number,
  ) {}

  holdOf(owner: string): GroupHold | undefined {
    for (const hold of this.holds) if (hold.owner === owner) return hold;
    return undefined;
  }

  holdWithToken(token: number): GroupHold | undefined {
    for (const hold of this.holds) if (hold.fencingToken === token) return hold;
    return undefined;
  }

  add(hold: GroupHold): void {
    this.holds.push(hold);
    if (hold.fencingToken > this.lastToken) this.lastToken = hold.fencingToken;
  }

  remove(hold: GroupHold): void {
    const at = this.holds.indexOf(hold);
    if (at >= 0) this.holds.splice(at, 1);
  }

  /** Whether `request` fits beside the holds live at `nowMs`, `ignoring` one (the owner's own, superseded).
   *  The line is the caller's to check (FIFO). */
  fits(request: HoldRequest, nowMs: number, ignoring?: GroupHold): boolean {
    let live = 0;
    let exclusive = false;
    for (const hold of this.holds) {
      if (hold === ignoring || !hold.isLiveAt(nowMs)) continue;
      live++;
      if (!hold.shared) exclusive = true;
    }
    if (this.limit >= 2) return live < this.limit;
    return request.shared ? !exclusive : live === 0;
  }

  /** The live hold with the lowest token at `nowMs` (the single-holder fields of Get describe it). */
  firstLive(nowMs: number): GroupHold | undefined {
    for (const hold of this.holds) if (hold.isLiveAt(nowMs)) return hold;
    return undefined;
  }
}

/** The limit a request names, as the machine compares it: 0 and 1 both mean "one exclusive hold". */
export function limitOf(limit: number | undefined): number {
  return limit === undefined || limit < 1 ? 1 : limit;
}
