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
        m.commitCount.inc();
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

function proposalOutcome(err: unknown): string {
  return err instanceof ProposalTimeoutError
    ? 'timeout'
    : err instanceof NotLeaderError
      ? 'not_leader'
      : err instanceof ProposalDroppedError
        ? 'dropped'
        : 'error';
}

/** A Proxy handler that serves `own` properties from the wrapper and everything else from the target, a
 *  method bound to the target once (not a bind — a new function — on every read: the lock service and the
 *  node are read per call). A method the target replaces is bound again. */
function passThrough<T extends object>(own: Record<string, unknown>): ProxyHandler<T> {
  const bound = new Map<PropertyKey, { fn: unknown; bound: unknown }>();
  return {
    get(target, prop) {
      if (typeof prop === 'string' && Object.hasOwn(own, prop)) return own[prop];
      const v: unknown = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      const known = bound.get(prop);
      if (known !== undefined && known.fn === v) return known.bound;
      const b = (v as (...a: unknown[]) => unknown).bind(target);
      bound.set(prop, { fn: v, bound: b });
      return b;
    },
  };
}

/** The node with propose() counted and timed; everything else passes through to the node itself. Not an
 *  async function: its state (a generator, its promise, the await's reactions) lives as long as the
 *  proposal, which under load is long enough for V8 to promote it to old space; two callbacks on the
 *  proposal's own promise carry the start time instead. */
export function instrumentProposals<N extends Proposer>(node: N, m: NodeMetrics): N {
  const committed = m.proposalCount('committed');
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
        committed.inc();
        m.proposalTime.observe(seconds(t));
        return r;
      },
      (err: unknown) => {
        m.proposalCount(proposalOutcome(err)).inc();
        throw err;
      },
    );
  };
  return new Proxy(node, passThrough<N>({ propose }));
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

function failureOutcome(err: unknown): string {
  return err instanceof LeaderUnavailableError
    ? err.leaderId
      ? 'not_leader'
      : 'unavailable'
    : err instanceof RequestRejectedError
      ? 'rejected'
      : 'error';
}

/** The lock service with every client operation (the lock calls and the session calls) counted by outcome
 *  and timed. Not an async function per call, for the reason instrumentProposals gives: two callbacks on
 *  the call's own promise count it (first its outcome, then its time, as the try/finally it replaced). */
export function instrumentLockService(service: LockService, m: NodeMetrics): LockService {
  const wrap = (
    op: 'acquire' | 'renew' | 'release' | 'get' | 'open_session' | 'renew_session' | 'close_session' | 'revoke',
    method: keyof LockService = op as keyof LockService,
  ) => {
    const tallies = m.lockOp(op);
    return (...args: unknown[]): Promise<unknown> => {
      const t = process.hrtime.bigint();
      let called: Promise<unknown>;
      try {
        called = (service[method] as (...a: unknown[]) => Promise<unknown>).apply(service, args);
      } catch (err) {
        called = Promise.reject(err as Error); // as the async function it replaced: a throw is a rejection
      }
      return called.then(
        (result: unknown) => {
          tallies.count(outcomeOf(op, result)).inc();
          tallies.time.observe(seconds(t));
          return result;
        },
        (err: unknown) => {
          tallies.count(failureOutcome(err)).inc();
          tallies.time.observe(seconds(t));
          throw err;
        },
      );
    };
  };
  return new Proxy(
    service,
    passThrough<LockService>({
      acquire: wrap('acquire'),
      renew: wrap('renew'),
      release: wrap('release'),
      get: wrap('get'),
      openSession: wrap('open_session', 'openSession'),
      renewSession: wrap('renew_session', 'renewSession'),
      closeSession: wrap('close_session', 'closeSession'),
      revoke: wrap('revoke'),
    }),
  );
}
