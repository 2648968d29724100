// A backup (`leasehold snapshot save`) reads, encodes and sends the whole applied state: at a million locks,
// tens of seconds of a core on the node, its LevelDB threads and the receiving CLI, all beside the node's live
// traffic on the same cores. A backup has no deadline that traffic has, so it is paced: after each chunk it
// waits long enough that it is busy for at most `share` of the time (the chunk's making and sending, timed by
// the wall clock, so the work of LevelDB's threads and of a slow reader counts too).

export interface PaceClock {
  nowMs(): number;
  sleep(ms: number): Promise<void>;
}

/** The share of the time a backup stream takes when the request does not say (SnapshotRequest.pace_percent):
 *  one cluster with 300,000 holds and 16 clients cycling fresh keys, a save beside them unpaced cut their rate
 *  to 0.71-0.77x and raised their p99 1.23-1.40x; at 25 % it was 0.90-0.93x and 1.04-1.13x, the save ~3x as
 *  long (issue 36: the load's p99 may rise 20 % at most). */
export const DEFAULT_PACE_PERCENT = 25;

/** The share (0, 1] a request's pace_percent asks for; an error naming the field when it is not one. */
export function paceShare(pacePercent: number | undefined): number | { invalid: string } {
  const percent = pacePercent ?? 0;
  if (!Number.isInteger(percent) || percent < 0) return { invalid: `pace_percent: ${percent} is not a whole percent` };
  if (percent > 100) return { invalid: `pace_percent: ${percent} is over 100 (100 = unpaced)` };
  return (percent === 0 ? DEFAULT_PACE_PERCENT : percent) / 100;
}

/** Yields `chunks`, pausing after each for (1 / share - 1) times what it took, so a backup takes `share` of the
 *  time at most. A share of 1 (or more) never pauses. */
export async function* paced<T>(chunks: AsyncIterable<T>, share: number, clock: PaceClock): AsyncGenerator<T> {
  const pausePerBusyMs = share >= 1 ? 0 : 1 / share - 1;
  let startedMs = clock.nowMs();
  for await (const chunk of chunks) {
    yield chunk; // resumed once the consumer has taken it (written it, or waited for the reader to drain)
    const busyMs = clock.nowMs() - startedMs;
    if (pausePerBusyMs > 0 && busyMs > 0) await clock.sleep(busyMs * pausePerBusyMs);
    startedMs = clock.nowMs();
  }
}
