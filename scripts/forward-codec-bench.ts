// The codec work of one lock call forwarded by a follower, old path against new, on one core and no
// cluster: µs and bytes allocated per call on the follower (the client's LockCall in, the ForwardedCall
// out, the ForwardedAnswer in, the LockAnswer out) and on the leader (the ForwardedCall in, its answer
// out). Not a test: numbers for the commit that put Lock/Stream and Forward on hand-written envelopes
// (issue 37, "cheaper codecs"); the cluster-level effect is the bench's (A B A B) to show.
//
//   npm run build:test && node build/scripts/forward-codec-bench.js [calls]
//
// Old: proto-loader's protobufjs codec of the four messages, after the strict decoder's walk of each
// request. New: the envelopes by hand (src/wire/call-envelope-*.ts), the request inside decoded once on
// each node (server/client-api/call-bodies.ts: the walk, then protobufjs on the request alone), the
// response encoded once on the leader and passed through by the follower as bytes.
// The mix, seeded: acquire / release / renew / get with realistic keys and owners, as the bench's
// clients send them.
import { performance } from 'node:perf_hooks';
import { GCProfiler } from 'node:v8';
import { decodeRequestBody, encodeResponseBody } from '../src/server/client-api/call-bodies.js';
import { decodeLockCall } from '../src/server/client-api/lock-stream-codec.js';
import { descriptorRegistry, strictProblem } from '../src/server/client-api/strict-decode.js';
import { decodeAnswerEnvelope, decodeCallEnvelope } from '../src/wire/call-envelope-decode.js';
import { encodeAnswerEnvelope, encodeCallEnvelope } from '../src/wire/call-envelope-encode.js';
import { packageDefinition } from '../src/wire/load.js';
import type { LockCallName } from '../src/wire/lock.js';
import { SimRng } from '../test/sim/rng.js';

const CALLS = Number(process.argv[2] ?? 20_000);
const ROUNDS = 6;

interface PbMethod {
  requestSerialize(v: unknown): Buffer;
  requestDeserialize(b: Buffer): unknown;
  responseSerialize(v: unknown): Buffer;
  responseDeserialize(b: Buffer): unknown;
}
const pb = (service: string, name: string): PbMethod => (packageDefinition()[service] as unknown as Record<string, PbMethod>)[name]!;
const LOCK_STREAM = pb('leasehold.v1.Lock', 'Stream');
const FORWARD = pb('leasehold.v1.Raft', 'Forward');
const registry = descriptorRegistry(packageDefinition());
const LOCK_CALL = registry.get('leasehold.v1.LockCall')!;
const FORWARDED_CALL = registry.get('leasehold.v1.ForwardedCall')!;

/** One call as the bytes each hop receives, built once with protobufjs (both builds read them alike). */
interface Sample {
  name: LockCallName;
  lockCall: Buffer;
  response: Record<string, unknown>;
  forwardedAnswer: Buffer;
}

function mix(seed: number, n: number): Sample[] {
  const rng = new SimRng(seed);
  const out: Sample[] = [];
  for (let i = 0; i < n; i++) {
    const key = `bench/key-${rng.int(100_000)}`;
    const owner = `client-${rng.int(16)}`;
    const rid = `${owner}-${i}`;
    const pick = rng.int(4);
    const name: LockCallName = (['acquire', 'release', 'renew', 'get'] as const)[pick]!;
    const request =
      name === 'acquire'
        ? { key, owner, ttl_ms: '10000', wait_ms: String(rng.int(2) * 5000), request_id: rid }
        : name === 'get'
          ? { key }
          : { key, owner, token: String(1000 + i), request_id: rid, ...(name === 'renew' ? { ttl_ms: '10000' } : {}) };
    const response =
      name === 'acquire'
        ? { acquired: true, token: String(1000 + i), ttl_ms: '10000', expires_at_ms: '1765000000000' }
        : name === 'get'
          ? { held: true, owner, token: String(1000 + i), ttl_ms: '10000', expires_at_ms: '1765000000000', last_token: String(1000 + i) }
          : name === 'renew'
            ? { renewed: true, ttl_ms: '10000', expires_at_ms: '1765000000000' }
            : { released: true };
    out.push({
      name,
      lockCall: LOCK_STREAM.requestSerialize({ call_id: String(i + 1), timeout_ms: 10_000, [name]: request }),
      response,
      forwardedAnswer: FORWARD.responseSerialize({ call_id: String(i + 7), code: 0, [name]: response }),
    });
  }
  return out;
}

interface Path {
  name: string;
  /** The follower's codec work for one forwarded call; returns the LockAnswer bytes. */
  follower(s: Sample): Buffer;
  /** The leader's: the ForwardedCall's bytes in, the ForwardedAnswer's out. */
  leader(forwardedCall: Buffer, s: Sample): Buffer;
  forwardedCall(s: Sample): Buffer;
}

const OLD: Path = {
  name: 'old (protobufjs)',
  follower: (s) => {
    if (strictProblem(s.lockCall, LOCK_CALL, registry) !== null) throw new Error('refused');
    const call = LOCK_STREAM.requestDeserialize(s.lockCall) as Record<string, unknown>;
    FORWARD.requestSerialize({ call_id: '7', from: 'n2', cluster_id: 'cluster-1', timeout_ms: 9_990, [s.name]: call[s.name] });
    const answer = FORWARD.responseDeserialize(s.forwardedAnswer) as Record<string, unknown>;
    return LOCK_STREAM.responseSerialize({
      call_id: call.call_id,
      code: 0,
      details: '',
      leader: '10.0.0.1:7001',
      [s.name]: answer[s.name],
    });
  },
  forwardedCall: (s) => {
    const call = LOCK_STREAM.requestDeserialize(s.lockCall) as Record<string, unknown>;
    return FORWARD.requestSerialize({ call_id: '7', from: 'n2', cluster_id: 'cluster-1', timeout_ms: 9_990, [s.name]: call[s.name] });
  },
  leader: (bytes, s) => {
    if (strictProblem(bytes, FORWARDED_CALL, registry) !== null) throw new Error('refused');
    const call = FORWARD.requestDeserialize(bytes) as Record<string, unknown>;
    if (call[s.name] === undefined) throw new Error('no request');
    return FORWARD.responseSerialize({ call_id: call.call_id, code: 0, details: '', [s.name]: s.response });
  },
};

const NEW: Path = {
  name: 'new (by hand)',
  follower: (s) => {
    const call = decodeLockCall(s.lockCall);
    if ('__invalid' in call) throw new Error(call.__invalid);
    encodeCallEnvelope({ callId: '7', from: 'n2', clusterId: 'cluster-1', timeoutMs: 9_990, name: call.name, body: call.body }, 'forward');
    const answer = decodeAnswerEnvelope(s.forwardedAnswer, 'forward');
    return encodeAnswerEnvelope({ callId: call.callId, code: 0, leader: '10.0.0.1:7001', name: answer.name, body: answer.body }, 'lock');
  },
  forwardedCall: (s) => {
    const call = decodeLockCall(s.lockCall);
    if ('__invalid' in call) throw new Error(call.__invalid);
    return encodeCallEnvelope(
      { callId: '7', from: 'n2', clusterId: 'cluster-1', timeoutMs: 9_990, name: call.name, body: call.body },
      'forward',
    );
  },
  leader: (bytes, s) => {
    const call = decodeCallEnvelope(bytes, 'forward');
    const request = decodeRequestBody(call.name!, call.body!);
    if ('invalid' in request) throw new Error(request.invalid);
    return encodeAnswerEnvelope({ callId: call.callId, code: 0, name: s.name, body: encodeResponseBody(s.name, s.response) }, 'forward');
  },
};

interface Pass {
  us: number;
  heapBytes: number;
  gcs: number;
}

function measure(n: number, fn: (i: number) => void): Pass {
  const profiler = new GCProfiler();
  const before = process.memoryUsage();
  profiler.start();
  const start = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  const elapsedMs = performance.now() - start;
  const after = process.memoryUsage();
  const gcs = profiler.stop()?.statistics ?? [];
  let freed = 0;
  for (const g of gcs) freed += g.beforeGC.heapStatistics.usedHeapSize - g.afterGC.heapStatistics.usedHeapSize;
  return { us: (elapsedMs * 1000) / n, heapBytes: (after.heapUsed - before.heapUsed + freed) / n, gcs: gcs.length };
}

function main(): void {
  const samples = mix(0x37f, CALLS);
  // Both paths give the client the same answer, and the leader the same call.
  for (let i = 0; i < 200; i++) {
    const s = samples[i]!;
    const o = LOCK_STREAM.responseDeserialize(OLD.follower(s));
    const n = LOCK_STREAM.responseDeserialize(NEW.follower(s));
    if (JSON.stringify(o) !== JSON.stringify(n)) throw new Error(`answers differ: ${JSON.stringify(o)} / ${JSON.stringify(n)}`);
    const fo = FORWARD.requestDeserialize(OLD.forwardedCall(s));
    const fn = FORWARD.requestDeserialize(NEW.forwardedCall(s));
    if (JSON.stringify(fo) !== JSON.stringify(fn)) throw new Error('forwarded calls differ');
  }
  const forwarded = new Map<Path, Buffer[]>([OLD, NEW].map((p) => [p, samples.map((s) => p.forwardedCall(s))]));
  const sink: unknown[] = new Array<unknown>(samples.length);
  const passes = new Map<string, Pass[]>();
  const record = (key: string, pass: Pass) => passes.set(key, [...(passes.get(key) ?? []), pass]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const path of round % 2 === 0 ? [OLD, NEW] : [NEW, OLD]) {
      record(
        `${path.name} follower`,
        measure(samples.length, (i) => (sink[i] = path.follower(samples[i]!))),
      );
      sink.fill(undefined);
      const fw = forwarded.get(path)!;
      record(
        `${path.name} leader`,
        measure(samples.length, (i) => (sink[i] = path.leader(fw[i]!, samples[i]!))),
      );
      sink.fill(undefined);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `${samples.length} forwarded calls (acquire, release, renew, get); per call, median of ${ROUNDS} rounds; every round's µs in brackets:`,
  );
  for (const [key, ps] of passes) {
    console.log(
      `  ${key.padEnd(26)} ${median(ps.map((p) => p.us)).toFixed(3)} µs  heap ${median(ps.map((p) => p.heapBytes)).toFixed(0)} B  ` +
        `GCs ${median(ps.map((p) => p.gcs))}  [${ps.map((p) => p.us.toFixed(2)).join(' ')}]`,
    );
  }
}

main();
