// Every live hold of a key as Get, List and the dashboard report it (SPEC "Many holders": in token order;
// one for a mutex). The machine's view lists them for a key with many holds (holds.ts); a mutex key's one
// hold is made from the single-holder fields.
import type { HolderView, LockView } from '../../lock/types.js';
import type { WireInput } from '../../wire/scalars.js';
import type { Holder } from '../../wire/lock.js';

const EMPTY_VALUE = new Uint8Array(0);

/** `view`'s holds; `mutexValue` is a mutex hold's value (the machine keeps it apart from the view). */
export function holdersOf(view: LockView, mutexValue: Uint8Array | undefined): HolderView[] {
  if (view.holders !== undefined) return view.holders;
  if (!view.held) return [];
  return [
    {
      owner: view.owner,
      token: view.token,
      ttlMs: view.ttlMs,
      expiresAtMs: view.expiresAtMs,
      shared: false,
      sessionId: view.sessionId ?? 0n,
      value: mutexValue ?? null,
    },
  ];
}

/** One hold as the wire carries it (GetResponse.holders, ListedLock.holders). */
export function holderToWire(h: HolderView): WireInput<Holder> {
  return {
    owner: h.owner,
    token: h.token.toString(),
    ttl_ms: String(h.ttlMs),
    expires_at_ms: String(h.expiresAtMs),
    shared: h.shared,
    session_id: h.sessionId.toString(),
    value: h.value ?? EMPTY_VALUE,
  };
}
