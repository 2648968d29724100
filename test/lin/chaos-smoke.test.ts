// A short chaos run (scripts/chaos.ts) as a child process: a real 3-node cluster, three clients, a seeded
// nemesis, then the checker. Bounded: ~10 s of faults, ~25 s wall in all on two cores; the child is killed by
// PID if it overruns, and so is every node it reported starting.
//
// Every fault kind is on (kills, SIGSTOP, black holes, held and delayed traffic) and a quarter of the acquires
// queue for the lock: the two anomalies the chaos runs found (retry-anomalies.test.ts) need exactly those.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const CHAOS_JS = resolve('build/scripts/chaos.js');

interface ChaosResult {
  clean: boolean;
  counts: Record<string, { ok: number; fail: number; info: number }>;
  faultsTotal: number;
  windows: number;
  violations: { kind: string; message: string }[];
  linearizability: Record<string, string>;
  problems: string[];
}

const nodePids = new Set<number>();
let childPid: number | undefined;

afterAll(() => {
  for (const pid of [childPid, ...nodePids]) {
    if (pid === undefined) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone — the normal case: the chaos script cleans up after itself
    }
  }
});

function runChaos(args: string[], limitMs: number): Promise<{ code: number | null; stdout: string; result: ChaosResult | null }> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [CHAOS_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    childPid = child.pid;
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      for (const m of stdout.matchAll(/started pid (\d+)/g)) nodePids.add(Number(m[1]));
    });
    child.stderr.on('data', (d: Buffer) => (stdout += d.toString()));
    const killer = setTimeout(() => child.kill('SIGTERM'), limitMs);
    child.on('exit', (code) => {
      clearTimeout(killer);
      const line = stdout.split('\n').find((l) => l.startsWith('CHAOS_RESULT '));
      resolvePromise({ code, stdout, result: line ? (JSON.parse(line.slice('CHAOS_RESULT '.length)) as ChaosResult) : null });
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('chaos smoke run', () => {
  it('10 s of kills, pauses, partitions, held and slow links: the history checks clean, and locks were really taken and used', { timeout: 50_000 }, async () => {
    expect(existsSync(CHAOS_JS), 'build first: npx tsc -p tsconfig.json').toBe(true);
    const { code, stdout, result } = await runChaos(['--duration', '10', '--seed', '11', '--workers', '3', '--wgl-budget', '5000'], 45_000);
    expect(result, stdout.slice(-3000)).not.toBeNull();
    const r = result!;
    expect(r.violations, stdout.slice(-3000)).toEqual([]);
    expect(r.problems, stdout.slice(-3000)).toEqual([]);
    expect(r.clean).toBe(true);
    expect(code).toBe(0);
    // A run where nothing succeeds proves nothing.
    expect(r.counts['acquire']!.ok).toBeGreaterThan(5);
    expect(r.counts['write']!.ok).toBeGreaterThan(5);
    expect(r.counts['release']!.ok).toBeGreaterThan(3);
    expect(r.windows).toBeGreaterThan(5);
    expect(r.faultsTotal).toBeGreaterThan(0);
    expect(Object.values(r.linearizability).every((v) => v === 'ok')).toBe(true);
    // The script cleaned up: none of the nodes it started is still running.
    expect(nodePids.size).toBeGreaterThanOrEqual(3);
    expect([...nodePids].filter(alive)).toEqual([]);
  });
});
