// Stage stamps for the latency waterfall (`npm run bench -- --trace`). A process started with
// LEASEHOLD_TRACE=1 records, at each stage a lock call crosses (arrival, propose, Ready, writes, peer
// messages, apply, answer), the stage and a high-resolution time on a clock every process on the machine
// shares (performance.timeOrigin + performance.now(): wall time at process start plus a monotonic
// offset). The bench fetches the stamps from each node (GET /debug/trace on the metrics address) and
// joins them with the client's own call windows: with calls made one at a time, every stamp inside a
// window belongs to that call.
//
// Off (the default), mark() is one boolean test: the hot path pays nothing else. On, a stamp is two
// typed-array stores into a fixed ring (no allocation); a process that is never drained keeps only the
// newest RING stamps. Written by hand: no tracing package records cross-process stage stamps this cheaply
// (OpenTelemetry allocates a span object per stage and needs a collector).

/** Every stage, in roughly the order a call meets them. The index is the stamp's code. */
const STAGES = [
  'call.recv', // a lock call's handler starts (request decoded by grpc-js and our strict decoder)
  'call.propose', // the lock leader proposes the call's command (RaftNode.propose)
  'call.read', // a read barrier starts (RaftNode.readBarrier)
  'call.forward', // a follower forwards the call to the leader on its Forward stream
  'fwd.recv', // the leader receives a forwarded call
  'fwd.answer', // the leader sends a forwarded call's answer
  'fwd.reply', // the follower receives the forwarded answer
  'loop.ready', // the driver takes a Ready with entries to persist
  'loop.send-early', // the leader's AppendEntries leave before its own write
  'peer.write', // the transport hands a message to grpc-js (its stream to the peer)
  'peer.read', // the transport gets a decoded message from grpc-js (before our own checks and codec)
  'disk.start', // a synced batch starts (after any queued writes ahead of it)
  'disk.end', // the synced batch is durable
  'loop.send', // the messages that had to wait for the write leave
  'loop.apply', // an entry with data is applied to the state machine
  'loop.send-notices', // the leader's commit notices leave (after the answers of the same turn)
  'read.done', // a read barrier resolves
  'peer.recv.append', // AppendEntries with entries arrives from the leader
  'peer.recv.heartbeat', // a heartbeat (ReadIndex round or tick) arrives
  'peer.recv.ack', // a follower's answer to an append or a heartbeat arrives
  'call.answer', // the call's answer is ready (the handler's callback)
  'call.sent', // a Lock/Stream answer is written to grpc-js
] as const;

export type Stage = (typeof STAGES)[number];

const CODE: Record<string, number> = Object.fromEntries(STAGES.map((s, i) => [s, i]));
const RING = 1 << 18;

let enabled = false;
let codes: Uint8Array | null = null;
let times: Float64Array | null = null;
let written = 0;

/** Start recording (once per process; the runtime calls it when LEASEHOLD_TRACE=1). */
export function enableTrace(): void {
  if (enabled) return;
  codes = new Uint8Array(RING);
  times = new Float64Array(RING);
  enabled = true;
}

export function traceEnabled(): boolean {
  return enabled;
}

/** The shared clock: milliseconds since the epoch with sub-microsecond resolution. */
export function traceNowMs(): number {
  return performance.timeOrigin + performance.now();
}

export function mark(stage: Stage): void {
  if (!enabled) return;
  const slot = written++ & (RING - 1);
  codes![slot] = CODE[stage]!;
  times![slot] = performance.timeOrigin + performance.now();
}

export interface TraceStamp {
  stage: Stage;
  atMs: number;
}

/** The stamps recorded since the last drain (at most the newest RING), oldest first; clears them. */
export function drainTrace(): TraceStamp[] {
  if (!enabled) return [];
  const n = Math.min(written, RING);
  const out: TraceStamp[] = [];
  for (let k = written - n; k < written; k++) {
    const slot = k & (RING - 1);
    out.push({ stage: STAGES[codes![slot]!]!, atMs: times![slot]! });
  }
  written = 0;
  return out;
}
