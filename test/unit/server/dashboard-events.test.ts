// The dashboard's event stream (dashboard-events.ts) and routes (dashboard-routes.ts) on a real HTTP
// server in this process, over a real WatchHub: events as SSE with string tokens, resume by Last-Event-ID,
// refusals with a status that says why, and the bounds — a stalled reader is cut off with its socket
// buffer bounded, a reader the history left behind is cut off, a closed connection frees its cursor, and
// the number of streams is capped.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LockEvent } from '../../../src/lock/events.js';
import { LockMachine } from '../../../src/lock/machine.js';
import type { DashboardSources } from '../../../src/server/observability/dashboard-api.js';
import type { EventStreamLimits } from '../../../src/server/observability/dashboard-events.js';
import { DashboardRoutes } from '../../../src/server/observability/dashboard-routes.js';
import { WatchHub } from '../../../src/server/client-api/watch-hub.js';

const VALUE = new Uint8Array(1024).fill(0x61); // 1 KiB of text per event
const ev = (index: number, key = `k/${index}`, value: Uint8Array | null = null): LockEvent => ({
  index,
  key,
  kind: 'ACQUIRED',
  owner: 'o',
  token: BigInt(index) + 2n ** 60n,
  sessionId: 0,
  value,
  shared: false,
});

interface Rig {
  hub: WatchHub;
  routes: DashboardRoutes;
  url: string;
  /** The server side of every response, to measure what it buffers. */
  responses: ServerResponse[];
  barrier: { fail: boolean };
  record(from: number, to: number, value?: Uint8Array | null): void;
}

let server: Server | null = null;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = null;
});

async function rig(opts: { historyEvents: number; limits: EventStreamLimits }): Promise<Rig> {
  let applied = 0;
  const hub = new WatchHub({ historyEvents: opts.historyEvents, maxWatchers: 100, appliedIndex: () => applied });
  const barrier = { fail: false };
  const m = new LockMachine();
  const src: DashboardSources & { hub: WatchHub } = {
    status: () => {
      throw new Error('not used');
    },
    progress: () => new Map(),
    health: () => ({ serving: true, reason: '' }),
    peers: () => new Map(),
    clientAddressOf: () => undefined,
    everHeard: () => false,
    charts: () => {
      throw new Error('not used');
    },
    machine: () => m,
    readBarrier: async () => {
      if (barrier.fail) throw new Error('no quorum');
      return applied;
    },
    barrierTimeoutMs: 100,
    hub,
  };
  const routes = new DashboardRoutes(src, { eventLimits: opts.limits });
  const responses: ServerResponse[] = [];
  server = createServer((req, res) => {
    responses.push(res);
    if (!routes.handle(req, res, new URL(`http://node${req.url}`))) res.writeHead(404).end();
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const record = (from: number, to: number, value: Uint8Array | null = null) => {
    for (let i = from; i <= to; i++) {
      applied = i;
      hub.record(ev(i, `k/${i}`, value));
    }
  };
  return { hub, routes, url, responses, barrier, record };
}

/** Reads an SSE response into messages until `until` holds or the stream ends. */
async function readSse(res: Response, until: (msgs: Record<string, string>[]) => boolean): Promise<Record<string, string>[]> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const msgs: Record<string, string>[] = [];
  while (!until(msgs)) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = text.indexOf('\n\n')) >= 0) {
      const block = text.slice(0, cut);
      text = text.slice(cut + 2);
      const msg: Record<string, string> = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        msg[line.slice(0, i)] = line.slice(i + 1).trimStart();
      }
      if (msg['data'] !== undefined) msgs.push(msg);
    }
  }
  await reader.cancel();
  return msgs;
}

/** A client that sends the request and then reads nothing (a stalled browser tab). */
function stalledClient(url: string, path: string): Socket {
  const { port } = new URL(url);
  const s = connect(Number(port), '127.0.0.1');
  sockets.push(s);
  s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  s.pause();
  return s;
}

const LIMITS: EventStreamLimits = { maxStreams: 3, stallMs: 60_000, keepaliveMs: 60_000 };

describe('dashboard event stream', () => {
  it('sends kept events after after_index, then PROGRESS, then live ones, with tokens as strings; resumes from Last-Event-ID', async () => {
    const r = await rig({ historyEvents: 100, limits: LIMITS });
    r.record(1, 5);
    const res = await fetch(`${r.url}/api/events?after_index=2`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const live = readSse(res, (m) => m.length >= 5);
    await vi.waitFor(() => expect(r.hub.watcherCount).toBe(1));
    r.record(6, 6);
    const msgs = await live;
    expect(msgs.map((m) => [m['id'], m['event'] ?? 'message'])).toEqual([
      ['3', 'message'],
      ['4', 'message'],
      ['5', 'message'],
      ['5', 'progress'],
      ['6', 'message'],
    ]);
    expect(JSON.parse(msgs[0]!['data']!)).toEqual({
      index: 3,
      key: 'k/3',
      kind: 'ACQUIRED',
      owner: 'o',
      token: (3n + 2n ** 60n).toString(),
      session_id: '0',
      shared: false,
      value: null,
      value_encoding: null,
    });
    await vi.waitFor(() => expect(r.hub.watcherCount).toBe(0));
    // A browser reconnecting sends the last id it saw; it wins over the URL's after_index.
    const again = await fetch(`${r.url}/api/events?after_index=0&prefix=k/`, { headers: { 'last-event-id': '4' } });
    const resumed = await readSse(again, (m) => m.some((x) => x['event'] === 'progress'));
    expect(resumed.map((m) => m['id'])).toEqual(['5', '6', '6']);
  });

  it('refuses with a status and a message naming the cause: 400, 410, 503; other methods 405', async () => {
    const r = await rig({ historyEvents: 10, limits: LIMITS });
    r.record(1, 30);
    const text = async (res: Response) => [res.status, (await res.text()).trim()];
    expect(await text(await fetch(`${r.url}/api/events?after_index=-1`))).toEqual([
      400,
      'bad request: after_index must be a whole number from 0 to 9007199254740991, got "-1"',
    ]);
    expect(await text(await fetch(`${r.url}/api/events?renewals=yes`))).toEqual([
      400,
      'bad request: renewals must be 1, 0, true or false, got "yes"',
    ]);
    expect(await text(await fetch(`${r.url}/api/events`, { headers: { 'last-event-id': 'abc' } }))).toEqual([
      400,
      'bad request: Last-Event-ID must be a whole number from 0 to 9007199254740991, got "abc"',
    ]);
    expect(await text(await fetch(`${r.url}/api/events?key=x`))).toEqual([
      400,
      "bad request: unknown query parameter 'key': this endpoint takes prefix, after_index, renewals",
    ]);
    const gone = await text(await fetch(`${r.url}/api/events?after_index=3`));
    expect(gone[0]).toBe(410);
    expect(gone[1]).toMatch(
      /after_index \(or Last-Event-ID\) 3 is older than the history this node keeps: it can resume after index 20 or later/,
    );
    r.barrier.fail = true;
    const unsure = await text(await fetch(`${r.url}/api/events`));
    expect(unsure).toEqual([503, 'events: cannot confirm this node is up to date (no quorum); retry, maybe on another node']);
    const post = await fetch(`${r.url}/api/events`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    expect(r.hub.watcherCount).toBe(0);
    expect(r.routes.events.openStreams).toBe(0);
  });

  it('closing the connection frees the cursor and the slot; at most maxStreams are open', async () => {
    const r = await rig({ historyEvents: 100, limits: LIMITS });
    const aborts = [new AbortController(), new AbortController(), new AbortController()];
    const open = await Promise.all(aborts.map((a) => fetch(`${r.url}/api/events`, { signal: a.signal })));
    expect(open.map((x) => x.status)).toEqual([200, 200, 200]);
    await vi.waitFor(() => expect(r.hub.watcherCount).toBe(3));
    const fourth = await fetch(`${r.url}/api/events`);
    expect(fourth.status).toBe(503);
    expect(await fourth.text()).toMatch(/too many dashboard event streams on this node \(3\)/);
    for (const a of aborts) a.abort();
    await vi.waitFor(() => {
      expect(r.hub.watcherCount).toBe(0);
      expect(r.routes.events.openStreams).toBe(0);
    });
  });

  it('a reader that stops reading is cut off after stallMs, and the node buffers at most one socket buffer for it meanwhile', async () => {
    const r = await rig({ historyEvents: 50_000, limits: { ...LIMITS, stallMs: 300 } });
    stalledClient(r.url, '/api/events');
    await vi.waitFor(() => expect(r.hub.watcherCount).toBe(1));
    let most = 0;
    // 40 MiB of events, far more than the kernel's socket buffers take.
    for (let i = 1; i <= 40_000 && r.hub.watcherCount > 0; i += 1000) {
      r.record(i, i + 999, VALUE);
      most = Math.max(most, ...r.responses.map((x) => x.writableLength));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await vi.waitFor(
      () => {
        expect(r.hub.watcherCount).toBe(0);
        expect(r.routes.events.openStreams).toBe(0);
      },
      { timeout: 5000 },
    );
    expect(r.responses[0]!.destroyed).toBe(true);
    // The hub stops at the first refused write: one highWaterMark plus the event that crossed it.
    expect(most).toBeLessThan(r.responses[0]!.writableHighWaterMark + 2 * 1024);
  });

  it('a reader the history leaves behind is cut off with `event: end` (backlog); it gets that message when it reads again', async () => {
    const r = await rig({ historyEvents: 100, limits: LIMITS });
    const s = stalledClient(r.url, '/api/events');
    await vi.waitFor(() => expect(r.hub.watcherCount).toBe(1));
    for (let i = 1; i <= 40_000 && r.hub.watcherCount > 0; i += 500) {
      r.record(i, i + 499, VALUE);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(r.hub.watcherCount).toBe(0);
    expect(r.routes.events.openStreams).toBe(0);
    let got = '';
    s.setEncoding('utf8');
    s.on('data', (d: string) => (got = (got + d).slice(-8000)));
    s.resume();
    await vi.waitFor(
      () =>
        expect(got).toMatch(
          /event: end\ndata: \{"reason":"backlog","message":"the watcher fell more than watch.historyEvents \(100\) events behind/,
        ),
      { timeout: 5000 },
    );
  });
});
