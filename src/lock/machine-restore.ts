// A machine's state rebuilt from a decoded snapshot (snapshot.ts decodeState) or from the applied store's
// records (store-records.ts), into an empty state: the derived indexes (owner counts, heaps, session links,
// groups in line) rebuilt, and every cross-reference the snapshot could get wrong checked — a hold under a
// session that cannot own it, a key both held and free, waiters for a key nothing holds or delays, a request
// waiting twice — refused with SnapshotDecodeError rather than loaded.
import { markGrantable } from './machine-groups.js';
import { requestKeyOf } from './machine-sessions.js';
import type { MachineState } from './machine-state.js';
import { useClusterLevel } from './machine-time.js';
import { joinLine } from './machine-wait-lines.js';
import type { Lease } from './lease.js';
import { SnapshotDecodeError, type DecodedState } from './snapshot.js';

/** Loads `state` into the empty `s`; `at` names where a failure is reported. */
export function loadState(s: MachineState, state: DecodedState, at: number): void {
  s.appliedIndex = state.appliedIndex;
  useClusterLevel(s, state.clusterLevel);
  s.termLastStampMs = state.termLastStampMs;
  for (const id of state.ranMembers) s.ranMembers.add(id);
  s.logNowMs = state.nowMs;
  s.epochTerm = state.epochTerm;
  s.epochStartMs = state.epochStartMs;
  s.forgottenWatermark = state.forgottenWatermark;
  for (const session of state.sessions) {
    s.sessions.set(session.id, session);
    if (session.requestId !== '') s.sessionsByRequest.set(requestKeyOf(session.owner, session.requestId), session);
  }
  s.sessionDeadlines.pushAll(state.sessions);
  s.sessionEndBy.pushAll(state.sessions);
  const leases = state.leases;
  s.leases.reserve(leases.length);
  // Distinct keys: decodeState refuses a key twice, and the store keeps one record a key.
  s.leases.addAllAbsent(leases);
  // The holds of no session, in the order read, become both lease heaps' items (adopt: each heap ordered
  // in O(n), no copy pushed one at a time); gathered in this one pass rather than by a second over a million.
  let own: Lease[] = [];
  for (let i = 0; i < leases.length; i++) {
    const lease = leases[i]!;
    lease.owner = s.countOwner(lease.owner, 1);
    // A hold the decoder attached to its session already (the applied store's key records name it;
    // store-records.ts checked the session and its owner): one lookup less per hold of a million.
    if (lease.session !== null) s.sessionHoldCount++;
    else own.push(lease);
  }
  for (const [key, sessionId] of state.sessionHolds) {
    const lease = s.leases.get(key);
    const session = s.sessions.get(sessionId);
    if (lease === undefined || session === undefined || lease.owner !== session.owner) {
      throw new SnapshotDecodeError(`key ${JSON.stringify(key)} is held under session ${sessionId}, which it cannot be`, at);
    }
    lease.session = session;
    session.holds.add(lease);
    s.sessionHoldCount++;
  }
  // A snapshot (or a store of rest format 1) lists its session holds apart: they leave the heaps' share.
  if (state.sessionHolds.length > 0) own = own.filter((lease) => lease.session === null);
  s.deadlines.adopt(own.slice());
  s.endBy.adopt(own);
  // In freeing-time order (ties by key), the order forget() walks; see freeKeyLastTokens.
  const free = state.freeKeys.sort((a, b) => a.freedAtMs - b.freedAtMs || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const { key, lastToken, freedAtMs } of free) {
    if (s.leases.has(key)) {
      throw new SnapshotDecodeError(`key ${JSON.stringify(key)} is both held and free`, at);
    }
    s.freeKeyLastTokens.free(key, lastToken, freedAtMs);
  }
  for (const [key, lockDelayMs] of state.holdDelays) {
    if (!s.leases.has(key)) throw new SnapshotDecodeError(`key ${JSON.stringify(key)} has a hold's lock-delay but no lease`, at);
    s.delays.setHoldDelay(key, lockDelayMs);
  }
  for (const [key, untilMs] of state.keyDelays) s.delays.delayKey(key, untilMs);
  for (const [key, value] of state.holdValues) {
    if (!s.leases.has(key)) throw new SnapshotDecodeError(`key ${JSON.stringify(key)} has a hold's value but no lease`, at);
    s.holdValues.set(key, value);
  }
  for (const group of state.groups) {
    if (s.leases.has(group.key) || s.freeKeyLastTokens.has(group.key)) {
      throw new SnapshotDecodeError(`key ${JSON.stringify(group.key)} has many holds and another record`, at);
    }
    s.groups.set(group.key, group);
    for (const hold of group.holds) {
      hold.owner = s.countOwner(hold.owner, 1);
      s.groupHoldCount++;
      const sessionId = state.groupHoldSessions.get(hold) ?? 0;
      if (sessionId > 0) {
        const session = s.sessions.get(sessionId);
        if (session === undefined || session.owner !== hold.owner)
          throw new SnapshotDecodeError(`a hold of ${JSON.stringify(group.key)} is under session ${sessionId}, which it cannot be`, at);
        hold.session = session;
        session.groupHolds.add(hold);
        s.groupSessionHoldCount++;
      } else {
        s.deadlines.push(hold);
        s.endBy.push(hold);
      }
    }
  }
  for (const w of state.waiters) {
    // The machine's invariant: a key has waiters only while it has a lease, many holds, or is in lock-delay.
    if (!s.leases.has(w.key) && !s.groups.has(w.key) && s.delays.untilMs(w.key) === undefined) {
      throw new SnapshotDecodeError(`key ${JSON.stringify(w.key)} has waiters but neither a lease nor a lock-delay`, at);
    }
    if (s.lines.byRequestOf(w.owner, w.requestId) !== undefined) {
      throw new SnapshotDecodeError(`request ${JSON.stringify(w.requestId)} of ${JSON.stringify(w.owner)} waits twice`, at);
    }
    if (w.sessionId > 0 && s.sessions.get(w.sessionId)?.owner !== w.owner) {
      throw new SnapshotDecodeError(`a waiter for key ${JSON.stringify(w.key)} is under session ${w.sessionId}, which it cannot be`, at);
    }
    joinLine(s, w);
  }
  for (const group of s.groups.values()) markGrantable(s, group);
}
