// The floors of the latency waterfall: what the parts we are built on cost on this machine, measured in the
// same run as the waterfall so the budget "unary + peer round trip (+ one fsync)" is judged against them.
// - unary: one grpc-js unary round trip between two Node processes on loopback;
// - peer round trip: a message out on our client stream to the other process and its answer back on ITS
//   client stream to us (the peer topology of src/transport/grpc.ts: one outbound stream per direction);
// - LevelDB sync: one batch of two puts with {sync: true} (what a Ready's write is);
// - fdatasync: after a 200 B append to a file;
// - store save: a Raft store's save() of one entry + hard state, alone and three at once (storeSaveFloor).
// The other process is this file run as a script (`node floors.js serve <port-of-ours>`).
import { spawn } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { Level } from 'level';
import { bootstrapSnapshot } from '../../src/raft/core/types.js';
import { LevelStorage } from '../../src/raft/storage/leveldb.js';
import type { RaftStorage } from '../../src/raft/storage/types.js';
import { WalStorage } from '../../src/raft/storage/wal-storage.js';
import { summarize, type LatencySummary } from './stats.js';

const passThrough = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
const SERVICE: grpc.ServiceDefinition = {
  Echo: {
    path: '/floor.Floor/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: passThrough.serialize,
    requestDeserialize: passThrough.deserialize,
    responseSerialize: passThrough.serialize,
    responseDeserialize: passThrough.deserialize,
  },
  Pipe: {
    path: '/floor.Floor/Pipe',
    requestStream: true,
    responseStream: false,
    requestSerialize: passThrough.serialize,
    requestDeserialize: passThrough.deserialize,
    responseSerialize: passThrough.serialize,
    responseDeserialize: passThrough.deserialize,
  },
};
const FloorClient = grpc.makeGenericClientConstructor(SERVICE, 'Floor');

interface FloorClientApi extends grpc.Client {
  Echo(req: Buffer, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
  Pipe(cb: (err: grpc.ServiceError | null) => void): grpc.ClientWritableStream<Buffer>;
}

/** A server with Echo (unary) and Pipe (client stream: each message goes to `onPipe`). */
async function startServer(onPipe: (b: Buffer) => void): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(SERVICE, {
    Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request),
    Pipe: (call: grpc.ServerReadableStream<Buffer, Buffer>) => call.on('data', onPipe),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return { server, port };
}

function client(port: number): FloorClientApi {
  return new FloorClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as FloorClientApi;
}

/** The other process: echoes unary calls, and sends every Pipe message back on its own stream to us. */
async function serve(backPort: number): Promise<void> {
  const back = client(backPort).Pipe(() => {});
  const { port } = await startServer((b) => back.write(b));
  process.stdout.write(`${port}\n`);
  process.stdin.on('end', () => process.exit(0)).resume(); // the parent closes stdin to stop us
}

export interface Floors {
  unary: LatencySummary;
  peerRoundTrip: LatencySummary;
  levelSync: LatencySummary;
  fdatasync: LatencySummary;
  /** The Raft store a node runs (WalStorage) beside the one before it (LevelStorage), alone and three at once. */
  storeSave: { label: string; floor: StoreSaveFloor }[];
}

function ms(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** Measures the four floors, `samples` each after a warm-up. */
export async function measureFloors(samples = 300): Promise<Floors> {
  let onBack: (() => void) | null = null;
  const ours = await startServer(() => onBack?.());
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), 'serve', String(ours.port)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
      child.once('exit', (code) => reject(new Error(`floor server exited (${code})`)));
    });
    const c = client(port);
    const payload = Buffer.alloc(100, 7);
    const unary: number[] = [];
    for (let i = 0; i < samples + 50; i++) {
      const t0 = process.hrtime.bigint();
      await new Promise<void>((resolve, reject) => c.Echo(payload, (e) => (e ? reject(e) : resolve())));
      if (i >= 50) unary.push(ms(t0));
    }
    const out = c.Pipe(() => {});
    const rtt: number[] = [];
    for (let i = 0; i < samples + 50; i++) {
      const t0 = process.hrtime.bigint();
      await new Promise<void>((resolve) => {
        onBack = resolve;
        out.write(payload);
      });
      if (i >= 50) rtt.push(ms(t0));
    }
    out.end();
    c.close();
    const storeSave: Floors['storeSave'] = [];
    for (const [kind, name] of [
      ['level', 'LevelStorage'],
      ['wal', 'WalStorage'],
    ] as const) {
      for (const writers of [1, 3])
        storeSave.push({
          label: `${name}.save(), ${writers === 1 ? 'alone' : '3 at once'}`,
          floor: await storeSaveFloor(kind, writers, samples),
        });
    }
    return {
      unary: summarize(unary),
      peerRoundTrip: summarize(rtt),
      levelSync: summarize(await levelSyncFloor(samples)),
      fdatasync: summarize(fdatasyncFloor(samples)),
      storeSave,
    };
  } finally {
    child.stdin.end();
    child.kill();
    ours.server.forceShutdown();
  }
}

async function levelSyncFloor(samples: number): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-floor-level-'));
  const db = new Level<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  const out: number[] = [];
  try {
    const value = new Uint8Array(200).fill(1);
    for (let i = 0; i < samples + 20; i++) {
      const t0 = process.hrtime.bigint();
      await db.batch(
        [
          { type: 'put', key: new TextEncoder().encode(`e${i}`), value },
          { type: 'put', key: new TextEncoder().encode('hs'), value },
        ],
        { sync: true },
      );
      if (i >= 20) out.push(ms(t0));
    }
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

/** One store's save() of a Ready with one 150 B entry and a hard state, as a node writes per proposal:
 *  its latency with `writers` stores saving at once on the same disk (a 3-node cluster on one machine),
 *  and the CPU this process spent per save. The Raft log's storage choice (issue 19, item 5) rests on it. */
export interface StoreSaveFloor {
  latency: LatencySummary;
  cpuUsPerSave: number;
}

export async function storeSaveFloor(kind: 'level' | 'wal', writers: number, samples: number): Promise<StoreSaveFloor> {
  const stores: RaftStorage[] = [];
  const dirs: string[] = [];
  try {
    for (let w = 0; w < writers; w++) {
      const dir = mkdtempSync(join(tmpdir(), `leasehold-floor-${kind}-`));
      dirs.push(dir);
      const store = kind === 'wal' ? await WalStorage.open(dir) : await LevelStorage.open(dir);
      stores.push(store);
      await store.save({
        hardState: { term: 1, votedFor: 'n1', commitIndex: 0 },
        snapshot: bootstrapSnapshot(['n1', 'n2', 'n3']),
        entries: [],
      });
    }
    const data = new Uint8Array(150).fill(7);
    const out: number[] = [];
    let cpuStart = process.cpuUsage();
    const loop = async (store: RaftStorage, record: boolean): Promise<void> => {
      for (let i = 1; i <= samples + 20; i++) {
        if (record && i === 21) cpuStart = process.cpuUsage();
        const t0 = process.hrtime.bigint();
        await store.save({
          hardState: { term: 1, votedFor: 'n1', commitIndex: i - 1 },
          snapshot: null,
          entries: [{ index: i, term: 1, kind: 'normal', data }],
        });
        if (record && i > 20) out.push(ms(t0));
      }
    };
    await Promise.all(stores.map((store, w) => loop(store, w === 0)));
    const cpu = process.cpuUsage(cpuStart);
    return { latency: summarize(out), cpuUsPerSave: (cpu.user + cpu.system) / (samples * writers) };
  } finally {
    for (const store of stores) await store.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

function fdatasyncFloor(samples: number): number[] {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-floor-fsync-'));
  const fd = openSync(join(dir, 'wal'), 'a');
  const out: number[] = [];
  try {
    const record = Buffer.alloc(200, 1);
    for (let i = 0; i < samples + 20; i++) {
      const t0 = process.hrtime.bigint();
      writeSync(fd, record);
      fdatasyncSync(fd);
      if (i >= 20) out.push(ms(t0));
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

if (process.argv[2] === 'serve' && fileURLToPath(import.meta.url) === process.argv[1]) void serve(Number(process.argv[3]));
