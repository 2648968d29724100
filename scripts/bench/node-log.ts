// What the benchmark reads from a leasehold node's log (pino JSON lines).

/** Snapshots the node logged ('snapshot taken' lines of its pino JSON log): count, last size and duration. */
export function snapshotsInLog(logText: string): { count: number; lastBytes: number; lastMs: number } {
  let count = 0;
  let lastBytes = NaN;
  let lastMs = NaN;
  for (const line of logText.split('\n')) {
    if (!line.includes('snapshot taken')) continue;
    try {
      const rec = JSON.parse(line) as { bytes?: number; durationMs?: number };
      count++;
      lastBytes = Number(rec.bytes ?? NaN);
      lastMs = Number(rec.durationMs ?? NaN);
    } catch {
      // a line cut short by a kill -9 is not a snapshot we can read
    }
  }
  return { count, lastBytes, lastMs };
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
