// The leader's own proposals beyond client commands: proactive expiry (of leases and of waits) and idle
// checkpoints.
// - Expiry: an `expire {key, token}` for every lease past its deadline by the leader's now, so waiters
//   proceed without polling and dead locks do not pile up. A lease stays in expiredLeases() until its
//   expire applies, so what is in flight is remembered: one proposal per lease.
// - Wait deadlines: a `dequeue {key, ticket, deadline}` for every waiter whose wait deadline passed by the
//   leader's now (wait-line.ts), so its caller hears "not acquired" on time — as a fact of the log. One
//   proposal per waiter, the same way.
// - Sessions: an `expireSession {sessionId}` for every session past its deadline (session.ts), so its holds
//   and waiters go in one entry. One proposal per session, the same way.
// - Lock-delays: an `undelay {key}` for every key whose lock-delay has passed, so its line is served (and
//   the key's delay record goes). One proposal per key, the same way.
// - Hand-offs of keys with many holds (holds.ts): a `handOff {key}` for every key whose line's head fits
//   but was not granted by the entry that made room (one grant per key per entry). One per key in flight.
// - Checkpoint: when leases exist and nothing was proposed for checkpointIdleMs, a checkpoint records
//   elapsed log time, so a chain of short terms cannot freeze a dead lease (LEASES.md). At most one in
//   flight: a leader that cannot commit must not pile them up in its log.
// - Forget: when the oldest free key was freed more than freeKeyRetentionMs ago (log time), a `forget`
//   with that cut-off, so the free keys' records stay bounded by the churn of one retention period. At
//   most one in flight; the cut-off travels in the entry, so replicas with other settings agree.
// - Cluster level (versions.ts): once every member is known to read a level above the log's, a
//   `clusterLevel` entry moves the cluster there. Never before: a member that cannot read an entry stops.
//   At most one in flight.
// - Members that ran (from level 2): a `memberRan` for every member the Raft leader's progress shows has
//   acknowledged entries and the log does not record yet, so a wiped member is refused on a bootstrap
//   start by every peer, restarted or not (identity.ts). One proposal per member in flight.
import type { LockCommand } from '../commands.js';
import type { DequeueResult, ExpireResult, HandOffResult, SessionEndResult, UndelayResult } from '../types.js';
import type { LockStateView, ProposalId } from './types.js';
import { LEVEL_CLOCK_PROGRESS } from '../versions.js';

export type HousekeepingProposal =
  | { kind: 'expire'; leaseId: string }
  | { kind: 'dequeue'; waiterId: string }
  | { kind: 'undelay'; key: string }
  | { kind: 'handOff'; key: string }
  | { kind: 'expireSession'; sessionId: bigint }
  | { kind: 'checkpoint' }
  | { kind: 'forget' }
  | { kind: 'clusterLevel' }
  | { kind: 'memberRan'; memberId: string };

export class Housekeeping {
  /** `${key}#${token}` -> the proposal expiring it. */
  private readonly expiring = new Map<string, ProposalId>();
  /** `${key}#${ticket}` -> the proposal ending that wait. */
  private readonly dequeuing = new Map<string, ProposalId>();
  /** key -> the proposal ending its lock-delay. */
  private readonly undelaying = new Map<string, ProposalId>();
  /** key -> the proposal handing it to its next head. */
  private readonly handingOff = new Map<string, ProposalId>();
  /** session id -> the proposal expiring it. */
  private readonly expiringSessions = new Map<bigint, ProposalId>();
  private checkpoint: ProposalId | null = null;
  private forget: ProposalId | null = null;
  private raisingLevel: ProposalId | null = null;
  /** The lowest cluster level every member is known to read (the adapter's knowledge of its peers'
   *  builds, versions.ts); undefined while some member has not been heard from. */
  membersReadLevel: number | undefined = undefined;
  /** Members known to have run (the adapter's reading of the Raft leader's progress). */
  membersRan: readonly string[] = [];
  /** member id -> the proposal recording that it ran. */
  private readonly recordingRan = new Map<string, ProposalId>();
  /** Stamp of the last proposal this node made as leader (any kind). */
  lastProposalAtMs = 0;
  /** Our proposals that timed out while their entry stayed in our log, by id: still in flight until the log
   *  applies that index or the leadership ends. Settled at a timeout instead, a leader whose log commits
   *  slower than its proposal timeout proposed every due entry again at each tick, and its log outgrew what
   *  the followers could take (with 30 ms proposal timeouts: 500 entries ahead, never converging after a
   *  partition healed). */
  private readonly unknownOutcome = new Map<ProposalId, { purpose: HousekeepingProposal; index: number }>();

  constructor(
    private readonly checkpointIdleMs: number,
    private readonly expireBatch: number,
    private readonly freeKeyRetentionMs: number = Infinity,
  ) {}

  get expiringCount(): number {
    return this.expiring.size;
  }

  get checkpointInFlight(): boolean {
    return this.checkpoint !== null;
  }

  /** What to propose now; `propose` stamps and sends each command and returns its id. */
  run(state: LockStateView, clockMs: number, propose: (command: LockCommand, purpose: HousekeepingProposal) => ProposalId): void {
    for (const due of state.expiredLeases(clockMs, this.expireBatch)) {
      const leaseId = `${due.key}#${due.token}`;
      if (this.expiring.has(leaseId)) continue;
      this.expiring.set(leaseId, propose({ type: 'expire', timeMs: 0, key: due.key, token: due.token }, { kind: 'expire', leaseId }));
    }
    for (const due of state.dueWaiters(clockMs, this.expireBatch)) {
      const waiterId = `${due.key}#${due.ticket}`;
      if (this.dequeuing.has(waiterId)) continue;
      this.dequeuing.set(
        waiterId,
        propose({ type: 'dequeue', timeMs: 0, key: due.key, ticket: due.ticket, cause: 'deadline' }, { kind: 'dequeue', waiterId }),
      );
    }
    for (const due of state.dueSessions(clockMs, this.expireBatch)) {
      if (this.expiringSessions.has(due.sessionId)) continue;
      const command: LockCommand = { type: 'expireSession', timeMs: 0, sessionId: Number(due.sessionId) };
      this.expiringSessions.set(due.sessionId, propose(command, { kind: 'expireSession', sessionId: due.sessionId }));
    }
    for (const due of state.dueDelays(clockMs, this.expireBatch)) {
      if (this.undelaying.has(due.key)) continue;
      this.undelaying.set(due.key, propose({ type: 'undelay', timeMs: 0, key: due.key }, { kind: 'undelay', key: due.key }));
    }
    for (const key of state.grantableKeys(this.expireBatch)) {
      if (this.handingOff.has(key)) continue;
      this.handingOff.set(key, propose({ type: 'handOff', timeMs: 0, key }, { kind: 'handOff', key }));
    }
    if (this.checkpoint === null && state.hasLiveLeases() && clockMs - this.lastProposalAtMs >= this.checkpointIdleMs) {
      this.checkpoint = propose({ type: 'checkpoint', timeMs: 0 }, { kind: 'checkpoint' });
    }
    if (this.forget === null && Number.isFinite(this.freeKeyRetentionMs) && state.freeKeyCount > 0) {
      const upToMs = state.logNowMs - this.freeKeyRetentionMs;
      const oldest = state.freedAtOfOldest(1);
      if (upToMs >= 0 && oldest !== undefined && oldest <= upToMs)
        this.forget = propose({ type: 'forget', timeMs: 0, upToMs }, { kind: 'forget' });
    }
    const level = this.membersReadLevel;
    if (this.raisingLevel === null && level !== undefined && level > state.clusterLevel) {
      this.raisingLevel = propose({ type: 'clusterLevel', timeMs: 0, level }, { kind: 'clusterLevel' });
    }
    if (state.clusterLevel >= LEVEL_CLOCK_PROGRESS) {
      for (const memberId of this.membersRan) {
        if (state.hasRun(memberId) || this.recordingRan.has(memberId)) continue;
        this.recordingRan.set(memberId, propose({ type: 'memberRan', timeMs: 0, memberId }, { kind: 'memberRan', memberId }));
      }
    }
  }

  /** An expire entry applied (ours or a previous leader's): that lease is no longer in flight. */
  expireApplied(result: ExpireResult): void {
    this.expiring.delete(`${result.key}#${result.token}`);
  }

  /** A dequeue entry applied (ours or a previous leader's): that wait is no longer in flight. */
  dequeueApplied(result: DequeueResult): void {
    this.dequeuing.delete(`${result.key}#${result.ticket}`);
  }

  /** A session ended (expired, or closed by its owner meanwhile): its expiry is no longer in flight. */
  sessionEnded(result: SessionEndResult): void {
    if (result.ended || result.reason === 'NOT_HELD') this.expiringSessions.delete(result.sessionId);
  }

  /** An undelay entry applied (ours or a previous leader's). */
  undelayApplied(result: UndelayResult): void {
    this.undelaying.delete(result.key);
  }

  /** A handOff entry applied (ours or a previous leader's). */
  handOffApplied(result: HandOffResult): void {
    this.handingOff.delete(result.key);
  }

  /** Our housekeeping proposal `id` applied or failed. */
  settled(id: ProposalId, purpose: HousekeepingProposal): void {
    if (purpose.kind === 'checkpoint') {
      if (this.checkpoint === id) this.checkpoint = null;
    } else if (purpose.kind === 'forget') {
      if (this.forget === id) this.forget = null;
    } else if (purpose.kind === 'clusterLevel') {
      if (this.raisingLevel === id) this.raisingLevel = null;
    } else if (purpose.kind === 'memberRan') {
      if (this.recordingRan.get(purpose.memberId) === id) this.recordingRan.delete(purpose.memberId);
    } else if (purpose.kind === 'expireSession') {
      if (this.expiringSessions.get(purpose.sessionId) === id) this.expiringSessions.delete(purpose.sessionId);
    } else if (purpose.kind === 'handOff') {
      if (this.handingOff.get(purpose.key) === id) this.handingOff.delete(purpose.key);
    } else if (purpose.kind === 'undelay') {
      if (this.undelaying.get(purpose.key) === id) this.undelaying.delete(purpose.key);
    } else if (purpose.kind === 'dequeue') {
      if (this.dequeuing.get(purpose.waiterId) === id) this.dequeuing.delete(purpose.waiterId);
    } else if (this.expiring.get(purpose.leaseId) === id) {
      this.expiring.delete(purpose.leaseId);
    }
  }

  /** Our proposal `id` timed out, its entry at `index` of our log: it may still commit, so it stays in
   *  flight until that index applies (`applied`) or the leadership ends. */
  timedOut(id: ProposalId, purpose: HousekeepingProposal, index: number): void {
    // Except a checkpoint: it exists to record time in office, and its stamp is as old as its proposal, so
    // once committed it records none of the time it waited. A fresh one may follow, as before (one in flight
    // at a time still): a leader's time in office must reach the log within a checkpoint interval, a tick and
    // a commit round of its writable time (LEASES.md "Liveness").
    if (purpose.kind === 'checkpoint') this.settled(id, purpose);
    else this.unknownOutcome.set(id, { purpose, index });
  }

  /** The entry at `index` applied: a timed-out proposal at or before it has its outcome in the state now. */
  applied(index: number): void {
    if (this.unknownOutcome.size === 0) return;
    for (const [id, pending] of this.unknownOutcome) {
      if (pending.index > index) continue;
      this.unknownOutcome.delete(id);
      this.settled(id, pending.purpose);
    }
  }

  /** Leadership ended: a later term proposes again what is still due. */
  leadershipLost(): void {
    for (const [id, pending] of this.unknownOutcome) this.settled(id, pending.purpose);
    this.unknownOutcome.clear();
    this.expiring.clear();
    this.dequeuing.clear();
    this.undelaying.clear();
    this.handingOff.clear();
    this.expiringSessions.clear();
  }
}
