// The refusal a call layer answers at the boundary (LockService.notLeadingError, lock-calls.ts) is the one
// the lock leader gives a call that enters it on a node that does not lead: same message, same leader.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/machine.js';
import type { ValidAcquire } from '../../../src/lock/validate.js';
import type { Status } from '../../../src/raft/core/types.js';
import type { NodeEnv } from '../../../src/raft/env.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import { LeaderUnavailableError, LockService, type LockNode } from '../../../src/lock-on-raft/lock-service.js';

const never = { cancel: () => {} };
const env: NodeEnv = {
  nowMs: () => 1_000,
  scheduler: { soon: () => {}, after: () => never, every: () => never },
  rng: { next: () => 0.5 } as unknown as NodeEnv['rng'],
};

/** A follower that knows `leaderId` (null: none). */
function follower(leaderId: string | null): LockNode {
  return {
    id: 'n1',
    term: 3,
    leaderId,
    isLeader: () => false,
    status: () => ({ role: 'follower', term: 3, leaderId }) as Status,
    progress: () => new Map(),
    propose: () => Promise.reject(new Error('a follower proposes nothing')),
    readBarrier: () => Promise.reject(new Error('a follower reads nothing')),
    on: () => undefined,
  };
}

const acquire = { key: 'k', owner: 'o', ttlMs: 10_000, requestId: 'r1' } as unknown as ValidAcquire;

async function refusalOf(service: LockService): Promise<LeaderUnavailableError> {
  const err: unknown = await service.acquire(acquire, 1000).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LeaderUnavailableError);
  return err as LeaderUnavailableError;
}

describe('LockService.notLeadingError', () => {
  it.each([
    ['a leader known', 'n2'],
    ['no leader known', null],
  ])("is the lock leader's own refusal on a follower (%s)", async (_, leaderId) => {
    const machine = new LockMachine();
    const service = new LockService(
      follower(leaderId),
      { machine },
      { env, housekeepingMs: 25, checkpointIdleMs: 1000, proposalTimeoutMs: 1000, logger: silentNodeLogger },
    );
    expect(service.notLeading).toBe(leaderId);
    const atBoundary = service.notLeadingError();
    const entered = await refusalOf(service);
    expect(atBoundary.message).toBe(entered.message);
    expect(atBoundary.leaderId).toBe(entered.leaderId);
    expect(atBoundary.message).toMatch(leaderId ? /not the leader \(leader is n2\)/ : /no leader is elected/);
    service.close();
  });

  it('is the shutting-down refusal once the service is closed', async () => {
    const service = new LockService(
      follower('n2'),
      { machine: new LockMachine() },
      { env, housekeepingMs: 25, checkpointIdleMs: 1000, proposalTimeoutMs: 1000, logger: silentNodeLogger },
    );
    service.close();
    expect(service.notLeading).toBeNull();
    const entered = await refusalOf(service);
    expect(service.notLeadingError().message).toBe(entered.message);
    expect(service.notLeadingError().leaderId).toBe(entered.leaderId);
    expect(entered.message).toMatch(/shutting down/);
  });
});
