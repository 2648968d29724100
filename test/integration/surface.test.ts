// The gRPC surface beyond Lock: health checking, server reflection (what grpcurl uses), and waiters that
// go away (cancelled calls leave the FIFO queue).
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcquireResponse, ReleaseResponse } from '../../src/wire/lock.js';
import { RpcError } from '../../src/client/rpc.js';
import { TestCluster, waitFor } from './harness.js';
import { BUILD_LEVEL } from '../../src/lock/versions.js';

const require = createRequire(import.meta.url);

function loadService(file: string, includeDir: string, path: string[]): grpc.ServiceClientConstructor {
  const def = protoLoader.loadSync(file, {
    includeDirs: [includeDir],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  let obj: unknown = grpc.loadPackageDefinition(def);
  for (const p of path) obj = (obj as Record<string, unknown>)[p];
  return obj as grpc.ServiceClientConstructor;
}

describe('gRPC surface', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.create();
    c.startAll();
    await c.waitForLeader();
  });
  afterAll(async () => {
    await c?.stop();
  });

  it('the version gate: members announce their build on peer messages, and the leader moves the cluster to their level', async () => {
    // Every node runs this build (BUILD_LEVEL): once the leader has heard from both peers it proposes the
    // clusterLevel entry, and every node's applied log reaches it (Status.cluster_level).
    const levels = await waitFor(
      `cluster level ${BUILD_LEVEL} on every node`,
      async () => {
        const sts = await Promise.all(['n1', 'n2', 'n3'].map((id) => c.status(id)));
        return sts.every((st) => st.cluster_level === BUILD_LEVEL) ? sts.map((st) => `${st.cluster_level}/${st.build_level}`) : null;
      },
      10_000,
    );
    expect(levels).toEqual(Array(3).fill(`${BUILD_LEVEL}/${BUILD_LEVEL}`));
  });

  it('grpc.health.v1 answers SERVING', async () => {
    const healthDir = join(dirname(require.resolve('grpc-health-check/package.json')), 'proto');
    const Health = loadService('health/v1/health.proto', healthDir, ['grpc', 'health', 'v1', 'Health']);
    const client = new Health(c.endpoint('n2'), grpc.credentials.createInsecure());
    const check = () =>
      new Promise<{ status: string }>((resolve, reject) =>
        (client as unknown as { Check: (r: object, cb: (e: Error | null, v: { status: string }) => void) => void }).Check(
          { service: '' },
          (e, v) => (e ? reject(e) : resolve(v)),
        ),
      );
    // SERVING once n2 has heard from a leader with a quorum (SPEC "Health"): re-evaluated every tick.
    const res = await waitFor('n2 SERVING', async () => ((await check()).status === 'SERVING' ? { status: 'SERVING' } : null), 5000);
    client.close();
    expect(res.status).toBe('SERVING');
  });

  it('server reflection lists the Lock, Cluster and Health services (grpcurl list)', async () => {
    const reflDir = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto');
    const Reflection = loadService('grpc/reflection/v1alpha/reflection.proto', reflDir, [
      'grpc',
      'reflection',
      'v1alpha',
      'ServerReflection',
    ]);
    const client = new Reflection(c.endpoint('n1'), grpc.credentials.createInsecure());
    const stream = (
      client as unknown as {
        ServerReflectionInfo: () => grpc.ClientDuplexStream<object, { list_services_response?: { service: { name: string }[] } }>;
      }
    ).ServerReflectionInfo();
    const names = await new Promise<string[]>((resolve, reject) => {
      stream.on('data', (msg) => {
        resolve((msg.list_services_response?.service ?? []).map((s: { name: string }) => s.name));
        stream.end();
      });
      stream.on('error', reject);
      stream.write({ list_services: '*' });
    });
    client.close();
    expect(names).toEqual(expect.arrayContaining(['leasehold.v1.Lock', 'leasehold.v1.Cluster', 'grpc.health.v1.Health']));
  });

  it('a waiter whose call is cancelled leaves the queue: the next waiter gets the lock', async () => {
    const { leader } = await c.waitForLeader();
    const holder = await c.raw<AcquireResponse>(leader, 'Acquire', { key: 'cancel', owner: 'h', ttl_ms: '30000', request_id: 'h1' });
    expect(holder.acquired).toBe(true);
    // w1 waits up to 20 s but its call has a 500 ms gRPC deadline: the call is cancelled and w1 must leave.
    const w1 = c
      .raw<AcquireResponse>(leader, 'Acquire', { key: 'cancel', owner: 'w1', ttl_ms: '30000', wait_ms: '20000', request_id: 'w1' }, 500)
      .then(
        () => 'answered',
        (e: unknown) => (e instanceof RpcError ? grpc.status[e.code] : String(e)),
      );
    await new Promise((r) => setTimeout(r, 100));
    const w2 = c.raw<AcquireResponse>(
      leader,
      'Acquire',
      { key: 'cancel', owner: 'w2', ttl_ms: '30000', wait_ms: '20000', request_id: 'w2' },
      20_000,
    );
    expect(await w1).toBe('DEADLINE_EXCEEDED');
    const rel = await c.raw<ReleaseResponse>(leader, 'Release', { key: 'cancel', owner: 'h', token: holder.token, request_id: 'h-rel' });
    expect(rel.released).toBe(true);
    const got = await w2;
    expect(got.acquired).toBe(true);
    const now = await c.raw<{ owner: string; token: string }>(leader, 'Get', { key: 'cancel' });
    expect(now.owner).toBe('w2');
    expect(now.token).toBe(got.token);
  });
});
