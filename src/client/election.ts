// Leader election on top of sessions, the replicated wait line and Watch (SPEC "Election"; etcd's
// v3election, Curator's LeaderLatch). A campaign is a blocking acquire of `election/<name>` with the
// candidate's value, under a session of its own: the line orders the candidates (FIFO, kept across
// leader changes of the cluster), the hold's fencing token is the leadership's — a leader's writes are
// fenced like any holder's — and when the leader's process dies its session runs out and the next
// candidate in line is granted in the same log entry.
//
// observe() reads the key once (Get, at index i) and then watches it from i: it reports the holder at
// that moment and every later ACQUIRED, and never one whose token is not higher than the last it
// reported — so never an older leader, and each leader once.
import { InvalidRequestError, LockNotAcquiredError } from './errors.js';
import type { LockHandle } from './handle.js';
import type { LockSession } from './session.js';

/** What a campaign needs from the client (client.ts). */
export interface ElectionClient {
  session(opts: { ttlMs: number; owner?: string; signal?: AbortSignal }): Promise<LockSession>;
  get(
    key: string,
    opts?: { signal?: AbortSignal },
  ): Promise<{ held: boolean; owner: string; token: bigint; value: Uint8Array; index: bigint }>;
  watch(
    key: string,
    opts: { afterIndex: bigint; signal?: AbortSignal },
  ): AsyncGenerator<{ kind: string; owner: string; token: bigint; value: Uint8Array }, void, undefined>;
}

export interface CampaignOptions {
  /** Published with the leadership (an address, a job id); returned to observers. */
  value?: Uint8Array | string;
  /** The campaign's session TTL: how long after this process dies another candidate takes over. Default 10 s. */
  ttlMs?: number;
  /** Owner name of the candidate (default: the client's). */
  owner?: string;
  /** Stops campaigning (a waiting campaign rejects with the signal's reason). */
  signal?: AbortSignal;
}

/** Each wait in line: the server's default lock.maxWaitMs (5 min); the campaign queues again after. A
 *  cluster configured with a lower maxWaitMs says so (INVALID_ARGUMENT naming it): the campaign then waits
 *  that long per round. */
const WAIT_PER_ROUND_MS = 300_000;
const WAIT_BOUND = /wait_ms must be between 0 and (\d+)/;

export interface Leadership {
  readonly name: string;
  /** The fencing token of this leadership: pass it with every write the leader makes. */
  readonly token: bigint;
  /** Aborts when leadership is lost (the session ran out or the hold was lost): stop acting as leader. */
  readonly signal: AbortSignal;
  readonly session: LockSession;
  readonly hold: LockHandle;
  /** Steps down: the next candidate in line is granted at once. */
  resign(): Promise<void>;
}

export interface LeaderInfo {
  owner: string;
  value: Uint8Array;
  token: bigint;
}

export const electionKey = (name: string): string => `election/${name}`;

export async function campaign(client: ElectionClient, name: string, opts: CampaignOptions = {}): Promise<Leadership> {
  const session = await client.session({
    ttlMs: opts.ttlMs ?? 10_000,
    ...(opts.owner !== undefined ? { owner: opts.owner } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  try {
    let waitMs = WAIT_PER_ROUND_MS;
    for (;;) {
      opts.signal?.throwIfAborted();
      try {
        const hold = await session.acquire(electionKey(name), {
          waitMs,
          ...(opts.value !== undefined ? { value: opts.value } : {}),
          ...(opts.signal ? { signal: opts.signal } : {}),
        });
        return {
          name,
          token: hold.token,
          signal: hold.signal,
          session,
          hold,
          resign: async () => {
            await session.close();
          },
        };
      } catch (err) {
        const bound = err instanceof InvalidRequestError ? WAIT_BOUND.exec(err.message) : null;
        if (bound !== null && Number(bound[1]) > 0 && Number(bound[1]) < waitMs) {
          waitMs = Number(bound[1]); // this cluster's lock.maxWaitMs
          continue;
        }
        if (!(err instanceof LockNotAcquiredError)) throw err;
        // The wait ran out with another leader still in place: queue again (behind whoever queued meanwhile).
      }
    }
  } catch (err) {
    await session.close().catch(() => {});
    throw err;
  }
}

export async function* observe(
  client: ElectionClient,
  name: string,
  opts: { signal?: AbortSignal } = {},
): AsyncGenerator<LeaderInfo, void, undefined> {
  const key = electionKey(name);
  const now = await client.get(key, opts.signal ? { signal: opts.signal } : {});
  let last = 0n;
  if (now.held) {
    last = now.token;
    yield { owner: now.owner, value: now.value, token: now.token };
  }
  for await (const e of client.watch(key, { afterIndex: now.index, ...(opts.signal ? { signal: opts.signal } : {}) })) {
    if (e.kind !== 'ACQUIRED' || e.token <= last) continue;
    last = e.token;
    yield { owner: e.owner, value: e.value, token: e.token };
  }
}
