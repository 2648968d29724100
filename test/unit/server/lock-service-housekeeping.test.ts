// The lock leader's housekeeping tick runs only while the node leads: a follower has no deadlines to watch,
// and a timer that woke it 40 times a second for nothing was a share of an idle cluster's CPU.
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/machine.js';
import type { SoftState, Status } from '../../../src/raft/core/types.js';
import type { NodeEnv } from '../../../src/raft/env.js';
import { silentNodeLogger } from '../../../src/raft/logger.js';
import { LockService, type LockNode } from '../../../src/lock-on-raft/lock-service.js';

/** A scheduler that records its interval timers (armed and cancelled) and never runs anything. */
function recordingEnv(): { env: NodeEnv; armed: () => number[]; everArmed: () => number } {
  const live = new Set<{ intervalMs: number }>();
  let ever = 0;
  const env: NodeEnv = {
    nowMs: () => 1_000,
    scheduler: {
      soon: () => {},
      after: () => ({ cancel: () => {} }),
      every: (intervalMs) => {
        const t = { intervalMs };
        live.add(t);
        ever++;
        return { cancel: () => live.delete(t) };
      },
    },
    rng: { next: () => 0.5 } as unknown as NodeEnv['rng'],
  };
  return { env, armed: () => [...live].map((t) => t.intervalMs), everArmed: () => ever };
}

/** A node whose role the test changes (emitting softState as RaftNode does). */
function switchableNode(role: SoftState['role']): LockNode & { become(role: SoftState['role']): void } {
  const listeners: ((ss: SoftState, prev: SoftState) => void)[] = [];
  let soft: SoftState = { role, term: 3, leaderId: role === 'leader' ? 'n1' : 'n2' };
  return {
    id: 'n1',
    term: 3,
    leaderId: soft.leaderId,
    isLeader: () => soft.role === 'leader',
    status: () => ({ ...soft }) as unknown as Status,
    progress: () => new Map(),
    propose: () => new Promise(() => {}),
    readBarrier: () => new Promise(() => {}),
    on: (event: string, listener: unknown) => {
      if (event === 'softState') listeners.push(listener as (ss: SoftState, prev: SoftState) => void);
      return undefined;
    },
    become(next) {
      const prev = soft;
      soft = { role: next, term: prev.term + 1, leaderId: next === 'leader' ? 'n1' : 'n2' };
      for (const l of listeners) l(soft, prev);
    },
  };
}

const options = (env: NodeEnv) => ({ env, housekeepingMs: 25, checkpointIdleMs: 1000, proposalTimeoutMs: 1000, logger: silentNodeLogger });

describe('the lock service housekeeping timer', () => {
  it('is not armed on a follower, armed once on becoming leader, cancelled on losing it', () => {
    const { env, armed, everArmed } = recordingEnv();
    const node = switchableNode('follower');
    const service = new LockService(node, { machine: new LockMachine() }, options(env));
    expect(armed()).toEqual([]);
    node.become('candidate');
    expect(armed()).toEqual([]);
    node.become('leader');
    expect(armed()).toEqual([25]);
    node.become('leader'); // a later term led again: still one timer
    expect(armed()).toEqual([25]);
    expect(everArmed()).toBe(1);
    node.become('follower');
    expect(armed()).toEqual([]);
    node.become('leader');
    expect(armed()).toEqual([25]);
    service.close();
    expect(armed()).toEqual([]);
  });

  it('is armed at once for a node that already leads when the service starts, and never after close', () => {
    const { env, armed } = recordingEnv();
    const node = switchableNode('leader');
    const service = new LockService(node, { machine: new LockMachine() }, options(env));
    expect(armed()).toEqual([25]);
    service.close();
    node.become('leader');
    expect(armed()).toEqual([]);
  });
});
