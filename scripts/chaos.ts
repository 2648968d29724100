// Jepsen-style chaos run against a real cluster (DESIGN "Jepsen / Porcupine").
//
//   npm run chaos -- --nodes 3 --duration 60 --faults all --seed 1 --out DIR      (builds first)
//   node build/scripts/chaos.js ...                                                (already built)
//
// Starts an N-node cluster of real `leasehold serve` processes (temp dir, free ports), every node-to-node
// link through a proxy of its own (test/lin/peer-net.ts, nodes[].peerDialOverrides), gives every client
// worker its own LockClient behind its own fault proxies (one per node), and runs the workload
// (test/lin/workload.ts) against a seeded nemesis (test/lin/nemesis.ts: kill -9, SIGSTOP, client-side
// partitions, partitions between nodes, membership changes) for --duration seconds. After each fault it
// measures every live node's recovery; while a node-network fault lasts it reads through every node. Then
// it heals everything, lets the workers finish, and checks:
//   - the recorded history (test/lin/checker.ts): tokens, fencing, mutual exclusion of holder windows,
//     renew/release by the current holder only, and WGL linearizability per key; on the keys with many
//     holds (pool-0, a semaphore of 2; rw-0, shared and exclusive holds) at most `limit` holders and never
//     an exclusive hold beside another (group-windows.ts); grants in the order the log queued them
//     (fifo-order, from a Watch of QUEUED events: test/lin/queue-watch.ts); no hold of a session seen
//     ended (session-end); no grant inside a run-out hold's lock-delay (lock-delay);
//   - the resource's own commit log (never a lower token after a higher one);
//   - the cluster, as its FINAL membership: one leader; every member's commit and applied index converge;
//     a Get through every member agrees; every lease lapses once the clients are gone.
// Prints a summary and exits 0 only if all of that holds and operations actually succeeded.
//
// The seed fixes the schedule of faults and every client decision; the interleaving with real processes and
// timers does not replay exactly. Every process is killed by PID and the temp dir removed on the way out,
// also on SIGINT/SIGTERM and on a hard timeout. With --out DIR (or on any violation) the history, the
// fault log (faults.json), the per-fault summary (summary.json), the timeline page (timeline.html,
// test/lin/timeline.ts) and the node logs are kept in DIR (default:
// a fresh leasehold-chaos-* dir under the OS temp dir). A failing run prints the command that replays its seed.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { FaultProxy } from '../test/e2e/proxy.js';
import { TestCluster, waitFor } from '../test/integration/harness.js';
import { AuditedFencedStore } from '../test/lin/audited-store.js';
import { checkHistory, formatVerdict, type Verdict } from '../test/lin/checker.js';
import { historyFromJsonl, historyToJsonl, HistoryRecorder } from '../test/lin/history.js';
import { formatSummary, summarizeRun } from '../test/lin/chaos-summary.js';
import { MembershipNemesis } from '../test/lin/membership-nemesis.js';
import { NodePorts } from '../test/lin/node-ports.js';
import { FAULT_GROUPS, Nemesis, parseFaults, type FaultKind } from '../test/lin/nemesis.js';
import { PeerNet } from '../test/lin/peer-net.js';
import { renderTimeline } from '../test/lin/timeline.js';
import { Prober } from '../test/lin/probe.js';
import { ChaosWorker, sleep } from '../test/lin/workload.js';
import { QueueWatcher } from '../test/lin/queue-watch.js';
import { SimRng } from '../test/sim/rng.js';
import type { GetResponse } from '../src/wire/lock.js';

interface Args {
  durationS: number;
  seed: number;
  nodes: number;
  workers: number;
  keys: number;
  ttlsMs: number[];
  faults: FaultKind[];
  faultsSpec: string;
  spares: number;
  out: string | null;
  wglBudgetMs: number;
  check: string | null;
  waitChance: number;
  groupChance: number;
}

function parse(): Args {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '60' },
      seed: { type: 'string' },
      nodes: { type: 'string', default: '3' },
      workers: { type: 'string', default: '4' },
      keys: { type: 'string', default: '3' },
      ttl: { type: 'string', default: '900,1500,2500' },
      faults: { type: 'string', default: 'all' },
      spares: { type: 'string' },
      out: { type: 'string' },
      'wgl-budget': { type: 'string', default: '30000' },
      check: { type: 'string' },
      'wait-chance': { type: 'string', default: '0.25' },
      'group-chance': { type: 'string', default: '0.3' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(
      [
        'usage: node build/scripts/chaos.js [--duration S] [--seed N] [--nodes 3|5] [--workers N] [--keys N]',
        '                                  [--ttl ms,ms,...] [--faults all|group|kind,...|none] [--wait-chance F] [--group-chance F]',
        '                                  [--spares N] [--out DIR] [--wgl-budget MS]',
        '       node build/scripts/chaos.js --check DIR     re-check the history.jsonl (and audit.json) kept in DIR',
        ...Object.entries(FAULT_GROUPS).map(([g, kinds]) => `fault group ${g.padEnd(10)} ${kinds.join(', ')}`),
        '--spares: ids kept for the membership nemesis (each add takes a fresh one); default 4 + duration/40 with membership faults, else 0',
        'exit status: 0 clean, 1 violation / no progress / no convergence, 2 usage, 3 hard timeout',
      ].join('\n'),
    );
    process.exit(0);
  }
  const int = (name: string, v: string | undefined, min: number) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) usage(`--${name} must be an integer >= ${min} (got ${v})`);
    return n;
  };
  const fraction = (name: string, v: string | undefined) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0 || n > 1) usage(`--${name} must be a number in [0, 1] (got ${v})`);
    return n;
  };
  let faults: FaultKind[] = [];
  try {
    faults = parseFaults(values.faults!);
  } catch (err) {
    usage(`--faults: ${(err as Error).message}`);
  }
  const durationS = int('duration', values.duration, 1);
  const membership = faults.some((f) => (FAULT_GROUPS.membership as readonly string[]).includes(f));
  return {
    durationS,
    seed: values.seed === undefined ? Math.floor(Math.random() * 1_000_000) : int('seed', values.seed, 0),
    nodes: int('nodes', values.nodes, 1),
    workers: int('workers', values.workers, 1),
    keys: int('keys', values.keys, 1),
    ttlsMs: values.ttl!.split(',').map((s) => int('ttl', s, 100)),
    faults,
    faultsSpec: values.faults!,
    spares: values.spares !== undefined ? int('spares', values.spares, 0) : membership ? 4 + Math.ceil(durationS / 40) : 0,
    out: values.out ?? null,
    wglBudgetMs: int('wgl-budget', values['wgl-budget'], 100),
    check: values.check ?? null,
    waitChance: fraction('wait-chance', values['wait-chance']),
    groupChance: fraction('group-chance', values['group-chance']),
  };
}

function usage(msg: string): never {
  console.error(`chaos: ${msg}`);
  process.exit(2);
}

const t0 = performance.now();
const log = (msg: string) => console.log(`[chaos +${((performance.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

interface RunState {
  cluster: TestCluster | null;
  proxies: FaultProxy[];
  net: PeerNet | null;
  ports: NodePorts | null;
  workers: ChaosWorker[];
  watcher: QueueWatcher | null;
  store: AuditedFencedStore | null;
  cleaned: boolean;
}
const state: RunState = { cluster: null, proxies: [], net: null, ports: null, workers: [], watcher: null, store: null, cleaned: false };

/** Kill every node by PID, close proxies and clients, remove the temp dir. Idempotent. */
async function cleanup(): Promise<void> {
  if (state.cleaned) return;
  state.cleaned = true;
  for (const w of state.workers) w.close();
  await state.watcher?.close();
  await Promise.all(state.proxies.map((p) => p.close().catch(() => undefined)));
  await state.net?.close();
  await state.ports?.close();
  try {
    state.store?.close();
  } catch {
    // already closed
  }
  if (state.cluster) {
    for (const child of state.cluster.procs.values()) if (child.pid) tryKill(child.pid, 'SIGCONT');
    await state.cluster.stop();
  }
}

function tryKill(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // not running
  }
}

// Last resort if we die without running cleanup(): synchronous, by PID.
process.on('exit', () => {
  if (state.cleaned || !state.cluster) return;
  for (const child of state.cluster.procs.values()) if (child.pid) tryKill(child.pid, 'SIGKILL');
  rmSync(state.cluster.dir, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    log(`${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1)));
  });
}

interface ClusterCheck {
  problems: string[];
  applied: Record<string, string>;
  finalGets: Record<string, { held: boolean; owner: string; token: string; lastToken: string }>;
}

/** --check DIR: the checker alone, on a history kept by an earlier run. */
function recheck(dir: string, wglBudgetMs: number): number {
  const ops = historyFromJsonl(readFileSync(join(dir, 'history.jsonl'), 'utf8'));
  const auditPath = join(dir, 'audit.json');
  const audit = existsSync(auditPath)
    ? (JSON.parse(readFileSync(auditPath, 'utf8')) as { resourceId: string; token: string; seq: number }[]).map((e) => ({
        ...e,
        token: BigInt(e.token),
      }))
    : undefined;
  const verdict = checkHistory(ops, { ...(audit ? { resourceAudit: audit } : {}), wglBudgetMs });
  console.log(`${ops.length} operations from ${dir}`);
  console.log(formatVerdict(verdict, 100));
  return verdict.valid ? 0 : 1;
}

async function main(): Promise<number> {
  const args = parse();
  if (args.check) {
    state.cleaned = true;
    return recheck(args.check, args.wglBudgetMs);
  }
  if (!existsSync(resolve('dist/src/cli/main.js')))
    usage('run from the repository root after `npm run build` (dist/src/cli/main.js not found)');
  const maxTtl = Math.max(...args.ttlsMs);
  const hardTimeoutMs = args.durationS * 1000 + 180_000;
  const hard = setTimeout(() => {
    log(`HARD TIMEOUT after ${hardTimeoutMs} ms: cleaning up`);
    void cleanup().finally(() => process.exit(3));
  }, hardTimeoutMs);

  log(
    `seed ${args.seed}, ${args.nodes} nodes (+${args.spares} spare ids), ${args.workers} workers, keys ${args.keys}, ttl ${args.ttlsMs.join('/')} ms, wait chance ${args.waitChance}, ${args.durationS} s, faults: ${args.faults.join(',') || 'none'}`,
  );
  // The peer links first: the cluster's config tells each node to dial its peers through them.
  const allIds = Array.from({ length: args.nodes + args.spares }, (_, i) => `n${i + 1}`);
  const net = await PeerNet.create(allIds, SimRng.derive(args.seed, 'peer-net'));
  state.net = net;
  // Clock and disk faults need each node's test-fault file (LEASEHOLD_TEST_FAULTS); other runs go without it.
  const nodeSide = args.faults.some((f) => [...FAULT_GROUPS.clock, ...FAULT_GROUPS.disk].includes(f as never));
  const cluster = await TestCluster.create({
    size: args.nodes,
    spare: args.spares,
    nodeYaml: (id) => net.overridesYaml(id),
    faultFiles: nodeSide,
  });
  if (cluster.ids.join() !== allIds.join()) throw new Error(`the harness named the nodes ${cluster.ids.join()}, expected ${allIds.join()}`);
  net.pointAt((id) => cluster.endpoint(id));
  state.cluster = cluster;
  // The spare ids' ports stay bound by placeholders until membership changes start those ids (node-ports.ts).
  const ports = new NodePorts(cluster, log);
  state.ports = ports;
  await ports.holdSpares();
  cluster.startAll();
  for (const id of cluster.bootstrapIds) log(`node ${id} started pid ${cluster.procs.get(id)?.pid}`);
  const first = await cluster.waitForLeader(cluster.bootstrapIds, 30_000);
  log(`leader ${first.leader} (term ${first.term}); temp dir ${cluster.dir}`);

  const store = await AuditedFencedStore.open(join(cluster.dir, 'resource.sqlite'));
  state.store = store;
  const recorder = new HistoryRecorder();
  const keys = Array.from({ length: args.keys }, (_, i) => `hot-${i}`);
  const groupKeys =
    args.groupChance > 0
      ? [
          { key: 'pool-0', limit: 2 },
          { key: 'rw-0', limit: 1 },
        ]
      : [];
  if (groupKeys.length > 0) {
    // Semaphores and shared holds need cluster level 3 (versions.ts): the leader raises it once it has heard
    // every member; until then such acquires are refused, which is not what this run is about.
    await waitFor(
      'cluster level 3',
      async () =>
        (await Promise.all(cluster.bootstrapIds.map((id) => cluster.status(id).catch(() => null)))).every(
          (s) => s !== null && s.cluster_level >= 3,
        ),
      30_000,
    );
  }
  const proxies = new Map<string, Map<string, FaultProxy>>();
  for (let w = 0; w < args.workers; w++) {
    const byNode = new Map<string, FaultProxy>();
    for (const id of cluster.bootstrapIds) {
      const p = await FaultProxy.start(cluster.endpoint(id));
      byNode.set(id, p);
      state.proxies.push(p);
    }
    proxies.set(`w${w + 1}`, byNode);
  }
  for (const [wid, byNode] of proxies) {
    state.workers.push(
      new ChaosWorker({
        id: wid,
        endpoints: [...byNode.values()].map((p) => p.address),
        keys,
        ttlsMs: args.ttlsMs,
        rng: SimRng.derive(args.seed, `worker:${wid}`),
        recorder,
        resource: store,
        waitChance: args.waitChance,
        groupKeys,
        groupChance: args.groupChance,
      }),
    );
  }
  // The wait lines as the log has them (QUEUED events), for the fifo-order rule. The bootstrap members' endpoints
  // only: dialling the spares' (reset by their placeholders until they start) put grpc-js's subchannels to
  // those addresses — shared by every client in this process — into their reconnect backoff, and when a spare
  // joined, the nemesis could not reach it for tens of seconds ("No connection established": seed 2026, twice,
  // three recovery PROBLEMs). When every bootstrap member is gone the watch restarts and records the gap.
  const watcher = new QueueWatcher(
    cluster.bootstrapIds.map((id) => cluster.endpoint(id)),
    recorder,
  );
  state.watcher = watcher;
  watcher.start();
  const membership = new MembershipNemesis(cluster, ports, log);
  const prober = new Prober(cluster, recorder, keys);
  const nemesis = new Nemesis({
    cluster,
    proxies,
    net,
    membership,
    prober,
    rng: SimRng.derive(args.seed, 'nemesis'),
    now: recorder.now,
    log,
    maxTtlMs: maxTtl,
    kinds: args.faults,
    ...(nodeSide ? { nodeFaults: (id: string) => cluster.faults(id) } : {}),
  });

  // ---------------------------------------------------------------- the run
  const stopWorkers = new AbortController();
  const stopNemesis = new AbortController();
  const runStartMs = recorder.now();
  const runs = state.workers.map((w) => w.run(stopWorkers.signal));
  const nemesisRun = args.faults.length ? nemesis.run(stopNemesis.signal) : Promise.resolve();
  const progress = setInterval(() => log(`progress: ${summarizeOps(recorder.ops.length ? checkCounts(recorder) : {})}`), 10_000);
  await sleep(args.durationS * 1000);
  clearInterval(progress);
  stopNemesis.abort();
  await nemesisRun;
  await nemesis.heal();
  log('nemesis stopped; everything healed; letting the workers finish');
  stopWorkers.abort();
  const finished = await Promise.race([Promise.all(runs).then(() => true), sleep(30_000).then(() => false)]);
  if (!finished) log('WARNING: some workers did not finish within 30 s');
  await watcher.close();
  const pending = recorder.closePending();
  for (const w of state.workers) w.close();

  const runEndMs = recorder.now();

  // ---------------------------------------------------------------- the cluster after healing, as its final membership
  await membership.refresh();
  log(`final membership: ${membership.members.join(',')}`);
  const clusterCheck = await checkCluster(cluster, membership.members, keys, recorder, maxTtl);

  // ---------------------------------------------------------------- the history
  const checkStarted = performance.now();
  const verdict = checkHistory(recorder.ops, { resourceAudit: store.audit, wglBudgetMs: args.wglBudgetMs });
  const checkMs = performance.now() - checkStarted;
  const resourceProblems = await checkResource(store, keys, clusterCheck);
  const unexpected = state.workers.flatMap((w) => w.unexpected);
  const acquiredOk = verdict.counts['acquire']?.ok ?? 0;
  const writesOk = verdict.counts['write']?.ok ?? 0;
  const problems = [...clusterCheck.problems, ...resourceProblems, ...unexpected.map((u) => `unexpected client error: ${u}`)];
  if (acquiredOk === 0 || writesOk === 0) problems.push(`no progress: ${acquiredOk} acquires and ${writesOk} fenced writes succeeded`);
  const notRecovered = nemesis.faults.filter((f) => Object.values(f.recoveryMs ?? {}).some((ms) => ms === null));
  for (const f of nemesis.faults) if (f.problem) problems.push(f.problem);
  for (const f of notRecovered)
    problems.push(
      `after ${f.kind} (${f.targets.join(',')}) healed, ${Object.entries(f.recoveryMs!)
        .filter(([, ms]) => ms === null)
        .map(([id]) => id)
        .join(',')} did not serve a Get within the recovery timeout`,
    );
  const clean = verdict.valid && problems.length === 0;

  // ---------------------------------------------------------------- summary
  const faultCounts: Record<string, number> = {};
  for (const f of nemesis.faults) faultCounts[f.kind] = (faultCounts[f.kind] ?? 0) + 1;
  const summary = summarizeRun(nemesis.faults, recorder.ops, runEndMs);
  const probes = recorder.ops.filter((o) => o.via === 'probe').length;
  const zombie = recorder.ops.filter((o) => o.type === 'write' && o.via === 'zombie');
  const maxToken = recorder.ops.reduce((m, o) => (o.type === 'acquire' && o.outcome === 'ok' && o.token! > m ? o.token! : m), 0n);
  const lines = [
    '',
    `==== chaos summary (seed ${args.seed}, ${args.nodes} nodes, ${args.workers} workers, ${args.durationS} s) ====`,
    `operations: ${recorder.ops.length} (${pending} still pending at the end, recorded as unknown)`,
    ...Object.entries(verdict.counts).map(
      ([type, c]) =>
        `  ${type.padEnd(8)} ok ${String(c.ok).padStart(6)}  fail ${String(c.fail).padStart(6)}  info ${String(c.info).padStart(6)}`,
    ),
    `  holds under a session of their own: ${state.workers.reduce((n, w) => n + w.sessionHolds, 0)}; QUEUED events observed: ${watcher.observed} (watch restarted ${watcher.restarts} times)`,
    `  zombie writes: ${zombie.length} (accepted ${zombie.filter((o) => o.outcome === 'ok').length}, rejected ${zombie.filter((o) => o.outcome === 'fail').length}); highest token ${maxToken}`,
    `faults injected: ${nemesis.faults.length} ${JSON.stringify(faultCounts)}; ${probes} probe Gets through single nodes; peer links ${JSON.stringify(net.stats())}`,
    `final membership: ${membership.members.join(',')}`,
    formatSummary(summary),
    `cluster after heal: applied ${JSON.stringify(clusterCheck.applied)}; final Gets ${JSON.stringify(clusterCheck.finalGets)}`,
    formatVerdict(verdict),
    `  (checked in ${(checkMs / 1000).toFixed(1)} s; ${store.audit.length} writes in the resource's commit log)`,
    ...problems.map((p) => `PROBLEM: ${p}`),
    `RESULT: ${clean ? 'CLEAN' : 'VIOLATIONS FOUND'}`,
    ...(clean ? [] : [`replay this seed: ${replayCommand(args)}`]),
  ];
  console.log(lines.join('\n'));

  const keep = args.out ?? (clean ? null : mkdtempSync(join(tmpdir(), `leasehold-chaos-seed${args.seed}-`)));
  if (keep) {
    mkdirSync(keep, { recursive: true });
    writeFileSync(join(keep, 'history.jsonl'), historyToJsonl(recorder.ops));
    writeFileSync(join(keep, 'faults.json'), JSON.stringify(nemesis.faults, null, 2));
    writeFileSync(
      join(keep, 'summary.json'),
      JSON.stringify(
        {
          seed: args.seed,
          command: replayCommand(args),
          clean,
          ops: recorder.ops.length,
          faultsTotal: nemesis.faults.length,
          finalMembers: membership.members,
          ...summary,
        },
        null,
        2,
      ),
    );
    writeFileSync(
      join(keep, 'timeline.html'),
      renderTimeline({
        history: recorder.ops,
        faults: nemesis.faults,
        violations: verdict.violations,
        startMs: runStartMs,
        endMs: recorder.now(),
        title: `leasehold chaos: seed ${args.seed}, ${args.nodes} nodes, ${args.durationS} s, faults ${args.faultsSpec} — ${clean ? 'CLEAN' : 'VIOLATIONS FOUND'}`,
      }),
    );
    writeFileSync(
      join(keep, 'verdict.json'),
      JSON.stringify({ verdict, problems }, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2),
    );
    writeFileSync(
      join(keep, 'audit.json'),
      JSON.stringify(store.audit, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
    );
    for (const id of cluster.ids) {
      const src = join(cluster.dir, `${id}.log`);
      if (existsSync(src)) copyFileSync(src, join(keep, `${id}.log`));
    }
    log(`artifacts kept in ${keep}`);
  }
  const result = {
    seed: args.seed,
    clean,
    ops: recorder.ops.length,
    counts: verdict.counts,
    faults: faultCounts,
    faultsTotal: nemesis.faults.length,
    windows: verdict.windows,
    groupHolds: recorder.ops.filter(
      (o) =>
        o.type === 'acquire' && o.outcome === 'ok' && ((o.limit ?? 1) > 1 || o.shared === true || groupKeys.some((g) => g.key === o.key)),
    ).length,
    leasesChecked: verdict.leasesChecked,
    lockModel: verdict.lockModel,
    queuedObserved: watcher.observed,
    peerLinks: net.stats(),
    violations: verdict.violations.map((v) => ({ kind: v.kind, key: v.key, message: v.message })),
    linearizability: verdict.linearizability,
    problems,
    summary: summary.byKind,
    finalMembers: membership.members,
    replay: replayCommand(args),
    artifacts: keep,
  };
  console.log(`CHAOS_RESULT ${JSON.stringify(result)}`);
  clearTimeout(hard);
  return clean ? 0 : 1;
}

/** The command that runs this configuration again with the same seed. */
function replayCommand(a: Args): string {
  return `npm run chaos -- --seed ${a.seed} --nodes ${a.nodes} --duration ${a.durationS} --faults ${a.faultsSpec} --workers ${a.workers} --keys ${a.keys} --ttl ${a.ttlsMs.join(',')} --wait-chance ${a.waitChance} --group-chance ${a.groupChance} --spares ${a.spares} --out DIR`;
}

function checkCounts(recorder: HistoryRecorder): Verdict['counts'] {
  const counts: Verdict['counts'] = {};
  for (const op of recorder.ops) {
    const c = (counts[op.type] ??= { ok: 0, fail: 0, info: 0 });
    if (op.outcome !== 'pending') c[op.outcome]++;
  }
  return counts;
}

function summarizeOps(counts: Verdict['counts']): string {
  return (
    Object.entries(counts)
      .map(([t, c]) => `${t} ${c.ok}/${c.fail}/${c.info}`)
      .join(', ') + ' (ok/fail/info)'
  );
}

/**
 * After healing: one leader; leases of the departed clients lapse; commit and applied indexes converge on
 * every node; a Get through each node (forwarded to the leader) gives the same answer. The final Gets go
 * into the history too, so the checker holds them to the same rules.
 */
async function checkCluster(
  cluster: TestCluster,
  members: string[],
  keys: string[],
  recorder: HistoryRecorder,
  maxTtlMs: number,
): Promise<ClusterCheck> {
  const problems: string[] = [];
  const out: ClusterCheck = { problems, applied: {}, finalGets: {} };
  try {
    const { leader, term } = await cluster.waitForLeader(members, 30_000);
    log(`after heal: leader ${leader}, term ${term}`);
  } catch (err) {
    problems.push(`no leader agreed by every node after healing: ${(err as Error).message}`);
    return out;
  }

  // Every client is gone: every lease must lapse. A new leader gives live leases a full ttl, so allow a few.
  const free = await waitFor(
    'every lease to lapse',
    async () => {
      const gets = await Promise.all(keys.map((k) => cluster.raw<GetResponse>(members[0]!, 'Get', { key: k }, 2000)));
      return gets.every((g) => !g.held) ? gets : null;
    },
    maxTtlMs * 4 + 10_000,
    200,
  ).catch((err: Error) => {
    problems.push(`leases did not lapse after the clients left: ${err.message}`);
    return null;
  });
  if (free) log('every lease lapsed');

  // Convergence: every node has committed and applied the same index (the log is quiet once leases are gone).
  const converged = await waitFor(
    'commit and applied indexes to converge',
    async () => {
      const sts = await Promise.all(members.map((id) => cluster.status(id, 1000)));
      const indexes = new Set(sts.flatMap((s) => [s.commit_index, s.applied_index]));
      return indexes.size === 1 ? sts : null;
    },
    20_000,
    200,
  ).catch((err: Error) => {
    problems.push(`indexes did not converge: ${err.message}`);
    return null;
  });
  const sts = converged ?? (await Promise.all(members.map((id) => cluster.status(id, 1000).catch(() => null))));
  for (const [i, s] of sts.entries()) out.applied[members[i]!] = s ? `${s.commit_index}/${s.applied_index}` : 'unreachable';
  if (converged) log(`indexes converged at ${converged[0]!.applied_index}`);

  // Get through every node: the answers must agree (and join the history).
  for (const key of keys) {
    const answers: string[] = [];
    for (const id of members) {
      const p = recorder.invoke({ process: `final@${id}`, type: 'get', key, via: 'final' });
      try {
        const g = await cluster.raw<GetResponse>(id, 'Get', { key }, 3000);
        p.ok({ held: g.held, getOwner: g.owner, getToken: BigInt(g.token), lastToken: BigInt(g.last_token) });
        answers.push(`${g.held}/${g.owner}/${g.token}/${g.last_token}`);
        out.finalGets[key] = { held: g.held, owner: g.owner, token: g.token, lastToken: g.last_token };
      } catch (err) {
        p.info(err);
        problems.push(`final Get of ${key} through ${id} failed: ${(err as Error).message}`);
      }
    }
    if (new Set(answers).size > 1) problems.push(`nodes disagree on ${key}: ${answers.join(' | ')}`);
  }
  return out;
}

/** The resource's stored state against its commit log and the cluster's last tokens. */
async function checkResource(store: AuditedFencedStore, keys: string[], cc: ClusterCheck): Promise<string[]> {
  const problems: string[] = [];
  for (const key of keys) {
    const rec = await store.store.read(key);
    const committed = store.audit.filter((e) => e.resourceId === key);
    const maxAccepted = committed.reduce((m, e) => (e.token > m ? e.token : m), 0n);
    if ((rec?.token ?? 0n) !== maxAccepted)
      problems.push(`resource ${key} stores token ${rec?.token ?? 0n}, but the highest token it accepted is ${maxAccepted}`);
    const last = cc.finalGets[key]?.lastToken;
    if (last !== undefined && maxAccepted > BigInt(last))
      problems.push(`resource ${key} accepted token ${maxAccepted}, above the cluster's last_token ${last}`);
  }
  return problems;
}

main()
  .then(async (code) => {
    await cleanup();
    log(`done (exit ${code})`);
    process.exit(code);
  })
  .catch(async (err: unknown) => {
    console.error('chaos: the run itself failed:', err);
    await cleanup();
    process.exit(1);
  });
