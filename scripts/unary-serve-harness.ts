// A micro harness for the server's side of a unary lock call: one leasehold ClientApi (grpc-server.ts, the
// node's Lock service as registered in a node) on a grpc-js server on loopback, over a stand-in lock service
// that answers at once (no Raft, no lock machine, no disk), and one client process calling unary
// Lock/Acquire + Lock/Release in a loop as the bench's unary client does (a fresh key per cycle, a deadline
// on each call). What is left is what a unary call costs the node outside the lock machine: HTTP/2, grpc-js,
// the codecs and the call handling. The server reports its CPU per cycle; run it under `node --cpu-prof`
// for the profile (issue 37: a unary client at >= 0.8x the stream client). Not a test and not the bench.
//
//   npm run build:test
//   node build/scripts/unary-serve-harness.js run SECONDS [--channelz on|off] [--cpu-prof-dir DIR]
//
// `run` starts the server (with --cpu-prof when asked) and the client as child processes on a free port;
// `server` and `client` are those roles. The Lock service is registered exactly as a node registers it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { DEFAULT_LOCK_LIMITS } from '../src/lock/validate.js';
import type { LockService } from '../src/lock-on-raft/lock-service.js';
import { silentNodeLogger } from '../src/raft/logger.js';
import type { ClusterApi } from '../src/server/client-api/cluster-api.js';
import { ClientApi } from '../src/server/client-api/grpc-server.js';
import { lockGrpcService, type AcquireResponse } from '../src/wire/lock.js';

const [role = 'run', ...rest] = process.argv.slice(2);

function flag(name: string, fallback: string): string {
  const i = rest.indexOf(name);
  return i >= 0 && rest[i + 1] !== undefined ? rest[i + 1]! : fallback;
}

/** A lock service that leads and answers every acquire, release, renew and get at once. */
function instantService(): LockService {
  let index = 1000;
  const result = (type: string, extra: object) => Promise.resolve({ type, index: ++index, term: 1, ...extra });
  return {
    node: { id: 'n1', leaderId: 'n1' },
    notLeading: undefined,
    acquire: () =>
      result('acquire', {
        acquired: true,
        token: BigInt(index + 1),
        ttlMs: 10_000,
        expiresAtMs: Date.now() + 10_000,
        holderOwner: '',
        holderTtlMs: 0,
      }),
    release: (req: { key: string }) => result('release', { released: true, reason: 'UNSPECIFIED', key: req.key }),
    renew: () => result('renew', { renewed: true, ttlMs: 10_000, expiresAtMs: Date.now() + 10_000, reason: 'UNSPECIFIED' }),
  } as unknown as LockService;
}

async function server(): Promise<void> {
  const options: grpc.ServerOptions = flag('--channelz', 'on') === 'off' ? { 'grpc.enable_channelz': 0 } : {};
  const grpcServer = new grpc.Server(options);
  const members = new Map<string, string>();
  const api = new ClientApi({
    service: instantService(),
    limits: DEFAULT_LOCK_LIMITS,
    members,
    cluster: { handlers: () => ({}), close: () => {} } as unknown as ClusterApi,
    defaultTimeoutMs: 5000,
    logger: silentNodeLogger,
  });
  api.register(grpcServer);
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  // The leader knows its own address: every reply carries the leader hint, as on a real leader.
  members.set('n1', `127.0.0.1:${port}`);
  let cpuAtStart = process.cpuUsage();
  process.on('message', (m: { cycles?: number; start?: true }) => {
    if (m.start) cpuAtStart = process.cpuUsage();
    if (m.cycles === undefined) return;
    const cpu = process.cpuUsage(cpuAtStart);
    const cpuUs = cpu.user + cpu.system;
    process.send!({ cpuUs, perCycleUs: cpuUs / m.cycles }, () => {
      grpcServer.forceShutdown();
      process.exit(0); // writes the --cpu-prof profile
    });
  });
  process.send!({ port });
}

async function client(): Promise<void> {
  const port = Number(flag('--port', '0'));
  const seconds = Number(flag('--seconds', '5'));
  const stub = lockGrpcService.client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const call = <Res>(method: 'Acquire' | 'Release', request: object): Promise<Res> =>
    new Promise((resolve, reject) => {
      const fn = stub[method] as unknown as (
        req: object,
        o: grpc.CallOptions,
        cb: (e: grpc.ServiceError | null, r: unknown) => void,
      ) => void;
      fn.call(stub, request, { deadline: Date.now() + 3000 }, (err, res) => (err ? reject(err) : resolve(res as Res)));
    });
  const owner = `harness-${process.pid}`;
  // Warm-up (JIT, the connection), then the measured loop.
  const cycle = async (i: number) => {
    const key = `harness/${i}`;
    const a = await call<AcquireResponse>('Acquire', { key, owner, ttl_ms: '10000', wait_ms: '0', request_id: `${owner}-${i}` });
    await call('Release', { key, owner, token: a.token, request_id: `${owner}-r${i}` });
  };
  let i = 0;
  for (const end = Date.now() + 1000; Date.now() < end;) await cycle(i++);
  process.send!({ start: true });
  let cycles = 0;
  for (const end = Date.now() + seconds * 1000; Date.now() < end; cycles++) await cycle(i++);
  process.send!({ cycles, seconds });
  stub.close();
}

async function run(): Promise<void> {
  const self = fileURLToPath(import.meta.url);
  const seconds = flag('--seconds', rest[0] ?? '5');
  const profDir = flag('--cpu-prof-dir', '');
  const serverProc = spawn(
    process.execPath,
    [...(profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : []), self, 'server', '--channelz', flag('--channelz', 'on')],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const port = await new Promise<number>((resolve) => serverProc.once('message', (m: { port: number }) => resolve(m.port)));
  const clientProc = spawn(process.execPath, [self, 'client', '--port', String(port), '--seconds', seconds], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let cycles = 0;
  clientProc.on('message', (m: { start?: true; cycles?: number }) => {
    if (m.start) serverProc.send({ start: true });
    if (m.cycles !== undefined) {
      cycles = m.cycles;
      serverProc.send({ cycles });
    }
  });
  const report = await new Promise<{ cpuUs: number; perCycleUs: number }>((resolve) =>
    serverProc.on('message', (m: { cpuUs?: number; perCycleUs?: number }) => {
      if (m.perCycleUs !== undefined) resolve(m as { cpuUs: number; perCycleUs: number });
    }),
  );
  await new Promise((resolve) => serverProc.once('exit', resolve));
  console.log(
    `${cycles} unary acquire+release cycles in ${seconds} s (${(cycles / Number(seconds)).toFixed(0)}/s); ` +
      `server CPU ${(report.cpuUs / 1000).toFixed(0)} ms, ${report.perCycleUs.toFixed(1)} µs per cycle` +
      (profDir ? `; profile in ${profDir} (pid ${serverProc.pid})` : ''),
  );
}

if (role === 'server') await server();
else if (role === 'client') await client();
else await run();
