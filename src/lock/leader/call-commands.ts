// The entry each client call proposes: its validated request as a lock command, unstamped (timeMs 0; the
// leader stamps it with its now when it proposes). Nothing is decided here: whether a call is proposed at
// all is the leader's (term-gate.ts, admission.ts, acquire.ts), and what the entry does is the machine's.
import type { LockCommand } from '../commands.js';
import type { ValidAcquire } from '../validate.js';
import { LEVEL_REVOKE_ONCE } from '../versions.js';
import type { ClientRequest } from './types.js';

/** A call that is answered by one entry of its own (every call but an acquire, which acquire.ts judges
 *  first, and a get, which is a read). */
export type ProposedCall = Exclude<ClientRequest, { op: 'acquire' } | { op: 'get' }>;

/** `clusterLevel`: the applied cluster level (versions.ts), which decides the form an entry may take. */
export function commandOf(request: ProposedCall, clusterLevel: number): LockCommand {
  switch (request.op) {
    case 'renew': {
      const r = request.req;
      return { type: 'renew', timeMs: 0, key: r.key, owner: r.owner, token: r.token, ttlMs: r.ttlMs, requestId: r.requestId };
    }
    case 'release': {
      const r = request.req;
      return { type: 'release', timeMs: 0, key: r.key, owner: r.owner, token: r.token, requestId: r.requestId };
    }
    case 'revoke': {
      const r = request.req;
      // From level 5 the entry carries who revokes and the request id, and the machine remembers its first
      // outcome (a retry ends nothing new); below it, the older form every member reads.
      if (clusterLevel < LEVEL_REVOKE_ONCE) return { type: 'revoke', timeMs: 0, key: r.key, token: r.token };
      return { type: 'revoke', timeMs: 0, key: r.key, token: r.token, owner: r.owner, requestId: r.requestId };
    }
    case 'openSession': {
      const r = request.req;
      return { type: 'openSession', timeMs: 0, owner: r.owner, ttlMs: r.ttlMs, requestId: r.requestId, lockDelayMs: r.lockDelayMs };
    }
    case 'renewSession':
    case 'closeSession': {
      const r = request.req;
      return { type: request.op, timeMs: 0, sessionId: r.sessionId, owner: r.owner };
    }
  }
}

/** An acquire's entry, with only the options it sets: one without limit or shared encodes as the older
 *  acquire, which every cluster level reads (commands.ts). */
export function acquireCommandOf(req: ValidAcquire, sessionId: number): LockCommand {
  const command: LockCommand = { type: 'acquire', timeMs: 0, key: req.key, owner: req.owner, ttlMs: req.ttlMs, requestId: req.requestId };
  const limit = req.limit ?? 1;
  if (limit > 1) command.limit = limit;
  if (req.shared === true) command.shared = true;
  if (req.waitMs > 0) command.waitMs = req.waitMs;
  if (req.lockDelayMs > 0) command.lockDelayMs = req.lockDelayMs;
  if (req.value !== undefined) command.value = req.value;
  if (sessionId > 0) command.sessionId = sessionId;
  return command;
}
