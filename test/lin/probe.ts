// Reads the chaos run makes through EACH node, directly (not through the clients' proxies):
//   - recovery: after a fault is healed, a Get through every live member until it succeeds — the time to
//     the first success per node is that node's recovery time (a follower that cannot forward to the new
//     leader shows up here as the one node that recovers late, as the forwarding backoff of issue 12 did);
//   - during node-network faults, a Get through every member every `everyMs`: an isolated leader that
//     answered from its local state without a read barrier would hand out a stale read, which the
//     linearizability checker then refuses.
// Each probe uses a fresh channel (cluster.raw): a warm one would add grpc's own reconnect backoff to the
// measurement. Only the Gets that succeeded join the history: a read changes nothing, so one whose outcome
// is unknown constrains nothing and can be left out.
import type { GetResponse } from '../../src/wire/lock.js';
import type { TestCluster } from '../integration/harness.js';
import type { HistoryRecorder } from './history.js';
import { sleep } from './workload.js';

export class Prober {
  private seq = 0;

  constructor(
    private readonly cluster: TestCluster,
    private readonly recorder: HistoryRecorder,
    private readonly keys: readonly string[],
  ) {}

  /** One Get of the next key through `id`; true if it succeeded (and was recorded). */
  async probe(id: string, timeoutMs: number): Promise<boolean> {
    const key = this.keys[this.seq++ % this.keys.length]!;
    const invokeMs = this.recorder.now();
    try {
      const g = await this.cluster.raw<GetResponse>(id, 'Get', { key }, timeoutMs);
      this.recorder.record({
        process: `probe@${id}`,
        type: 'get',
        key,
        via: 'probe',
        invokeMs,
        completeMs: this.recorder.now(),
        outcome: 'ok',
        held: g.held,
        getOwner: g.owner,
        getToken: BigInt(g.token),
        lastToken: BigInt(g.last_token),
      });
      return true;
    } catch {
      return false;
    }
  }

  /** Milliseconds from `sinceMs` to the first successful Get through each of `ids` (null: none within timeoutMs). */
  async recovery(ids: readonly string[], sinceMs: number, timeoutMs: number): Promise<Record<string, number | null>> {
    const out: Record<string, number | null> = {};
    await Promise.all(
      ids.map(async (id) => {
        const deadline = sinceMs + timeoutMs;
        while (this.recorder.now() < deadline) {
          if (await this.probe(id, Math.min(1000, Math.max(100, deadline - this.recorder.now())))) {
            out[id] = Math.round(this.recorder.now() - sinceMs);
            return;
          }
          await sleep(50);
        }
        out[id] = null;
      }),
    );
    return out;
  }

  /** Until `stop`: a Get through each of `ids()` every everyMs (one at a time per node). */
  async during(ids: () => readonly string[], everyMs: number, stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      await Promise.all([...ids()].map((id) => this.probe(id, everyMs * 2)));
      await sleep(everyMs, stop);
    }
  }
}
