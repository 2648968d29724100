// The read view: what a Get answers after its read barrier, judged at the leader's now (log time projected
// to its clock, machine-views.ts `projectedNowMs`) rather than at the log time of the last applied entry. A hold
// past its deadline is reported free (its expire entry is on its way); the index is the applied state's, so
// a watch opened after the read continues from exactly there.
import type { LockView } from '../types.js';
import type { LockStateView } from './types.js';

/** The lock state of `key` at the leader's clock reading `clockMs`. */
export function viewAt(state: LockStateView, clockMs: number, key: string): LockView {
  const nowMs = state.projectedNowMs(clockMs);
  const v = state.get(key);
  const waiters = state.waiterCountOf(key);
  const index = state.appliedIndex;
  if (v.holders !== undefined) return holdersAt(v, nowMs, waiters, index);
  if (!v.held) return { ...v, waiters, index };
  if (v.expiresAtMs <= nowMs)
    return { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken, waiters, index }; // (its session's too)
  const value = state.valueOf(key);
  return { ...v, ttlMs: v.expiresAtMs - nowMs, waiters, index, ...(value !== undefined ? { value } : {}) };
}

/** A key with many holds judged at the leader's now: holds past their end are left out (their expire
 *  entries are on their way), the first live one fills the single-holder fields. */
function holdersAt(v: LockView, nowMs: number, waiters: number, index: number): LockView {
  const holders = v.holders!.filter((h) => h.expiresAtMs > nowMs).map((h) => ({ ...h, ttlMs: h.expiresAtMs - nowMs }));
  const first = holders[0];
  const base: LockView =
    first === undefined
      ? { held: false, owner: '', token: 0n, ttlMs: 0, expiresAtMs: 0, lastToken: v.lastToken }
      : { held: true, owner: first.owner, token: first.token, ttlMs: first.ttlMs, expiresAtMs: first.expiresAtMs, lastToken: v.lastToken };
  if (first !== undefined && first.sessionId > 0n) base.sessionId = first.sessionId;
  if (first?.value) base.value = first.value;
  return { ...base, holders, ...(v.limit !== undefined ? { limit: v.limit } : {}), waiters, index };
}
