// The proposal table: what each proposal in flight is for, so its outcome (applied, or failed) reaches the
// one place that asked — the term gate, a client call, or housekeeping — and nowhere else. An outcome whose
// id is not in the table (a proposal of an earlier leadership, reported late) goes nowhere.
//
// It also keeps the calls whose caller went away while their proposal was in flight: an entry cannot be
// taken back, so the cancel waits for the outcome — if an acquire then puts the request in line, the line
// is told (a cancel: the leader proposes its `dequeue`; a broken connection: the waiter keeps its place by
// detached-waiters.ts's rule); any other outcome just has nobody to answer.
import type { ValidAcquire } from '../validate.js';
import type { HousekeepingProposal } from './housekeeping.js';
import type { CallId, ProposalId } from './types.js';

/** Why a proposal was made, so its outcome reaches the right place. */
export type Purpose =
  | { kind: 'termStart'; term: number }
  | {
      kind: 'client';
      callId: CallId;
      /** An acquire's request: where its ticket is if the log puts it (or finds it) in line. */
      acquire?: ValidAcquire;
    }
  /** A `renews` entry (renew-turn.ts): its i-th renew answers callIds[i]. */
  | { kind: 'renews'; callIds: CallId[] }
  | { kind: 'cancelWait' }
  | HousekeepingProposal;

export class ProposalTable {
  private readonly purposes = new Map<ProposalId, Purpose>();
  /** Client calls that ended while their proposal was in flight -> whether by a broken connection. */
  private readonly cancelled = new Map<CallId, { detached: boolean }>();
  private nextId = 1;

  /** A new proposal for `purpose`: its id, unique for the life of this leader module. */
  add(purpose: Purpose): ProposalId {
    const id = this.nextId++;
    this.purposes.set(id, purpose);
    return id;
  }

  /** The purpose of proposal `id`, which has settled (it leaves the table); undefined if it was not ours. */
  take(id: ProposalId): Purpose | undefined {
    const purpose = this.purposes.get(id);
    if (purpose !== undefined) this.purposes.delete(id);
    return purpose;
  }

  /** The caller of `callId` went away (`detached`: its connection broke): true (and remembered until its
   *  outcome) when it has a proposal in flight. A scan: only a cancel asks. */
  cancelInFlight(callId: CallId, detached = false): boolean {
    for (const purpose of this.purposes.values()) {
      if (purpose.kind === 'client' && purpose.callId === callId) {
        this.cancelled.set(callId, { detached });
        return true;
      }
    }
    return false;
  }

  /** How `callId`'s caller went away while its proposal was in flight, if it did (forgotten once asked). */
  takeCancelled(callId: CallId): { detached: boolean } | undefined {
    const how = this.cancelled.get(callId);
    this.cancelled.delete(callId);
    return how;
  }

  /** Whether a blocking acquire of (owner, request_id) for `key` is in flight. A scan: this is a question
   *  of the simulator's, not worth an index kept up to date on every acquire. */
  acquireInFlight(key: string, owner: string, requestId: string): boolean {
    for (const purpose of this.purposes.values()) {
      const req = purpose.kind === 'client' ? purpose.acquire : undefined;
      if (req !== undefined && req.key === key && req.owner === owner && req.requestId === requestId) return true;
    }
    return false;
  }
}

/** Whether `purpose` is one of housekeeping's (its outcome goes back to housekeeping.ts). */
export function isHousekeeping(purpose: Purpose): purpose is HousekeepingProposal {
  return purpose.kind !== 'termStart' && purpose.kind !== 'client' && purpose.kind !== 'renews' && purpose.kind !== 'cancelWait';
}
