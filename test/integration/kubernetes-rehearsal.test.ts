// The Kubernetes rehearsal (README "Kubernetes", SPEC "Kubernetes"): the StatefulSet of deploy/kubernetes/base
// run as Kubernetes would run it, with processes on loopback instead of pods, and the README's steps in its
// order — apply, check, take a lock, grow 3 -> 5, shrink 5 -> 3, a rolling upgrade, a backup — with the lock
// held (renewed) throughout and its token unchanged.
//
// What stands in for Kubernetes, and nothing else:
// - a pod is `command` + `args` of the container, with its `env` (metadata.name from the downward API, the
//   $(VAR) references expanded as the kubelet does), started in `workingDir` = this repository's root;
// - pod leasehold-N has its own IP, 127.0.0.(11+N), and the same ports as the pods; 0.0.0.0 and localhost
//   inside pod N are that IP; the cluster DNS resolves <pod>.<headless Service> to the pod's IP, and nothing
//   else (a ConfigMap naming a member otherwise fails here as it would in the cluster);
// - a volume is a directory per pod: the ConfigMap's files as that pod sees them, its claim, its /tmp;
// - readiness and liveness are the container's probes, asked at the pod's IP as the kubelet asks them;
// - `kubectl scale` starts the next ordinal or sends SIGTERM to the highest; a rolling update restarts the
//   pods from the highest ordinal down, each once the one before is ready again;
// - `lh …` is README's alias for `kubectl exec leasehold-0 -- node dist/src/cli/main.js …`.
// After every membership command and every scale the quorum arithmetic is checked: every voter of the configuration has a running pod, so
// the cluster tolerates the failures its size promises — a scale-down that deleted a pod before removing its
// member would leave a voter without a pod, and a smaller margin than the configuration claims.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { LockClient } from '../../src/client/index.js';
import type { LockHandle } from '../../src/client/index.js';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import { deployment, expandEnvRefs, REPO } from '../kubernetes/manifests.js';
import { waitFor } from './harness.js';

const d = deployment('base');
const STS = d.statefulSet.metadata!.name!;
const PEERS = d.peerService.metadata!.name!;
const podName = (ordinal: number) => `${STS}-${ordinal}`;
const podIp = (ordinal: number) => `127.0.0.${11 + ordinal}`;
const ordinalOf = (pod: string) => Number(pod.slice(STS.length + 1));

/** The cluster DNS: a pod's name under the headless Service (short, or qualified by namespace) -> its IP. */
function resolveHost(host: string): string {
  const m = new RegExp(`^(${STS}-(\\d+))\\.${PEERS}(\\.[a-z0-9-]+(\\.svc(\\.cluster\\.local)?)?)?$`).exec(host);
  if (!m) throw new Error(`${host} is not the DNS name of a pod of StatefulSet ${STS} under Service ${PEERS}`);
  return podIp(Number(m[2]));
}

const healthDef = protoLoader.loadSync(healthProtoPath, { keepCase: true, enums: String, defaults: true });
type HealthClient = grpc.Client & {
  Check(req: { service: string }, opts: Partial<grpc.CallOptions>, cb: (e: grpc.ServiceError | null, v?: { status: string }) => void): void;
};
const Health = (
  grpc.loadPackageDefinition(healthDef) as unknown as {
    grpc: { health: { v1: { Health: new (a: string, c: grpc.ChannelCredentials) => HealthClient } } };
  }
).grpc.health.v1.Health;

class Rehearsal {
  readonly dir = mkdtempSync(join(tmpdir(), 'leasehold-k8s-'));
  readonly pods = new Map<number, ChildProcess>();
  /** The `lh` commands run, in order, as README writes them (repeats of a retried one once). */
  readonly commands: string[] = [];
  /** The voters every step ended with, for the report of a failure. */
  readonly steps: string[] = [];

  /** A path inside pod `ordinal` -> the directory that stands in for it (only mounted volumes exist). */
  podPath(ordinal: number, path: string): string {
    const mount = d.container.volumeMounts!.find((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`));
    if (!mount) throw new Error(`${path} is on no volume of the pod (the root filesystem is read-only)`);
    return join(this.dir, podName(ordinal), mount.name, path.slice(mount.mountPath.length));
  }

  /** The ConfigMap's cluster.yaml as pod `ordinal` reads it: every name and wildcard address resolved to
   *  the IP it means there, every node's dataDir where that node's volume is. */
  private writeConfig(ordinal: number): void {
    const doc = parseDocument(d.clusterYaml);
    const nodes = doc.toJS().nodes as { id: string; address: string; listen?: string; dataDir: string }[];
    nodes.forEach((n, j) => {
      const [host, port] = [n.address.slice(0, n.address.lastIndexOf(':')), n.address.slice(n.address.lastIndexOf(':') + 1)];
      doc.setIn(['nodes', j, 'address'], `${resolveHost(host)}:${port}`);
      const owner = ordinalOf(n.id); // node j's own addresses and paths are those of its pod
      if (n.listen !== undefined) doc.setIn(['nodes', j, 'listen'], n.listen.replace(/^0\.0\.0\.0:/, `${podIp(owner)}:`));
      doc.setIn(['nodes', j, 'dataDir'], this.podPath(owner, n.dataDir));
    });
    const metrics = doc.getIn(['metrics', 'address']);
    if (typeof metrics === 'string') doc.setIn(['metrics', 'address'], metrics.replace(/^0\.0\.0\.0:/, `${podIp(ordinal)}:`));
    const file = this.podPath(ordinal, join(d.configMountPath, 'cluster.yaml'));
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, doc.toString());
  }

  /** The kubelet starting the container of pod `ordinal`. */
  startPod(ordinal: number): void {
    const c = d.container;
    const name = podName(ordinal);
    const env: Record<string, string> = {};
    for (const e of c.env ?? []) {
      if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = name;
      else if (e.value !== undefined) env[e.name] = expandEnvRefs(e.value, env);
      else throw new Error(`env ${e.name}: the rehearsal knows only values and metadata.name`);
    }
    // Inside the pod: its paths are on its volumes, its loopback and wildcard addresses are its IP.
    const inPod = (v: string) =>
      v.startsWith('/') ? this.podPath(ordinal, v) : v.replace(/^(localhost|127\.0\.0\.1|0\.0\.0\.0):/, `${podIp(ordinal)}:`);
    const podEnv = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, inPod(v)]));
    const argv = [...c.command!, ...c.args!].map((a) => inPod(expandEnvRefs(a, env)));
    expect(argv[0]).toBe('node');
    expect(c.workingDir).toBe('/app'); // the image's WORKDIR, where dist/ is: this repository's root here
    for (const m of c.volumeMounts!) mkdirSync(this.podPath(ordinal, m.mountPath), { recursive: true });
    this.writeConfig(ordinal);
    const log = createWriteStream(join(this.dir, `${name}.log`), { flags: 'a' });
    const child = spawn(process.execPath, argv.slice(1), {
      cwd: REPO,
      env: { PATH: process.env['PATH'] ?? '', ...podEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    this.pods.set(ordinal, child);
  }

  /** The kubelet stopping a pod: SIGTERM, then SIGKILL after terminationGracePeriodSeconds. Resolves to how
   *  the process ended. */
  async stopPod(ordinal: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const child = this.pods.get(ordinal)!;
    this.pods.delete(ordinal);
    if (child.exitCode !== null) return { code: child.exitCode, signal: null };
    const graceMs = (d.statefulSet.spec!.template.spec!.terminationGracePeriodSeconds ?? 30) * 1000;
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
      child.once('exit', (code, signal) => r({ code, signal })),
    );
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    const how = await ended;
    clearTimeout(timer);
    return how;
  }

  logOf(ordinal: number): string {
    try {
      return readFileSync(join(this.dir, `${podName(ordinal)}.log`), 'utf8');
    } catch {
      return '';
    }
  }

  /** A grpc probe as the kubelet runs it: Check(service) at the pod's IP and the probe's port. */
  async grpcProbe(ordinal: number, probe: IProbe): Promise<string> {
    const action = probe.grpc;
    if (!action) throw new Error('not a grpc probe');
    const client = new Health(`${podIp(ordinal)}:${action.port}`, grpc.credentials.createInsecure());
    try {
      return await new Promise<string>((resolve) =>
        client.Check({ service: action.service ?? '' }, { deadline: Date.now() + (probe.timeoutSeconds ?? 1) * 1000 }, (err, v) =>
          resolve(err ? `failed: ${err.message}` : (v?.status ?? 'UNKNOWN')),
        ),
      );
    } finally {
      client.close();
    }
  }

  /** `kubectl wait --for=condition=Ready pod/<name>`: the readiness probe succeeds (and liveness holds). */
  async waitReady(ordinal: number, timeoutMs = 30_000): Promise<void> {
    await waitFor(
      `${podName(ordinal)} to be ready`,
      async () => {
        if (!this.pods.has(ordinal) || this.pods.get(ordinal)!.exitCode !== null) throw new Error(`${podName(ordinal)} exited`);
        return (await this.grpcProbe(ordinal, d.container.readinessProbe!)) === 'SERVING';
      },
      timeoutMs,
      100,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- ${podName(ordinal)} ---\n${this.logOf(ordinal).slice(-3000)}`);
    });
    expect(await this.grpcProbe(ordinal, d.container.livenessProbe!)).toBe('SERVING');
  }

  /** README's `lh …`: the CLI run in pod leasehold-0 (kubectl exec), whose names the cluster DNS resolves. */
  async lh(readmeForm: string, record = true): Promise<{ code: number; out: string }> {
    if (record && this.commands.at(-1) !== readmeForm) this.commands.push(readmeForm);
    const resolveList = (a: string) =>
      a
        .split(',')
        .map((hp) => {
          const m = /^([^:/\s]+):(\d+)$/.exec(hp);
          return m && m[1]!.includes(`.${PEERS}`) ? `${resolveHost(m[1]!)}:${m[2]}` : hp;
        })
        .join(',');
    const args = readmeForm.split(' ').map(resolveList);
    const inPod = args.map((a) => (a.startsWith('/') ? this.podPath(0, a) : a));
    const endpoints = `${podIp(0)}:${d.container.ports!.find((p) => p.name === 'grpc')!.containerPort}`; // localhost in pod 0
    return await new Promise((resolve) =>
      execFile(
        process.execPath,
        ['dist/src/cli/main.js', ...inPod],
        { cwd: REPO, env: { PATH: process.env['PATH'] ?? '', LEASEHOLD_ENDPOINTS: endpoints }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out: `${stdout}${stderr}` }),
      ),
    );
  }

  async lhOk(readmeForm: string, record = true): Promise<string> {
    const r = await this.lh(readmeForm, record);
    expect(r.code, `lh ${readmeForm}\n${r.out}`).toBe(0);
    return r.out;
  }

  /** The members as the leader lists them. */
  async members(): Promise<{ voters: string[]; learners: string[] }> {
    const list = JSON.parse(await this.lhOk('members list --json', false)).members as { id: string; learner: boolean }[];
    return {
      voters: list
        .filter((m) => !m.learner)
        .map((m) => m.id)
        .sort(),
      learners: list
        .filter((m) => m.learner)
        .map((m) => m.id)
        .sort(),
    };
  }

  /** The quorum arithmetic after a step: a configuration of n voters promises to survive floor((n-1)/2)
   *  failures; it does only while every voter has a running pod. */
  async checkQuorum(step: string): Promise<void> {
    const { voters } = await this.members();
    const running = new Set([...this.pods.keys()].map(podName));
    const live = voters.filter((v) => running.has(v));
    const quorum = Math.floor(voters.length / 2) + 1;
    const promised = Math.floor((voters.length - 1) / 2);
    this.steps.push(`${step}: voters ${voters.join(',')}; pods ${[...running].join(',')}`);
    expect(
      live.length - quorum,
      `${step}: ${voters.length} voters (quorum ${quorum}) promise to survive ${promised} failures, but only ${live.length} have a pod ` +
        `(${voters.filter((v) => !running.has(v)).join(', ')} has none): it survives ${live.length - quorum}`,
    ).toBe(promised);
  }

  /** `kubectl scale statefulset leasehold --replicas=N`. */
  async scale(replicas: number): Promise<void> {
    const now = Math.max(...this.pods.keys()) + 1;
    for (let o = now; o < replicas; o++) this.startPod(o);
    for (let o = now - 1; o >= replicas; o--) {
      const how = await this.stopPod(o);
      expect(how, `${podName(o)} stopped on SIGTERM within the grace period`).toEqual({ code: 0, signal: null });
    }
    await this.checkQuorum(`kubectl scale --replicas=${replicas}`);
  }

  async close(): Promise<void> {
    for (const child of this.pods.values()) child.kill('SIGKILL');
    await Promise.all(
      [...this.pods.values()].map((c) => (c.exitCode !== null || c.signalCode !== null ? null : new Promise((r) => c.once('exit', r)))),
    );
    this.pods.clear();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

describe('Kubernetes rehearsal: the StatefulSet on loopback, README "Kubernetes" step by step', () => {
  const k = new Rehearsal();
  let client: LockClient | null = null;
  afterAll(async () => {
    client?.close();
    await k.close();
  });

  it('applies, serves, grows 3 -> 5, shrinks 5 -> 3, rolls an upgrade and takes a backup, one lock held throughout', async () => {
    const started = Date.now();
    const replicas = d.statefulSet.spec!.replicas!;
    // --- Apply: `kubectl apply -k deploy/kubernetes/base` (podManagementPolicy Parallel: all at once).
    for (let o = 0; o < replicas; o++) k.startPod(o);
    // --- Check: every pod ready; the cluster agrees on a leader; the scraped port serves the metrics.
    for (let o = 0; o < replicas; o++) await k.waitReady(o);
    const all = [0, 1, 2].map((o) => `${podName(o)}.${PEERS}:7001`).join(',');
    await k.lhOk(`status --endpoints ${all}`);
    const scrape = d.statefulSet.spec!.template.metadata!.annotations!;
    const metrics = await new Promise<string>((resolve, reject) =>
      httpGet(`http://${podIp(0)}:${scrape['prometheus.io/port']}${scrape['prometheus.io/path']}`, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}`))));
      }).on('error', reject),
    );
    expect(metrics).toMatch(/^leasehold_raft_term\{/m);
    await k.checkQuorum('apply');

    // A client through the client Service (the ready pods it selects: the three that stay throughout).
    client = new LockClient({ endpoints: [0, 1, 2].map((o) => `${podIp(o)}:7001`).join(',') });
    const lock: LockHandle = await client.acquire('rehearsal/lock', { ttlMs: 6000, owner: 'rehearsal' });
    const token = lock.token;
    let lost: unknown = null;
    lock.on('lost', (err: unknown) => (lost = err));
    let renewals = 0;
    lock.on('renewed', () => renewals++);

    // --- Scale 3 -> 5: each new member is added as a learner, its pod started, promoted once caught up.
    for (const o of [3, 4]) {
      await k.lhOk(`members add ${podName(o)} ${podName(o)}.${PEERS}:7001 --learner`);
      await k.scale(o + 1);
      await k.waitReady(o);
      await waitFor(`${podName(o)} to be promoted`, async () => (await k.lh(`members promote ${podName(o)}`)).code === 0, 30_000, 200);
      await k.checkQuorum(`members promote ${podName(o)}`);
    }
    expect(await k.members()).toEqual({ voters: [0, 1, 2, 3, 4].map(podName), learners: [] });

    // --- Scale 5 -> 3: each member is removed from the configuration first, then its pod goes.
    for (const o of [4, 3]) {
      await k.lhOk(`members remove ${podName(o)}`);
      await k.checkQuorum(`members remove ${podName(o)}`);
      await k.scale(o);
    }
    expect(await k.members()).toEqual({ voters: [0, 1, 2].map(podName), learners: [] });

    // --- Upgrade: the rolling update restarts one pod at a time, highest ordinal first, each once the
    // previous one is ready again; a leader hands off on SIGTERM.
    for (const o of [2, 1, 0]) {
      const how = await k.stopPod(o);
      expect(how, `${podName(o)} stopped on SIGTERM within the grace period`).toEqual({ code: 0, signal: null });
      k.startPod(o);
      await k.waitReady(o);
      await k.checkQuorum(`rolling update of ${podName(o)}`);
    }
    const status = await k.lhOk(`status --endpoints ${all}`);
    expect(status).toMatch(/^ok: leader /m);
    expect(status.match(/ SERVING$/gm)).toHaveLength(3);

    // --- Back up: a consistent copy from a live member into the pod's /tmp (then kubectl cp).
    await k.lhOk('snapshot save /tmp/backup.lhb');
    // status exits 0 only when the file's checksum matches; the held lock is in it.
    const saved = JSON.parse(await k.lhOk('snapshot status /tmp/backup.lhb --json')) as { holds: number; members: string[] };
    expect(saved.holds).toBeGreaterThanOrEqual(1);
    expect(saved.members.sort()).toEqual([0, 1, 2].map(podName));

    // The lock was held throughout: never lost, renewed all along, and the cluster still names its token.
    expect(lost).toBeNull();
    expect(lock.state).toBe('ACTIVE');
    expect(renewals).toBeGreaterThan(3);
    const got = JSON.parse(await k.lhOk('get rehearsal/lock --json', false));
    expect({ owner: got.owner, token: String(got.token) }).toEqual({ owner: 'rehearsal', token: String(token) });
    await lock.release();

    // README "Kubernetes" names exactly these commands, in this order.
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Kubernetes'), readme.indexOf('\n## ', readme.indexOf('\n## Kubernetes') + 1));
    const inReadme = [...section.matchAll(/\blh ([^;&|\n`#]+?)\s*(?:;|&&|\|\||\n|#|$)/g)].map((m) => m[1]!.trim());
    expect(inReadme).toEqual(k.commands);

    // The probes' meanings without a quorum: leasehold-0 alone cannot serve, so it is not ready, but it is
    // live — the kubelet leaves it running (a restart cannot bring the quorum back).
    for (const o of [1, 2]) await k.stopPod(o);
    await waitFor(
      'leasehold-0 to stop being ready without a quorum',
      async () => (await k.grpcProbe(0, d.container.readinessProbe!)) !== 'SERVING',
      10_000,
      100,
    );
    expect(await k.grpcProbe(0, d.container.livenessProbe!)).toBe('SERVING');
    console.log(`kubernetes rehearsal: ${Date.now() - started} ms; ${k.steps.join(' | ')}`);
  }, 120_000);
});
