// How lock data looks in the dashboard's JSON (the HTTP APIs and the event stream share these shapes).
// Tokens and session ids are uint64 in the log: they go out as decimal strings, never as JSON numbers,
// which a browser would round above 2^53. A hold's value is bytes: UTF-8 text when it is valid UTF-8
// (an address, a job id: what people store), else base64, and `value_encoding` says which.
import type { LockEvent } from '../../lock/events.js';

export interface JsonValue {
  /** null: no value. */
  value: string | null;
  value_encoding: 'utf8' | 'base64' | null;
}

// fatal: invalid UTF-8 throws instead of becoming U+FFFD, so bytes that are not text are never mangled.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function valueJson(bytes: Uint8Array | null | undefined): JsonValue {
  if (bytes === null || bytes === undefined) return { value: null, value_encoding: null };
  try {
    return { value: strictUtf8.decode(bytes), value_encoding: 'utf8' };
  } catch {
    return { value: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'), value_encoding: 'base64' };
  }
}

/** Log time (ms since the epoch, leader-stamped) as an ISO date; null for 0 (not held). */
export function isoOrNull(ms: number): string | null {
  return ms > 0 ? new Date(ms).toISOString() : null;
}

export interface EventJson extends JsonValue {
  index: number;
  key: string;
  kind: LockEvent['kind'];
  owner: string;
  token: string;
  session_id: string;
  shared: boolean;
}

/** One watch event (lock/events.ts) as the event stream sends it. */
export function eventJson(e: LockEvent): EventJson {
  return {
    index: e.index,
    key: e.key,
    kind: e.kind,
    owner: e.owner,
    token: e.token.toString(),
    session_id: String(e.sessionId),
    shared: e.shared,
    ...valueJson(e.value),
  };
}
