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
