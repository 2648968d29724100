// The dashboard in a real headless browser (Debian's chromium, driven by puppeteer-core; never a
// downloaded browser): on a 3-node cluster the page shows the members and the leader, then follows the
// node's event stream — a lock taken through the client library appears with its holder, token and a TTL
// that counts down, its key (markup, on purpose) shown as text, and disappears when released. When the
// node serving the page is killed the page says "disconnected", and when it is back it is live again and
// still updates. After some load through the page's node and a leadership transfer, its charts (ops per
// second, Acquire latency, replication lag, leader changes) are drawn from data, and the peer-link column
// says follower-to-follower links are not part of Raft.
// A screenshot is written to $LEASEHOLD_TEST_OUT (or the OS temp dir) and its path printed.
// Without a chromium binary the tests are skipped, and the reason is printed.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../src/client/index.js';
import { MAIN_JS, TestCluster, freePorts } from '../integration/harness.js';

const CANDIDATES = [process.env['LEASEHOLD_CHROMIUM'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
  (p): p is string => typeof p === 'string' && p !== '',
);
const CHROMIUM = CANDIDATES.find((p) => existsSync(p)) ?? null;
const SKIP_REASON = `no Chromium binary at ${CANDIDATES.join(' or ')}: install Debian's chromium (apt-get install -y chromium; .ci/run does) or set LEASEHOLD_CHROMIUM`;
if (CHROMIUM === null) console.warn(`dashboard browser test SKIPPED: ${SKIP_REASON}`);

/** What the page shows may take this long to follow the cluster (the page polls nothing faster than 2 s). */
const UI_DEADLINE_MS = 15_000;

let c: TestCluster;
let client: LockClient;
let browser: Browser;
let page: Page;
let mports: number[];
let leader: string;
/** The node whose dashboard the page shows: a follower, so killing it keeps the cluster's quorum. */
let shown: string;
const pageErrors: string[] = [];
const dialogs: string[] = [];

beforeAll(async () => {
  if (CHROMIUM === null) return;
  mports = await freePorts(3);
  c = await TestCluster.create({ electionTicks: 20, nodeYaml: (_id, i) => `metricsAddress: 127.0.0.1:${mports[i]}` });
  c.startAll();
  leader = (await c.waitForLeader()).leader;
  shown = c.ids.find((id) => id !== leader)!;
  client = new LockClient({ endpoints: c.endpoints() });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Chromium refuses to run as root with its sandbox on; CI runs as root.
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-gpu', '--disable-dev-shm-usage'],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 1000 });
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  // An alert() would mean a key or value ran as markup.
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  client?.close();
  await c?.stop();
});

/** Waits until `expr` (JavaScript, evaluated in the page) is true, polling the DOM. */
async function until(what: string, expr: string, timeoutMs = UI_DEADLINE_MS): Promise<void> {
  try {
    await page.waitForFunction(expr, { timeout: timeoutMs, polling: 100 });
  } catch (err) {
    const members = await page.evaluate(`document.querySelector('#members tbody')?.innerText`).catch(() => '?');
    throw new Error(`the page did not show ${what} within ${timeoutMs} ms (${String(err)}); members: ${String(members)}`);
  }
}

/** A page expression: the locks-table row of `key` (compared as an attribute value: no selector escaping). */
const row = (key: string) =>
  `[...document.querySelectorAll('#locks-table tbody tr')].find((r) => r.getAttribute('data-key') === ${JSON.stringify(key)})`;

describe('the dashboard in headless Chromium', () => {
  it('shows the members and the leader, then a lock taken and released, live; user data renders as text', async (ctx) => {
    if (CHROMIUM === null) return ctx.skip(SKIP_REASON);
    await page.goto(`http://127.0.0.1:${mports[c.ids.indexOf(shown)]}/`, { waitUntil: 'load' });
    await until(
      'three members and the leader',
      `document.querySelectorAll('#members tbody tr').length === 3 && document.querySelector('#leader')?.textContent === ${JSON.stringify(leader)}`,
    );
    await until(
      'the leader row as leader',
      `document.querySelector('#members tr[data-member=${JSON.stringify(leader)}]')?.getAttribute('data-role') === 'leader'`,
    );
    await until('the live indicator', `document.querySelector('#live').getAttribute('data-state') === 'live'`);
    expect(await page.$eval('#node-line', (e) => e.textContent)).toContain(`node ${shown} · follower`);

    // A campaign and a session, so every panel has something in it (and the screenshot shows it).
    const lead = await client.campaign('ui-scheduler', { ttlMs: 30_000, owner: 'scheduler-a', value: '10.0.0.7:9000' });
    const key = 'ui/<img src=x onerror=alert(1)>';
    const hold = await client.acquire(key, { ttlMs: 30_000, owner: 'browser-test', value: '<b>not bold</b>' });
    const token = hold.token.toString();
    try {
      await until(
        'the key with its holder and token',
        `(() => { const r = ${row(key)}; return !!r && r.querySelector('td.owner')?.textContent === 'browser-test' && r.querySelector('td.token')?.textContent === ${JSON.stringify(token)}; })()`,
      );
      // Rendered as text: the cell says exactly the key, no element was made of it, nothing ran.
      expect(await page.evaluate(`${row(key)}.querySelector('td.key').textContent`)).toBe(key);
      expect(await page.evaluate(`${row(key)}.querySelector('td.value').textContent`)).toBe('<b>not bold</b>');
      expect(await page.evaluate(`document.querySelectorAll('main img, main b').length`)).toBe(0);
      await until(
        'the ACQUIRED event in the log',
        `[...document.querySelectorAll('#event-log li')].some((li) => li.getAttribute('data-kind') === 'ACQUIRED' && li.querySelector('.key')?.textContent === ${JSON.stringify(key)})`,
      );
      await until(
        'the election and its leader',
        `document.querySelector('#elections-table tr[data-election="ui-scheduler"]')?.getAttribute('data-leader') === 'scheduler-a'`,
      );
      // The TTL counts down in the page between reads.
      const ttl = `parseFloat(${row(key)}.querySelector('td.ttl').textContent)`;
      const first = (await page.evaluate(ttl)) as number;
      expect(first).toBeGreaterThan(0);
      expect(first).toBeLessThanOrEqual(30);
      await until('the TTL counting down', `${ttl} < ${first}`, 5000);

      // The charts: load through the page's own node (so it serves the calls), then a leader change.
      const other = c.ids.find((id) => id !== leader && id !== shown)!;
      await until(
        'the follower-to-follower link explained',
        `document.querySelector('#members tr[data-member=${JSON.stringify(other)}] td.link')?.textContent.startsWith('none needed: followers talk only to the leader (Raft), not to each other')`,
      );
      const viaShown = new LockClient({ endpoints: [c.endpoint(shown)] });
      try {
        const loadUntil = Date.now() + 5000; // spans at least two of the node's 2 s samples
        for (let i = 0; Date.now() < loadUntil; i++) {
          const h = await viaShown.acquire(`ui/load-${i % 5}`, { ttlMs: 10_000, owner: 'load' });
          await h.release();
        }
      } finally {
        viaShown.close();
      }
      await new Promise<void>((resolve, reject) =>
        execFile(
          process.execPath,
          [MAIN_JS, 'transfer-leader', other, '--endpoints', c.endpoints().join(',')],
          { timeout: 20_000 },
          (err, _out, stderr) => (err ? reject(new Error(`transfer-leader ${other}: ${String(err)} ${stderr}`)) : resolve()),
        ),
      );
      leader = (await c.waitForLeader()).leader;
      expect(leader).toBe(other);
      const svg = (id: string) => `document.querySelector('#chart-${id} svg[data-chart=${JSON.stringify(id)}]')`;
      await until(
        'the ops chart with acquires per second drawn',
        `(() => { const s = ${svg('ops')}; return !!s && Number(s.getAttribute('data-max')) > 0 && s.querySelectorAll('polyline').length > 0 && [...document.querySelectorAll('#chart-ops .legend li')].some((li) => li.textContent.startsWith('acquire: ')); })()`,
      );
      await until(
        'the Acquire latency chart with p50 and p99',
        `(() => { const s = ${svg('acquire-latency')}; return !!s && Number(s.getAttribute('data-max')) > 0 && s.querySelectorAll('polyline, circle').length > 0 && document.querySelectorAll('#chart-acquire-latency .legend li').length === 2; })()`,
      );
      await until(
        'the replication lag chart with its points',
        `(() => { const s = ${svg('lag')}; return !!s && Number(s.getAttribute('data-points')) > 1 && s.querySelectorAll('polyline').length > 0; })()`,
      );
      await until(
        'a bar for the leader change',
        `(() => { const s = ${svg('leader-changes')}; return !!s && s.querySelectorAll('rect').length > 0; })()`,
      );
      expect(await page.evaluate(`document.querySelectorAll('#chart-grid .error').length`)).toBe(0);
      await until('the new leader', `document.querySelector('#leader')?.textContent === ${JSON.stringify(leader)}`);

      const out = process.env['LEASEHOLD_TEST_OUT'] ?? tmpdir();
      mkdirSync(out, { recursive: true });
      const shot = join(out, 'leasehold-dashboard.png');
      await page.screenshot({ path: shot, fullPage: true });
      console.info(`dashboard screenshot: ${shot}`);
    } finally {
      await hold.release();
      await lead.resign();
    }
    await until('the key gone after its release', `!${row(key)}`);
    await until(
      'the RELEASED event in the log',
      `[...document.querySelectorAll('#event-log li')].some((li) => li.getAttribute('data-kind') === 'RELEASED' && li.querySelector('.key')?.textContent === ${JSON.stringify(key)})`,
    );
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('says "disconnected" while its node is down, and is live and updating again once it is back', async (ctx) => {
    if (CHROMIUM === null) return ctx.skip(SKIP_REASON);
    await until('the live indicator', `document.querySelector('#live').getAttribute('data-state') === 'live'`);
    await c.kill(shown);
    await until('the disconnected indicator', `document.querySelector('#live').getAttribute('data-state') === 'disconnected'`);
    c.start(shown);
    await until('the live indicator again', `document.querySelector('#live').getAttribute('data-state') === 'live'`, 30_000);
    const hold = await client.acquire('ui/after-restart', { ttlMs: 30_000, owner: 'browser-test-2' });
    try {
      await until(
        'a lock taken after the reconnect',
        `${row('ui/after-restart')}?.querySelector('td.owner')?.textContent === 'browser-test-2'`,
      );
    } finally {
      await hold.release();
    }
    await until('it gone after its release', `!${row('ui/after-restart')}`);
    expect(pageErrors).toEqual([]);
  }, 90_000);
});
