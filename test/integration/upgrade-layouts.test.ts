// Upgrade across storage layouts: data dirs written by OLDER builds (fixtures/upgrade, made by the builds
// each manifest names) open on this one. The lock state must come through whole — every hold with its owner
// and token, every free key's last token, the session and its holds, values, a semaphore and shared holds
// where the old build had them — and move into this layout: the applied store at dataDir/state, the log in
// dataDir/wal, and after the first log compaction no snapshot file that still carries the state. A second
// restart then reads the state from the new layout alone.
//   all-leveldb: the Raft log, hard state and snapshot in one LevelDB at dataDir (before the WAL)
//   wal-snap:    wal/ segments and snap/<index>.snap with the state in it (before the applied store)
// The fixtures' addresses are fixed (their Raft configuration and cluster id name them), so each cluster
// runs on its fixture's ports.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { Level } from 'level';
import { afterAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/client.js';
import type { EndpointPool } from '../../src/client/rpc.js';
import { decodeSnapshotHeader } from '../../src/raft/storage/codec.js';
import { AppliedStore } from '../../src/state/applied-store.js';
import type { AcquireResponse, ReleaseResponse, RenewSessionResponse } from '../../src/wire/lock.js';
import { TestCluster, waitFor } from './harness.js';

const FIXTURES = resolve('test/integration/fixtures/upgrade');

interface Manifest {
  layout: string;
  build: { commit: string };
  config: {
    nodes: { id: string; address: string; port: number; dataDir: string }[];
    raft: { snapshotEvery: number };
    lock: { freeKeyRetentionMs: number };
  };
  storedByOldBuild: Record<string, { snapshotIndex: number; snapshotDataBytes: number; logLastIndex: number }>;
  expected: Expected;
}

interface Expected {
  locks: Record<string, { owner: string; token: string; value?: string }>;
  released: Record<string, { last_token: string }>;
  sessions: { id: string; owner: string; holds: Record<string, string> }[];
  groups: Record<string, { limit: number; shared: boolean; holders: { owner: string; token: string }[] }>;
  maxToken: string;
}

function manifest(layout: string): Manifest {
  return JSON.parse(readFileSync(join(FIXTURES, `${layout}.json`), 'utf8')) as Manifest;
}

/** The fixture's ports must be free: a clear failure instead of a node that cannot listen. */
async function assertPortsFree(ports: number[]): Promise<void> {
  for (const port of ports) {
    await new Promise<void>((ok, fail) => {
      const s = createServer();
      s.once('error', (err) =>
        fail(
          new Error(
            `port ${port} is in use: the fixture's nodes must run on the addresses their Raft configuration names (${err.message})`,
          ),
        ),
      );
      s.listen(port, '127.0.0.1', () => s.close(() => ok()));
    });
  }
}

/** The snapshot files in dataDir/snap with the bytes of state each carries (the header says how many). */
function snapshotFiles(dataDir: string): { name: string; index: number; dataBytes: number }[] {
  const dir = join(dataDir, 'snap');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.snap'))
    .map((name) => {
      const bytes = readFileSync(join(dir, name));
      const headerBytes = bytes.readUInt32BE(0);
      const { meta, dataBytes } = decodeSnapshotHeader(new Uint8Array(bytes.subarray(4, 4 + headerBytes)));
      expect(bytes.length, `${dir}/${name}: its size is the header's`).toBe(4 + headerBytes + dataBytes);
      return { name, index: meta.index, dataBytes };
    });
}

/** Every "raft node restored from storage" line of the node's log, in order. */
function restoredLines(c: TestCluster, id: string): { snapshotIndex: number; entries: number }[] {
  return c
    .logText(id)
    .split('\n')
    .filter((l) => l.includes('"raft node restored from storage"'))
    .map((l) => JSON.parse(l) as { snapshotIndex: number; entries: number });
}

/** Checks every part of `exp` through the client library's linearizable Get (and RenewSession for sessions). */
async function checkState(client: LockClient, pool: EndpointPool, exp: Expected, when: string): Promise<void> {
  for (const [key, lock] of Object.entries(exp.locks)) {
    const g = await client.get(key);
    const where = `${when}: ${key}`;
    expect(g.held, where).toBe(true);
    expect(g.holders.length, where).toBe(1);
    expect({ owner: g.owner, token: g.token.toString(), sessionId: g.sessionId }, where).toEqual({
      owner: lock.owner,
      token: lock.token,
      sessionId: 0n,
    });
    expect(g.lastToken.toString(), where).toBe(lock.token);
    if (lock.value !== undefined) expect(Buffer.from(g.value).toString('utf8'), where).toBe(lock.value);
  }
  for (const [key, free] of Object.entries(exp.released)) {
    const g = await client.get(key);
    expect({ held: g.held, holders: g.holders.length, lastToken: g.lastToken.toString() }, `${when}: ${key}`).toEqual({
      held: false,
      holders: 0,
      lastToken: free.last_token,
    });
  }
  for (const s of exp.sessions) {
    for (const [key, token] of Object.entries(s.holds)) {
      const g = await client.get(key);
      expect({ held: g.held, owner: g.owner, token: g.token.toString(), sessionId: g.sessionId.toString() }, `${when}: ${key}`).toEqual({
        held: true,
        owner: s.owner,
        token,
        sessionId: s.id,
      });
    }
    // The session itself is live: its owner can renew it.
    const renewed = await pool.call<RenewSessionResponse>(
      'RenewSession',
      { session_id: s.id, owner: s.owner, request_id: `renew-${s.id}-${when}` },
      Date.now() + 10_000,
    );
    expect(renewed.renewed, `${when}: session ${s.id} renews`).toBe(true);
  }
  for (const [key, group] of Object.entries(exp.groups)) {
    const g = await client.get(key);
    const where = `${when}: ${key}`;
    expect(g.limit, where).toBe(group.limit);
    expect(
      g.holders.map((h) => ({ owner: h.owner, token: h.token.toString(), shared: h.shared })),
      where,
    ).toEqual(group.holders.map((h) => ({ ...h, shared: group.shared })));
  }
}

/** The largest token the expected state knows of (session ids too: both are raft indexes). */
function maxTokenOf(exp: Expected): bigint {
  const all = [
    exp.maxToken,
    ...Object.values(exp.locks).map((l) => l.token),
    ...Object.values(exp.released).map((r) => r.last_token),
    ...exp.sessions.flatMap((s) => [s.id, ...Object.values(s.holds)]),
    ...Object.values(exp.groups).flatMap((g) => g.holders.map((h) => h.token)),
  ].map(BigInt);
  return all.reduce((a, b) => (b > a ? b : a));
}

async function acquireNew(pool: EndpointPool, exp: Expected, key: string, owner: string): Promise<string> {
  const before = maxTokenOf(exp);
  const r = await pool.call<AcquireResponse>('Acquire', { key, owner, ttl_ms: '3600000', request_id: `new-${key}` }, Date.now() + 10_000);
  expect(r.acquired, `acquire ${key}`).toBe(true);
  expect(BigInt(r.token), `${key}: a new token is above every token the old build gave`).toBeGreaterThan(before);
  exp.locks[key] = { owner, token: String(r.token) };
  return String(r.token);
}

/** Keys of the root LevelDB of a stopped node's data dir (the all-LevelDB layout kept the log there). */
async function rootLevelDbKeys(dataDir: string): Promise<number> {
  const db = new Level<Uint8Array, Uint8Array>(dataDir, { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  try {
    return (await db.keys().all()).length;
  } finally {
    await db.close();
  }
}

/** The applied store of a stopped node: the point it holds and the keys of its key records. */
async function appliedStoreOf(dataDir: string): Promise<{ index: number; keys: string[] }> {
  const db = new Level<Uint8Array, Uint8Array>(join(dataDir, 'state'), { keyEncoding: 'view', valueEncoding: 'view' });
  await db.open();
  const store = await AppliedStore.open(db);
  try {
    const state = await store.read();
    expect(state, `${dataDir}/state holds a state`).not.toBeNull();
    // A key record's key is 'k' + the lock's key (src/lock/store-records.ts).
    return { index: state!.point.index, keys: [...state!.keys].map(([key]) => Buffer.from(key.subarray(1)).toString('utf8')) };
  } finally {
    await store.close();
  }
}

for (const layout of ['all-leveldb', 'wal-snap']) {
  describe(`a data dir of the ${layout} layout`, () => {
    let c: TestCluster | undefined;
    let client: LockClient | undefined;
    let pool: EndpointPool | undefined;
    afterAll(async () => {
      client?.close();
      pool?.close();
      await c?.stop();
    });

    it('opens on this build with every lock, free key and session, moves into state/ + wal/, and reopens from there', async () => {
      const m = manifest(layout);
      const exp: Expected = structuredClone(m.expected);
      const ports = m.config.nodes.map((n) => n.port);
      await assertPortsFree(ports);
      c = await TestCluster.create({
        ports,
        electionTicks: 10,
        extraYaml: `  snapshotEvery: ${m.config.raft.snapshotEvery}\nlock:\n  freeKeyRetentionMs: ${m.config.lock.freeKeyRetentionMs}\n`,
      });
      const cluster = c;
      expect(cluster.ids).toEqual(m.config.nodes.map((n) => n.id));
      expect(cluster.endpoints()).toEqual(m.config.nodes.map((n) => n.address));
      execFileSync('tar', ['-xzf', join(FIXTURES, `${layout}.tar.gz`), '-C', cluster.dir]);
      const dataDir = (id: string) => join(cluster.dir, id);

      // The fixture is what the manifest says: the old layout, with the state in a snapshot.
      for (const id of cluster.ids) {
        const stored = m.storedByOldBuild[id]!;
        expect(stored.snapshotDataBytes, id).toBeGreaterThan(0);
        expect(stored.logLastIndex, `${id}: entries after the snapshot`).toBeGreaterThan(stored.snapshotIndex);
        expect(existsSync(join(dataDir(id), 'state')), id).toBe(false);
        if (layout === 'all-leveldb') {
          expect(existsSync(join(dataDir(id), 'CURRENT')), id).toBe(true);
          expect(existsSync(join(dataDir(id), 'wal')), id).toBe(false);
        } else {
          expect(snapshotFiles(dataDir(id)), id).toEqual([
            expect.objectContaining({ index: stored.snapshotIndex, dataBytes: stored.snapshotDataBytes }),
          ]);
        }
      }

      // First start on this build: the old layout is opened and moved.
      cluster.startAll();
      await cluster.waitForLeader();
      for (const id of cluster.ids) {
        expect(restoredLines(cluster, id), `${id}: restored from the old build's snapshot`).toEqual([
          expect.objectContaining({ snapshotIndex: m.storedByOldBuild[id]!.snapshotIndex }),
        ]);
      }
      client = new LockClient({ endpoints: cluster.endpoints(), timeoutMs: 10_000 });
      pool = cluster.pool();
      await checkState(client, pool, exp, 'first start');
      await acquireNew(pool, exp, 'upgrade/new-1', 'owner-new-1');

      // Until every node has compacted its log below its applied store (the first compaction can come at
      // once: the replayed entries count), acquire and release keys: entries to compact.
      const compacted = () => cluster.ids.every((id) => cluster.logText(id).includes('"log compacted below the applied store"'));
      const deadline = Date.now() + 60_000;
      for (let cycle = 0; !compacted(); cycle++) {
        if (Date.now() > deadline) throw new Error(`no log compaction on every node after ${cycle} cycles; logs in ${cluster.dir}`);
        const key = `upgrade/cycle-${cycle}`;
        const token = await acquireNew(pool, exp, key, 'owner-cycle');
        const r = await pool.call<ReleaseResponse>(
          'Release',
          { key, owner: 'owner-cycle', token, request_id: `rel-${key}` },
          Date.now() + 10_000,
        );
        expect(r.released, key).toBe(true);
        delete exp.locks[key];
        exp.released[key] = { last_token: token };
        await new Promise((r) => setTimeout(r, 50));
      }

      // Every node has applied the last write (a follower stopped before it hears the commit index would
      // replay it from its log at the next start, not hold it in its store), then stopped: each data dir is in
      // the new layout.
      const { leader } = await cluster.waitForLeader();
      const commit = Number((await cluster.status(leader)).commit_index);
      await waitFor('every node applied the last write', async () =>
        (await Promise.all(cluster.ids.map((id) => cluster.status(id)))).every((st) => Number(st.applied_index) >= commit),
      );
      for (const id of cluster.ids) await cluster.kill(id, 'SIGTERM');
      // A key held by a mutex hold or free with a last token has a record of its own; a semaphore's or shared
      // holds' key rides the rest record (src/lock/store-records.ts).
      const ownRecords = [
        ...Object.keys(exp.locks),
        ...Object.keys(exp.released),
        ...exp.sessions.flatMap((s) => Object.keys(s.holds)),
      ].sort();
      for (const id of cluster.ids) {
        const dir = dataDir(id);
        expect(
          readdirSync(join(dir, 'wal')).some((n) => n.endsWith('.wal')),
          `${id}: wal/ has a segment`,
        ).toBe(true);
        const snaps = snapshotFiles(dir);
        expect(
          snaps.filter((s) => s.dataBytes > 0),
          `${id}: no snapshot file carries the state after a compaction`,
        ).toEqual([]);
        expect(snaps.length, `${id}: one snapshot file`).toBe(1);
        expect(snaps[0]!.index, `${id}: the snapshot is past the old one`).toBeGreaterThan(m.storedByOldBuild[id]!.snapshotIndex);
        const store = await appliedStoreOf(dir);
        expect(store.index, `${id}: the applied store is past the old snapshot`).toBeGreaterThan(m.storedByOldBuild[id]!.snapshotIndex);
        expect([...store.keys].sort(), `${id}: the applied store's key records`).toEqual(ownRecords);
        // The Raft log and snapshot no longer live in the root LevelDB (kept only for the directory's lock).
        expect(await rootLevelDbKeys(dir), `${id}: keys left in the root LevelDB`).toBe(0);
      }

      // Second start: the state now comes from state/ and the log above it.
      cluster.startAll();
      await cluster.waitForLeader();
      for (const id of cluster.ids) {
        const lines = restoredLines(cluster, id);
        expect(lines.length, id).toBe(2);
        expect(lines[1]!.snapshotIndex, `${id}: restarted above the old snapshot`).toBeGreaterThan(m.storedByOldBuild[id]!.snapshotIndex);
      }
      await checkState(client, pool, exp, 'second start');
      await acquireNew(pool, exp, 'upgrade/new-2', 'owner-new-2');
      await checkState(client, pool, exp, 'after a new acquire');
    }, 240_000);
  });
}
