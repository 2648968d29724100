// The node-side test faults on real processes (3 nodes): each fault does what node-faults.ts says.
// One cluster for the whole file; the steps run in order and each leaves the cluster healthy.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcquireResponse, GetResponse } from '../../src/wire/lock.js';
import { MAIN_JS, TestCluster, waitFor } from '../integration/harness.js';
import { checkHistory } from './checker.js';
import { HistoryRecorder } from './history.js';
import { trueNowMs, type TestFaultState } from './node-faults.js';

const HOUR_MS = 3_600_000;
let seq = 0;
const acquireReq = (key: string, owner: string, ttlMs: number) => ({
  key,
  owner,
  ttl_ms: String(ttlMs),
  request_id: `${owner}-${key}-${++seq}`,
});

/** Resolves with (code, signal) when the child exits. */
const exitOf = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));

describe('node test faults (LEASEHOLD_TEST_FAULTS) on a 3-node cluster', () => {
  let c: TestCluster;
  const leader = async () => (await c.waitForLeader()).leader;
  const followerOf = (l: string) => c.ids.find((id) => id !== l)!;
  const acquire = (via: string, key: string, owner: string, ttlMs = 3000) =>
    c.raw<AcquireResponse>(via, 'Acquire', acquireReq(key, owner, ttlMs), 5000);
  /** Waits until `id` reports its fault clock from a process started after `sincePid`. */
  const stateOf = (id: string, pred: (s: TestFaultState) => boolean) =>
    waitFor(`${id}'s fault state`, () => {
      const s = c.faults(id).state();
      return s && s.pid === c.pid(id) && pred(s) ? s : null;
    });
  const transferTo = (id: string) =>
    new Promise<void>((resolve, reject) => {
      const p = spawn(process.execPath, [MAIN_JS, 'transfer-leader', id, '--endpoints', c.endpoints().join(',')], { stdio: 'ignore' });
      p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`transfer-leader ${id} exited ${code}`))));
    });

  beforeAll(async () => {
    c = await TestCluster.create({ faultFiles: true });
    c.startAll();
    await c.waitForLeader();
  });
  afterAll(async () => {
    await c?.stop();
  });

  it("clock: +100 000 ppm drift makes the node's clock gain about 100 ms per true second", async () => {
    const id = c.ids[0]!;
    const before = await stateOf(id, () => true);
    c.faults(id).setClock({ driftPpm: 100_000 });
    const after = await stateOf(id, (s) => s.applied.clock?.driftPpm === 100_000 && s.trueMs - before.trueMs > 2500);
    const gainedMs = after.nowMs - after.trueMs - (before.nowMs - before.trueMs);
    const trueElapsedMs = after.trueMs - before.trueMs;
    // The gain is 10 % of the true time since the node applied it: normally ~20 ms after the write (the
    // poll), here allowed up to a second late (a loaded CI machine), and never before the write.
    expect(gainedMs).toBeGreaterThan(0.1 * (trueElapsedMs - 1000));
    expect(gainedMs).toBeLessThan(0.1 * trueElapsedMs + 5);
    c.faults(id).setClock({});
  });

  it('clock: leaders 20 % fast (outside the model) end an abandoned lease early by true time and lease-cut-short says so; 1.5 % fast (inside) is clean', async () => {
    /** A takes the lease and abandons it; B queues for it at once; the history of the two, checked. */
    const handover = async (driftPpm: number, tag: string) => {
      for (const id of c.ids) c.faults(id).setClock({ driftPpm });
      await Promise.all(c.ids.map((id) => stateOf(id, (s) => s.applied.clock?.driftPpm === driftPpm)));
      const l = await leader();
      const recorder = new HistoryRecorder();
      const ttlMs = 2000;
      const a = recorder.invoke({ process: 'A', type: 'acquire', key: `drift-${tag}`, via: 'raw', owner: `A-${tag}`, ttlMs, waitMs: 0 });
      const ra = await acquire(l, `drift-${tag}`, `A-${tag}`, ttlMs);
      a.ok({ token: BigInt(ra.token) });
      const b = recorder.invoke({ process: 'B', type: 'acquire', key: `drift-${tag}`, via: 'raw', owner: `B-${tag}`, ttlMs, waitMs: 5000 });
      const rb = await c.raw<AcquireResponse>(l, 'Acquire', { ...acquireReq(`drift-${tag}`, `B-${tag}`, ttlMs), wait_ms: '5000' }, 8000);
      b.ok({ token: BigInt(rb.token) });
      expect(ra.acquired && rb.acquired).toBe(true);
      for (const id of c.ids) c.faults(id).setClock({});
      return { verdict: checkHistory(recorder.ops), heldMs: b.op.completeMs! - a.op.invokeMs };
    };
    const fast = await handover(200_000, 'fast');
    // The leader measured 2000 ms on a clock 1.2x fast: about 1667 ms of true time, under the 1960 owed.
    expect(fast.heldMs).toBeLessThan(1960);
    expect(fast.verdict.violations.map((v) => v.kind)).toEqual(['lease-cut-short']);
    const inModel = await handover(15_000, 'in-model');
    expect(inModel.heldMs).toBeGreaterThanOrEqual(1960);
    expect(inModel.verdict.violations).toEqual([]);
  });

  it('disk: a 200 ms fsync delay on every node holds every commit at least that long', async () => {
    const l = await leader();
    const timeAcquires = async (tag: string) => {
      const ms: number[] = [];
      for (let i = 0; i < 4; i++) {
        const t = trueNowMs();
        expect((await acquire(l, `fsync-${tag}-${i}`, `o-${tag}-${i}`)).acquired).toBe(true);
        ms.push(trueNowMs() - t);
      }
      return ms.sort((x, y) => x - y)[1]!;
    };
    const baseMs = await timeAcquires('base');
    for (const id of c.ids) c.faults(id).setDisk({ fsyncDelayMs: 200 });
    await Promise.all(c.ids.map((id) => stateOf(id, (s) => s.applied.disk?.fsyncDelayMs === 200)));
    const slowMs = await timeAcquires('slow');
    for (const id of c.ids) c.faults(id).setDisk({});
    // A commit needs a quorum's fsync, each held 200 ms: none can be faster than that, whatever the load (a
    // baseline measured on a loaded machine is noise, not a floor to add the delay to).
    expect(slowMs).toBeGreaterThanOrEqual(200);
    expect(slowMs).toBeGreaterThan(baseMs);
  });

  it('disk: failWrites stops the leader with exit 70; a restart from the same dir recovers every acknowledged write', async () => {
    const l = await leader();
    const keys = ['durable-1', 'durable-2', 'durable-3'];
    const tokens = new Map<string, string>();
    for (const k of keys) {
      const r = await acquire(l, k, `keeper-${k}`, 20_000);
      expect(r.acquired).toBe(true);
      tokens.set(k, String(r.token));
    }
    const exited = exitOf(c.procs.get(l)!);
    c.faults(l).setDisk({ failWrites: true });
    await stateOf(l, (s) => s.applied.disk?.failWrites === true);
    // Any write now fails: the next proposal makes the leader write, fail and stop.
    void acquire(l, 'trigger', 'trigger').catch(() => undefined);
    expect(await exited).toEqual({ code: 70, signal: null });
    expect(c.logText(l)).toContain('storage failed; exiting');
    c.faults(l).clear();
    c.start(l);
    await stateOf(l, () => true);
    await c.waitForLeader(c.ids);
    // The restarted node read its state back from disk (not only from the leader): its applied store (the
    // driver logs its point as appliedIndex) and its log, from the log's own snapshot index …
    const restored = c
      .logText(l)
      .split('\n')
      .filter((line) => line.includes('raft node restored from storage'))
      .map((line) => JSON.parse(line) as { entries: number; snapshotIndex: number; term: number });
    expect(restored.length).toBeGreaterThanOrEqual(2);
    expect(restored.at(-1)!.snapshotIndex + restored.at(-1)!.entries).toBeGreaterThan(0);
    // … and with it as one of two nodes (another one stopped), every acknowledged grant is still there.
    const other = c.ids.find((id) => id !== l && c.procs.has(id))!;
    await c.kill(other);
    const survivor = c.ids.find((id) => id !== l && id !== other)!;
    await c.waitForLeader([l, survivor]);
    for (const k of keys) {
      const g = await c.raw<GetResponse>(l, 'Get', { key: k });
      expect(g.held, k).toBe(true);
      expect(String(g.token), k).toBe(tokens.get(k));
    }
    c.start(other);
    await c.waitForLeader(c.ids);
  });

  it('disk: crashAfterBatches kills a node with SIGKILL after that many batches, once; the restart catches up and stays up', async () => {
    const l = await leader();
    const f = followerOf(l);
    const exited = exitOf(c.procs.get(f)!);
    c.faults(f).setDisk({ crashAfterBatches: 3 });
    await stateOf(f, (s) => s.applied.disk?.crashAfterBatches === 3);
    let crashed: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    void exited.then((e) => (crashed = e));
    for (let i = 0; i < 20 && !crashed; i++) expect((await acquire(l, `crash-${i}`, `crash-${i}`)).acquired).toBe(true);
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(c.logText(f)).toContain('disk.crashAfterBatches=3 reached');
    // Same file, same setting: the crash is not re-armed, so the node stays up through more writes.
    c.start(f);
    const pid = c.pid(f);
    await stateOf(f, () => true);
    for (let i = 0; i < 6; i++) expect((await acquire(l, `after-crash-${i}`, `after-crash-${i}`)).acquired).toBe(true);
    await waitFor('f catches up', async () => {
      const [ls, fs] = await Promise.all([c.status(l), c.status(f)]);
      return fs.applied_index === ls.commit_index;
    });
    expect(c.pid(f)).toBe(pid);
    c.faults(f).clear();
  });

  // Last: once a +1 h leader has stamped the log, log time stays an hour ahead, and a leader with a true
  // clock cannot advance it (leases granted under one then do not lapse) — see the report on issue 12.
  it("clock: a +1 h wall offset moves a restarted node's stamps; as leader it still holds a lease a full ttl; a live wall jump changes nothing", async () => {
    const l0 = await leader();
    const f = followerOf(l0);
    // A wall jump on a running node reaches its stamps only through a restart (a new anchor), as with NTP.
    c.faults(f).setClock({ offsetMs: HOUR_MS });
    const live = await waitFor('f applies the offset', () => {
      const s = c.faults(f).state();
      return s && s.applied.clock?.offsetMs === HOUR_MS ? s : null;
    });
    expect(Math.abs(live.wallMs - live.trueMs - HOUR_MS)).toBeLessThan(50);
    expect(Math.abs(live.nowMs - live.trueMs)).toBeLessThan(50);
    await c.kill(f);
    c.start(f);
    const skewed = await stateOf(f, () => true);
    expect(Math.abs(skewed.nowMs - skewed.trueMs - HOUR_MS)).toBeLessThan(1000);
    await c.waitForLeader(c.ids);

    const ttlMs = 3000;
    const sentMs = trueNowMs();
    const a = await acquire(l0, 'jump', 'holder', ttlMs);
    expect(a.acquired).toBe(true);
    // Stamped by l0 (true clock): its deadline is about send + ttl.
    expect(Math.abs(Number(a.expires_at_ms) - (sentMs + ttlMs))).toBeLessThan(1000);
    await transferTo(f);
    await waitFor('f leads', async () => (await c.waitForLeader(c.ids)).leader === f);
    // The +1 h leader carries the lease into its term from its OWN now: its deadline is an hour "later".
    const g = await c.raw<GetResponse>(f, 'Get', { key: 'jump' });
    expect(g.held).toBe(true);
    expect(Number(g.expires_at_ms) - trueNowMs()).toBeGreaterThan(HOUR_MS - 1000);
    // A live wall jump back by an hour on the leader: its stamps (monotonic) do not move.
    c.faults(f).setClock({ offsetMs: 0 });
    const jumped = await waitFor('f applies the jump back', () => {
      const s = c.faults(f).state();
      return s && s.applied.clock?.offsetMs === 0 ? s : null;
    });
    expect(Math.abs(jumped.wallMs - jumped.trueMs)).toBeLessThan(50);
    expect(Math.abs(jumped.nowMs - jumped.trueMs - HOUR_MS)).toBeLessThan(1000);
    // The lease is not freed before ttl of true time after the acquire was sent, and is freed after.
    const freedAtMs = await waitFor(
      'the lease to end',
      async () => {
        const r = await acquire(f, 'jump', 'second', ttlMs);
        return r.acquired ? trueNowMs() : null;
      },
      4 * ttlMs,
      50,
    );
    expect(freedAtMs - sentMs).toBeGreaterThanOrEqual(ttlMs);
  });
});

describe('Status and a slow disk (a one-node cluster, 300 ms fsyncs)', () => {
  let c: TestCluster;
  afterAll(async () => {
    await c?.stop();
  });

  it('the node Status names leader serves an acquire at once: Status reports the role the node acted on, not the one still on its way to disk', async () => {
    c = await TestCluster.create({ size: 1, faultFiles: true });
    c.startAll();
    await c.waitForLeader();
    const id = c.ids[0]!;
    c.faults(id).setDisk({ fsyncDelayMs: 300 });
    await waitFor('the fsync delay applied', () => c.faults(id).state()?.applied.disk?.fsyncDelayMs === 300);
    for (let round = 0; round < 3; round++) {
      // A restart reads the fault file at once: its first election's vote is written with a 300 ms fsync,
      // and a Status that reported the core's role would name it leader that long before it serves.
      await c.kill(id);
      c.start(id);
      await c.waitForLeader();
      const r = await c.raw<AcquireResponse>(id, 'Acquire', acquireReq(`slow-disk-${round}`, `o-${round}`, 5000), 5000);
      expect(r.acquired).toBe(true);
    }
  });
});
