// A tiny builder of hand-written histories for the checker's tests: times are explicit, so every test says
// exactly which operations overlap in real time.
import type { HolderWindow, Op, OpType, Outcome } from './history.js';

export class HistoryBuilder {
  readonly ops: Op[] = [];

  private add(type: OpType, process: string, key: string, at: [number, number], outcome: Outcome, fields: Partial<Op>): Op {
    const op: Op = { index: this.ops.length, process, type, key, invokeMs: at[0], completeMs: at[1], outcome, via: 'handle', ...fields };
    this.ops.push(op);
    return op;
  }

  /** A granted acquire; `window` defaults to [ack, ack + 100] closed by a release. */
  acquired(
    process: string,
    key: string,
    token: bigint,
    at: [number, number],
    window: [number, number] | null = [at[1], at[1] + 100],
    owner = `${process}/${token}`,
  ): Op {
    const w: HolderWindow | undefined = window ? { startMs: window[0], endMs: window[1], endedBy: 'released' } : undefined;
    return this.add('acquire', process, key, at, 'ok', { owner, token, ...(w ? { window: w } : {}) });
  }

  refused(process: string, key: string, holder: string, at: [number, number], owner = `${process}/refused@${at[0]}`): Op {
    return this.add('acquire', process, key, at, 'fail', { owner, holder });
  }

  acquireUnknown(process: string, key: string, owner: string, at: [number, number]): Op {
    return this.add('acquire', process, key, at, 'info', { owner, error: 'UnavailableError: timed out' });
  }

  release(process: string, key: string, owner: string, token: bigint, at: [number, number], outcome: Outcome = 'ok', reason?: string): Op {
    return this.add('release', process, key, at, outcome, { owner, token, ...(reason ? { reason } : {}) });
  }

  renew(process: string, key: string, owner: string, token: bigint, at: [number, number], outcome: Outcome = 'ok', reason?: string): Op {
    return this.add('renew', process, key, at, outcome, { owner, token, via: 'auto', ...(reason ? { reason } : {}) });
  }

  get(
    process: string,
    key: string,
    at: [number, number],
    result: { held: false; last: bigint } | { held: true; owner: string; token: bigint },
  ): Op {
    return result.held
      ? this.add('get', process, key, at, 'ok', { held: true, getOwner: result.owner, getToken: result.token, lastToken: result.token })
      : this.add('get', process, key, at, 'ok', { held: false, getOwner: '', getToken: 0n, lastToken: result.last });
  }

  /** A Watch QUEUED event: `owner` joined the line of `key` (log index `logIndex`), received at `atMs`. */
  queued(key: string, owner: string, atMs: number, logIndex = 1n): Op {
    return this.add('queued', 'watch', key, [atMs, atMs], 'ok', { owner, logIndex, via: 'watch' });
  }

  /** A gap of the queue watch (it started again from "now"): events between `fromMs` and `toMs` may be unseen. */
  watchGap(fromMs: number, toMs: number): Op {
    return this.add('queued', 'watch', '', [fromMs, toMs], 'ok', { owner: '', via: 'watch' });
  }

  openSession(process: string, owner: string, id: bigint, at: [number, number], ttlMs: number, lockDelayMs = 0): Op {
    return this.add('open-session', process, '', at, 'ok', { owner, sessionId: id, ttlMs, ...(lockDelayMs > 0 ? { lockDelayMs } : {}) });
  }

  renewSession(
    process: string,
    owner: string,
    id: bigint,
    at: [number, number],
    outcome: Outcome = 'ok',
    reason?: string,
    ttlMs?: number,
  ): Op {
    return this.add('renew-session', process, '', at, outcome, {
      owner,
      sessionId: id,
      via: 'auto',
      ...(reason ? { reason } : {}),
      ...(ttlMs ? { ttlMs } : {}),
    });
  }

  closeSession(process: string, owner: string, id: bigint, at: [number, number], outcome: Outcome = 'ok', closed = true): Op {
    return this.add('close-session', process, '', at, outcome, { owner, sessionId: id, ...(outcome === 'ok' ? { closed } : {}) });
  }

  write(
    process: string,
    key: string,
    token: bigint,
    at: [number, number],
    accepted: boolean,
    opts: { active?: boolean; resourceLast?: bigint } = {},
  ): Op {
    return this.add('write', process, key, at, accepted ? 'ok' : 'fail', {
      token,
      via: opts.active === false ? 'zombie' : 'handle',
      activeAtInvoke: opts.active ?? true,
      resourceLastToken: opts.resourceLast ?? token,
      ...(accepted ? {} : { reason: 'STALE' }),
    });
  }
}
