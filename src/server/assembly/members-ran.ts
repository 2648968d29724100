// Which members have run, as a leader can tell (machine.ts `ran`, identity.ts): those its Raft progress
// shows have acknowledged entries of this log, and itself. Shared by the runtime and the simulator, so the
// simulator drives the rule that ships.
import type { ConfState, NodeId } from '../../raft/core/types.js';

export function membersThatRan(
  selfId: NodeId,
  conf: Pick<ConfState, 'voters' | 'learners'>,
  progress: ReadonlyMap<NodeId, { match: number }>,
): NodeId[] {
  return [...conf.voters, ...conf.learners].filter((member) => member === selfId || (progress.get(member)?.match ?? 0) > 0).sort();
}
