// etcd 3.4 under test: 3 members of /usr/bin/etcd on loopback, each with its own data dir (fsync on, the
// default), and two kinds of session pinned to one member:
//   etcd-v3lock: the server's own blocking lock (v3lockpb.Lock/Unlock) with one lease per session, granted
//                once and kept alive (what concurrency.Session does) — the equivalent of a blocking acquire.
//   etcd-txn:    try-lock as Txn(create_revision(key) == 0 -> Put(key, lease)) and unlock as Delete through
//                the etcd3 package (no waiting: only the workloads without contention run it).
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, waitFor } from '../../test/integration/harness.js';
import { EtcdMemberClient, isDeadline } from './etcd-grpc.js';
import type { AcquireOptions, HeldLock, LockSession, SessionOptions, StartOptions, SystemCluster, SystemFactory } from './system.js';

/** LEASEHOLD_BENCH_ETCD points at another etcd 3.4 binary (e.g. a release tarball's). */
export const ETCD_BIN = process.env['LEASEHOLD_BENCH_ETCD'] || '/usr/bin/etcd';
export const ETCD_INSTALL_HINT = `etcd 3.4 is not installed (no ${ETCD_BIN}): run \`apt-get install -y etcd-server etcd-client\` (Debian/Ubuntu), or set LEASEHOLD_BENCH_ETCD to an etcd 3.4 binary, or run without --compare etcd`;

export function etcdInstalled(): boolean {
  return existsSync(ETCD_BIN);
}

const CALL_SLACK_MS = 5000;
/** Session lease: etcd's own concurrency.Session default is 60 s; 10 s keeps leaked keys short-lived. */
const SESSION_TTL_S = 10;

function ttlSeconds(ttlMs: number): number {
  return Math.max(2, Math.ceil(ttlMs / 1000));
}

class V3LockSession implements LockSession {
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly client: EtcdMemberClient,
    private readonly sessionLease: string,
    private readonly opts: SessionOptions,
  ) {
    // Keep the session lease alive at a third of its ttl, as clientv3's keep-alive loop does.
    this.timer = setInterval(() => void client.keepAlive(sessionLease, 2000).catch(() => undefined), (SESSION_TTL_S * 1000) / 3);
  }

  async acquire(key: string, opts: AcquireOptions): Promise<HeldLock | null> {
    const lease = this.opts.leasePerLock ? await this.client.grantLease(ttlSeconds(opts.ttlMs), CALL_SLACK_MS) : this.sessionLease;
    // etcd's Lock has no wait of its own: it waits until the call's deadline.
    const attemptMs = opts.once ? (this.opts.onceTimeoutMs ?? CALL_SLACK_MS) : CALL_SLACK_MS;
    try {
      const holderKey = await this.client.lock(key, lease, opts.waitMs > 0 ? opts.waitMs : attemptMs);
      return { key, ref: { holderKey, lease } };
    } catch (err) {
      if (isDeadline(err) && opts.waitMs > 0) return null;
      throw err;
    }
  }

  async release(lock: HeldLock): Promise<void> {
    await this.client.unlock((lock.ref as { holderKey: Buffer }).holderKey, CALL_SLACK_MS);
  }

  async renew(lock: HeldLock): Promise<void> {
    await this.client.keepAlive((lock.ref as { lease: string }).lease, CALL_SLACK_MS);
  }

  close(): void {
    clearInterval(this.timer);
    this.client.close();
  }
}

type Etcd3Client = import('etcd3').Etcd3;

class TxnSession implements LockSession {
  constructor(
    private readonly client: Etcd3Client,
    private readonly lease: import('etcd3').Lease,
    private readonly leaseId: string,
  ) {}

  async acquire(key: string): Promise<HeldLock | null> {
    const txn = await this.client.if(key, 'Create', '==', 0).then(this.client.put(key).value('held').lease(this.leaseId)).commit();
    return txn.succeeded ? { key, ref: null } : null;
  }

  async release(lock: HeldLock): Promise<void> {
    await this.client.delete().key(lock.key);
  }

  async renew(): Promise<void> {
    await this.lease.keepaliveOnce();
  }

  close(): void {
    this.lease.release();
    this.client.close();
  }
}

class EtcdCluster implements SystemCluster {
  readonly members = ['e1', 'e2', 'e3'];
  private readonly procs = new Map<string, ChildProcess>();

  constructor(
    readonly system: string,
    readonly blocking: boolean,
    private readonly dir: string,
    private readonly ports: number[],
    private readonly keep: boolean,
  ) {}

  clientUrl(i: number): string {
    return `http://127.0.0.1:${this.ports[i]}`;
  }

  address(i: number): string {
    return `127.0.0.1:${this.ports[i]}`;
  }

  private peerUrl(i: number): string {
    return `http://127.0.0.1:${this.ports[3 + i]}`;
  }

  restart(i: number): Promise<void> {
    const name = this.members[i]!;
    if (this.procs.has(name)) throw new Error(`${name} already running`);
    const initial = this.members.map((n, j) => `${n}=${this.peerUrl(j)}`).join(',');
    // The --initial-* flags only matter on the first start; a restart on the same data dir ignores them.
    const child = spawn(
      ETCD_BIN,
      [
        '--name',
        name,
        '--data-dir',
        join(this.dir, name),
        '--listen-client-urls',
        this.clientUrl(i),
        '--advertise-client-urls',
        this.clientUrl(i),
        '--listen-peer-urls',
        this.peerUrl(i),
        '--initial-advertise-peer-urls',
        this.peerUrl(i),
        '--initial-cluster',
        initial,
        '--initial-cluster-state',
        'new',
        '--initial-cluster-token',
        'bench',
        '--logger',
        'zap',
        '--log-level',
        'warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const log = createWriteStream(join(this.dir, `${name}.log`), { flags: 'a' });
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    this.procs.set(name, child);
    child.on('exit', () => {
      if (this.procs.get(name) === child) this.procs.delete(name);
      log.end();
    });
    return Promise.resolve();
  }

  async kill(i: number): Promise<void> {
    const child = this.procs.get(this.members[i]!);
    if (!child) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    await exited;
  }

  pids(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [name, p] of this.procs) if (p.pid !== undefined) out.set(name, p.pid);
    return out;
  }

  private async statuses(timeoutMs = 1000): Promise<({ member: number; leader: string; self: string; term: number } | null)[]> {
    return Promise.all(
      this.members.map(async (name, i) => {
        if (!this.procs.has(name)) return null;
        const c = new EtcdMemberClient(this.address(i));
        try {
          const s = await c.status(timeoutMs);
          return { member: i, leader: s.leader, self: s.header.member_id, term: Number(s.raftTerm) };
        } catch {
          return null;
        } finally {
          c.close();
        }
      }),
    );
  }

  async maxTerm(): Promise<number> {
    return Math.max(0, ...(await this.statuses()).map((s) => s?.term ?? 0));
  }

  async leader(timeoutMs = 20_000): Promise<number> {
    return waitFor(
      'an etcd leader agreed by every running member',
      async () => {
        const sts = (await this.statuses(500)).filter((s, i) => s !== null || !this.procs.has(this.members[i]!));
        const live = sts.filter((s): s is NonNullable<typeof s> => s !== null);
        if (live.length < this.procs.size || live.length === 0) return null;
        const leaders = new Set(live.map((s) => s.leader));
        if (leaders.size !== 1 || [...leaders][0] === '0') return null;
        const leader = live.find((s) => s.self === [...leaders][0]);
        return leader ? leader.member + 1 : null; // +1: member 0 must not read as "not yet"
      },
      timeoutMs,
      25,
    ).then((m) => m - 1);
  }

  async session(member: number, opts: SessionOptions = {}): Promise<LockSession> {
    if (this.system === 'etcd-txn') {
      const { Etcd3 } = await import('etcd3');
      const client = new Etcd3({ hosts: this.clientUrl(member) });
      const lease = client.lease(SESSION_TTL_S, { autoKeepAlive: true });
      return new TxnSession(client, lease, await lease.grant());
    }
    const client = new EtcdMemberClient(this.address(member));
    const sessionTtlS = opts.sessionTtlMs !== undefined ? ttlSeconds(opts.sessionTtlMs) : SESSION_TTL_S;
    return new V3LockSession(client, await client.grantLease(sessionTtlS, CALL_SLACK_MS), opts);
  }

  async stop(): Promise<void> {
    for (let i = 0; i < this.members.length; i++) await this.kill(i);
    if (!this.keep) rmSync(this.dir, { recursive: true, force: true });
    else console.log(`kept etcd data and logs in ${this.dir}`);
  }
}

function etcdFactory(system: 'etcd-v3lock' | 'etcd-txn', blocking: boolean): SystemFactory {
  return {
    system,
    blocking,
    async start(opts: StartOptions): Promise<SystemCluster> {
      const dir = mkdtempSync(join(tmpdir(), 'leasehold-bench-etcd-'));
      const c = new EtcdCluster(system, blocking, dir, await freePorts(6), opts.keep ?? false);
      try {
        for (let i = 0; i < 3; i++) await c.restart(i);
        await c.leader(30_000);
      } catch (err) {
        await c.stop();
        throw err;
      }
      return c;
    },
  };
}

export const etcdV3LockFactory = etcdFactory('etcd-v3lock', true);
export const etcdTxnFactory = etcdFactory('etcd-txn', false);
