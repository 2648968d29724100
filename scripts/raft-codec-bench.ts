// The Raft stream's codec, old path against new, on one core and no cluster: how long encoding and decoding
// a realistic mix of peer messages takes per message, and how much each allocates. Not a test: numbers for
// the commit that moved the Raft stream off protobufjs (issue 37, "cheaper codecs"); the cluster-level
// effect is the bench's (A B A B) to show.
//
//   npm run build:test && node build/scripts/raft-codec-bench.js [frames]
//
// Old: what a node ran before, per gRPC message: the object codec (test/unit/wire/protobufjs-raft-codec.ts)
// and proto-loader's protobufjs serializer on the way out; the strict decoder's walk, protobufjs's decode
// and the object codec's checks on the way in. New: encodeRaftFrame / decodeRaftFrame (src/wire).
// The mix, seeded: AppendEntries of 1-16 entries of about 100 bytes, heartbeats (no entries), their
// responses, and batches of 3 (what a node has for a peer in one turn under load).
import { performance } from 'node:perf_hooks';
import { GCProfiler } from 'node:v8';
import type { Entry, Message } from '../src/raft/core/types.js';
import { descriptorRegistry, strictProblem } from '../src/server/client-api/strict-decode.js';
import { packageDefinition } from '../src/wire/load.js';
import { encodeRaftFrame } from '../src/wire/raft-encode.js';
import { decodeRaftFrame } from '../src/wire/raft-decode.js';
import { SimRng } from '../test/sim/rng.js';
import { batchToWire, messagesFromWire } from '../test/unit/wire/protobufjs-raft-codec.js';

const FRAMES = Number(process.argv[2] ?? 20_000);
const ROUNDS = 6;

const stream = (
  packageDefinition()['leasehold.v1.Raft'] as Record<
    string,
    { requestSerialize(v: unknown): Buffer; requestDeserialize(b: Buffer): unknown }
  >
)['Stream']!;
const registry = descriptorRegistry(packageDefinition());
const raftMessage = registry.get('leasehold.v1.RaftMessage')!;

interface Path {
  name: string;
  encode(msgs: Message[]): Buffer;
  decode(bytes: Buffer): Message[];
}

const OLD: Path = {
  name: 'old (protobufjs)',
  encode: (msgs) => stream.requestSerialize(batchToWire(msgs, 'cluster-1', 6)),
  decode: (bytes) => {
    const problem = strictProblem(bytes, raftMessage, registry);
    if (problem !== null) throw new Error(problem);
    return messagesFromWire(stream.requestDeserialize(bytes));
  },
};

const NEW: Path = {
  name: 'new (by hand)',
  encode: (msgs) => encodeRaftFrame(msgs, 'cluster-1', 6),
  decode: (bytes) => decodeRaftFrame(bytes).messages,
};

function mix(seed: number, frames: number): Message[][] {
  const rng = new SimRng(seed);
  let index = 1_000_000;
  const term = 7;
  const entries = (n: number): Entry[] =>
    Array.from({ length: n }, () => ({
      index: ++index,
      term,
      kind: 'normal' as const,
      data: Uint8Array.from({ length: 90 + rng.int(21) }, () => rng.int(256)),
    }));
  const append = (n: number): Message => {
    const e = entries(n);
    return {
      type: 'AppendEntries',
      from: 'n1',
      to: 'n2',
      term,
      prevLogIndex: (e[0]?.index ?? index + 1) - 1,
      prevLogTerm: term,
      entries: e,
      leaderCommit: index - 3,
      round: 40_000 + rng.int(1000),
    };
  };
  const response = (): Message => ({
    type: 'AppendEntriesResponse',
    from: 'n2',
    to: 'n1',
    term,
    success: true,
    matchIndex: index,
    conflictIndex: 0,
    conflictTerm: 0,
    round: 40_000 + rng.int(1000),
  });
  const out: Message[][] = [];
  for (let i = 0; i < frames; i++) {
    const pick = rng.int(10);
    if (pick < 4) out.push([append(1 + rng.int(16))]);
    else if (pick < 6) out.push([append(0)]);
    else if (pick < 9) out.push([response()]);
    else if (rng.int(2) === 0) out.push([append(1 + rng.int(4)), append(0), append(1 + rng.int(4))]);
    else out.push([response(), response(), response()]);
  }
  return out;
}

/** One timed pass: µs per message, bytes allocated per message (the JS heap used at the end minus at the
 *  start, plus what every GC in between freed; the same for memory outside the heap: Buffers and
 *  ArrayBuffers), and the GCs that ran (v8.GCProfiler reports them synchronously, with their sizes). */
interface Pass {
  us: number;
  heapBytes: number;
  externalBytes: number;
  gcs: number;
  gcMs: number;
}

function measure(frames: Message[][], messages: number, fn: (frame: Message[], i: number) => void): Pass {
  const profiler = new GCProfiler();
  const before = process.memoryUsage();
  profiler.start();
  const start = performance.now();
  for (let i = 0; i < frames.length; i++) fn(frames[i]!, i);
  const elapsedMs = performance.now() - start;
  const after = process.memoryUsage();
  const gcs = profiler.stop()?.statistics ?? [];
  let heapFreed = 0;
  let externalFreed = 0;
  let gcMs = 0;
  for (const g of gcs) {
    heapFreed += g.beforeGC.heapStatistics.usedHeapSize - g.afterGC.heapStatistics.usedHeapSize;
    externalFreed += g.beforeGC.heapStatistics.externalMemory - g.afterGC.heapStatistics.externalMemory;
    gcMs += g.cost / 1000;
  }
  return {
    us: (elapsedMs * 1000) / messages,
    heapBytes: (after.heapUsed - before.heapUsed + heapFreed) / messages,
    externalBytes: (after.external - before.external + externalFreed) / messages,
    gcs: gcs.length,
    gcMs,
  };
}

function main(): void {
  const frames = mix(0x37c, FRAMES);
  const messages = frames.reduce((a, f) => a + f.length, 0);
  const sink: unknown[] = new Array<unknown>(frames.length);
  const encoded = new Map<Path, Buffer[]>();
  for (const path of [OLD, NEW]) {
    const bytes = frames.map((f) => path.encode(f));
    encoded.set(path, bytes);
    // Both paths agree before anything is timed.
    for (let i = 0; i < 200; i++) {
      if (JSON.stringify(path.decode(bytes[i]!)) !== JSON.stringify(frames[i])) throw new Error(`${path.name} does not round-trip`);
    }
  }
  const bytesOf = (p: Path) => encoded.get(p)!.reduce((a, b) => a + b.length, 0) / messages;
  console.log(
    `${frames.length} frames, ${messages} messages; bytes on the wire per message: old ${bytesOf(OLD).toFixed(1)}, new ${bytesOf(NEW).toFixed(1)}`,
  );

  const passes = new Map<string, Pass[]>();
  const record = (key: string, pass: Pass) => passes.set(key, [...(passes.get(key) ?? []), pass]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const path of round % 2 === 0 ? [OLD, NEW] : [NEW, OLD]) {
      const bytes = encoded.get(path)!;
      record(
        `${path.name} encode`,
        measure(frames, messages, (f, i) => (sink[i] = path.encode(f))),
      );
      sink.fill(undefined);
      record(
        `${path.name} decode`,
        measure(frames, messages, (_f, i) => (sink[i] = path.decode(bytes[i]!))),
      );
      sink.fill(undefined);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`\nper message, median of ${ROUNDS} rounds (A B, B A, ...); every round's µs in brackets:`);
  for (const [key, ps] of passes) {
    console.log(
      `  ${key.padEnd(25)} ${median(ps.map((p) => p.us)).toFixed(3)} µs  heap ${median(ps.map((p) => p.heapBytes)).toFixed(0)} B  ` +
        `outside the heap ${median(ps.map((p) => p.externalBytes)).toFixed(0)} B  GCs ${median(ps.map((p) => p.gcs))} ` +
        `(${median(ps.map((p) => p.gcMs)).toFixed(1)} ms)  [${ps.map((p) => p.us.toFixed(2)).join(' ')}]`,
    );
  }
}

main();
