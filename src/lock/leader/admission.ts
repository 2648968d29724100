// Resource limits, judged at the leader before it proposes an acquire (SPEC "Limits"): the number of
// waiters per key and in all, leases per owner and in all, and key records (free keys' last_token
// included). A refusal is RESOURCE_EXHAUSTED with a message naming the limit and its value.
//
// Why here and not in the state machine: the limits are node-local config, and the machine must decide
// identically on every replica whatever each node's YAML says; the leader's admission changes no
// replicated state, so it may use its own values. For the bound to hold while acquires are in flight, the
// counts are what the machine has applied PLUS what this leader has proposed and not yet seen settle,
// each acquire counted by what it could add at most (a lease where the key has none — for a hold that may
// share its key, shared or a semaphore's slot, always —, a record where the machine keeps none, a lease for
// its owner where the key's lease is someone else's, a place in a line for a blocking acquire). Together
// these are the whole log: a leader admits nothing before its term start applied (term-gate.ts), so whatever
// an earlier leader left in its log — in flight there, or committed and not applied here yet — is in the
// applied state by then, and every entry after its term start is its own proposal, counted here until it
// APPLIES. A proposal that timed out is not gone: its entry stays in this leader's log and may still commit,
// so its claim stays counted (by the index the driver reports) until the log applies that index, or the
// leadership ends (a later term of ours starts after it). (Released at the timeout, what was admitted
// meanwhile could commit beside it; lock mutant l2 plants that.)
// A claim is judged on the state it meets, and that state moves on before the acquire applies: one judged
// while its key had a lease or a record counts no lease (or none of its owner, or no record), yet if that
// lease ends (or that record is forgotten) first, the acquire adds it — while the room the end made counted
// as free to every admission meanwhile. So such a claim is judged again as each entry applies, and a part
// once counted stays counted until it settles. (Judged once: with maxHeld 1, an acquire admitted while an
// expire or a revoke freed a key that an acquire in flight then took made two leases; two shared acquires
// admitted while their key had one exclusive hold were both granted once a revoke ended it.)
// Waiters are counted from the replicated lines, so a leader change does not reset them.
// A hand-off to a waiter (machine-hand-off.ts) is decided by the log, not admitted here: the waiter's own
// counts (its owner's, its session's) were judged when it joined the line, and it counts once granted. Most
// hand-offs replace one hold of the key by another in the same entry, adding no lease and no key record; an
// undelay grants after the hold ended in an earlier entry, and a key with many holds may hand the room of
// one exclusive hold to several shared ones. That much is soft: the lock simulation's `limits` check
// (test/sim/lock-limits.ts) allows a count above its limit by exactly what hand-offs granted.
import type { ValidAcquire } from '../validate.js';
import { limitMessage, type AdmissionLimits } from './admission-limits.js';
import type { LockStateView, ProposalId } from './types.js';

/** What admission reads of an acquire. */
type AcquireShape = Pick<ValidAcquire, 'key' | 'owner' | 'limit' | 'shared'>;

/** What one in-flight acquire may add when it applies. */
interface Claim {
  key: string;
  owner: string;
  /** It asks a hold that may share its key (shared, or a semaphore's slot). */
  many: boolean;
  lease: boolean;
  ownerLease: boolean;
  record: boolean;
  /** The key whose line it may join ('' = it does not wait). */
  waitKey: string;
  /** The session it may add a hold to (0 = none). */
  sessionId: number;
  /** An OpenSession: it adds a session. */
  opens: boolean;
}

export class Admission {
  private readonly claims = new Map<ProposalId, Claim>();
  private leasesInFlight = 0;
  private recordsInFlight = 0;
  private readonly ownerInFlight = new Map<string, number>();
  private waitersInFlight = 0;
  private readonly keyWaitersInFlight = new Map<string, number>();
  private opensInFlight = 0;
  private readonly sessionHoldsInFlight = new Map<number, number>();
  /** Claims of proposals whose outcome is unknown (timed out), by the index of their entry in our log. */
  private readonly unknownOutcome = new Map<ProposalId, number>();
  /** Acquire claims judged while their key had a lease or record (some part a finite limit counts is not
   *  counted): judged again as entries apply. */
  private readonly partial = new Set<ProposalId>();

  constructor(readonly limits: Readonly<AdmissionLimits>) {}

  /** Why an acquire of `req` must be refused now, or null. */
  refuseAcquire(state: LockStateView, req: AcquireShape): string | null {
    const claim = this.claimOf(state, req);
    const l = this.limits;
    if (claim.ownerLease && state.leaseCountOf(req.owner) + (this.ownerInFlight.get(req.owner) ?? 0) >= l.maxHeldPerOwner) {
      return limitMessage(
        'maxHeldPerOwner',
        l.maxHeldPerOwner,
        `owner ${JSON.stringify(req.owner)} holds or is acquiring that many locks; release one first`,
      );
    }
    if (claim.lease && state.leaseCount + this.leasesInFlight >= l.maxHeld) {
      return limitMessage('maxHeld', l.maxHeld, 'that many locks are held or being acquired; retry after some are released or expire');
    }
    if (claim.record && state.keyCount + this.recordsInFlight >= l.maxKeys) {
      return limitMessage(
        'maxKeys',
        l.maxKeys,
        "the cluster keeps that many key records (held keys and free keys' last tokens); free keys are forgotten after lock.freeKeyRetentionMs",
      );
    }
    return null;
  }

  /** Why a new session may not be opened now, or null. */
  refuseOpenSession(state: LockStateView): string | null {
    const l = this.limits;
    if (state.sessionCount + this.opensInFlight >= l.maxSessions)
      return limitMessage('maxSessions', l.maxSessions, 'that many sessions are open; close one or wait for one to expire');
    return null;
  }

  /** Why one more hold under session `sessionId` (which has `holds`) must be refused now, or null. */
  refuseSessionHold(sessionId: number, holds: number): string | null {
    const l = this.limits;
    if (holds + (this.sessionHoldsInFlight.get(sessionId) ?? 0) >= l.maxHoldsPerSession) {
      return limitMessage(
        'maxHoldsPerSession',
        l.maxHoldsPerSession,
        `session ${sessionId} holds or is acquiring that many locks; release one first`,
      );
    }
    return null;
  }

  /** An OpenSession was proposed as `id`. */
  proposedOpen(id: ProposalId): void {
    this.claims.set(id, {
      key: '',
      owner: '',
      many: false,
      lease: false,
      ownerLease: false,
      record: false,
      waitKey: '',
      sessionId: 0,
      opens: true,
    });
    this.opensInFlight++;
  }

  /** Why a blocking acquire of `key` may not join its line now, or null. */
  refuseWaiter(state: LockStateView, key: string): string | null {
    const waitersForKey = state.waiterCountOf(key) + (this.keyWaitersInFlight.get(key) ?? 0);
    const waitersInAll = state.waiterCount + this.waitersInFlight;
    const l = this.limits;
    if (waitersForKey >= l.maxWaitersPerKey)
      return limitMessage('maxWaitersPerKey', l.maxWaitersPerKey, 'that many callers already wait for this key');
    if (waitersInAll >= l.maxWaiters) return limitMessage('maxWaiters', l.maxWaiters, 'that many callers already wait for locks');
    return null;
  }

  /** An acquire of `req` was proposed as `id`: count what it may add until it settles. */
  proposed(id: ProposalId, state: LockStateView, req: AcquireShape, waits = false, sessionId = 0): void {
    const claim = this.claimOf(state, req);
    if (sessionId > 0) {
      claim.sessionId = sessionId;
      countIn(this.sessionHoldsInFlight, sessionId, 1);
    }
    if (waits) {
      claim.waitKey = req.key;
      this.waitersInFlight++;
      countIn(this.keyWaitersInFlight, req.key, 1);
    }
    this.claims.set(id, claim);
    if (claim.lease) this.leasesInFlight++;
    if (claim.record) this.recordsInFlight++;
    if (claim.ownerLease) countIn(this.ownerInFlight, claim.owner, 1);
    if (this.uncounted(claim)) this.partial.add(id);
  }

  /** Whether some part of `claim` a finite limit counts is not counted yet (unlimited parts cost nothing). */
  private uncounted(claim: Claim): boolean {
    const l = this.limits;
    return (
      (!claim.lease && l.maxHeld < Infinity) ||
      (!claim.ownerLease && l.maxHeldPerOwner < Infinity) ||
      (!claim.record && l.maxKeys < Infinity)
    );
  }

  /** Proposal `id` timed out: its entry, at `index` of this leader's log, may still commit. Its claim counts
   *  until the log applies that index (`applied`) or the leadership ends (`leadershipLost`). */
  timedOut(id: ProposalId, index: number): void {
    if (this.claims.has(id)) this.unknownOutcome.set(id, index);
  }

  /** The entry at `index` applied, leaving `state`: claims of timed-out proposals at or before it are in the
   *  state now, and a claim judged while its key had a lease counts what it may add now that it may not. */
  applied(index: number, state: LockStateView): void {
    for (const [id, at] of this.unknownOutcome) {
      if (at > index) continue;
      this.unknownOutcome.delete(id);
      this.settled(id);
    }
    for (const id of this.partial) this.rejudge(id, state);
  }

  /** Counts the parts of claim `id` that `state` would make it add, and keeps them counted. */
  private rejudge(id: ProposalId, state: LockStateView): void {
    const claim = this.claims.get(id)!;
    const now = this.claimOf(state, { key: claim.key, owner: claim.owner, shared: claim.many });
    if (now.lease && !claim.lease) {
      claim.lease = true;
      this.leasesInFlight++;
    }
    if (now.ownerLease && !claim.ownerLease) {
      claim.ownerLease = true;
      countIn(this.ownerInFlight, claim.owner, 1);
    }
    if (now.record && !claim.record) {
      claim.record = true;
      this.recordsInFlight++;
    }
    if (!this.uncounted(claim)) this.partial.delete(id);
  }

  /** This node no longer leads that term: if it leads again, its next term start applies after every entry
   *  of this one, so nothing of it needs counting here. */
  leadershipLost(): void {
    for (const id of this.unknownOutcome.keys()) this.settled(id);
    this.unknownOutcome.clear();
  }

  /** Proposal `id` applied (its effect is in the machine now) or failed. */
  settled(id: ProposalId): void {
    const claim = this.claims.get(id);
    if (!claim) return;
    this.claims.delete(id);
    this.partial.delete(id);
    if (claim.lease) this.leasesInFlight--;
    if (claim.record) this.recordsInFlight--;
    if (claim.opens) this.opensInFlight--;
    if (claim.sessionId > 0) countIn(this.sessionHoldsInFlight, claim.sessionId, -1);
    if (claim.waitKey !== '') {
      this.waitersInFlight--;
      countIn(this.keyWaitersInFlight, claim.waitKey, -1);
    }
    if (claim.ownerLease) countIn(this.ownerInFlight, claim.owner, -1);
  }

  private claimOf(state: LockStateView, req: AcquireShape): Claim {
    const record = state.recordOf(req.key);
    // A hold that may share its key adds a lease even where the key has one now: once that hold ends, every
    // such request in flight may be granted beside the others (a key turning from one exclusive hold to
    // shared ones), not one in its place.
    const many = req.shared === true || (req.limit ?? 1) >= 2;
    return {
      key: req.key,
      owner: req.owner,
      many,
      lease: many || !record,
      ownerLease: record?.owner !== req.owner,
      record: record === undefined,
      waitKey: '',
      sessionId: 0,
      opens: false,
    };
  }
}

/** Adds `delta` to `key`'s count in `counts`; a count that reaches 0 leaves the map (it stays bounded by what
 *  is in flight). */
function countIn<K>(counts: Map<K, number>, key: K, delta: 1 | -1): void {
  const n = (counts.get(key) ?? 0) + delta;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
