// What each entry does: the dispatch of a decoded command, and the rules of a mutex key's acquire, renew,
// release, expire and revoke (machine.ts's header states every rule; SPEC "Guarantees"). The other entries
// are their parts': time, epochs, levels and forget (machine-time.ts), wait lines and session ends
// (machine-hand-off.ts), sessions (machine-sessions.ts), keys with many holds (machine-group-entries.ts).
// Every mutation's first outcome is remembered by (owner, request_id) and replayed to a retry; a request id
// used for another request is refused REQUEST_ID_REUSED.
import { isGroupAcquire } from './commands.js';
import type { AcquireCommand, ExpireCommand, LockCommand, ReleaseCommand, RenewCommand, RenewsCommand, RevokeCommand } from './commands.js';
import { acquireTerms, describeAcquireTerms, sameRequest } from './dedup.js';
import type { DedupOperation, DedupRecord } from './dedup-record.js';
import { GroupHold } from './holds.js';
import type { Lease } from './lease.js';
import { acquireOfMany, expireInGroup, handOffEntry, revokeInGroup } from './machine-group-entries.js';
import { holdOf, refusalIn, removeHold } from './machine-groups.js';
import { dequeue, endSession, handOff, handOffMany, sessionEnd, undelay } from './machine-hand-off.js';
import { endsExpired, grantedOutcome, hold, refusalBy, removeLease, supersedes } from './machine-leases.js';
import { openSession, renewSession, sessionError, sessionOf } from './machine-sessions.js';
import type { MachineState } from './machine-state.js';
import { advanceLogTime, forget, memberRan, raiseClusterLevel, startLeaseEpoch } from './machine-time.js';
import { queue, reusedInLine, waiterTerms } from './machine-wait-lines.js';
import type { Session } from './session.js';
import type {
  AcquireOutcome,
  AcquireResult,
  ErrorResult,
  ExpireResult,
  LockResult,
  RefusalReason,
  ReleaseResult,
  RenewOutcome,
  RenewResult,
  RenewsResult,
  RevokeResult,
  WaiterDecision,
} from './types.js';
import { LEVEL_MANY_HOLDERS, LEVEL_RENEWS_ENTRY, LEVEL_REVOKE_ONCE } from './versions.js';
export function execute(s: MachineState, index: number, term: number, command: LockCommand): LockResult {
  s.appliedIndex = index;
  const epoch = term > s.epochTerm ? startLeaseEpoch(s, term, command.timeMs) : null;
  if (epoch === null) advanceLogTime(s, command.timeMs);
  s.dedup.prune(s.logNowMs, s.keepAcquiresWhileHeld ? (owner, key) => keepAcquireRecord(s, owner, key) : undefined);
  switch (command.type) {
    case 'acquire':
      return acquire(s, index, command);
    case 'renew':
      return renew(s, index, command);
    case 'renews':
      return renews(s, index, command);
    case 'release':
      return release(s, index, command);
    case 'expire':
      return expire(s, index, command);
    case 'termStart':
      return { type: 'termStart', index, leasesExtended: epoch?.extended ?? 0, leasesEnded: epoch?.ended ?? 0 };
    case 'checkpoint':
      return { type: 'checkpoint', index };
    case 'clusterLevel':
      return raiseClusterLevel(s, index, command);
    case 'memberRan':
      return memberRan(s, index, command);
    case 'forget':
      return forget(s, index, command);
    case 'dequeue':
      return dequeue(s, index, command);
    case 'undelay':
      return undelay(s, index, command);
    case 'handOff':
      return handOffEntry(s, index, command);
    case 'openSession':
      return openSession(s, index, command);
    case 'renewSession':
      return renewSession(s, index, command);
    case 'closeSession':
    case 'expireSession':
      return sessionEnd(s, index, command);
    case 'revoke':
      return revoke(s, index, command);
  }
}

function acquire(s: MachineState, index: number, command: AcquireCommand): AcquireResult | ErrorResult {
  const terms = s.acquireTermsKept ? acquireTerms(command.sessionId ?? 0, command.limit ?? 1, command.shared === true) : 0n;
  const replay = replayOf(s, index, 'acquire', command.owner, command.requestId, command.key, terms);
  const waitingRefusal = command.queued === true && replay !== null && replay.type === 'acquire' && !replay.acquired;
  if (replay !== null && !waitingRefusal) return replay as AcquireResult | ErrorResult;
  const nowMs = s.logNowMs;
  // A retry of a request already in line keeps its place and its wait deadline (SPEC: it re-attaches).
  const inLine = s.lines.byRequestOf(command.owner, command.requestId);
  if (inLine !== undefined) {
    // From level 6 the same request: its terms too (a place under one session is no place under another).
    if (inLine.key !== command.key || (terms !== 0n && waiterTerms(inLine) !== terms))
      return reusedInLine(index, inLine, command.key, terms);
    return { type: 'acquire', index, replayed: true, ...refusalBy(s.leaseOf(command.key), nowMs), waitTicket: inLine.ticket };
  }
  let session: Session | null = null;
  if ((command.sessionId ?? 0) > 0) {
    const named = sessionOf(s, command.sessionId!);
    if (named === undefined || !named.isLiveAt(nowMs))
      return sessionError(
        index,
        'SESSION_NOT_OPEN',
        `session ${command.sessionId} is not open (closed, ran out, or never opened); open a new one`,
      );
    if (named.owner !== command.owner)
      return sessionError(
        index,
        'SESSION_OWNER_MISMATCH',
        `owner ${JSON.stringify(command.owner)} is not the owner of session ${command.sessionId}`,
      );
    session = named;
  }
  if (isGroupAcquire(command) && s.clusterLevel < LEVEL_MANY_HOLDERS) {
    // A snapshot below level 3 has no place for many holds: replicas restored from one would disagree.
    return {
      type: 'error',
      index,
      code: 'CLUSTER_LEVEL',
      message: `limit/shared: semaphores and shared holds need cluster level ${LEVEL_MANY_HOLDERS} (every member upgraded); the cluster is at ${s.clusterLevel}`,
    };
  }
  if (isGroupAcquire(command) || s.groups.has(command.key)) return acquireOfMany(s, index, command, session);
  const decided: WaiterDecision[] = [];
  let lease = s.leaseOf(command.key);
  const delayedUntilMs = s.delays.untilMs(command.key);
  if (delayedUntilMs !== undefined && delayedUntilMs <= nowMs) {
    // The key's lock-delay has passed but no undelay entry has ended it yet: this one does, and hands the
    // key to the line first, so a newcomer never overtakes the line.
    s.delays.undelay(command.key);
    if (lease === undefined) handOff(s, command.key, index, decided);
    lease = s.leaseOf(command.key);
  }
  if (lease !== undefined && lease.session !== null && !lease.isLiveAt(nowMs)) {
    // The hold ahead lives under a session that ran out, and no entry has ended it yet: this one ends the
    // whole session (each of its keys handed to its line), as its expireSession would.
    endSession(s, lease.session as Session, true, index, decided);
    lease = s.leaseOf(command.key);
  }
  if (lease !== undefined && !lease.isLiveAt(nowMs) && (s.lines.countFor(command.key) > 0 || s.delays.holdDelayOf(command.key) > 0)) {
    // The hold ahead ran out and no entry has ended it yet: this one does — into its lock-delay if it
    // carries one, else handing the key to the line first, so a newcomer never overtakes a waiter.
    removeLease(s, lease, true);
    handOff(s, command.key, index, decided);
    lease = s.leaseOf(command.key);
  }
  // A hand-off above reached a shared head: the key has many holds now, and this request is judged as one
  // of them (a mutex lease beside the group would be a second record of the key).
  if (s.groups.has(command.key)) return acquireOfMany(s, index, command, session, decided);
  const delayLeftMs = s.delays.leftMs(command.key, nowMs);
  // In lock-delay, held by another, or handed to a waiter in this very entry (whose token is this index:
  // a same-owner supersede would reuse it).
  // From level 4 the owner's own hold under another session blocks too (machine-leases.ts `supersedes`).
  const blocked =
    delayLeftMs > 0 ||
    (lease !== undefined &&
      lease.isLiveAt(nowMs) &&
      (lease.owner !== command.owner || lease.fencingToken === index || !supersedes(s, lease, session?.id ?? 0)));
  let outcome: AcquireOutcome;
  let waitTicket: number | undefined;
  if (blocked) {
    outcome = refusalBy(lease, nowMs);
    if ((command.waitMs ?? 0) > 0) {
      // In line: not an answer yet, so nothing is remembered; the entry that decides it remembers that.
      queue(s, index, command, session);
      waitTicket = index;
    }
  } else {
    lease = hold(s, command.key, lease, command.owner, index, command.ttlMs, command.lockDelayMs ?? 0, command.value ?? null, session);
    outcome = grantedOutcome(lease);
  }
  if (waitTicket === undefined) s.rememberAcquire(command, outcome);
  const result: AcquireResult = { type: 'acquire', index, replayed: false, ...outcome };
  if (waitTicket !== undefined) result.waitTicket = waitTicket;
  if (blocked && delayLeftMs > 0) result.delayMsLeft = delayLeftMs;
  if (decided.length > 0) result.decided = decided;
  return result;
}

function renew(s: MachineState, index: number, command: RenewCommand): RenewResult | ErrorResult {
  const replay = replayOf(s, index, 'renew', command.owner, command.requestId, command.key, command.token);
  if (replay !== null) return replay as RenewResult | ErrorResult;
  const group = s.groups.get(command.key);
  const lease: Lease | undefined = group !== undefined ? holdOf(s, group, command.owner) : s.leaseOf(command.key);
  const reason =
    group !== undefined ? refusalIn(s, group, lease as GroupHold | undefined, command, true) : refusal(s, lease, command, true);
  if (lease !== undefined && lease.session !== null && reason === 'UNSPECIFIED') {
    return sessionError(
      index,
      'RENEW_THE_SESSION',
      `the hold on ${JSON.stringify(command.key)} lives under session ${lease.session.fencingToken}: renew the session, not the hold`,
    );
  }
  let outcome: RenewOutcome;
  if (lease === undefined || reason !== 'UNSPECIFIED') {
    outcome = { renewed: false, ttlMs: 0, expiresAtMs: 0, reason };
  } else {
    s.touch(command.key);
    lease.grant(lease.owner, lease.fencingToken, command.ttlMs, s.logNowMs);
    s.deadlines.update(lease);
    s.granted(lease);
    outcome = { renewed: true, ttlMs: command.ttlMs, expiresAtMs: lease.expiresAtMs, reason };
    if (s.eventSink !== null) {
      if (lease instanceof GroupHold) s.emit('RENEWED', command.key, lease.owner, command.token, 0, lease.value, lease.shared);
      else s.emit('RENEWED', command.key, lease.owner, command.token, 0, s.holdValues.get(command.key) ?? null);
    }
  }
  s.remember(command, { type: 'renew', outcome, token: command.token });
  return { type: 'renew', index, replayed: false, ...outcome };
}

/** The renews of one leader turn (tag 24, level 7): each exactly as a lone renew without a request id at
 *  this entry's log time — owner, current token, not run out, a hold under a session refused — in the
 *  entry's order, so a second renew of a key sees the first's effect. None is remembered: a renew is
 *  idempotent by token (LEASES.md "Renews without a dedup record"). */
function renews(s: MachineState, index: number, command: RenewsCommand): RenewsResult | ErrorResult {
  if (s.clusterLevel < LEVEL_RENEWS_ENTRY) {
    // Below level 7 a member may not read the tag; one that does must apply it alike with those that
    // refused it, so every replica refuses it as a whole.
    return {
      type: 'error',
      index,
      code: 'CLUSTER_LEVEL',
      message: `a renews entry needs cluster level ${LEVEL_RENEWS_ENTRY} (every member upgraded); the cluster is at ${s.clusterLevel}`,
    };
  }
  const answers: (RenewResult | ErrorResult)[] = [];
  for (const r of command.renews)
    answers.push(
      renew(s, index, { type: 'renew', timeMs: command.timeMs, key: r.key, owner: r.owner, token: r.token, ttlMs: r.ttlMs, requestId: '' }),
    );
  return { type: 'renews', index, renews: answers };
}

function release(s: MachineState, index: number, command: ReleaseCommand): ReleaseResult | ErrorResult {
  const replay = replayOf(s, index, 'release', command.owner, command.requestId, command.key, command.token);
  if (replay !== null) return replay as ReleaseResult | ErrorResult;
  const group = s.groups.get(command.key);
  const lease: Lease | undefined = group !== undefined ? holdOf(s, group, command.owner) : s.leaseOf(command.key);
  const reason =
    group !== undefined ? refusalIn(s, group, lease as GroupHold | undefined, command, false) : refusal(s, lease, command, false);
  const decided: WaiterDecision[] = [];
  // A live hold released starts no lock-delay; one that ran out ends as its expiry would (endsExpired).
  if (group !== undefined && lease instanceof GroupHold && reason === 'UNSPECIFIED') {
    removeHold(s, group, lease, endsExpired(s, lease, false));
    handOffMany(s, group, index, decided);
  } else if (lease !== undefined && reason === 'UNSPECIFIED') {
    removeLease(s, lease, endsExpired(s, lease, false));
    handOff(s, command.key, index, decided);
  }
  const outcome = { released: reason === 'UNSPECIFIED', reason };
  s.remember(command, { type: 'release', outcome, token: command.token });
  const result: ReleaseResult = { type: 'release', index, replayed: false, key: command.key, ...outcome };
  if (decided.length > 0) result.decided = decided;
  return result;
}

function expire(s: MachineState, index: number, command: ExpireCommand): ExpireResult {
  const group = s.groups.get(command.key);
  if (group !== undefined) return expireInGroup(s, index, command, group);
  const lease = s.leaseOf(command.key);
  const due = lease !== undefined && lease.session === null && BigInt(lease.fencingToken) === command.token && !lease.isLiveAt(s.logNowMs);
  const result: ExpireResult = { type: 'expire', index, expired: due, key: command.key, token: command.token };
  if (due) {
    removeLease(s, lease, true);
    const decided: WaiterDecision[] = [];
    handOff(s, command.key, index, decided);
    if (decided.length > 0) result.decided = decided;
  }
  return result;
}

/** An operator ends a hold (SPEC "Revoke"): as if it ran out, but with no lock-delay — the key goes to
 *  its line at once; the revoked holder's writes are refused by the resource once the next is granted. A
 *  hold that had run out already ends as its expiry would, into its lock-delay (endsExpired, level 5).
 *  A revoke with a request id (tag 23, level 5) is remembered like any mutation: a retry of it answers its
 *  first outcome and ends nothing, not even a hold granted since (machine.ts `revoke`). */
function revoke(s: MachineState, index: number, command: RevokeCommand): RevokeResult | ErrorResult {
  const owner = command.owner ?? '';
  if (command.requestId !== undefined) {
    if (s.clusterLevel < LEVEL_REVOKE_ONCE) {
      // A snapshot below level 5 has no place for a revoke's record: replicas restored from one would
      // disagree with those that applied it.
      return {
        type: 'error',
        index,
        code: 'CLUSTER_LEVEL',
        message: `a revoke with a request id needs cluster level ${LEVEL_REVOKE_ONCE} (every member upgraded); the cluster is at ${s.clusterLevel}`,
      };
    }
    const replay = replayOf(s, index, 'revoke', owner, command.requestId, command.key, command.token);
    if (replay !== null) return replay as RevokeResult | ErrorResult;
  }
  const group = s.groups.get(command.key);
  const result = group !== undefined ? revokeInGroup(s, index, command, group) : revokeMutex(s, index, command);
  if (command.requestId !== undefined)
    s.remember(
      { owner, requestId: command.requestId, key: command.key },
      { type: 'revoke', outcome: { revoked: result.revoked }, token: command.token },
    );
  return result;
}

function revokeMutex(s: MachineState, index: number, command: RevokeCommand): RevokeResult {
  const lease = s.leaseOf(command.key);
  const result: RevokeResult = { type: 'revoke', index, replayed: false, key: command.key, revoked: [] };
  if (lease === undefined || (command.token !== 0n && BigInt(lease.fencingToken) !== command.token)) return result;
  result.revoked.push(BigInt(lease.fencingToken));
  removeLease(s, lease, endsExpired(s, lease, false), 'REVOKED');
  const decided: WaiterDecision[] = [];
  handOff(s, command.key, index, decided);
  if (decided.length > 0) result.decided = decided;
  return result;
}

/** Why renew/release by (owner, token) is refused; 'UNSPECIFIED' when it may proceed. */
function refusal(s: MachineState, lease: Lease | undefined, request: { owner: string; token: bigint }, mustBeLive: boolean): RefusalReason {
  if (lease === undefined) return 'NOT_HELD';
  if (lease.owner !== request.owner) return 'WRONG_OWNER';
  if (BigInt(lease.fencingToken) !== request.token) return 'WRONG_TOKEN';
  if (mustBeLive && !lease.isLiveAt(s.logNowMs)) return 'EXPIRED';
  return 'UNSPECIFIED';
}

/**
 * From cluster level 6: an acquire's record stays while its owner holds the key — the hold it granted, or
 * one that superseded it (an owner has one hold a key) — so a copy of it, however late, replays instead of
 * superseding a hold its client trusts (versions.ts, level 6). A record stays only while its hold does:
 * the records kept are bounded by the holds and by the requests each owner made while holding.
 */
function keepAcquireRecord(s: MachineState, owner: string, key: string): boolean {
  const group = s.groups.size === 0 ? undefined : s.groups.get(key);
  if (group !== undefined) return group.holdOf(owner) !== undefined;
  return s.leases.get(key)?.owner === owner;
}

/** The remembered outcome for a retried request, an error if the request id was used for something else,
 *  or null when the request is new (or carries no request id). */
function replayOf(
  s: MachineState,
  index: number,
  type: DedupOperation,
  owner: string,
  requestId: string,
  key: string,
  token: bigint,
): LockResult | null {
  if (requestId === '') return null;
  const record = s.dedup.find(owner, requestId);
  if (record === undefined) return null;
  if (!sameRequest(record, type, key, token)) {
    return {
      type: 'error',
      index,
      code: 'REQUEST_ID_REUSED',
      message:
        `request_id ${JSON.stringify(requestId)} of owner ${JSON.stringify(owner)} was first used for ` +
        `${record.type} of key ${JSON.stringify(record.key)}${recordedTerms(record, type, key, token)}; ` +
        `use a new request_id for a different request`,
    };
  }
  switch (record.type) {
    case 'acquire':
      return { type: 'acquire', index, replayed: true, ...record.outcome };
    case 'renew':
      return { type: 'renew', index, replayed: true, ...record.outcome };
    case 'release':
      return { type: 'release', index, replayed: true, key, ...record.outcome };
    case 'revoke':
      return { type: 'revoke', index, replayed: true, key, revoked: record.outcome.revoked };
  }
}

/** What the remembered request named besides its key, and (same type and key: other acquire terms) what
 *  this one asks, for REQUEST_ID_REUSED's message. */
function recordedTerms(record: DedupRecord, type: DedupOperation, key: string, token: bigint): string {
  if (record.type !== 'acquire') return ` token ${record.token}`;
  if (record.token === 0n) return '';
  const first = ` (${describeAcquireTerms(record.token)})`;
  return type === 'acquire' && record.key === key ? `${first}, this one asks ${describeAcquireTerms(token)}` : first;
}
