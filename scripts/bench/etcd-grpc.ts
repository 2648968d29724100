// gRPC clients of one etcd member for the services in proto/ (v3lockpb.Lock, etcdserverpb.Lease and
// .Maintenance), loaded with @grpc/proto-loader. int64 fields are decimal strings (lease ids exceed 2^53).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { LeaseLostError } from './system.js';

/** scripts/bench/proto, found from here whether this runs from scripts/ (tsx) or build/scripts/ (tsc). */
function protoDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, 'scripts', 'bench', 'proto');
    if (existsSync(join(candidate, 'v3lockpb.proto'))) return candidate;
    if (dirname(dir) === dir)
      throw new Error('bench: cannot find scripts/bench/proto/v3lockpb.proto above ' + fileURLToPath(import.meta.url));
  }
}

type Ctor = new (address: string, creds: grpc.ChannelCredentials) => grpc.Client;

let loaded: { Lock: Ctor; Lease: Ctor; Maintenance: Ctor } | null = null;
function services(): { Lock: Ctor; Lease: Ctor; Maintenance: Ctor } {
  if (!loaded) {
    const dir = protoDir();
    const def = protoLoader.loadSync(['v3lockpb.proto', 'etcdserverpb.proto'], {
      includeDirs: [dir],
      keepCase: true,
      longs: String,
      defaults: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      v3lockpb: { Lock: Ctor };
      etcdserverpb: { Lease: Ctor; Maintenance: Ctor };
    };
    loaded = { Lock: pkg.v3lockpb.Lock, Lease: pkg.etcdserverpb.Lease, Maintenance: pkg.etcdserverpb.Maintenance };
  }
  return loaded;
}

export interface EtcdStatus {
  header: { member_id: string; raft_term: string };
  leader: string;
  raftTerm: string;
}

type Unary = (req: object, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void;

function unary<Res>(client: grpc.Client, method: string, req: object, timeoutMs: number): Promise<Res> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, Unary>)[method]!;
    fn.call(client, req, { deadline: new Date(Date.now() + timeoutMs) }, (err, res) => (err ? reject(err) : resolve(res as Res)));
  });
}

/** Keep-alives of many leases over one LeaseKeepAlive stream: each call resolves on the next answer for its
 *  lease id (etcd answers every request, in order per stream). */
class KeepAliveStream {
  private stream: grpc.ClientDuplexStream<object, { ID: string; TTL: string }> | null = null;
  private readonly waiting = new Map<string, { resolve: () => void; reject: (e: Error) => void }[]>();

  constructor(private readonly lease: grpc.Client) {}

  private open(): grpc.ClientDuplexStream<object, { ID: string; TTL: string }> {
    if (this.stream) return this.stream;
    const s = (
      this.lease as unknown as { LeaseKeepAlive: () => grpc.ClientDuplexStream<object, { ID: string; TTL: string }> }
    ).LeaseKeepAlive();
    s.on('data', (res) => {
      const q = this.waiting.get(res.ID);
      const w = q?.shift();
      if (!w) return;
      if (Number(res.TTL) > 0) w.resolve();
      else w.reject(new LeaseLostError(`lease ${res.ID} expired before its keep-alive`));
    });
    const fail = (err: Error) => {
      if (this.stream === s) this.stream = null;
      for (const q of this.waiting.values()) for (const w of q.splice(0)) w.reject(err);
    };
    s.on('error', fail);
    s.on('end', () => fail(new Error('keep-alive stream ended')));
    this.stream = s;
    return s;
  }

  keepAlive(id: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        const q = this.waiting.get(id) ?? [];
        const i = q.indexOf(entry);
        if (i >= 0) q.splice(i, 1);
        reject(new Error(`keep-alive of lease ${id} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      const entry = {
        resolve: () => (clearTimeout(t), resolve()),
        reject: (e: Error) => (clearTimeout(t), reject(e)),
      };
      this.waiting.set(id, [...(this.waiting.get(id) ?? []), entry]);
      this.open().write({ ID: id });
    });
  }

  close(): void {
    this.stream?.cancel();
    this.stream = null;
  }
}

/** Channels to one member: v3lock, leases (with a shared keep-alive stream), status. */
export class EtcdMemberClient {
  private readonly lockClient: grpc.Client;
  private readonly leaseClient: grpc.Client;
  private readonly maintenance: grpc.Client;
  private readonly keepAlives: KeepAliveStream;

  constructor(readonly address: string) {
    const s = services();
    const creds = grpc.credentials.createInsecure();
    this.lockClient = new s.Lock(address, creds);
    this.leaseClient = new s.Lease(address, creds);
    this.maintenance = new s.Maintenance(address, creds);
    this.keepAlives = new KeepAliveStream(this.leaseClient);
  }

  async grantLease(ttlSeconds: number, timeoutMs: number): Promise<string> {
    const res = await unary<{ ID: string; error: string }>(this.leaseClient, 'LeaseGrant', { TTL: String(ttlSeconds), ID: '0' }, timeoutMs);
    if (res.error) throw new Error(`LeaseGrant: ${res.error}`);
    return res.ID;
  }

  keepAlive(leaseId: string, timeoutMs: number): Promise<void> {
    return this.keepAlives.keepAlive(leaseId, timeoutMs);
  }

  /** v3lock Lock: resolves with the holder key once granted; rejects DEADLINE_EXCEEDED when waitMs runs out. */
  async lock(name: string, leaseId: string, timeoutMs: number): Promise<Buffer> {
    const res = await unary<{ key: Buffer }>(this.lockClient, 'Lock', { name: Buffer.from(name), lease: leaseId }, timeoutMs);
    return res.key;
  }

  async unlock(key: Buffer, timeoutMs: number): Promise<void> {
    await unary(this.lockClient, 'Unlock', { key }, timeoutMs);
  }

  status(timeoutMs: number): Promise<EtcdStatus> {
    return unary<EtcdStatus>(this.maintenance, 'Status', {}, timeoutMs);
  }

  close(): void {
    this.keepAlives.close();
    this.lockClient.close();
    this.leaseClient.close();
    this.maintenance.close();
  }
}

export function isDeadline(err: unknown): boolean {
  return (err as { code?: unknown })?.code === grpc.status.DEADLINE_EXCEEDED;
}
