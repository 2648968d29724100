// The acquire decision: what a ready leader does with an acquire call, judged on the applied state and its
// own admission counts. Exactly one of:
// - re-attach: the request already has a place in this key's line (request-ids.ts); its call waits there,
//   and no entry is proposed (a second entry would only find the same place);
// - refuse: the session is another owner's (INVALID_ARGUMENT: a session's owner never changes, so the
//   applied state answers for every later entry too), a limit is reached (RESOURCE_EXHAUSTED, admission.ts),
//   or the cluster level is below what a semaphore or shared hold needs (the machine would refuse the entry
//   anyway: saying so here spares the log);
// - propose its entry. Never a grant and never a "not acquired": those are the log's (leader.ts).
import type { LockCommand } from '../commands.js';
import type { ValidAcquire } from '../validate.js';
import { LEVEL_MANY_HOLDERS } from '../versions.js';
import type { Admission } from './admission.js';
import { acquireCommandOf } from './call-commands.js';
import { placeInLine } from './request-ids.js';
import type { CallFailure, LockStateView } from './types.js';

export type AcquireStep =
  { kind: 'reattach'; key: string; ticket: number } | { kind: 'refuse'; failure: CallFailure } | { kind: 'propose'; command: LockCommand };

export function acquireStep(state: LockStateView, admission: Admission, req: ValidAcquire): AcquireStep {
  // A retry of a request already in line (its call here was lost, or went to a leader that is gone): it
  // re-attaches to its place without a new entry. Its decision may be applied already: then that is the
  // answer (the dedup table remembers it).
  const inLine = placeInLine(state, req);
  if (inLine !== undefined) return { kind: 'reattach', key: inLine.key, ticket: inLine.ticket };
  const sessionId = req.sessionId ?? 0;
  let sessionHolds = 0;
  if (sessionId > 0) {
    // A session this node has not seen yet is judged by the machine (SESSION_NOT_OPEN).
    const session = state.sessionInfo(sessionId);
    if (session !== undefined && session.owner !== req.owner) {
      return refuse('invalid', `owner: ${JSON.stringify(req.owner)} is not the owner of session ${sessionId}`);
    }
    sessionHolds = session?.holds ?? 0;
  }
  // Limits: a new waiter must fit the lines; a grant must fit the leases and key records.
  const exhausted =
    (sessionId > 0 ? admission.refuseSessionHold(sessionId, sessionHolds) : null) ??
    (req.waitMs > 0 ? admission.refuseWaiter(state, req.key) : null) ??
    admission.refuseAcquire(state, req);
  if (exhausted !== null) return refuse('exhausted', exhausted);
  if (((req.limit ?? 1) > 1 || req.shared === true) && state.clusterLevel < LEVEL_MANY_HOLDERS) {
    return refuse(
      'rejected',
      `limit/shared: semaphores and shared holds need cluster level ${LEVEL_MANY_HOLDERS} (every member on a build that reads it); the cluster is at ${state.clusterLevel}`,
    );
  }
  return { kind: 'propose', command: acquireCommandOf(req, sessionId) };
}

function refuse(kind: CallFailure['kind'], message: string): AcquireStep {
  return { kind: 'refuse', failure: { kind, message, leaderId: null } };
}
