// The dashboard's JSON views (dashboard-api.ts) over a real lock machine, its strict query parameters
// (dashboard-query.ts), how values and tokens are written (dashboard-values.ts), and where the page's
// files are found from each layout the code runs in (dashboard-assets.ts).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockMachine } from '../../../src/lock/machine.js';
import { BUILD_LEVEL } from '../../../src/lock/versions.js';
import type { Status } from '../../../src/raft/core/types.js';
import {
  clusterView,
  electionsView,
  locksView,
  NotCurrentError,
  sessionsView,
  type DashboardSources,
} from '../../../src/server/observability/dashboard-api.js';
import { findDashboardDir } from '../../../src/server/observability/dashboard-assets.js';
import { BadQueryError, readQuery, wholeNumber } from '../../../src/server/observability/dashboard-query.js';
import { eventJson, valueJson } from '../../../src/server/observability/dashboard-values.js';

const T0 = 1_800_000_000_000;

/** A machine with: two held keys (one with a text value, one with bytes that are not UTF-8), a session
 *  holding an election key, and a waiter on a key. */
function machine(): LockMachine {
  const m = new LockMachine();
  let i = 0;
  m.applyCommand(++i, 1, { type: 'termStart', timeMs: T0 });
  m.applyCommand(++i, 1, {
    type: 'acquire',
    timeMs: T0,
    key: 'jobs/b',
    owner: 'bob',
    ttlMs: 30_000,
    requestId: 'b1',
    value: new TextEncoder().encode('host-b:80'),
  });
  m.applyCommand(++i, 1, {
    type: 'acquire',
    timeMs: T0,
    key: 'jobs/a',
    owner: 'amy',
    ttlMs: 10_000,
    requestId: 'a1',
    value: new Uint8Array([0xff, 0xfe, 0x00]),
  });
  m.applyCommand(++i, 1, { type: 'openSession', timeMs: T0, owner: 'sched', ttlMs: 5000, requestId: 's1', lockDelayMs: 0 }); // session 4
  m.applyCommand(++i, 1, {
    type: 'acquire',
    timeMs: T0,
    key: 'election/cron',
    owner: 'sched',
    ttlMs: 0,
    requestId: 's2',
    sessionId: 4,
    value: new TextEncoder().encode('10.0.0.7'),
  });
  m.applyCommand(++i, 1, {
    type: 'acquire',
    timeMs: T0 + 1000,
    key: 'jobs/a',
    owner: 'cat',
    ttlMs: 10_000,
    requestId: 'c1',
    waitMs: 60_000,
  });
  return m;
}

function sources(m: LockMachine, overrides: Partial<DashboardSources> = {}): DashboardSources {
  const conf = {
    clusterId: 'c1',
    voters: ['n1', 'n2', 'n3'],
    learners: ['n4'],
    addresses: { n1: 'p1', n2: 'p2', n3: 'p3', n4: 'p4' },
    removed: [],
  };
  const status: Status = {
    id: 'n1',
    role: 'leader',
    term: 3,
    leaderId: 'n1',
    commitIndex: 100,
    appliedIndex: 99,
    lastIndex: 101,
    durableIndex: 101,
    firstIndex: 1,
    voters: conf.voters,
    learners: conf.learners,
    conf,
    confIndex: 1,
  };
  return {
    status: () => status,
    progress: () =>
      new Map([
        ['n1', { match: 101, next: 102, state: 'replicate' }],
        ['n2', { match: 100, next: 101, state: 'replicate' }],
        ['n3', { match: 40, next: 41, state: 'probe' }],
        ['n4', { match: 0, next: 1, state: 'snapshot' }],
      ]),
    health: () => ({ serving: true, reason: 'leader with a quorum' }),
    peers: () =>
      new Map([
        ['n2', true],
        ['n3', false],
        ['n4', true],
      ]),
    clientAddressOf: (id) => `127.0.0.1:700${id.slice(1)}`,
    everHeard: (id) => id !== 'n3',
    charts: () => ({ sample_every_ms: 2000, window_ms: 300_000, charts: [] }),
    machine: () => m,
    readBarrier: async () => m.appliedIndex,
    barrierTimeoutMs: 100,
    ...overrides,
  };
}

const q = (s: string) => readQuery(new URL(`http://x/?${s}`), ['prefix', 'after', 'limit']);

describe('dashboard views', () => {
  it('cluster: the leader shows each member with its role, match index and lag (commit - match)', () => {
    const c = clusterView(sources(machine()));
    expect(c.node).toMatchObject({
      id: 'n1',
      role: 'leader',
      term: 3,
      leader: 'n1',
      commit_index: 100,
      applied_index: 99,
      serving: true,
      health: 'leader with a quorum',
      cluster_level: 1,
      build_level: BUILD_LEVEL,
    });
    expect(c.members.map((x) => [x.id, x.role, x.match_index, x.lag, x.progress, x.connected, x.seen])).toEqual([
      ['n1', 'leader', 101, 0, null, null, true],
      ['n2', 'follower', 100, 0, 'replicate', true, true],
      ['n3', 'follower', 40, 60, 'probe', false, false],
      ['n4', 'learner', 0, 100, 'snapshot', true, true],
    ]);
    expect(c.members[1]!.address).toBe('127.0.0.1:7002');
  });

  it('cluster: a follower names the leader and shows no match index it does not know', () => {
    const src = sources(machine());
    const st = { ...src.status(), id: 'n2', role: 'follower' as const, leaderId: 'n3' };
    const c = clusterView({ ...src, status: () => st });
    expect(c.node.leader).toBe('n3');
    expect(c.view).toMatch(/follows n3/);
    expect(c.members.find((x) => x.id === 'n3')!.role).toBe('leader');
    expect(c.members.find((x) => x.id === 'n2')!.role).toBe('follower');
    expect(c.members.every((x) => x.match_index === null && x.lag === null)).toBe(true);
  });

  it('peer link: a follower says a follower-to-follower link is not part of Raft; a missing link to the leader is named', () => {
    const src = sources(machine());
    const st = { ...src.status(), id: 'n2', role: 'follower' as const, leaderId: 'n3' };
    const peers = new Map([
      ['n1', false],
      ['n3', true],
      ['n4', false],
    ]);
    const links = (p: Map<string, boolean>, heard: (id: string) => boolean) =>
      clusterView({ ...src, status: () => st, peers: () => p, everHeard: heard }).members.map((x) => [x.id, x.link]);
    const followerToFollower = 'none needed: followers talk only to the leader (Raft), not to each other';
    expect(links(peers, () => false)).toEqual([
      ['n1', followerToFollower],
      ['n2', null],
      ['n3', 'connected'],
      ['n4', followerToFollower],
    ]);
    // A stream to another follower opened by an earlier election (a vote request) is idle, not a link Raft uses.
    expect(links(new Map([...peers, ['n1', true]]), () => true)[0]).toEqual([
      'n1',
      `${followerToFollower} (a stream from an earlier election is idle)`,
    ]);
    // The leader unreachable is a fault, and says so.
    expect(links(new Map([...peers, ['n3', false]]), () => false)[2]).toEqual(['n3', 'not connected to the leader (never heard)']);
    // On the leader every member should be linked: a missing one is shown as not connected.
    expect(clusterView(src).members.map((x) => [x.id, x.link])).toEqual([
      ['n1', null],
      ['n2', 'connected'],
      ['n3', 'not connected (never heard)'],
      ['n4', 'connected'],
    ]);
  });

  it('locks: byte order, holders with string tokens, TTL left at log time, values as text or base64, waiters', async () => {
    const page = (await locksView(sources(machine()), q(''))) as {
      index: number;
      locks: { key: string; holders: Record<string, unknown>[]; waiters: number; last_token: string }[];
      next: string | null;
    };
    expect(page.index).toBe(6);
    expect(page.locks.map((l) => l.key)).toEqual(['election/cron', 'jobs/a', 'jobs/b']);
    const a = page.locks[1]!;
    expect(a.holders).toEqual([
      {
        owner: 'amy',
        token: '3',
        ttl_ms: 9000,
        expires_at_ms: T0 + 10_000,
        expires_at: new Date(T0 + 10_000).toISOString(),
        session_id: '0',
        shared: false,
        value: '//4A',
        value_encoding: 'base64',
      },
    ]);
    expect(a.waiters).toBe(1);
    expect(a.last_token).toBe('3');
    expect(page.locks[2]!.holders[0]).toMatchObject({ owner: 'bob', token: '2', value: 'host-b:80', value_encoding: 'utf8' });
    expect(page.locks[0]!.holders[0]).toMatchObject({ owner: 'sched', session_id: '4' });
    expect(page.next).toBeNull();
  });

  it('locks: pages follow `next`; prefix filters', async () => {
    const src = sources(machine());
    const first = (await locksView(src, q('limit=2'))) as { locks: { key: string }[]; next: string };
    expect(first.locks.map((l) => l.key)).toEqual(['election/cron', 'jobs/a']);
    expect(first.next).toBe('jobs/a');
    const second = (await locksView(src, q(`limit=2&after=${encodeURIComponent(first.next)}`))) as {
      locks: { key: string }[];
      next: string | null;
    };
    expect(second.locks.map((l) => l.key)).toEqual(['jobs/b']);
    expect(second.next).toBeNull();
    const jobs = (await locksView(src, q('prefix=jobs/&after=jobs/a'))) as { locks: { key: string }[] };
    expect(jobs.locks.map((l) => l.key)).toEqual(['jobs/b']);
  });

  it('bad parameters are refused naming the parameter; nothing is read', async () => {
    const src = sources(machine());
    const refused = async (query: string) => {
      try {
        await locksView(src, q(query));
      } catch (err) {
        expect(err).toBeInstanceOf(BadQueryError);
        return [(err as BadQueryError).parameter, (err as Error).message];
      }
      throw new Error(`accepted ${query}`);
    };
    expect(await refused('limit=0')).toEqual(['limit', 'limit must be a whole number from 1 to 1000, got "0"']);
    expect((await refused('limit=1001'))[0]).toBe('limit');
    expect((await refused('limit=1e3'))[0]).toBe('limit');
    expect((await refused('limit=-5'))[0]).toBe('limit');
    expect(await refused('prefix=jobs/&after=other')).toEqual([
      'after',
      'after must be a key under the prefix "jobs/" (the `next` of a page), got "other"',
    ]);
    expect((await refused(`prefix=${'k'.repeat(600)}`))[0]).toBe('prefix');
    expect((await refused('prefix=a%0Ab'))[0]).toBe('prefix');
    expect(() => q('limit=1&limit=2')).toThrow(/'limit' is given more than once/);
    expect(() => q('page=2')).toThrow(/unknown query parameter 'page': this endpoint takes prefix, after, limit/);
    expect(() => wholeNumber('after', '9'.repeat(17), { min: 0, max: Number.MAX_SAFE_INTEGER, fallback: 0 })).toThrow(BadQueryError);
  });

  it('sessions: by id, paged; elections: the holder leads, with its value and token', async () => {
    const m = machine();
    m.applyCommand(7, 1, { type: 'openSession', timeMs: T0 + 1000, owner: 'other', ttlMs: 5000, requestId: 's3', lockDelayMs: 0 });
    const src = sources(m);
    const s = (await sessionsView(src, readQuery(new URL('http://x/?limit=1'), ['after', 'limit']))) as {
      sessions: Record<string, unknown>[];
      next: string | null;
    };
    expect(s.sessions).toEqual([
      {
        id: '4',
        owner: 'sched',
        live: true,
        ttl_ms: 5000,
        expires_at_ms: T0 + 5000,
        expires_at: new Date(T0 + 5000).toISOString(),
        holds: 1,
      },
    ]);
    expect(s.next).toBe('4');
    const s2 = (await sessionsView(src, readQuery(new URL('http://x/?after=4'), ['after', 'limit']))) as {
      sessions: { id: string }[];
      next: string | null;
    };
    expect(s2.sessions.map((x) => x.id)).toEqual(['7']);
    expect(s2.next).toBeNull();
    const e = (await electionsView(src, readQuery(new URL('http://x/'), ['after', 'limit']))) as {
      elections: { name: string; leader: Record<string, unknown> | null; candidates_waiting: number }[];
    };
    expect(e.elections).toHaveLength(1);
    expect(e.elections[0]).toMatchObject({
      name: 'cron',
      candidates_waiting: 0,
      leader: { owner: 'sched', token: '5', value: '10.0.0.7', session_id: '4' },
    });
  });

  it('a lock view whose read barrier fails says so (503), instead of serving what may be stale', async () => {
    const src = sources(machine(), { readBarrier: () => Promise.reject(new Error('no leader')) });
    await expect(locksView(src, q(''))).rejects.toThrow(NotCurrentError);
    await expect(sessionsView(src, new Map())).rejects.toThrow(/cannot confirm this node is up to date \(no leader\)/);
  });

  it('values: valid UTF-8 as text, anything else base64; tokens as decimal strings beyond 2^53', () => {
    expect(valueJson(null)).toEqual({ value: null, value_encoding: null });
    expect(valueJson(new TextEncoder().encode('ünï'))).toEqual({ value: 'ünï', value_encoding: 'utf8' });
    expect(valueJson(new Uint8Array([0xc3]))).toEqual({ value: 'ww==', value_encoding: 'base64' });
    const e = eventJson({
      index: 9,
      key: 'k',
      kind: 'ACQUIRED',
      owner: 'o',
      token: 2n ** 60n + 1n,
      sessionId: 0,
      value: null,
      shared: false,
    });
    expect(e.token).toBe('1152921504606846977');
    expect(JSON.parse(JSON.stringify(e)).token).toBe('1152921504606846977');
  });
});

describe('dashboard files', () => {
  it('are found from the source tree, and from a package installed under node_modules', () => {
    expect(findDashboardDir()).toBe(resolve('dashboard'));
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-assets-'));
    try {
      const pkg = join(dir, 'app/node_modules/leasehold');
      mkdirSync(join(pkg, 'dist/src/server'), { recursive: true });
      mkdirSync(join(pkg, 'dashboard'));
      writeFileSync(join(pkg, 'package.json'), '{"name":"leasehold"}');
      writeFileSync(join(pkg, 'dashboard/index.html'), '<!doctype html>');
      writeFileSync(join(dir, 'app/package.json'), '{"name":"app"}');
      expect(findDashboardDir(join(pkg, 'dist/src/server'))).toBe(join(pkg, 'dashboard'));
      // Not ours: the app's own package.json is passed over; with no leasehold package above, none.
      expect(findDashboardDir(join(dir, 'app'))).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
