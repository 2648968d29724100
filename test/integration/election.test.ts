// Election, black-box (SPEC "Election"): three `leasehold elect` candidates under sessions of ttl 2 s,
// each running a writer that appends (token, candidate) to one shared file while it leads. Killing the
// leader's whole process group (kill -9: the candidate and its command) must make another lead within
// the session TTL plus an election; the file must never show two leaders interleaving (once a higher
// token has written, a lower one never writes again: what a fenced resource would enforce, checked on
// the raw file); and `leasehold observe` on a follower reports each leader once, in token order, with
// its value.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GetResponse } from '../../src/wire/lock.js';
import { MAIN_JS, TestCluster, waitFor } from './harness.js';

const TTL_MS = 2000;

let c: TestCluster;
let dir: string;
const candidates: ChildProcess[] = [];
let observer: ChildProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leasehold-elect-'));
  c = await TestCluster.create({ electionTicks: 20 });
  c.startAll();
  await c.waitForLeader();
}, 30_000);

afterAll(async () => {
  for (const p of candidates) killGroup(p);
  observer?.kill('SIGKILL');
  await c?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function killGroup(p: ChildProcess): void {
  if (p.pid === undefined || p.exitCode !== null || p.signalCode !== null) return;
  try {
    process.kill(-p.pid, 'SIGKILL'); // the candidate and the command it runs: a dead leader
  } catch {
    // already gone
  }
}

interface Write {
  token: bigint;
  candidate: string;
  atMs: number;
}

describe('election', () => {
  it('3 candidates, ttl 2 s: a killed leader is followed within ttl + an election; leaders never overlap; observe reports each once, in order, with its value', async () => {
    const file = join(dir, 'writes.log');
    const writer = `const fs=require('fs');setInterval(()=>fs.appendFileSync(${JSON.stringify(file)},process.env.LEASEHOLD_TOKEN+' '+process.env.CAND+' '+Date.now()+'\\n'),20)`;
    const { leader } = await c.waitForLeader();
    const follower = c.ids.find((id) => id !== leader)!;
    const seen: { owner: string; token: string; value: string }[] = [];
    observer = spawn(process.execPath, [MAIN_JS, 'observe', 'jobs', '--json', '--endpoints', c.endpoint(follower)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    createInterface({ input: observer.stdout! }).on('line', (l) => seen.push(JSON.parse(l)));
    const byName = new Map<string, ChildProcess>();
    for (let i = 0; i < 3; i++) {
      const name = `cand-${i}`;
      const p = spawn(
        process.execPath,
        [
          MAIN_JS,
          'elect',
          'jobs',
          '--value',
          name,
          '--ttl',
          '2s',
          '--quiet',
          '--endpoints',
          c.endpoints().join(','),
          '--',
          process.execPath,
          '-e',
          writer,
        ],
        {
          stdio: 'ignore',
          detached: true,
          env: { ...process.env, CAND: name },
        },
      );
      candidates.push(p);
      byName.set(name, p);
    }
    const writes = (): Write[] =>
      readFileSafe(file)
        .split('\n')
        .filter(Boolean)
        .map((l) => {
          const [token, candidate, at] = l.split(' ');
          return { token: BigInt(token!), candidate: candidate!, atMs: Number(at) };
        });
    const leaderNow = () => {
      const w = writes();
      return w.length > 0 ? w[w.length - 1]! : null;
    };
    const first = await waitFor('a first leader writes', leaderNow, 20_000);
    const takeovers: number[] = [];
    let current = first;
    for (let round = 0; round < 2; round++) {
      await new Promise((r) => setTimeout(r, 300)); // it leads for a while
      const killedAt = Date.now();
      killGroup(byName.get(current.candidate)!);
      const next = await waitFor(
        `a leader after ${current.candidate}`,
        () => {
          const w = leaderNow();
          return w !== null && w.token > current.token ? w : null;
        },
        20_000,
      );
      const firstWrite = writes().find((w) => w.token === next.token)!;
      takeovers.push(firstWrite.atMs - killedAt);
      current = next;
    }
    await waitFor('observe reported three leaders', () => seen.length >= 3, 10_000);
    await new Promise((r) => setTimeout(r, 300));
    console.log(
      `election: kill -> next leader's first write ${takeovers.join(' ms, ')} ms (ttl ${TTL_MS} ms); observe: ${seen.map((s) => `${s.value}@${s.token}`).join(', ')}`,
    );

    // Never two leaders at once, as the raw resource shows it: once a higher token has written, no lower one writes again.
    const all = writes();
    let max = 0n;
    const leaders: { token: bigint; candidate: string }[] = [];
    for (const w of all) {
      expect(w.token >= max, `a write with token ${w.token} by ${w.candidate} after token ${max} had written`).toBe(true);
      if (w.token > max) leaders.push({ token: w.token, candidate: w.candidate });
      max = w.token;
    }
    expect(leaders).toHaveLength(3);
    expect(new Set(leaders.map((l) => l.candidate)).size).toBe(3);
    // Each takeover within the session TTL plus an election and the new leader's start (1.5 s of slack).
    for (const ms of takeovers) expect(ms).toBeLessThan(TTL_MS + 1500);
    // observe: each leader once, in token order, with its value — the same leaders the resource saw.
    expect(seen.map((s) => [BigInt(s.token), s.value])).toEqual(leaders.map((l) => [l.token, l.candidate]));
  }, 90_000);

  it("observe opened after the last leader's session ended reports nobody until a new candidate leads: never the dead leader", async () => {
    for (const p of candidates) killGroup(p); // the last leader dies, and nobody else campaigns
    await waitFor(
      "the dead leader's session to run out",
      async () => ((await c.raw<GetResponse>(c.ids[0]!, 'Get', { key: 'election/jobs' })).held ? null : true),
      TTL_MS + 8_000,
    );
    const seen: { value: string }[] = [];
    const late = spawn(process.execPath, [MAIN_JS, 'observe', 'jobs', '--json', '--endpoints', c.endpoints().join(',')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    createInterface({ input: late.stdout! }).on('line', (l) => seen.push(JSON.parse(l)));
    try {
      const fresh = spawn(
        process.execPath,
        [
          MAIN_JS,
          'elect',
          'jobs',
          '--value',
          'cand-new',
          '--ttl',
          '2s',
          '--quiet',
          '--endpoints',
          c.endpoints().join(','),
          '--',
          process.execPath,
          '-e',
          'setInterval(() => {}, 1000)',
        ],
        {
          stdio: 'ignore',
          detached: true,
        },
      );
      candidates.push(fresh);
      await waitFor('observe reports the new leader', () => seen.length >= 1, 15_000);
      await new Promise((r) => setTimeout(r, 200)); // anything it would print after it
      expect(seen.map((s) => s.value)).toEqual(['cand-new']);
    } finally {
      late.kill('SIGKILL');
    }
  }, 60_000);
});

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
