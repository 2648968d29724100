// The sequential model of ONE lock key for the WGL search: a mutex with fencing tokens and leases.
//
// State: the lease (owner, token, and whether it has passed its deadline) or none, and `last`, a lower bound
// of the highest token ever issued for the key.
//
// Leases expire by time, and the checker does not model time: expiry is a spontaneous transition the model
// may take at any moment ("the lease may have expired here"). That is the weakest assumption that is always
// true; mutual exclusion IN TIME is checked separately on the holders' windows (checker.ts). What this model
// still pins down, in one total order per key consistent with real time:
//   - every granted token is greater than every token issued before it (and than every last_token a Get saw);
//   - an acquire is refused only while somebody holds a live lease, and it names that holder;
//   - renew succeeds only for the live lease's owner+token; release only for the lease's owner+token (an
//     expired lease that no `expire` entry removed yet may still be released by its holder — machine.ts);
//   - a Get names the live holder and its token, or says free; its last_token never goes back.
//
// Expiry is monotone (a live lease can become expired, never the reverse), so keeping the lease live until an
// operation forces "expired" is always at least as permissive as expiring it earlier: the step function can be
// deterministic, which keeps the WGL cache effective.
import type { Op } from './history.js';
import type { Model, TimedOp } from './wgl.js';

export type MutexOp =
  | { type: 'acquire'; owner: string; granted: true; token: bigint | null }
  | { type: 'acquire'; owner: string; granted: false; holder: string }
  | { type: 'renew'; owner: string; token: bigint; ok: true }
  | { type: 'renew'; owner: string; token: bigint; ok: false; reason: string }
  | { type: 'release'; owner: string; token: bigint; ok: boolean }
  | { type: 'get'; held: boolean; owner: string; token: bigint; lastToken: bigint };

export interface MutexState {
  lease: { owner: string; token: bigint | null; expired: boolean } | null;
  last: bigint;
}

export const mutexModel: Model<MutexState, MutexOp> = {
  init: () => ({ lease: null, last: 0n }),
  key: (s) =>
    s.lease ? `${s.lease.owner}\u0000${s.lease.token ?? '?'}\u0000${s.lease.expired ? 1 : 0}\u0000${s.last}` : `-\u0000${s.last}`,
  step(s, op) {
    const lease = s.lease;
    const isOurs = (owner: string, token: bigint) =>
      lease !== null && lease.owner === owner && (lease.token === null || lease.token === token);
    switch (op.type) {
      case 'acquire':
        if (op.granted) {
          // The previous lease (if any) is gone: expired or released first. The new token must be fresh.
          if (op.token !== null && op.token <= s.last) return null;
          return { lease: { owner: op.owner, token: op.token, expired: false }, last: op.token ?? s.last };
        }
        // '' = free but FIFO waiters were ahead: says nothing about the lease.
        if (op.holder === '') return s;
        if (lease === null || lease.expired || lease.owner !== op.holder) return null;
        return s;
      case 'renew':
        if (op.ok) {
          if (!isOurs(op.owner, op.token) || lease!.expired) return null;
          return withToken(s, op.token);
        }
        // A refused renew of the current lease: it had expired (EXPIRED), or was already removed (NOT_HELD);
        // WRONG_OWNER / WRONG_TOKEN would mean another lease — one this model was not told about.
        if (isOurs(op.owner, op.token)) {
          return op.reason === 'EXPIRED'
            ? { lease: { ...lease!, token: op.token, expired: true }, last: s.last }
            : { lease: null, last: s.last };
        }
        return s;
      case 'release':
        if (op.ok) {
          if (!isOurs(op.owner, op.token)) return null;
          return { lease: null, last: s.last };
        }
        // Refusing to release the current lease means it had expired and an `expire` entry removed it.
        return isOurs(op.owner, op.token) ? { lease: null, last: s.last } : s;
      case 'get': {
        if (op.lastToken < s.last) return null;
        if (op.held) {
          if (lease === null || lease.expired || lease.owner !== op.owner) return null;
          if (lease.token !== null && lease.token !== op.token) return null;
          if (op.lastToken !== op.token) return null;
          return { lease: { ...lease, token: op.token }, last: op.lastToken };
        }
        // Free: the lease (if any) has passed its deadline, from now on.
        if (lease !== null && lease.token !== null && op.lastToken < lease.token) return null;
        return { lease: lease === null ? null : { ...lease, expired: true }, last: op.lastToken };
      }
    }
  },
};

function withToken(s: MutexState, token: bigint): MutexState {
  return s.lease && s.lease.token === null ? { lease: { ...s.lease, token }, last: s.last } : s;
}

/**
 * The WGL input for one key: ok/fail lock operations (writes belong to the resource, not to this model).
 * A refused acquire whose owner was later observed holding the lock is entered as granted: the checker
 * reports it on its own (refused-took-effect), and the search goes on to check the rest of the key's history.
 * Unknown operations are left out — a release, renew or get of unknown outcome changes nothing the model can
 * rely on (expiry can always explain a vanished lease) — except an acquire whose holder was later OBSERVED
 * (a Get naming its owner, an acquire refused because its owner held the key): it certainly took effect, so
 * it enters with the token the observation revealed (if any) and must be linearized before that observation
 * ended. Owners are unique per acquire, so an owner names one acquire.
 */
export type TimedMutexOp = TimedOp<MutexOp> & { /** The history index of the operation. */ index: number };

export function mutexOpsForKey(ops: readonly Op[]): TimedMutexOp[] {
  const firstSeen = new Map<string, { atMs: number; token: bigint | null }>();
  const see = (owner: string | undefined, atMs: number, token: bigint | null) => {
    if (!owner) return;
    const prev = firstSeen.get(owner);
    if (!prev || atMs < prev.atMs) firstSeen.set(owner, { atMs, token: token ?? prev?.token ?? null });
    else if (prev.token === null && token !== null) prev.token = token;
  };
  for (const op of ops) {
    if (op.completeMs === null) continue;
    if (op.type === 'get' && op.outcome === 'ok' && op.held) see(op.getOwner, op.completeMs, op.getToken ?? null);
    if (op.type === 'acquire' && op.outcome === 'fail' && op.holder) see(op.holder, op.completeMs, null);
  }

  const observedLater = (op: Op) => {
    const seen = firstSeen.get(op.owner!);
    return seen !== undefined && seen.atMs >= op.invokeMs;
  };
  const out: TimedMutexOp[] = [];
  for (const op of ops) {
    if (op.type === 'write' || op.completeMs === null || op.outcome === 'pending') continue;
    const span = { callMs: op.invokeMs, retMs: op.completeMs, index: op.index };
    switch (op.type) {
      case 'acquire':
        if (op.outcome === 'ok') out.push({ ...span, op: { type: 'acquire', owner: op.owner!, granted: true, token: op.token ?? null } });
        else if (op.outcome === 'fail' && !observedLater(op)) {
          out.push({ ...span, op: { type: 'acquire', owner: op.owner!, granted: false, holder: op.holder ?? '' } });
        } else {
          // Unknown — or refused and yet later observed holding the lock (the checker reports that as
          // refused-took-effect); either way it took effect before the observation ended.
          const seen = firstSeen.get(op.owner!);
          if (seen && seen.atMs >= op.invokeMs) {
            out.push({
              callMs: op.invokeMs,
              retMs: seen.atMs,
              index: op.index,
              op: { type: 'acquire', owner: op.owner!, granted: true, token: seen.token },
            });
          }
        }
        break;
      case 'renew':
        if (op.outcome === 'ok') out.push({ ...span, op: { type: 'renew', owner: op.owner!, token: op.token!, ok: true } });
        else if (op.outcome === 'fail')
          out.push({ ...span, op: { type: 'renew', owner: op.owner!, token: op.token!, ok: false, reason: op.reason ?? '' } });
        break;
      case 'release':
        if (op.outcome !== 'info')
          out.push({ ...span, op: { type: 'release', owner: op.owner!, token: op.token!, ok: op.outcome === 'ok' } });
        break;
      case 'get':
        if (op.outcome === 'ok') {
          out.push({
            ...span,
            op: { type: 'get', held: op.held!, owner: op.getOwner ?? '', token: op.getToken ?? 0n, lastToken: op.lastToken ?? 0n },
          });
        }
        break;
    }
  }
  return out;
}
