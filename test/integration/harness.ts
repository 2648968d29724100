// Real-process cluster harness: each node is `node dist/src/cli/main.js serve` with its own LevelDB dir.
// Waits on conditions with deadlines, never fixed sleeps; every process is killed by PID in stop().
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream, type WriteStream } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EndpointPool, RpcError } from '../../src/client/rpc.js';
import type { StatusResponse } from '../../src/wire/cluster.js';
import { NodeFaultControl, clusterFaultFile } from '../lin/node-faults.js';

export const MAIN_JS = resolve('dist/src/cli/main.js');

/** The kernel's range for the local ports of outgoing connections (Linux: ip_local_port_range), if known. */
export function ephemeralRange(): [number, number] | null {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    return Number.isInteger(low) && Number.isInteger(high) ? [low!, high!] : null;
  } catch {
    return null;
  }
}

/** Ports below the ephemeral range this harness picks from (10000 up to the range's start). */
const LOW_PORTS_FROM = 10_000;

/** A server listening on 127.0.0.1:`port`, or null when the port is taken. */
function bindable(port: number): Promise<Server | null> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(null));
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

/**
 * `n` distinct ports free on 127.0.0.1 now, for nodes that bind them later. Not from port 0: the kernel hands
 * those out of the range it also takes outgoing connections' local ports from, and between this probe and the
 * node's bind every connection the test, its clients and its other nodes open may take one — the node then
 * cannot listen (EADDRINUSE) and its cluster never forms. So ports are drawn at random below that range, where no connection's local port lands, and
 * each is checked by binding it; only where the range is unknown or leaves no room is port 0 used. `random`
 * (in [0, 1)) draws them: a test can make it draw a port it holds.
 */
export async function freePorts(n: number, random: () => number = Math.random): Promise<number[]> {
  const range = ephemeralRange();
  const below = range === null ? 0 : range[0] - LOW_PORTS_FROM;
  const ports: number[] = [];
  const servers: Server[] = []; // held until all are chosen: no port twice
  try {
    for (let tries = 0; ports.length < n && below >= 1000 && tries < 50 * n; tries++) {
      const port = LOW_PORTS_FROM + Math.floor(random() * below);
      const s = await bindable(port);
      if (s === null) continue;
      ports.push(port);
      servers.push(s);
    }
    while (ports.length < n) {
      const s = createServer();
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
      ports.push((s.address() as { port: number }).port);
      servers.push(s);
    }
  } finally {
    for (const s of servers) await new Promise<void>((r) => s.close(() => r()));
  }
  return ports;
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false | null> | T | undefined | false | null,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${String(lastErr)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface ClusterOptions {
  size?: number;
  extraYaml?: string;
  /** Ports and ids reserved for nodes added later with `members add` (n<size+1>, ...); they are not in
   *  the bootstrap file, only in the join file (joinConfigPath) they start from with --join. */
  spare?: number;
  /** raft.electionTicks of the test cluster (ticks of 50 ms); default 6, an aggressive 300 ms. */
  electionTicks?: number;
  /** Leave raft timing (tickMs, electionTicks) at the product defaults instead of the fast test values:
   *  the benchmark measures what users run. electionTicks is ignored then. */
  productRaftTiming?: boolean;
  /** Flags for node itself before the script, e.g. ['--cpu-prof', '--cpu-prof-dir=/tmp/p'] (NODE_OPTIONS refuses --cpu-prof). */
  nodeArgs?: string[];
  /** Give every node a separate peer listener (nodes[].peerAddress). */
  peerListeners?: boolean;
  /** Channel credentials of the harness's own calls (status, pool, raw); default plaintext. */
  credentials?: grpc.ChannelCredentials;
  /** Extra keys of each node's entry, e.g. `(id, i) => \`metricsAddress: 127.0.0.1:${port[i]}\`` (one line, no indent). */
  nodeYaml?: (id: string, i: number) => string;
  /** Start every node with LEASEHOLD_TEST_FAULTS=<its fault file>; `faults(id)` controls it. */
  faultFiles?: boolean;
  /** Fixed client ports, one per node (n1 first), instead of free ones: for data dirs made elsewhere, whose
   *  Raft configuration and cluster id name their addresses. Not with peerListeners. */
  ports?: number[];
}

export class TestCluster {
  readonly dir: string;
  readonly ids: string[];
  readonly ports: number[];
  readonly configPath: string;
  /** Lists every node, the spare ones too: what a node started with --join reads. */
  readonly joinConfigPath: string;
  readonly procs = new Map<string, ChildProcess>();
  /** Peer listener ports (empty without peerListeners). */
  readonly peerPorts: number[];
  readonly credentials: grpc.ChannelCredentials | undefined;
  private logs = new Map<string, WriteStream>();
  /** Set once after create (ClusterOptions.nodeArgs). */
  nodeArgs: readonly string[] = [];
  private faultFiles = false;
  private faultControls = new Map<string, NodeFaultControl>();

  private constructor(
    dir: string,
    ids: string[],
    ports: number[],
    extraYaml: string,
    private readonly bootstrapSize: number,
    peerPorts: number[] = [],
    credentials?: grpc.ChannelCredentials,
    nodeYaml?: (id: string, i: number) => string,
    electionTicks = 6,
    productRaftTiming = false,
  ) {
    this.dir = dir;
    this.ids = ids;
    this.ports = ports;
    this.peerPorts = peerPorts;
    this.credentials = credentials;
    this.configPath = join(dir, 'cluster.yaml');
    this.joinConfigPath = join(dir, 'join.yaml');
    const peer = (i: number) => (peerPorts.length ? `    peerAddress: 127.0.0.1:${peerPorts[i]}\n` : '');
    const extra = (id: string, i: number) => (nodeYaml ? `    ${nodeYaml(id, i)}\n` : '');
    const nodes = (list: string[]) =>
      list
        .map(
          (id) =>
            `  - id: ${id}\n    address: 127.0.0.1:${ports[ids.indexOf(id)]}\n${peer(ids.indexOf(id))}    dataDir: ${id}\n${extra(id, ids.indexOf(id))}`,
        )
        .join('');
    // The fast test timing heartbeats every tick, as it was tuned: the product default went to every 2 ticks
    // (issue 19, idle CPU), which left a 300 ms election timeout only three heartbeats on a loaded machine.
    const settings = productRaftTiming
      ? extraYaml
      : `raft:\n  tickMs: 50\n  electionTicks: ${electionTicks}\n  heartbeatTicks: 1\n${extraYaml}`;
    writeFileSync(this.configPath, `nodes:\n${nodes(ids.slice(0, bootstrapSize))}${settings}`);
    writeFileSync(this.joinConfigPath, `nodes:\n${nodes(ids)}${settings}`);
  }

  static async create(opts: ClusterOptions = {}): Promise<TestCluster> {
    const size = opts.size ?? 3;
    const total = size + (opts.spare ?? 0);
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-it-'));
    const ids = Array.from({ length: total }, (_, i) => `n${i + 1}`);
    if (opts.ports && (opts.ports.length !== total || opts.peerListeners))
      throw new Error(`ports: ${total} ports (one per node) and no peerListeners, got ${opts.ports.length}`);
    const ports = opts.ports ?? (await freePorts(opts.peerListeners ? 2 * total : total));
    const cluster = new TestCluster(
      dir,
      ids,
      ports.slice(0, total),
      opts.extraYaml ?? '',
      size,
      opts.peerListeners ? ports.slice(total) : [],
      opts.credentials,
      opts.nodeYaml,
      opts.electionTicks,
      opts.productRaftTiming,
    );
    cluster.nodeArgs = opts.nodeArgs ?? [];
    cluster.faultFiles = opts.faultFiles ?? false;
    return cluster;
  }

  private creds(): { credentials?: grpc.ChannelCredentials } {
    return this.credentials ? { credentials: this.credentials } : {};
  }

  /** The node's log so far (pino JSON lines). */
  logText(id: string): string {
    return this.logOf(id);
  }

  pid(id: string): number | undefined {
    return this.procs.get(id)?.pid;
  }

  endpoint(id: string): string {
    return `127.0.0.1:${this.ports[this.ids.indexOf(id)]}`;
  }

  endpoints(ids = this.ids): string[] {
    return ids.map((id) => this.endpoint(id));
  }

  /** Start `id`; `join` starts it from the join file with --join (a node added with `members add`). */
  start(id: string, opts: { join?: boolean } = {}): ChildProcess {
    if (this.procs.has(id)) throw new Error(`${id} already running`);
    const log = createWriteStream(join(this.dir, `${id}.log`), { flags: 'a' });
    this.logs.set(id, log);
    const args = opts.join
      ? ['serve', '--config', this.joinConfigPath, '--id', id, '--join']
      : ['serve', '--config', this.configPath, '--id', id];
    const env = this.faultFiles ? { ...process.env, LEASEHOLD_TEST_FAULTS: clusterFaultFile(this.dir, id) } : process.env;
    const child = spawn(process.execPath, [...this.nodeArgs, MAIN_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    this.procs.set(id, child);
    child.on('exit', () => {
      if (this.procs.get(id) === child) this.procs.delete(id);
    });
    return child;
  }

  /** The test-fault switch of node `id` (the cluster must be created with faultFiles: true). */
  faults(id: string): NodeFaultControl {
    if (!this.faultFiles) throw new Error('faults(): create the cluster with { faultFiles: true }');
    if (!this.ids.includes(id)) throw new Error(`faults(): no node ${id}`);
    let c = this.faultControls.get(id);
    if (!c) this.faultControls.set(id, (c = new NodeFaultControl(clusterFaultFile(this.dir, id))));
    return c;
  }

  /** The bootstrap members (the spare ids excluded). */
  get bootstrapIds(): string[] {
    return this.ids.filter((id) => !this.spareIds.includes(id));
  }

  get spareIds(): string[] {
    return this.ids.slice(this.bootstrapSize);
  }

  logOf(id: string): string {
    try {
      return readFileSync(join(this.dir, `${id}.log`), 'utf8');
    } catch {
      return '';
    }
  }

  startAll(): void {
    for (const id of this.bootstrapIds) this.start(id);
  }

  /** kill -9, and wait until the process is gone. */
  async kill(id: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.procs.get(id);
    if (!child) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill(signal);
    await exited;
    this.procs.delete(id);
  }

  async status(id: string, timeoutMs = 1000): Promise<StatusResponse> {
    const pool = new EndpointPool({ endpoints: [this.endpoint(id)], ...this.creds() });
    try {
      return await pool.status(this.endpoint(id), Date.now() + timeoutMs);
    } finally {
      pool.close();
    }
  }

  /** Waits until the given nodes agree on one leader (among them) and term; returns its id. */
  async waitForLeader(among = [...this.procs.keys()], timeoutMs = 20_000): Promise<{ leader: string; term: string }> {
    // What each node said last goes into the timeout's message: a CI failure here is read from that alone.
    let seen = 'no answer yet';
    return waitFor(
      `a leader agreed by ${among.join(',')}`,
      async () => {
        const sts = await Promise.all(among.map((id) => this.status(id).catch((err: unknown) => String(err))));
        seen = among
          .map((id, i) => {
            const s = sts[i]!;
            return typeof s === 'string' ? `${id}: ${s}` : `${id}: ${s.role} term ${s.term} leader ${s.leader_id || '-'}`;
          })
          .join('; ');
        if (sts.some((s) => typeof s === 'string')) return null;
        const ok = sts as StatusResponse[];
        const leaders = new Set(ok.map((s) => s.leader_id));
        const terms = new Set(ok.map((s) => s.term));
        if (leaders.size !== 1 || terms.size !== 1) return null;
        const leader = [...leaders][0]!;
        if (!leader || !among.includes(leader)) return null;
        const leaderStatus = ok.find((s) => s.node_id === leader)!;
        if (leaderStatus.role !== 'LEADER') return null;
        return { leader, term: [...terms][0]! };
      },
      timeoutMs,
    ).catch((err: unknown) => {
      throw new Error(`${String(err instanceof Error ? err.message : err)}; last seen: ${seen}; logs in ${this.dir}`);
    });
  }

  pool(ids = this.ids): EndpointPool {
    return new EndpointPool({ endpoints: this.endpoints(ids), attemptTimeoutMs: 1500, ...this.creds() });
  }

  /** One raw unary call against one node, no retries. */
  async raw<Res>(id: string, method: 'Acquire' | 'Renew' | 'Release' | 'Get' | 'List', request: object, timeoutMs = 3000): Promise<Res> {
    const pool = new EndpointPool({ endpoints: [this.endpoint(id)], attemptTimeoutMs: timeoutMs, ...this.creds() });
    try {
      return await pool.call<Res>(method, request, Date.now() + timeoutMs, undefined, false);
    } finally {
      pool.close();
    }
  }

  async stop(): Promise<void> {
    for (const id of [...this.procs.keys()]) await this.kill(id);
    for (const log of this.logs.values()) log.end();
    // LEASEHOLD_KEEP_TEST_DIRS=1 keeps the nodes' logs and data for a post-mortem of a flaky run.
    if (process.env.LEASEHOLD_KEEP_TEST_DIRS === '1') return;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs the CLI to its end (async, so a cluster's processes keep their share of the cores meanwhile); killed
 *  after `timeoutMs`. */
export function runCli(args: string[], cwd: string, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [MAIN_JS, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

export function isCode(err: unknown, code: grpc.status): boolean {
  return err instanceof RpcError && err.code === code;
}
