// Cluster levels (SPEC "Versions"; etcd's cluster version): what a build reads, and the gate that keeps a
// leader from proposing an entry, or sending a snapshot, that some member cannot read.
//
// A build reads every level up to BUILD_LEVEL. Level 1 is every build from before the gate (command tags
// 1-18, snapshot versions 1-6); such builds announce no level, which counts as 1. Level 2 adds:
//   - tag 19 `clusterLevel`: the leader records in the log that every member reads level L. It proposes it
//     only once it has heard every member announce at least L (peer messages carry the sender's level);
//   - log time that follows the leader's clock within a term (machine.ts, "time"): once the cluster is at 2;
//   - snapshot version 7 (6 plus the cluster level and the term's last stamp): written once the cluster is at 2.
// The cluster level only rises. Once it is L, every member must run a build that reads L: an older one meets
// an entry it cannot read and stops (UnknownCommandError), never misapplies it. A downgrade below the
// cluster level is therefore not possible in place (etcd's rule too): restore from a backup instead.
//   Level 3 adds:
//   - tag 21: an acquire of one of a key's many holds — a counting semaphore (`limit`) or a shared hold
//     (holds.ts). The leader refuses such requests until the cluster is at 3;
//   - snapshot version 8 (7 plus the keys with many holds, and each waiter's limit and mode): written once
//     the cluster is at 3.
//   Level 4 adds no entry and no snapshot format, only a rule every replica must apply alike:
//   - an owner's new acquire supersedes its live hold of the key only under the same session (or both under
//     none). Under another, the hold is like another holder's: the request waits its turn or is refused,
//     and never ends a hold its client may still trust. Before it, a late duplicate of an old request, past
//     the dedup window and under an old session the elections had kept alive, took the key's token from the
//     owner's newer hold; that hold's client still trusted it while its room went to another (a semaphore
//     of two with three holders trusting it).
//   Level 5 adds:
//   - tag 23: a revoke that carries who revokes and its request id (commands.ts). The machine remembers its
//     first outcome in the dedup table like every other mutation's, so a retry with the same request id
//     answers that outcome and ends nothing new (before it, a retried "revoke every hold of this key" could
//     end a hold granted in between). The leader proposes it once the cluster is at 5, the older tag 18
//     below; the machine refuses a tag-23 revoke below level 5;
//   - snapshot version 9 (8 whose dedup records may be revokes'): written once the cluster is at 5;
//   - a rule every replica must apply alike: a hold that ran out by log time ends as EXPIRED whichever
//     entry ends it — its lock-delay begins, from its end, as the expiry's would. Before it, a late
//     `closeSession` of a run-out session (its expireSession not applied yet), a `release` of a run-out
//     lease, or a `revoke` of one ended it with no delay: a holder that came back late skipped the delay
//     that exists for a holder that went away (machine-leases.ts `endsExpired`).
//   Level 6 adds no entry; a snapshot format a follower must read, and a rule every replica must apply alike
//   (it decides which dedup records a replica keeps, so which later copies replay):
//   - an acquire's dedup record is kept, past the dedup window, for as long as its owner holds the key (the
//     hold it granted, or one that superseded it). Any copy of it that arrives meanwhile replays its first
//     outcome, however late and whatever `dedupWindowMs` says. Before it, a copy delayed past the window (a
//     forward held up on its hop, a retry of an old attempt) was a new request: the owner's re-acquire, which
//     superseded the very hold it had granted, with a token its client never heard of, while the client
//     still trusted the old one;
//   - an acquire's record names its terms — session, limit, mode (dedup.ts `acquireTerms`, in the record's
//     token, 0 before) — and a copy under the same request id asking other terms is refused as a whole
//     (REQUEST_ID_REUSED), as is a retry of a waiter asked under other terms: a request id names one request.
//     Kept records made the gap reachable: an exclusive grant under one session replayed to a shared request
//     under another made that request's client trust a hold that ended with the first session.
//   - a follower behind the log's start is sent the leader's applied store as a stream of its records, read
//     from one LevelDB view chunk by chunk and written by the follower into a new generation of its own
//     store (src/state/snapshot-stream.ts, "LHR"). Below level 6 the leader sends the whole-state encoding
//     (snapshot.ts, "LHS") that every older build reads; a level-6 build reads both.
//   - and, not a cluster matter, a build at 6 reads peer messages batched (raft.proto RaftMessage.batch). A
//     node batches what it has for one peer in one turn only to a peer whose latest message announced 6 or
//     more, whatever the cluster's level: a build from before refuses the unknown field
//     (src/server/client-api/strict-decode.ts) and would drop the stream.
//   Level 7 adds no snapshot format and no dedup record:
//   - tag 24 `renews`: the lock renews a leader admits in one turn, in one entry (key, owner, token and ttl
//     each, one stamp). The machine applies each as a lone renew at that log time — the same checks, in
//     order, each its own answer — and remembers none of them: a renew is idempotent by token, so a retry
//     renews again from its own log time instead of replaying the first outcome (LEASES.md "Renews without
//     a dedup record" says why that keeps every rule). The leader proposes it once the cluster is at 7 (the
//     lone tag 2 below); the machine refuses a tag-24 entry below level 7, as it does tag 23 below 5.
export const BUILD_LEVEL = 7;

/** Builds from before the gate, which announce nothing. */
export const BASE_LEVEL = 1;

/** The level that introduced the version gate and the log-time rule that follows the leader's clock. */
export const LEVEL_CLOCK_PROGRESS = 2;

/** The level that introduced semaphores and shared holds (holds.ts). */
export const LEVEL_MANY_HOLDERS = 3;

/** The level from which an owner supersedes its own hold only under the same session (machine-leases.ts
 *  `supersedes`). */
export const LEVEL_SUPERSEDE_SAME_SESSION = 4;

/** The level that introduced the revoke deduplicated by its request id (tag 23, snapshot version 9). */
export const LEVEL_REVOKE_ONCE = 5;

/** The level from which a hold that ran out by log time ends as expired (its lock-delay begins), whichever
 *  entry ends it: a late close, release or revoke too (machine-leases.ts `endsExpired`). */
export const LEVEL_LATE_END_EXPIRES = 5;

/** The level from which an acquire's dedup record is kept while its owner holds the key (dedup.ts `prune`,
 *  machine-entries.ts `keepAcquireRecord`). */
export const LEVEL_ACQUIRE_KEPT_WHILE_HELD = 6;

/** The level from which a lock-delay running at a term start is carried across its log-time jump by T - P,
 *  as live leases are (key-delays.ts carryOver): a leader whose clock ran ahead ended it at once before. */
export const LEVEL_DELAY_CARRIED = 6;

/** The build level from which a peer reads batched Raft messages (src/transport/peer-link.ts). */
export const LEVEL_PEER_BATCHES = 6;

/** The level from which a follower behind the log's start is sent a record stream of the leader's applied
 *  store (src/state/snapshot-stream.ts) instead of the whole-state encoding. */
export const LEVEL_RECORD_STREAM = 6;

/** The level that introduced the renews of one turn in one entry, with no dedup record (tag 24). */
export const LEVEL_RENEWS_ENTRY = 7;

/** The lowest level every member reads, as this node knows it: its own build's and each member's announced
 *  one (unknown = not heard from yet = cannot be counted on, so nothing new is proposed). */
export function lowestReadLevel(
  ownLevel: number,
  members: Iterable<string>,
  announced: (member: string) => number | undefined,
): number | undefined {
  let lowest = ownLevel;
  for (const member of members) {
    const level = announced(member);
    if (level === undefined) return undefined;
    lowest = Math.min(lowest, level);
  }
  return lowest;
}
