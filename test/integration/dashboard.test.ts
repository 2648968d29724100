// The dashboard's HTTP side on three real nodes (README "Dashboard"): each node serves the page and the
// JSON APIs beside /metrics; the lock views are read after a read barrier (a follower's read after a write
// shows it), paged, with tokens as strings; bad parameters are a 400 naming the parameter, unknown paths
// a 404, other methods a 405; /api/events delivers ACQUIRED then RELEASED for a lock taken and released,
// and resumes from Last-Event-ID. The browser side is test/e2e/dashboard-browser.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/index.js';
import { TestCluster, freePorts, waitFor } from './harness.js';

let c: TestCluster;
let client: LockClient;
let mports: number[];
const base = (id: string) => `http://127.0.0.1:${mports[c.ids.indexOf(id)]}`;
let leader: string;
let follower: string;

beforeAll(async () => {
  mports = await freePorts(3);
  c = await TestCluster.create({ electionTicks: 20, nodeYaml: (_id, i) => `metricsAddress: 127.0.0.1:${mports[i]}` });
  c.startAll();
  leader = (await c.waitForLeader()).leader;
  follower = c.ids.find((id) => id !== leader)!;
  client = new LockClient({ endpoints: c.endpoints() });
}, 30_000);

afterAll(async () => {
  client?.close();
  await c?.stop();
});

async function json<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${body}`);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return JSON.parse(body) as T;
}

async function refused(url: string, init: RequestInit = {}): Promise<[number, string]> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return [res.status, (await res.text()).trim()];
}

interface Holder {
  owner: string;
  token: string;
  ttl_ms: number;
  expires_at: string;
  session_id: string;
  value: string | null;
  value_encoding: string | null;
}
interface LocksPage {
  index: number;
  read: string;
  locks: { key: string; holders: Holder[]; waiters: number; last_token: string }[];
  next: string | null;
}

/** An SSE stream read with fetch: its messages as they come. */
function sse(url: string, headers: Record<string, string> = {}) {
  const abort = new AbortController();
  const msgs: { id?: string; event: string; data: Record<string, unknown> }[] = [];
  const opened = fetch(url, { headers, signal: abort.signal }).then(async (res) => {
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    void (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) return;
        text += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const fields = new Map<string, string>();
          for (const line of text.slice(0, cut).split('\n'))
            if (!line.startsWith(':')) fields.set(line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trimStart());
          text = text.slice(cut + 2);
          if (fields.has('data'))
            msgs.push({
              ...(fields.has('id') ? { id: fields.get('id')! } : {}),
              event: fields.get('event') ?? 'message',
              data: JSON.parse(fields.get('data')!) as Record<string, unknown>,
            });
        }
      }
    })();
  });
  return { msgs, opened, close: () => abort.abort() };
}

describe('dashboard APIs', () => {
  it('/api/cluster: the leader reports every member with role, match index and lag; a follower names the leader', async () => {
    await waitFor('the leader to report every follower caught up', async () => {
      const l = await json<{
        node: { id: string; role: string; commit_index: number };
        members: { id: string; role: string; match_index: number | null; lag: number | null }[];
      }>(`${base(leader)}/api/cluster`);
      expect(l.node).toMatchObject({ id: leader, role: 'leader' });
      expect(l.members.map((m) => m.id)).toEqual(c.ids);
      for (const m of l.members) {
        expect(m.role).toBe(m.id === leader ? 'leader' : 'follower');
        expect(typeof m.match_index).toBe('number');
      }
      return l.members.every((m) => m.lag === 0);
    });
    const f = await json<{
      node: { id: string; role: string; leader: string; serving: boolean; health: string; term: number; applied_index: number };
      view: string;
      members: { id: string; role: string; match_index: null }[];
    }>(`${base(follower)}/api/cluster`);
    expect(f.node).toMatchObject({ id: follower, role: 'follower', leader, serving: true, health: `follower of ${leader}` });
    expect(f.node.term).toBeGreaterThan(0);
    expect(f.view).toContain(`follows ${leader}`);
    expect(f.members.find((m) => m.id === leader)!.role).toBe('leader');
    expect(f.members.every((m) => m.match_index === null)).toBe(true);
  });

  it('/api/locks on a follower: read after write, byte order, paging, holders with string tokens and text or base64 values, waiters', async () => {
    const a = await client.acquire('dash/a', { ttlMs: 60_000, owner: 'amy', value: 'host-a:8080' });
    const b = await client.acquire('dash/b', { ttlMs: 60_000, owner: 'bob', value: new Uint8Array([0xff, 0x00, 0x7f]) });
    const z = await client.acquire('dash/Z', { ttlMs: 60_000, owner: 'zed' }); // 'Z' < 'a' in byte order
    const waiting = client.acquire('dash/a', { ttlMs: 60_000, owner: 'wendy', waitMs: 30_000 });
    try {
      const page = await waitFor('the waiter to be in line', async () => {
        const p = await json<LocksPage>(`${base(follower)}/api/locks?prefix=dash/`);
        return p.locks.find((l) => l.key === 'dash/a')?.waiters === 1 ? p : null;
      });
      expect(page.read).toBe('linearizable');
      expect(page.locks.map((l) => l.key)).toEqual(['dash/Z', 'dash/a', 'dash/b']);
      const [lz, la, lb] = page.locks;
      expect(la!.holders).toHaveLength(1);
      expect(la!.holders[0]).toMatchObject({
        owner: 'amy',
        token: a.token.toString(),
        session_id: '0',
        value: 'host-a:8080',
        value_encoding: 'utf8',
      });
      expect(la!.holders[0]!.ttl_ms).toBeGreaterThan(50_000);
      expect(Date.parse(la!.holders[0]!.expires_at)).toBeGreaterThan(Date.now() + 40_000);
      expect(lb!.holders[0]).toMatchObject({
        owner: 'bob',
        token: b.token.toString(),
        value: Buffer.from([0xff, 0x00, 0x7f]).toString('base64'),
        value_encoding: 'base64',
      });
      expect(lz!.holders[0]).toMatchObject({ owner: 'zed', token: z.token.toString(), value: null, value_encoding: null });
      expect(lz!.last_token).toBe(z.token.toString());
      // Pages of two: `next` continues, the last page has none.
      const p1 = await json<LocksPage>(`${base(follower)}/api/locks?prefix=dash/&limit=2`);
      expect(p1.locks.map((l) => l.key)).toEqual(['dash/Z', 'dash/a']);
      expect(p1.next).toBe('dash/a');
      const p2 = await json<LocksPage>(`${base(follower)}/api/locks?prefix=dash/&limit=2&after=${encodeURIComponent(p1.next!)}`);
      expect(p2.locks.map((l) => l.key)).toEqual(['dash/b']);
      expect(p2.next).toBeNull();
      // Read after write on a follower: a release shows at once.
      await z.release();
      const p3 = await json<LocksPage>(`${base(follower)}/api/locks?prefix=dash/`);
      expect(p3.locks.map((l) => l.key)).toEqual(['dash/a', 'dash/b']);
      expect(p3.index).toBeGreaterThan(page.index);
    } finally {
      await a.release();
      await (await waiting).release();
      await b.release();
    }
  });

  it('/api/sessions and /api/elections: a session with its holds; a campaign shows its leader, token and value', async () => {
    const session = await client.session({ ttlMs: 20_000, owner: 'dash-sess' });
    const lead = await client.campaign('dash-cron', { ttlMs: 20_000, owner: 'sched-1', value: '10.0.0.7:9000' });
    try {
      await session.acquire('dash-sess/1');
      const s = await json<{
        sessions: { id: string; owner: string; live: boolean; holds: number; ttl_ms: number }[];
        next: string | null;
      }>(`${base(follower)}/api/sessions`);
      const mine = s.sessions.find((x) => x.id === session.id.toString())!;
      expect(mine).toMatchObject({ owner: 'dash-sess', live: true, holds: 1 });
      expect(mine.ttl_ms).toBeGreaterThan(10_000);
      const firstOnly = await json<{ sessions: unknown[]; next: string | null }>(`${base(follower)}/api/sessions?limit=1`);
      expect(firstOnly.sessions).toHaveLength(1);
      expect(firstOnly.next).not.toBeNull();
      const e = await json<{ elections: { name: string; key: string; leader: Holder | null; candidates_waiting: number }[] }>(
        `${base(follower)}/api/elections`,
      );
      expect(e.elections).toEqual([
        {
          name: 'dash-cron',
          key: 'election/dash-cron',
          candidates_waiting: 0,
          leader: expect.objectContaining({
            owner: 'sched-1',
            token: lead.token.toString(),
            value: '10.0.0.7:9000',
            session_id: lead.session.id.toString(),
          }),
        },
      ]);
    } finally {
      await lead.resign();
      await session.close();
    }
  });

  it('bad parameters are a 400 naming the parameter; unknown paths 404; other methods 405', async () => {
    const n = base(follower);
    expect(await refused(`${n}/api/locks?limit=5000`)).toEqual([
      400,
      'bad request: limit must be a whole number from 1 to 1000, got "5000"',
    ]);
    expect(await refused(`${n}/api/locks?limit=ten`)).toEqual([400, 'bad request: limit must be a whole number from 1 to 1000, got "ten"']);
    expect(await refused(`${n}/api/locks?prefix=dash/&after=other/x`)).toEqual([
      400,
      'bad request: after must be a key under the prefix "dash/" (the `next` of a page), got "other/x"',
    ]);
    expect(await refused(`${n}/api/locks?prefix=${'p'.repeat(513)}`)).toEqual([400, expect.stringMatching(/^bad request: prefix /)]);
    expect(await refused(`${n}/api/locks?owner=me`)).toEqual([
      400,
      "bad request: unknown query parameter 'owner': this endpoint takes prefix, after, limit",
    ]);
    expect(await refused(`${n}/api/sessions?after=-1`)).toEqual([
      400,
      'bad request: after must be a whole number from 0 to 9007199254740991, got "-1"',
    ]);
    expect(await refused(`${n}/api/cluster?verbose=1`)).toEqual([
      400,
      "bad request: unknown query parameter 'verbose': this endpoint takes none",
    ]);
    expect(await refused(`${n}/api/events?after_index=1.5`)).toEqual([
      400,
      'bad request: after_index must be a whole number from 0 to 9007199254740991, got "1.5"',
    ]);
    const [status, text] = await refused(`${n}/api/nope`);
    expect(status).toBe(404);
    expect(text).toMatch(
      /^not found: \/api\/nope; metrics are at GET \/metrics, the dashboard at GET \/ and its APIs at GET \/api\/cluster/,
    );
    expect(await refused(`${n}/api/locks`, { method: 'DELETE' })).toEqual([
      405,
      'method DELETE not allowed: the dashboard is read-only; use GET /api/locks',
    ]);
    expect((await refused(`${n}/`, { method: 'POST', body: 'x' }))[0]).toBe(405);
    // Nothing refused was applied, and the node still serves.
    expect((await fetch(`${n}/metrics`)).status).toBe(200);
  });

  it('the page and its files: HTML with a strict content security policy, the script, the stylesheet', async () => {
    const page = await fetch(`${base(leader)}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('<script src="dashboard.js" defer></script>');
    expect(html).not.toMatch(/https?:\/\//); // nothing from elsewhere
    const js = await fetch(`${base(leader)}/dashboard.js`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await js.text()).toContain('new EventSource(`api/events');
    expect((await fetch(`${base(leader)}/dashboard.css`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('/api/events on a follower: ACQUIRED then RELEASED for a lock taken and released, tokens as strings; Last-Event-ID resumes after that id', async () => {
    const before = await json<LocksPage>(`${base(follower)}/api/locks?prefix=sse/`);
    const stream = sse(`${base(follower)}/api/events?prefix=sse/&after_index=${before.index}`);
    try {
      await stream.opened;
      await waitFor('the stream to catch up (progress)', () => stream.msgs.some((m) => m.event === 'progress'));
      const hold = await client.acquire('sse/job', { ttlMs: 30_000, owner: 'sse-owner', value: 'v1' });
      await hold.release();
      const lock = await waitFor('ACQUIRED and RELEASED', () => {
        const l = stream.msgs.filter((m) => m.event === 'message');
        return l.length >= 2 ? l : null;
      });
      expect(lock.map((m) => [m.data['kind'], m.data['key'], m.data['owner'], m.data['token']])).toEqual([
        ['ACQUIRED', 'sse/job', 'sse-owner', hold.token.toString()],
        ['RELEASED', 'sse/job', 'sse-owner', hold.token.toString()],
      ]);
      expect(lock[0]!.data).toMatchObject({ value: 'v1', value_encoding: 'utf8', session_id: '0', index: Number(lock[0]!.id) });
      expect(Number(lock[1]!.id)).toBeGreaterThan(Number(lock[0]!.id));
      // A browser reconnects with Last-Event-ID: the stream resumes right after it.
      const resumed = sse(`${base(leader)}/api/events?prefix=sse/`, { 'last-event-id': lock[0]!.id! });
      try {
        const first = await waitFor('the resumed stream', () => resumed.msgs.find((m) => m.event === 'message'));
        expect(first.data['kind']).toBe('RELEASED');
        expect(first.id).toBe(lock[1]!.id);
      } finally {
        resumed.close();
      }
    } finally {
      stream.close();
    }
  });
});
