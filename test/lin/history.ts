// A Jepsen-style history of lock operations as the CLIENTS saw them (DESIGN "Jepsen / Porcupine").
//
// Every operation is invoked, then completes as exactly one of
//   ok    the service answered and the operation took effect (a lock granted, a release done, a write accepted),
//   fail  the service answered and the operation certainly did NOT take effect (held by another, refused,
//         a write rejected by the fenced resource),
//   info  we do not know: the call timed out or the connection died. The operation may or may not have
//         taken effect, now or later (a request can sit in a network buffer and land after we gave up).
// An `info` is never a failure; the checker must accept either outcome for it.
//
// Times are milliseconds of ONE monotonic clock (performance.now of the recording process): invoke is taken
// right before the call is made, complete right after its answer arrived. Wall-clock time never enters.
//
// Besides operations, a granted lock carries its holder's WINDOW: the interval in which the client believed
// it held the lock — from the moment the acquire was acknowledged to the moment its handle turned LOST or
// RELEASED, or its conservative local lease deadline, whichever is first. Mutual exclusion is checked on
// these windows (checker.ts).
//
// Besides lock operations: a session's calls (open-session, its automatic renew-session — the send time
// estimated as for a handle's renew — a renew the server refused, close-session), which name no key (key ''),
// the session by sessionId; and 'queued' observations: a Watch QUEUED event (an owner joined a key's line
// at logIndex), received at invokeMs = completeMs (test/lin/queue-watch.ts).
import { performance } from 'node:perf_hooks';

export type OpType = 'acquire' | 'release' | 'renew' | 'get' | 'write' | SessionOpType | 'queued';
/** Operations on a session (SPEC "Sessions"); they name no key (key ''), the session by `sessionId`. */
export type SessionOpType = 'open-session' | 'renew-session' | 'close-session';
export const isSessionOp = (op: Op): boolean => op.type === 'open-session' || op.type === 'renew-session' || op.type === 'close-session';
export type Outcome = 'ok' | 'fail' | 'info';

/** How the operation was made: through a LockHandle, its automatic renewals, a raw RPC, or by a holder that lost its lock (a zombie). */
export type OpVia = 'handle' | 'auto' | 'raw' | 'zombie' | 'final' | 'probe' | 'watch';

export interface HolderWindow {
  /** The acquire was acknowledged (the handle was handed to the caller). */
  startMs: number;
  /** min(handle left ACTIVE, last known local lease deadline); null while still open. */
  endMs: number | null;
  /** Why the window closed. */
  endedBy: 'released' | 'lost' | 'deadline' | null;
}

export interface Op {
  /** Position in the history (the order of invocation). */
  index: number;
  /** The client (worker) that made the call. Operations of one process never overlap, except its automatic renewals. */
  process: string;
  type: OpType;
  key: string;
  invokeMs: number;
  /** When the answer arrived (ok/fail), or when we gave up on it (info); null while pending. */
  completeMs: number | null;
  outcome: Outcome | 'pending';
  via: OpVia;
  // -- inputs
  owner?: string;
  /** acquire: the granted token (ok). release / renew / write: the token sent. */
  token?: bigint;
  ttlMs?: number;
  /** acquire: how long it asked to queue for the lock. */
  waitMs?: number;
  /** acquire of a key with many holds (SPEC "Many holders"): the semaphore's limit (>= 2), or a shared hold
   *  (limit 1). Absent: a mutex acquire (an exclusive hold of a limit-1 key). */
  limit?: number;
  shared?: boolean;
  /** acquire under a session, and every session operation: the session's id (acquire: as opened; the
   *  open-session op gets it from its answer). */
  sessionId?: bigint;
  /** acquire / open-session: the lock-delay asked for (SPEC "Lock-delay"); absent = none. */
  lockDelayMs?: number;
  // -- outputs
  /** acquire fail: who held the lock ('' = waiters queued ahead). */
  holder?: string;
  /** release / renew fail: the server's reason; write fail: 'STALE'. */
  reason?: string;
  /** get ok. */
  held?: boolean;
  getOwner?: string;
  getToken?: bigint;
  lastToken?: bigint;
  /** get ok: the session the holder's hold lives under (0n = none). */
  getSessionId?: bigint;
  /** close-session ok: the server's `closed` (false: it had ended already). */
  closed?: boolean;
  /** queued: the Raft index of the entry that put `owner` in the key's line (a Watch QUEUED event, observed
   *  at completeMs; invokeMs is the same moment). */
  logIndex?: bigint;
  /** write: the resource's highest accepted token after the call. */
  resourceLastToken?: bigint;
  /** write: the handle said ACTIVE right before the write was made (a legitimate holder's write). */
  activeAtInvoke?: boolean;
  /** acquire ok: the holder's window. Absent when the grant never reached the caller as a usable handle. */
  window?: HolderWindow;
  /** info: what went wrong; also notes. */
  error?: string;
}

type OpInput = Pick<Op, 'process' | 'type' | 'key' | 'via'> &
  Partial<Pick<Op, 'owner' | 'token' | 'ttlMs' | 'waitMs' | 'activeAtInvoke' | 'limit' | 'shared' | 'sessionId' | 'lockDelayMs'>>;
type OpResult = Partial<
  Pick<
    Op,
    | 'token'
    | 'holder'
    | 'reason'
    | 'held'
    | 'getOwner'
    | 'getToken'
    | 'lastToken'
    | 'getSessionId'
    | 'resourceLastToken'
    | 'sessionId'
    | 'closed'
    | 'logIndex'
    | 'error'
  >
>;

/** An invoked operation waiting for its outcome. Completing it twice is a bug in the workload and throws. */
export class PendingOp {
  constructor(
    readonly op: Op,
    private readonly now: () => number,
  ) {}

  ok(result: OpResult = {}): Op {
    return this.complete('ok', result);
  }

  fail(result: OpResult = {}): Op {
    return this.complete('fail', result);
  }

  info(error: unknown): Op {
    return this.complete('info', { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
  }

  private complete(outcome: Outcome, result: OpResult): Op {
    if (this.op.outcome !== 'pending') throw new Error(`op ${this.op.index} (${this.op.type}) completed twice`);
    Object.assign(this.op, result);
    this.op.outcome = outcome;
    this.op.completeMs = this.now();
    return this.op;
  }
}

export class HistoryRecorder {
  readonly ops: Op[] = [];

  constructor(readonly now: () => number = () => performance.now()) {}

  invoke(input: OpInput): PendingOp {
    const op: Op = { index: this.ops.length, ...input, invokeMs: this.now(), completeMs: null, outcome: 'pending' };
    this.ops.push(op);
    return new PendingOp(op, this.now);
  }

  /** An operation observed after the fact (an automatic renewal), with the best known invoke time. */
  record(input: OpInput & OpResult & { invokeMs: number; completeMs: number; outcome: Outcome }): Op {
    const op: Op = { index: this.ops.length, ...input };
    this.ops.push(op);
    return op;
  }

  /** Operations still pending at the end of a run are unknown ('info'), never failures. */
  closePending(note = 'still pending when the run ended'): number {
    let n = 0;
    for (const op of this.ops) {
      if (op.outcome === 'pending') {
        op.outcome = 'info';
        op.completeMs = this.now();
        op.error = note;
        n++;
      }
    }
    return n;
  }
}

// ------------------------------------------------------------------ (de)serialisation: JSON lines, bigints as strings

const BIGINT_FIELDS = ['token', 'getToken', 'lastToken', 'resourceLastToken', 'sessionId', 'getSessionId', 'logIndex'] as const;

export function opToJson(op: Op): string {
  return JSON.stringify(op, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

export function opFromJson(line: string): Op {
  const raw = JSON.parse(line) as Record<string, unknown>;
  for (const f of BIGINT_FIELDS) if (typeof raw[f] === 'string') raw[f] = BigInt(raw[f] as string);
  return raw as unknown as Op;
}

export function historyToJsonl(ops: readonly Op[]): string {
  return ops.map(opToJson).join('\n') + '\n';
}

export function historyFromJsonl(text: string): Op[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(opFromJson);
}
