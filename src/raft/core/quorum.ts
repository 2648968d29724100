// Quorum arithmetic, in one place (etcd-io/raft keeps it in quorum/majority.go). Every decision Raft takes
// by majority — an election (§5.2), a commit (§5.3), CheckQuorum (thesis §6.2), a ReadIndex confirmation
// (thesis §6.4) — is safe only because any two majorities of the same voter set share a member. So each
// counts the CURRENT VOTERS ONLY: a learner, or a leader outside its own configuration (it is removing
// itself), is no member of any majority, whatever it has acknowledged or believes of itself.
// PURE: no I/O, no time.
import type { NodeId } from './types.js';

/** A majority of `voterCount` voters: the size every election, commit and confirmation needs. */
export function quorumOf(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/** Do the voters for which `agrees` holds form a majority of `voters`? (Nobody else counts.) */
export function isMajority(voters: readonly NodeId[], agrees: (id: NodeId) => boolean): boolean {
  let yes = 0;
  for (const id of voters) if (agrees(id)) yes++;
  return yes >= quorumOf(voters.length);
}

/** The highest index that a majority of `voters` hold (`matchOf` each), or 0 with no voters. A leader asks
 *  on every append answer, so the matches are kept in descending order by insertion, not by
 *  Array.prototype.sort: V8 builds a sort's working state afresh on every call, ~0.5 KB of garbage each
 *  (heap sampling of a leader under 16 clients: 2.5 KB an operation). etcd-io/raft's CommittedIndex sorts
 *  by insertion too, on a stack array, for the same reason. */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  const count = voters.length;
  if (count === 0) return 0;
  const matches: number[] = [];
  for (let i = 0; i < count; i++) {
    const match = matchOf(voters[i]!);
    let at = matches.length;
    matches.push(match);
    for (; at > 0 && matches[at - 1]! < match; at--) matches[at] = matches[at - 1]!;
    matches[at] = match;
  }
  return matches[quorumOf(count) - 1]!;
}

export type VoteResult = 'won' | 'lost' | 'pending';

/** An election's state from the votes recorded so far (true: granted). Votes from non-voters are ignored. */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  if (isMajority(voters, (id) => votes.get(id) === true)) return 'won';
  if (isMajority(voters, (id) => votes.get(id) === false)) return 'lost';
  return 'pending';
}
