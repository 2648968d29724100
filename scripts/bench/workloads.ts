// The loop workloads (every one bounded by --seconds): what each measures, which systems run it, and at
// which client counts. renew, held-scale and failover have their own files.
import { performance } from 'node:perf_hooks';
import { cycle, type LoopSpec, type Pin } from './loop.js';
import type { LockSession } from './system.js';

/** A blocking acquire waits this long at most (wait_ms; etcd: the Lock call's deadline). */
export const WAIT_MS = 5000;
/** Lease of a lock taken and released at once: long enough never to lapse mid-cycle. */
export const CYCLE_TTL_MS = 10_000;
export const BLOCKING_KEYS = 100;

export interface LoopWorkload {
  name: string;
  description: string;
  /** Whether a try-lock system (etcd-txn) can run it: only when no client ever waits for a held key. */
  tryLockOk: boolean;
  clientCounts(opts: BenchScale): number[];
  /** Where the clients connect; one row per pin. Default ['spread']. */
  pins?: Pin[];
  spec(opts: BenchScale, clients: number, round: number): LoopSpec;
}

export interface BenchScale {
  seconds: number;
  clients: number[];
  quick: boolean;
}

/** A small deterministic generator per client (an LCG in 32-bit integer arithmetic), so both systems see
 *  the same key sequence; the high bits are used, an LCG's low bits cycle fast. */
export function keyPicker(c: number, keys: number): () => number {
  let x = (Math.imul(c + 1, 2654435761) ^ 0x5bd1e995) >>> 0;
  return () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 16) % keys;
  };
}

const warmCycle = (s: LockSession, c: number) => cycle(s, `warm-${c}-${performance.now()}`, WAIT_MS, CYCLE_TTL_MS).then(() => undefined);

function freshKeys(
  name: string,
  description: string,
  clients: (o: BenchScale) => number[],
  pins?: Pin[],
  sessionOptions?: LoopSpec['sessionOptions'],
): LoopWorkload {
  return {
    name,
    description,
    tryLockOk: true,
    clientCounts: clients,
    ...(pins ? { pins } : {}),
    spec: (o, n, round) => ({
      workload: name,
      opName: 'cycles',
      clients: n,
      seconds: o.seconds,
      round,
      ...(sessionOptions ? { sessionOptions } : {}),
      warmUp: warmCycle,
      op: (s, c, i) => cycle(s, `${name}-${round}-${c}-${i}`, WAIT_MS, CYCLE_TTL_MS),
    }),
  };
}

export const uncontended = freshKeys('uncontended', 'a fresh key per cycle, acquire + release, 16 clients', () => [16]);
export const oneClient = freshKeys(
  'one-client',
  '1 client, a fresh key per cycle, acquire + release; one row with the client on the leader, one on a follower',
  () => [1],
  ['leader', 'follower'],
);

export const oneClientUnary = freshKeys(
  'one-client-unary',
  '1 client making unary Lock/Acquire and Lock/Release calls (as grpcurl or a Python client), a fresh key per cycle; on the leader, on a follower',
  () => [1],
  ['leader', 'follower'],
  { unary: true },
);

export const blocking: LoopWorkload = {
  name: 'blocking',
  description: `${BLOCKING_KEYS} keys, blocking acquire (wait ${WAIT_MS} ms) + release, clients spread over all members`,
  tryLockOk: false,
  clientCounts: (o) => o.clients,
  spec: (o, n, round) => {
    const pickers = Array.from({ length: n }, (_, c) => keyPicker(c, BLOCKING_KEYS));
    return {
      workload: 'blocking',
      opName: 'cycles',
      clients: n,
      seconds: o.seconds,
      round,
      warmUp: warmCycle,
      op: (s, c) => cycle(s, `k-${pickers[c]!()}`, WAIT_MS, CYCLE_TTL_MS),
    };
  },
};

export const hotKey: LoopWorkload = {
  name: 'hot-key',
  description: 'one key, 16 blocking waiters: each cycle is one hand-off',
  tryLockOk: false,
  clientCounts: () => [16],
  spec: (o, n, round) => ({
    workload: 'hot-key',
    opName: 'hand-offs',
    clients: n,
    seconds: o.seconds,
    round,
    warmUp: warmCycle,
    op: (s) => cycle(s, 'hot', WAIT_MS, CYCLE_TTL_MS),
  }),
};

export const LOOP_WORKLOADS: readonly LoopWorkload[] = [uncontended, blocking, oneClient, oneClientUnary, hotKey];
