// Server reflection built on its first call (lazy-reflection.ts): nothing indexed at registration, and every
// answer, over v1 and v1alpha, the bytes the eager ReflectionService gives for the same question.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import { addLazyReflection } from '../../../src/server/client-api/lazy-reflection.js';
import { LOADER_OPTIONS, packageDefinition } from '../../../src/wire/load.js';

const require = createRequire(import.meta.url);
const SERVICES = ['leasehold.v1.Lock', 'leasehold.v1.Cluster', 'grpc.health.v1.Health'];
const VERSIONS = ['v1', 'v1alpha'] as const;

type ReflectionStream = grpc.ClientDuplexStream<object, Buffer>;

/** A raw client of ServerReflectionInfo: requests encoded from objects, answers kept as their bytes. */
function reflectionClient(version: (typeof VERSIONS)[number], address: string): { ask(request: object): Promise<Buffer>; close(): void } {
  const dir = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto');
  const def = protoLoader.loadSync(`grpc/reflection/${version}/reflection.proto`, {
    includeDirs: [dir],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const method = (def[`grpc.reflection.${version}.ServerReflection`] as protoLoader.ServiceDefinition)['ServerReflectionInfo']!;
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return {
    ask: (request) =>
      new Promise<Buffer>((resolve, reject) => {
        const stream = client.makeBidiStreamRequest(method.path, method.requestSerialize, (b: Buffer) => b) as ReflectionStream;
        stream.on('data', (answer: Buffer) => {
          resolve(answer);
          stream.end();
        });
        stream.on('error', reject);
        stream.write(request);
      }),
    close: () => client.close(),
  };
}

async function listen(server: grpc.Server): Promise<string> {
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return `127.0.0.1:${port}`;
}

describe('lazy server reflection', () => {
  const healthDefinition = protoLoader.loadSync(healthProtoPath, { ...LOADER_OPTIONS });
  const pkg = () => ({ ...packageDefinition(), ...healthDefinition });
  let builds = 0;
  const lazy = new grpc.Server();
  const eager = new grpc.Server();
  let lazyAt = '';
  let eagerAt = '';

  beforeAll(async () => {
    addLazyReflection(
      lazy,
      () => {
        builds++;
        return pkg();
      },
      { services: SERVICES },
    );
    new ReflectionService(pkg(), { services: SERVICES }).addToServer(eager);
    new HealthImplementation({ '': 'SERVING' }).addToServer(eager);
    lazyAt = await listen(lazy);
    eagerAt = await listen(eager);
  });
  afterAll(async () => {
    await Promise.all([lazy, eager].map((s) => new Promise<void>((resolve) => s.tryShutdown(() => resolve()))));
  });

  it('indexes nothing when registered', () => {
    expect(builds).toBe(0);
  });

  const questions: [string, object][] = [
    ['list_services', { list_services: '*' }],
    ['file_containing_symbol (a service)', { file_containing_symbol: 'leasehold.v1.Lock' }],
    ['file_containing_symbol (a message)', { file_containing_symbol: 'grpc.health.v1.HealthCheckRequest' }],
    ['file_containing_symbol (unknown)', { file_containing_symbol: 'no.such.Thing' }],
  ];
  for (const version of VERSIONS) {
    for (const [what, request] of questions) {
      it(`${version} ${what}: the eager service's answer, byte for byte`, async () => {
        const l = reflectionClient(version, lazyAt);
        const e = reflectionClient(version, eagerAt);
        try {
          const [mine, theirs] = await Promise.all([l.ask(request), e.ask(request)]);
          expect(mine.length).toBeGreaterThan(0);
          expect(Buffer.compare(mine, theirs)).toBe(0);
        } finally {
          l.close();
          e.close();
        }
      });
    }
  }

  it('builds the index once, on the first call, for both versions', () => {
    expect(builds).toBe(1);
  });
});
