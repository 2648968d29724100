// Test harness: feeds a LockMachine through the real codec, numbering entries like a Raft log would.
import { encodeCommand, LockMachine } from '../../../src/lock/index.js';
import type { LockCommand, LockMachineOptions, LockResult } from '../../../src/lock/index.js';

export class Feed {
  /** Raft term stamped on the next entries; bump it with termStart. */
  term = 1;
  /** Leader clock stamped on the next entries. */
  timeMs = 0;

  constructor(readonly machine: LockMachine = new LockMachine()) {}

  static withOptions(options: Partial<LockMachineOptions>): Feed {
    return new Feed(new LockMachine(options));
  }

  get nextIndex(): number {
    return this.machine.appliedIndex + 1;
  }

  /** Set the leader's clock for the following entries. */
  at(timeMs: number): this {
    this.timeMs = timeMs;
    return this;
  }

  /** Encode and apply one command as the next entry of the current term. */
  apply(command: LockCommand): LockResult {
    return this.machine.apply(this.nextIndex, this.term, encodeCommand(command));
  }

  acquire(key: string, owner: string, ttlMs: number, requestId = '') {
    return this.expect('acquire', this.apply({ type: 'acquire', timeMs: this.timeMs, key, owner, ttlMs, requestId }));
  }

  /** An acquire that joins the key's wait line for up to `waitMs` (log time) when it cannot be granted. */
  wait(key: string, owner: string, ttlMs: number, waitMs: number, requestId = '') {
    return this.expect('acquire', this.apply({ type: 'acquire', timeMs: this.timeMs, key, owner, ttlMs, requestId, waitMs }));
  }

  /** An acquire whose hold carries a lock-delay (and may wait in line). */
  delayed(
    key: string,
    owner: string,
    ttlMs: number,
    lockDelayMs: number,
    opts: { waitMs?: number; requestId?: string; value?: string } = {},
  ) {
    const value = opts.value === undefined ? {} : { value: new TextEncoder().encode(opts.value) };
    return this.expect(
      'acquire',
      this.apply({
        type: 'acquire',
        timeMs: this.timeMs,
        key,
        owner,
        ttlMs,
        requestId: opts.requestId ?? '',
        waitMs: opts.waitMs ?? 0,
        lockDelayMs,
        ...value,
      }),
    );
  }

  undelay(key: string) {
    return this.expect('undelay', this.apply({ type: 'undelay', timeMs: this.timeMs, key }));
  }

  dequeue(key: string, ticket: number, cause: 'deadline' | 'cancel') {
    return this.expect('dequeue', this.apply({ type: 'dequeue', timeMs: this.timeMs, key, ticket, cause }));
  }

  renew(key: string, owner: string, token: bigint, ttlMs: number, requestId = '') {
    return this.expect('renew', this.apply({ type: 'renew', timeMs: this.timeMs, key, owner, token, ttlMs, requestId }));
  }

  release(key: string, owner: string, token: bigint, requestId = '') {
    return this.expect('release', this.apply({ type: 'release', timeMs: this.timeMs, key, owner, token, requestId }));
  }

  openSession(owner: string, ttlMs: number, opts: { requestId?: string; lockDelayMs?: number } = {}) {
    return this.expect(
      'openSession',
      this.apply({
        type: 'openSession',
        timeMs: this.timeMs,
        owner,
        ttlMs,
        requestId: opts.requestId ?? '',
        lockDelayMs: opts.lockDelayMs ?? 0,
      }),
    );
  }

  renewSession(sessionId: bigint, owner = '') {
    return this.expect('renewSession', this.apply({ type: 'renewSession', timeMs: this.timeMs, sessionId: Number(sessionId), owner }));
  }

  closeSession(sessionId: bigint, owner = '') {
    return this.expect('closeSession', this.apply({ type: 'closeSession', timeMs: this.timeMs, sessionId: Number(sessionId), owner }));
  }

  expireSession(sessionId: bigint) {
    return this.expect('expireSession', this.apply({ type: 'expireSession', timeMs: this.timeMs, sessionId: Number(sessionId) }));
  }

  /** An acquire whose hold lives under `sessionId` (result: acquire, or the machine's error). */
  underSession(key: string, owner: string, sessionId: bigint, opts: { waitMs?: number; requestId?: string; lockDelayMs?: number } = {}) {
    return this.apply({
      type: 'acquire',
      timeMs: this.timeMs,
      key,
      owner,
      ttlMs: 0,
      requestId: opts.requestId ?? '',
      sessionId: Number(sessionId),
      ...(opts.waitMs ? { waitMs: opts.waitMs } : {}),
      ...(opts.lockDelayMs ? { lockDelayMs: opts.lockDelayMs } : {}),
    });
  }

  /** An acquire of one of a key's many holds (holds.ts): a semaphore's (`limit` >= 2) or a shared one.
   *  Returns the machine's result as it is (an acquire, or an error such as LIMIT_MISMATCH). */
  many(
    key: string,
    owner: string,
    opts: {
      limit?: number;
      shared?: boolean;
      ttlMs?: number;
      waitMs?: number;
      requestId?: string;
      lockDelayMs?: number;
      sessionId?: bigint;
      value?: string;
    } = {},
  ) {
    const sessionId = opts.sessionId === undefined ? 0 : Number(opts.sessionId);
    return this.apply({
      type: 'acquire',
      timeMs: this.timeMs,
      key,
      owner,
      ttlMs: sessionId > 0 ? 0 : (opts.ttlMs ?? 1000),
      requestId: opts.requestId ?? '',
      ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
      ...(opts.shared === true ? { shared: true } : {}),
      ...(opts.waitMs ? { waitMs: opts.waitMs } : {}),
      ...(opts.lockDelayMs ? { lockDelayMs: opts.lockDelayMs } : {}),
      ...(sessionId > 0 ? { sessionId } : {}),
      ...(opts.value !== undefined ? { value: new TextEncoder().encode(opts.value) } : {}),
    });
  }

  handOff(key: string) {
    return this.expect('handOff', this.apply({ type: 'handOff', timeMs: this.timeMs, key }));
  }

  revoke(key: string, token: bigint) {
    return this.expect('revoke', this.apply({ type: 'revoke', timeMs: this.timeMs, key, token }));
  }

  expire(key: string, token: bigint) {
    return this.expect('expire', this.apply({ type: 'expire', timeMs: this.timeMs, key, token }));
  }

  /** A new leader in the next term takes office with its clock at `timeMs`. */
  termStart(timeMs: number = this.timeMs) {
    this.term += 1;
    this.timeMs = timeMs;
    return this.expect('termStart', this.apply({ type: 'termStart', timeMs }));
  }

  checkpoint(timeMs: number = this.timeMs) {
    this.timeMs = timeMs;
    return this.expect('checkpoint', this.apply({ type: 'checkpoint', timeMs }));
  }

  /** The leader moves the cluster to `level` (versions.ts). */
  raiseLevel(level = 2, timeMs: number = this.timeMs) {
    this.timeMs = timeMs;
    return this.expect('clusterLevel', this.apply({ type: 'clusterLevel', timeMs, level }));
  }

  /** A raft noop/config entry. */
  skip(): void {
    this.machine.skip(this.nextIndex);
  }

  /** Narrow a result, failing loudly if the machine answered with something else (e.g. an error). */
  expect<T extends LockResult['type']>(type: T, result: LockResult): Extract<LockResult, { type: T }> {
    if (result.type !== type) throw new Error(`expected a ${type} result, got ${JSON.stringify(result, bigintJson)}`);
    return result as Extract<LockResult, { type: T }>;
  }
}

export function bigintJson(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? `${value}n` : value;
}
