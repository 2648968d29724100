// The named invariant `limits` (issue 22, findings 6 and 7): the applied lock state never exceeds the
// admission limits every leader enforced (src/lock/leader/admission.ts, SPEC "Limits"), bounded exactly as
// admission promises it — no slack.
//
// What admission promises. A ready leader proposes an acquire (or an OpenSession) only if, for each count the
// request may raise — its claims — the applied count plus what its own unapplied proposals claimed stays
// below the limit. A request claims (admission.ts): a lease where the key has no mutex lease (a key with many
// holds, or a request for a hold that may share its key: always), a lease of its owner where the key's lease
// is not the owner's, a key record where the machine keeps none, a place in its key's line and in all lines
// when it blocks, a hold of its session under one, a session for an OpenSession; a claim judged while the key
// had a lease or record is judged again as entries apply. A leader admits nothing before its term start
// applied, so every entry between its applied index `a` at an admission and the entry `i` it appends then is
// its own earlier proposal — counted by its claim, a timed-out one too (its entry is still in the log).
//
// What is knowingly soft. A waiter granted by the log (a hand-off: in a release, expire, revoke, dequeue,
// session end, undelay, handOff, or another request's acquire) was judged only when it joined the line, and
// counts once granted: for its owner, for its session, and in the leases in all wherever its grant does not
// replace a hold ended in the same entry (an undelay after a lock-delay; a key with many holds handing the
// room of one exclusive hold to several shared ones). So for each count c and entry j:
//   soft_j(c) = max(0, change_j(c) - own_j(c)),
// own_j(c) being what j's OWN request added (its grant, its place in line, its session: 0 or 1). An own grant
// its admission did not claim (the key had a lease then, which ended before the acquire applied) is not
// soft: the bound failing there is the promise failing.
//
// Checked on every entry, judged once in log order (the oracle's pass), for every limit that is finite:
//  - at an entry i the simulator saw its leader append at applied index a_i, for each count it claimed:
//      count_i(c) <= limit(c) + sum of soft_j(c), j in (a_i, i];
//  - after every entry k of term T, for each count k raised:
//      count_k(c) <= limit(c) + over_T(c) + sum of soft_j(c) over T's entries up to k,
//    over_T(c) being what c exceeded its limit by once T's term start applied: a leader counts from that state,
//    and applied + claimed rises past max(limit, its value then) only by soft growth.
import type { Entry } from '../../src/raft/core/types.js';
import type { LockCommand, LockResult } from '../../src/lock/index.js';
import type { AdmissionLimits } from '../../src/lock/leader/index.js';
import type { LockMachineLike } from './lock-module.js';

type Limit = keyof AdmissionLimits;

/** Every count a finite limit bounds, by counter id: `maxHeld`, or `maxHeldPerOwner|owner-3` for a limit per
 *  owner, key (`maxWaitersPerKey|k0`) or session (`maxHoldsPerSession|7`). Absent = 0. */
export type LimitCounts = Map<string, number>;

interface Admission {
  /** The leader's applied index when it appended the entry (its admission judged that state). */
  appliedIndex: number;
  claims: string[];
}

export interface LimitStats {
  /** Entries whose admission the check saw, and their claims checked. */
  admissionsChecked: number;
  claimsChecked: number;
  /** Entries after which some count stood at its limit, or above it (soft growth). */
  entriesAtLimit: number;
  entriesOverLimit: number;
  /** Soft growth (hand-offs) summed over every count. */
  softGrowth: number;
}

function counterId(limit: Limit, entity?: string | number): string {
  return entity === undefined ? limit : `${limit}|${entity}`;
}

function limitOfCounter(id: string): Limit {
  const bar = id.indexOf('|');
  return (bar < 0 ? id : id.slice(0, bar)) as Limit;
}

/** What a count is, in a violation message. */
function countName(id: string): string {
  const bar = id.indexOf('|');
  const entity = bar < 0 ? '' : id.slice(bar + 1);
  switch (limitOfCounter(id)) {
    case 'maxHeld':
      return 'leases held in all';
    case 'maxHeldPerOwner':
      return `leases held by ${entity}`;
    case 'maxKeys':
      return 'key records';
    case 'maxWaiters':
      return 'waiters in all lines';
    case 'maxWaitersPerKey':
      return `waiters in ${entity}'s line`;
    case 'maxSessions':
      return 'open sessions';
    case 'maxHoldsPerSession':
      return `holds under session ${entity}`;
  }
}

/** The counts entry `cmd` itself added to by one (see the header: own_j). */
function ownAdds(cmd: LockCommand, result: LockResult): string[] {
  if (cmd.type === 'openSession') return result.type === 'openSession' && !result.replayed ? ['maxSessions'] : [];
  if (cmd.type !== 'acquire' || result.type !== 'acquire' || result.replayed) return [];
  const own: string[] = [];
  if (result.acquired) {
    own.push('maxHeld', counterId('maxHeldPerOwner', cmd.owner), 'maxKeys');
    if ((cmd.sessionId ?? 0) > 0) own.push(counterId('maxHoldsPerSession', cmd.sessionId));
  }
  if (result.waitTicket !== undefined) own.push('maxWaiters', counterId('maxWaitersPerKey', cmd.key));
  return own;
}

export class LimitCheck {
  readonly stats: LimitStats = { admissionsChecked: 0, claimsChecked: 0, entriesAtLimit: 0, entriesOverLimit: 0, softGrowth: 0 };
  /** Admissions seen at the leaders, by index and term (one (index, term) is one entry of one leader). */
  private readonly admitted = new Map<number, Map<number, Admission>>();
  /** soft_j per entry that had any. */
  private readonly softAt = new Map<number, Map<string, number>>();
  /** Counts an admitted entry's own request added that its admission had not claimed (a violation names them). */
  private readonly unclaimedAt = new Map<number, string[]>();
  /** over_T and the running sum of soft_j over the current term. */
  private termOver = new Map<string, number>();
  private readonly termSoft = new Map<string, number>();

  constructor(
    readonly limits: Readonly<AdmissionLimits>,
    readonly seed: number,
    /** The owners and keys of the run (every client's owner, the profile's keys). */
    private readonly owners: readonly string[],
    private readonly keys: readonly string[],
  ) {}

  private finite(limit: Limit): boolean {
    return Number.isFinite(this.limits[limit]);
  }

  /** A leader appended `cmd` at (index, term); `machine` is its applied state, the one its admission judged. */
  proposed(index: number, term: number, cmd: LockCommand, machine: LockMachineLike): void {
    const claims = this.claimsOf(cmd, machine).filter((id) => this.finite(limitOfCounter(id)));
    if (claims.length === 0) return;
    let byTerm = this.admitted.get(index);
    if (byTerm === undefined) this.admitted.set(index, (byTerm = new Map()));
    byTerm.set(term, { appliedIndex: machine.appliedIndex, claims });
  }

  /** What the request may add when it applies, judged on the leader's applied state (the header's list). */
  private claimsOf(cmd: LockCommand, m: LockMachineLike): string[] {
    if (cmd.type === 'openSession') return ['maxSessions'];
    if (cmd.type !== 'acquire') return [];
    const record = m.recordOf(cmd.key);
    const claims: string[] = [];
    const many = cmd.shared === true || (cmd.limit ?? 1) >= 2;
    if (many || record === null || record === undefined) claims.push('maxHeld');
    if (record?.owner !== cmd.owner) claims.push(counterId('maxHeldPerOwner', cmd.owner));
    if (record === undefined) claims.push('maxKeys');
    if ((cmd.waitMs ?? 0) > 0) claims.push('maxWaiters', counterId('maxWaitersPerKey', cmd.key));
    if ((cmd.sessionId ?? 0) > 0) claims.push(counterId('maxHoldsPerSession', cmd.sessionId));
    return claims;
  }

  /** Every count with a finite limit, as `m` has it now. */
  capture(m: LockMachineLike): LimitCounts {
    const counts: LimitCounts = new Map();
    const put = (limit: Limit, n: number, entity?: string | number) => {
      if (n > 0) counts.set(counterId(limit, entity), n);
    };
    if (this.finite('maxHeld')) put('maxHeld', m.leaseCount);
    if (this.finite('maxKeys')) put('maxKeys', m.keyCount);
    if (this.finite('maxWaiters')) put('maxWaiters', m.waiterCount);
    if (this.finite('maxSessions')) put('maxSessions', m.sessionCount);
    if (this.finite('maxHeldPerOwner')) for (const owner of this.owners) put('maxHeldPerOwner', m.leaseCountOf(owner), owner);
    if (this.finite('maxWaitersPerKey')) for (const key of this.keys) put('maxWaitersPerKey', m.waiterCountOf(key), key);
    if (this.finite('maxHoldsPerSession')) for (const s of m.sessionList?.() ?? []) put('maxHoldsPerSession', s.holds, s.id);
    return counts;
  }

  /** Judge entry `entry` (in log order, once) from the counts just before and after it; a violation or null. */
  judge(entry: Entry, cmd: LockCommand, result: LockResult, pre: LimitCounts, post: LimitCounts): string | null {
    const i = entry.index;
    const own = new Set(ownAdds(cmd, result));
    const grew: string[] = [];
    const soft = new Map<string, number>();
    for (const id of new Set([...pre.keys(), ...post.keys()])) {
      const change = (post.get(id) ?? 0) - (pre.get(id) ?? 0);
      if (change > 0) grew.push(id);
      const s = change - (own.has(id) ? 1 : 0);
      if (s > 0) soft.set(id, s);
    }
    if (soft.size > 0) {
      this.softAt.set(i, soft);
      for (const [id, s] of soft) {
        this.termSoft.set(id, (this.termSoft.get(id) ?? 0) + s);
        this.stats.softGrowth += s;
      }
    }
    if (cmd.type === 'termStart') {
      // The new leader counts from this state: what stands above a limit now is the term's starting excess.
      this.termOver = new Map();
      for (const [id, n] of post) if (n > this.limits[limitOfCounter(id)]) this.termOver.set(id, n - this.limits[limitOfCounter(id)]);
      this.termSoft.clear();
    }
    this.noteLevels(post);
    const at = `entry ${i}/t${entry.term} (${describe(cmd)})`;
    const admission = this.admitted.get(i)?.get(entry.term);
    this.admitted.delete(i);
    if (admission !== undefined) {
      const unclaimed = [...own].filter((id) => !admission.claims.includes(id) && this.finite(limitOfCounter(id)));
      if (unclaimed.length > 0) this.unclaimedAt.set(i, unclaimed);
      this.stats.admissionsChecked++;
      for (const id of admission.claims) {
        this.stats.claimsChecked++;
        const n = post.get(id) ?? 0;
        const softSince = this.softBetween(admission.appliedIndex, i, id);
        const limit = limitOfCounter(id);
        if (n > this.limits[limit] + softSince) {
          return `limits: ${at} left ${n} ${countName(id)}, above limits.${limit} (${this.limits[limit]}): its leader admitted it at applied index ${admission.appliedIndex}, where the applied count and its proposals in flight promised at most the limit plus what hand-offs granted since (${softSince})${this.unclaimedBetween(admission.appliedIndex, i, id)} — seed ${this.seed}`;
        }
      }
    }
    for (const id of grew) {
      const n = post.get(id)!;
      const limit = limitOfCounter(id);
      const over = this.termOver.get(id) ?? 0;
      const softInTerm = this.termSoft.get(id) ?? 0;
      if (n > this.limits[limit] + over + softInTerm) {
        return `limits: ${at} left ${n} ${countName(id)}, above limits.${limit} (${this.limits[limit]}) + ${over} over it at term ${entry.term}'s start + ${softInTerm} granted by hand-offs in the term since — seed ${this.seed}`;
      }
    }
    return null;
  }

  /** Sum of soft_j(id) over j in (from, to]. */
  private softBetween(from: number, to: number, id: string): number {
    let sum = 0;
    for (let j = from + 1; j <= to; j++) sum += this.softAt.get(j)?.get(id) ?? 0;
    return sum;
  }

  /** The entries in (from, to] whose own request added to `id` though their admission had not claimed it. */
  private unclaimedBetween(from: number, to: number, id: string): string {
    const found: number[] = [];
    for (let j = from + 1; j <= to; j++) if (this.unclaimedAt.get(j)?.includes(id)) found.push(j);
    return found.length === 0
      ? ''
      : `; entr${found.length === 1 ? 'y' : 'ies'} ${found.join(', ')} added to it what ${found.length === 1 ? 'its' : 'their'} admission had not claimed`;
  }

  private noteLevels(post: LimitCounts): void {
    let atLimit = false;
    let over = false;
    for (const [id, n] of post) {
      const limit = this.limits[limitOfCounter(id)];
      if (n === limit) atLimit = true;
      if (n > limit) over = true;
    }
    if (atLimit) this.stats.entriesAtLimit++;
    if (over) this.stats.entriesOverLimit++;
  }
}

function describe(cmd: LockCommand): string {
  const parts: string[] = [cmd.type];
  if ('key' in cmd) parts.push(cmd.key);
  if ('owner' in cmd && cmd.owner !== '')
    parts.push(`by ${cmd.owner}${'requestId' in cmd && cmd.requestId !== '' ? `/${cmd.requestId}` : ''}`);
  if ('sessionId' in cmd && (cmd.sessionId ?? 0) !== 0) parts.push(`session ${cmd.sessionId}`);
  return parts.join(' ');
}
