// What the benchmark reads from a leasehold node's log (pino JSON lines).

/** What the node logged of its log's compaction and its snapshots (pino JSON lines): log compactions below
 *  the applied store, and snapshots made for a follower behind the log (count, last size). A line cut short by
 *  a kill -9 is skipped. */
export function compactionsInLog(logText: string): { compactions: number; followerSnapshots: number; lastSnapshotBytes: number } {
  let compactions = 0;
  let followerSnapshots = 0;
  let lastSnapshotBytes = NaN;
  for (const line of logText.split('\n')) {
    const compaction = line.includes('"msg":"log compacted below the applied store"');
    const snapshot = line.includes('"msg":"snapshot made for a follower behind the log"');
    if (!compaction && !snapshot) continue;
    let rec: { bytes?: number };
    try {
      rec = JSON.parse(line) as { bytes?: number };
    } catch {
      continue;
    }
    if (compaction) compactions++;
    else {
      followerSnapshots++;
      lastSnapshotBytes = Number(rec.bytes ?? NaN);
    }
  }
  return { compactions, followerSnapshots, lastSnapshotBytes };
}

/** Role changes in a stretch of a node's log: how often it became leader, started a pre-vote (it suspected
 *  its leader) and started a real vote (raised the term). With pre-vote a suspicion that finds the leader
 *  alive does not raise the term, so preVotes shows near-misses the term increase alone does not. */
export function roleChangesInLog(logText: string): { becameLeader: number; preVotes: number; votes: number } {
  const out = { becameLeader: 0, preVotes: 0, votes: 0 };
  for (const line of logText.split('\n')) {
    if (!line.includes('raft role/term changed')) continue;
    // A line is logged on each change of role, term or leader; a leader or a candidate changes neither
    // without leaving its role, so one line is one entry into the role.
    const role = /"role":"([a-z-]+)"/.exec(line)?.[1];
    if (role === 'leader') out.becameLeader++;
    else if (role === 'pre-candidate') out.preVotes++;
    else if (role === 'candidate') out.votes++;
  }
  return out;
}
