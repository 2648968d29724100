// The forward-once rule, one decision for every server that forwards: Lock calls (grpc-server.ts), Cluster
// calls (cluster-api.ts), and the simulator's servers (test/sim/lock-server.ts), which run it under faults.
//
// A call is first served here; the service itself knows whether this node leads. When it refuses because
// this node is not the leader, the call goes on to the leader the refusal names — ONCE. A call that
// arrived already forwarded is answered with the refusal (UNAVAILABLE naming the leader this node knows)
// and never forwarded again: two nodes that each believe the other leads (both views stale during an
// election) would otherwise bounce one call between them until its deadline.

/** Metadata a forwarding node sets on the call it sends on (value '1'). */
export const FORWARDED_METADATA = 'x-leasehold-forwarded';

/** What happens to a call this node's service refused as "not the leader". */
export type NotLeaderRoute =
  | { action: 'forward'; to: string }
  /** Answer the refusal to the caller: the call was forwarded once already, the refusal names no leader
   *  (an election), or it names this node (a leader handing its leadership over refuses proposals). */
  | { action: 'answer'; why: 'already-forwarded' | 'no-leader-known' | 'names-this-node' };

/** `leaderId`: the leader the refusal names; `arrivedForwarded`: another node forwarded this call here. */
export function routeNotLeader(selfId: string, leaderId: string | null | undefined, arrivedForwarded: boolean): NotLeaderRoute {
  if (arrivedForwarded) return { action: 'answer', why: 'already-forwarded' };
  if (!leaderId) return { action: 'answer', why: 'no-leader-known' };
  if (leaderId === selfId) return { action: 'answer', why: 'names-this-node' };
  return { action: 'forward', to: leaderId };
}
