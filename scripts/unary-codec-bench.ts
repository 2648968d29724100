// The codec work of one unary lock call on the server (what grpcurl or a client in another language sends),
// old path against new, on one core and no cluster: µs and bytes allocated per call. Not a test: numbers
// for the commits that put the unary lock calls on the server's own codecs (issue 37, "cheaper codecs");
// the cluster-level effect is the bench's (A B A B) to show.
//
//   npm run build:test && node build/scripts/unary-codec-bench.js [calls]
//
// Per call, on the node that serves it (the leader): the request's bytes to the object validation reads
// (old: the strict walk, then protobufjs; new: by hand), the domain result to its wire form (old: decimal
// strings; new: bigint tokens and number times) and that to the reply's bytes (old: protobufjs; new: by
// hand). On a follower that forwarded the call on its Forward stream: the leader's response bytes to the
// reply's bytes (old: protobufjs decode, then protobufjs encode; new: written as they are). And the
// response inside a Lock/Stream or Forward answer (old: protobufjs from strings; new: by hand).
// The mix, seeded: acquire / release / renew / get as the bench's clients send them.
import { performance } from 'node:perf_hooks';
import { GCProfiler } from 'node:v8';
import type * as grpc from '@grpc/grpc-js';
import type { AcquireResult, LockView, ReleaseResult, RenewResult } from '../src/lock/types.js';
import { WIRE_ANSWERS } from '../src/server/client-api/answers-to-wire.js';
import { encodeResponseBody, encodeResponseBodyWithProtobufjs } from '../src/server/client-api/call-bodies.js';
import { holderToWire, holdersOf } from '../src/server/client-api/holders-view.js';
import { withLockUnaryCodecs } from '../src/server/client-api/lock-unary-codec.js';
import { descriptorRegistry, strictRequestDeserializers } from '../src/server/client-api/strict-decode.js';
import { packageDefinition } from '../src/wire/load.js';
import { lockGrpcService } from '../src/wire/lock.js';
import { SimRng } from '../test/sim/rng.js';

const CALLS = Number(process.argv[2] ?? 20_000);
const ROUNDS = 6;

type Methods = Record<string, grpc.MethodDefinition<unknown, unknown>>;
const definition = lockGrpcService.definition() as unknown as grpc.ServiceDefinition;
const registry = descriptorRegistry(packageDefinition());
const OLD_METHODS = strictRequestDeserializers(definition, registry) as unknown as Methods;
const NEW_METHODS = strictRequestDeserializers(withLockUnaryCodecs(definition), registry) as unknown as Methods;
const METHOD: Record<string, 'Acquire' | 'Renew' | 'Release' | 'Get'> = {
  acquire: 'Acquire',
  renew: 'Renew',
  release: 'Release',
  get: 'Get',
};

/** answers-to-wire.ts as it was: every 64-bit field a decimal string, for protobufjs. */
const OLD_ANSWERS: Record<string, (r: never) => unknown> = {
  Acquire: (r: AcquireResult) => ({
    acquired: r.acquired,
    token: r.token.toString(),
    ttl_ms: String(r.ttlMs),
    expires_at_ms: String(r.expiresAtMs),
    holder_owner: r.holderOwner,
    holder_ttl_ms: String(r.holderTtlMs),
    delay_ms_left: String(r.delayMsLeft ?? 0),
  }),
  Renew: (r: RenewResult) => ({ renewed: r.renewed, ttl_ms: String(r.ttlMs), expires_at_ms: String(r.expiresAtMs), reason: r.reason }),
  Release: (r: ReleaseResult) => ({ released: r.released, reason: r.reason }),
  Get: (v: LockView) => ({
    held: v.held,
    owner: v.owner,
    token: v.token.toString(),
    ttl_ms: String(v.ttlMs),
    expires_at_ms: String(v.expiresAtMs),
    last_token: v.lastToken.toString(),
    waiters: v.waiters ?? 0,
    index: String(v.index ?? 0),
    holders: holdersOf(v, v.value).map(holderToWire),
    limit: v.limit ?? 1,
  }),
};

interface Sample {
  name: 'acquire' | 'renew' | 'release' | 'get';
  request: Buffer;
  result: unknown;
  /** The leader's response bytes as a follower receives them (forwarded on its Forward stream). */
  leaderBytes: Buffer;
}

function mix(seed: number, n: number): Sample[] {
  const rng = new SimRng(seed);
  const out: Sample[] = [];
  for (let i = 0; i < n; i++) {
    const key = `bench/key-${rng.int(100_000)}`;
    const owner = `client-${rng.int(16)}`;
    const rid = `${owner}-${i}`;
    const name = (['acquire', 'release', 'renew', 'get'] as const)[rng.int(4)]!;
    const token = BigInt(1000 + i);
    const request =
      name === 'acquire'
        ? { key, owner, ttl_ms: '10000', wait_ms: String(rng.int(2) * 5000), request_id: rid }
        : name === 'get'
          ? { key }
          : { key, owner, token: String(token), request_id: rid, ...(name === 'renew' ? { ttl_ms: '10000' } : {}) };
    const base = { index: 5000 + i, term: 3 } as const;
    const result =
      name === 'acquire'
        ? {
            ...base,
            type: 'acquire',
            acquired: true,
            token,
            ttlMs: 10_000,
            expiresAtMs: 1_765_000_000_000,
            holderOwner: '',
            holderTtlMs: 0,
          }
        : name === 'get'
          ? {
              held: true,
              owner,
              token,
              ttlMs: 9_500,
              expiresAtMs: 1_765_000_000_000,
              lastToken: token,
              waiters: 0,
              index: 5000 + i,
              limit: 1,
            }
          : name === 'renew'
            ? { ...base, type: 'renew', renewed: true, ttlMs: 10_000, expiresAtMs: 1_765_000_000_000, reason: 'UNSPECIFIED' }
            : { ...base, type: 'release', released: true, reason: 'UNSPECIFIED', key };
    const leaderBytes = encodeResponseBodyWithProtobufjs(name, OLD_ANSWERS[METHOD[name]!]!(result as never));
    out.push({ name, request: OLD_METHODS[METHOD[name]!]!.requestSerialize(request), result, leaderBytes });
  }
  return out;
}

interface Path {
  name: string;
  /** The serving node's codec work for one unary call: request bytes in, reply bytes out. */
  serve(s: Sample): Buffer;
  /** A follower's, for a call it forwarded on its Forward stream: the leader's bytes in, the reply's out. */
  follower(s: Sample): Buffer;
  /** The response inside a Lock/Stream or Forward answer, from the domain result. */
  streamBody(s: Sample): Buffer;
}

const OLD: Path = {
  name: 'old (walk + protobufjs)',
  serve: (s) => {
    const m = OLD_METHODS[METHOD[s.name]!]!;
    const request = m.requestDeserialize(s.request) as Record<string, unknown>;
    if ('__invalid' in request) throw new Error(String(request.__invalid));
    return m.responseSerialize(OLD_ANSWERS[METHOD[s.name]!]!(s.result as never));
  },
  follower: (s) => {
    const m = OLD_METHODS[METHOD[s.name]!]!;
    return m.responseSerialize(m.responseDeserialize(s.leaderBytes));
  },
  streamBody: (s) => encodeResponseBodyWithProtobufjs(s.name, OLD_ANSWERS[METHOD[s.name]!]!(s.result as never)),
};

const NEW: Path = {
  name: 'new (by hand)',
  serve: (s) => {
    const m = NEW_METHODS[METHOD[s.name]!]!;
    const request = m.requestDeserialize(s.request) as Record<string, unknown>;
    if ('__invalid' in request) throw new Error(String(request.__invalid));
    return m.responseSerialize((WIRE_ANSWERS[METHOD[s.name]!] as (r: unknown) => unknown)(s.result));
  },
  follower: (s) => NEW_METHODS[METHOD[s.name]!]!.responseSerialize(s.leaderBytes),
  streamBody: (s) => encodeResponseBody(s.name, (WIRE_ANSWERS[METHOD[s.name]!] as (r: unknown) => unknown)(s.result)),
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
  // Both paths give the client the same answer (decoded as a client decodes it).
  const decode = (s: Sample, b: Buffer) => JSON.stringify(OLD_METHODS[METHOD[s.name]!]!.responseDeserialize(b));
  for (const s of samples.slice(0, 500)) {
    for (const part of ['serve', 'follower', 'streamBody'] as const)
      if (decode(s, OLD[part](s)) !== decode(s, NEW[part](s))) throw new Error(`${part}: answers differ for ${s.name}`);
  }
  const sink: unknown[] = new Array<unknown>(samples.length);
  const passes = new Map<string, Pass[]>();
  const record = (key: string, pass: Pass) => passes.set(key, [...(passes.get(key) ?? []), pass]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const path of round % 2 === 0 ? [OLD, NEW] : [NEW, OLD]) {
      for (const part of ['serve', 'follower', 'streamBody'] as const) {
        record(
          `${path.name} ${part}`,
          measure(samples.length, (i) => (sink[i] = path[part](samples[i]!))),
        );
        sink.fill(undefined);
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `${samples.length} unary calls (acquire, release, renew, get); per call, median of ${ROUNDS} rounds; every round's µs in brackets:`,
  );
  for (const [key, ps] of passes) {
    console.log(
      `  ${key.padEnd(36)} ${median(ps.map((p) => p.us)).toFixed(3)} µs  heap ${median(ps.map((p) => p.heapBytes)).toFixed(0)} B  ` +
        `GCs ${median(ps.map((p) => p.gcs))}  [${ps.map((p) => p.us.toFixed(2)).join(' ')}]`,
    );
  }
}

main();
