// Wrappers that feed NodeMetrics without the wrapped code knowing: the storage (fsync and snapshot timing),
// the state machine (snapshot encoding, commits), the driver's propose(), and the lock service's calls.
import type { LockResult } from '../../lock/types.js';
import type { Entry } from '../../raft/core/types.js';
import { NotLeaderError, ProposalDroppedError, ProposalTimeoutError } from '../../raft/errors.js';
import type { StateMachine, StoredStateMachine } from '../../raft/fsm.js';
import type { Snapshot } from '../../raft/core/types.js';
import { movesOnlyCommit, type WrittenVote } from '../../raft/storage/rules.js';
import type { PersistBatch, RaftStorage } from '../../raft/storage/types.js';
import type { NodeMetrics } from './metrics.js';
import { LeaderUnavailableError, RequestRejectedError, type LockService } from '../../lock-on-raft/lock-service.js';

const seconds = (startNs: bigint) => Number(process.hrtime.bigint() - startNs) / 1e9;

/** Times each synced batch; counts snapshots installed from the leader and, with the fsm wrapper, taken here. */
export function instrumentStorage(storage: RaftStorage, m: NodeMetrics, snapshotStartedAt: () => bigint | null): RaftStorage {
  /** Term and vote of the last batch that carried a hard state: a batch that moves only the commit index
   *  is no synced write (the store defers it to the next one), so it is not timed as one. */
  let vote: WrittenVote | null = null;
  const commitOnly = (batch: PersistBatch): boolean => {
    const only = movesOnlyCommit(batch, vote);
    const hs = batch.hardState;
    if (hs) vote = { term: hs.term, votedFor: hs.votedFor };
    return only;
  };
  return {
    load: () => storage.load(),
    close: () => storage.close(),
    async save(batch: PersistBatch) {
      const skip = commitOnly(batch);
      const t = process.hrtime.bigint();
      await storage.save(batch);
      if (!skip) m.fsyncSeconds.observe(seconds(t));
      // With the applied store the log records only a snapshot's metadata: the store's install counts it.
      if (batch.snapshot && batch.snapshot.data.length > 0) {
        m.snapshots.inc({ kind: 'installed' });
        m.snapshotBytes.set({ kind: 'installed' }, batch.snapshot.data.length);
      }
    },
    async compact(snapshot) {
      await storage.compact(snapshot);
      m.logCompactions.inc();
      if (snapshot.data.length === 0) return; // the store is the snapshot: nothing was encoded
      const started = snapshotStartedAt();
      if (started !== null) m.snapshotSeconds.observe(seconds(started));
      m.snapshots.inc({ kind: 'taken' });
      m.snapshotBytes.set({ kind: 'taken' }, snapshot.data.length);
    },
  };
}

/** The state machine as the driver sees it, counting commits and remembering when a snapshot began. */
export function instrumentFsm<R>(fsm: StateMachine<R>, m: NodeMetrics): { fsm: StateMachine<R>; snapshotStartedAt: () => bigint | null } {
  let startedAt: bigint | null = null;
  return {
    snapshotStartedAt: () => startedAt,
    fsm: {
      apply(entry: Entry) {
        m.commits.inc();
        return fsm.apply(entry);
      },
      snapshot() {
        startedAt = process.hrtime.bigint();
        return fsm.snapshot();
      },
      // Sliced snapshots too (a wrapper without it would silently put the whole snapshot back on the loop).
      ...(fsm.beginSnapshot === undefined
        ? {}
        : {
            beginSnapshot(sizeHint: number) {
              startedAt = process.hrtime.bigint();
              const job = fsm.beginSnapshot!(sizeHint);
              if (fsm.stored === undefined) return job;
              // With the applied store a snapshot is made only for a follower behind the log: counted here.
              const began = startedAt;
              return {
                step: () => job.step(),
                cancel: () => job.cancel(),
                finish: () => {
                  const data = job.finish();
                  m.snapshotSeconds.observe(seconds(began));
                  m.snapshots.inc({ kind: 'taken' });
                  m.snapshotBytes.set({ kind: 'taken' }, data.length);
                  return data;
                },
              };
            },
          }),
      restore: (data) => fsm.restore(data),
      ...(fsm.stored === undefined
        ? {}
        : {
            stored: {
              open: () => fsm.stored!.open(),
              persist: () => fsm.stored!.persist(),
              install: async (snapshot: Snapshot) => {
                await fsm.stored!.install(snapshot);
                if (snapshot.meta.index === 0) return;
                m.snapshots.inc({ kind: 'installed' });
                m.snapshotBytes.set({ kind: 'installed' }, snapshot.data.length);
              },
              // The streamed path (a wrapper without it would silently fall back to whole snapshots).
              ...streamedSnapshots(fsm.stored, m),
            },
          }),
    },
  };
}

/** A stored state machine's streamed snapshots, counted: a stream opened for a follower (taken), a
 *  received one installed, with the bytes its chunks carried, and one refused (it did not verify). */
function streamedSnapshots(stored: StoredStateMachine, m: NodeMetrics): Partial<StoredStateMachine> {
  const { openStream, receiveChunk, installReceived, discardReceived } = stored;
  if (openStream === undefined || receiveChunk === undefined || installReceived === undefined || discardReceived === undefined) return {};
  let receivedBytes = 0;
  return {
    openStream: async (chunkBytes) => {
      const stream = await openStream.call(stored, chunkBytes);
      if (stream !== null) m.snapshots.inc({ kind: 'taken' });
      return stream;
    },
    receiveChunk: async (chunk) => {
      receivedBytes = chunk.offset === 0 ? chunk.data.length : receivedBytes + chunk.data.length;
      const verdict = await receiveChunk.call(stored, chunk);
      if (!verdict.ok) m.snapshots.inc({ kind: 'refused' });
      return verdict;
    },
    installReceived: async (meta) => {
      await installReceived.call(stored, meta);
      m.snapshots.inc({ kind: 'installed' });
      m.snapshotBytes.set({ kind: 'installed' }, receivedBytes);
    },
    discardReceived: () => discardReceived.call(stored),
  };
}

type Proposer = { propose(data: Uint8Array, timeoutMs: number): Promise<{ index: number; result: LockResult | null }> };

const COMMITTED = { outcome: 'committed' } as const;

function proposalOutcome(err: unknown): string {
  return err instanceof ProposalTimeoutError
    ? 'timeout'
    : err instanceof NotLeaderError
      ? 'not_leader'
      : err instanceof ProposalDroppedError
        ? 'dropped'
        : 'error';
}

/** The node with propose() counted and timed; everything else passes through to the node itself. Not an
 *  async function: its state (a generator, its promise, the await's reactions) lives as long as the
 *  proposal, which under load is long enough for V8 to promote it to old space; two callbacks on the
 *  proposal's own promise carry the start time instead. */
export function instrumentProposals<N extends Proposer>(node: N, m: NodeMetrics): N {
  const propose = (data: Uint8Array, timeoutMs: number): Promise<{ index: number; result: LockResult | null }> => {
    const t = process.hrtime.bigint();
    let proposed: Promise<{ index: number; result: LockResult | null }>;
    try {
      proposed = node.propose(data, timeoutMs);
    } catch (err) {
      proposed = Promise.reject(err as Error); // as the async function it replaced: a throw is a rejection
    }
    return proposed.then(
      (r) => {
        m.proposals.inc(COMMITTED);
        m.proposalSeconds.observe(seconds(t));
        return r;
      },
      (err: unknown) => {
        m.proposals.inc({ outcome: proposalOutcome(err) });
        throw err;
      },
    );
  };
  return new Proxy(node, {
    get(target, prop) {
      if (prop === 'propose') return propose;
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function outcomeOf(op: string, value: unknown): string {
  const v = value as { acquired?: boolean; renewed?: boolean; released?: boolean; held?: boolean; reason?: string };
  if (op === 'acquire') return v.acquired ? 'acquired' : 'not_acquired';
  if (op === 'get') return v.held ? 'held' : 'free';
  if (op === 'renew' && v.renewed) return 'renewed';
  if (op === 'release' && v.released) return 'released';
  if (op === 'open_session') return 'opened';
  if (op === 'renew_session' && v.renewed) return 'renewed';
  if (op === 'close_session' && (v as { ended?: boolean }).ended) return 'closed';
  if (op === 'revoke') return ((v as { revoked?: unknown[] }).revoked?.length ?? 0) > 0 ? 'revoked' : 'not_held';
  return (v.reason ?? 'unspecified').toLowerCase();
}

/** The lock service with every client operation (the lock calls and the session calls) counted by outcome
 *  and timed. */
export function instrumentLockService(service: LockService, m: NodeMetrics): LockService {
  const wrap =
    (
      op: 'acquire' | 'renew' | 'release' | 'get' | 'open_session' | 'renew_session' | 'close_session' | 'revoke',
      method: keyof LockService = op as keyof LockService,
    ) =>
    async (...args: unknown[]) => {
      const t = process.hrtime.bigint();
      try {
        const result: unknown = await (service[method] as (...a: unknown[]) => Promise<unknown>).apply(service, args);
        m.lockOps.inc({ op, outcome: outcomeOf(op, result) });
        return result;
      } catch (err) {
        const outcome =
          err instanceof LeaderUnavailableError
            ? err.leaderId
              ? 'not_leader'
              : 'unavailable'
            : err instanceof RequestRejectedError
              ? 'rejected'
              : 'error';
        m.lockOps.inc({ op, outcome });
        throw err;
      } finally {
        m.lockOpSeconds.observe({ op }, seconds(t));
      }
    };
  const wrapped = {
    acquire: wrap('acquire'),
    renew: wrap('renew'),
    release: wrap('release'),
    get: wrap('get'),
    openSession: wrap('open_session', 'openSession'),
    renewSession: wrap('renew_session', 'renewSession'),
    closeSession: wrap('close_session', 'closeSession'),
    revoke: wrap('revoke'),
  } as Record<string, unknown>;
  return new Proxy(service, {
    get(target, prop) {
      if (typeof prop === 'string' && prop in wrapped) return wrapped[prop];
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
