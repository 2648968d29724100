// When this node last heard from each peer, and the health policy judged from it (SPEC "Health"): can
// this node serve lock calls now? A leader must have heard from a quorum of its voters (itself included)
// within the window; a follower must have heard from its leader within it. CheckQuorum deposes a cut-off
// leader only after up to two election timeouts; this answers sooner.
import { quorumOf } from './core/quorum.js';
import type { ConfState, NodeId, SoftState } from './core/types.js';

/** When we last received anything from each peer (our clock): what health is judged by. */
export class PeerContact {
  private readonly lastHeardMs = new Map<NodeId, number>();

  heard(id: NodeId, nowMs: number): void {
    this.lastHeardMs.set(id, nowMs);
  }

  /** Has any message from `id` arrived since this node started? */
  everHeard(id: NodeId): boolean {
    return this.lastHeardMs.has(id);
  }

  /** Did a message from `id` arrive in the `windowMs` before `nowMs`? */
  heardWithin(id: NodeId, nowMs: number, windowMs: number): boolean {
    const t = this.lastHeardMs.get(id);
    return t !== undefined && nowMs - t < windowMs;
  }
}

/** The health policy for a running node in role `soft` with configuration `conf`; `recent(id)`: heard from
 *  `id` within the window. */
export function servingOf(
  selfId: NodeId,
  soft: SoftState,
  conf: ConfState | null,
  recent: (id: NodeId) => boolean,
): { serving: boolean; reason: string } {
  if (soft.role === 'leader') {
    if (!conf || !conf.voters.includes(selfId)) return { serving: false, reason: 'leader outside its own configuration' };
    const heard = conf.voters.filter((id) => id === selfId || recent(id)).length;
    const quorum = quorumOf(conf.voters.length);
    return heard >= quorum
      ? { serving: true, reason: 'leader with a quorum' }
      : { serving: false, reason: `leader heard from ${heard} of ${conf.voters.length} voters (quorum ${quorum})` };
  }
  const leader = soft.leaderId;
  if (leader === null) return { serving: false, reason: 'no leader' };
  return recent(leader) ? { serving: true, reason: `follower of ${leader}` } : { serving: false, reason: `no word from leader ${leader}` };
}
