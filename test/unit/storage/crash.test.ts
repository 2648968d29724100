// A real crash test: a child process writes to a store (LevelStorage, WalStorage) and is killed with SIGKILL at a random
// moment, several times over the same directory. After each kill the store must reopen into exactly the
// state after some prefix of the issued writes that includes every acknowledged one: no acknowledged
// write lost, no write half-applied, entries contiguous, the hard state one that was written.
// Replay a failure with LEASEHOLD_CRASH_SEED=<seed printed in the message>.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { LevelStorage } from '../../../src/raft/storage/leveldb.js';
import { WalStorage } from '../../../src/raft/storage/wal-storage.js';
import { applyOp, describe as describeState, EMPTY, seededRandom, summarize, type CrashOp, type ModelState } from './crash-model.js';

const ROUNDS = 5;
const ROUND_DEADLINE_MS = 20_000;
const HERE = fileURLToPath(new URL('.', import.meta.url));
const SEED = Number(process.env.LEASEHOLD_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

type StoreKind = 'level' | 'wal';

interface RoundLog {
  ops: CrashOp[];
  acked: number;
  stderr: string;
}

/** Runs the child until it has printed `killAfterLines` op/ack lines, then SIGKILLs it by PID. */
function runAndKill(
  kind: StoreKind,
  dir: string,
  childSeed: number,
  killAfterLines: number,
  children: Set<ChildProcess>,
): Promise<RoundLog> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', join(HERE, 'ts-register.mjs'), join(HERE, 'crash-child.ts'), dir, String(childSeed), kind],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    children.add(child);
    const log: RoundLog = { ops: [], acked: 0, stderr: '' };
    let buffered = '';
    let lines = 0;
    let killed = false;
    const kill = (): void => {
      if (!killed && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
      killed = true;
    };
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`child made no progress within ${ROUND_DEADLINE_MS} ms (${lines} lines). stderr:\n${log.stderr}`));
    }, ROUND_DEADLINE_MS);

    child.stderr!.on('data', (chunk: Buffer) => (log.stderr += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.startsWith('op ')) log.ops.push(JSON.parse(line.slice(3)) as CrashOp);
        else if (line.startsWith('ack ')) {
          const seq = Number(line.slice(4));
          // The store applies calls in order, so acks arrive in order.
          if (seq !== log.acked + 1) reject(new Error(`ack ${seq} arrived after ack ${log.acked}`));
          log.acked = seq;
        } else if (line.startsWith('fail ')) reject(new Error(`child write failed: ${line}`));
        if (line.startsWith('op ') || line.startsWith('ack ')) lines++;
        if (lines >= killAfterLines) kill();
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (signal === 'SIGKILL' && killed) resolve(log);
      else reject(new Error(`child exited on its own (code ${code}, signal ${signal}). stderr:\n${log.stderr}`));
    });
  });
}

describe.each(['level', 'wal'] as const)('%s storage survives SIGKILL at random moments', (kind) => {
  const children = new Set<ChildProcess>();
  const dirs: string[] = [];
  afterAll(async () => {
    for (const c of children) if (c.pid !== undefined && c.exitCode === null) process.kill(c.pid, 'SIGKILL');
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it(`${ROUNDS} kills over one directory lose no acknowledged write (seed ${SEED})`, async () => {
    const random = seededRandom(SEED);
    const dir = await mkdtemp(join(tmpdir(), 'leasehold-crash-'));
    dirs.push(dir);
    let state: ModelState = EMPTY;
    let totalAcked = 0;

    for (let round = 1; round <= ROUNDS; round++) {
      const killAfterLines = 10 + Math.floor(random() * 300);
      const log = await runAndKill(kind, dir, Math.floor(random() * 2 ** 31), killAfterLines, children);
      const where = `seed ${SEED}, round ${round}, killed after ${killAfterLines} lines, ${log.ops.length} issued, ${log.acked} acked`;

      // Every state the store may legally be in: after all acked writes, plus any of the in-flight ones.
      const candidates: ModelState[] = [state];
      for (const op of log.ops) candidates.push(applyOp(candidates[candidates.length - 1]!, op));
      const allowed = candidates.slice(log.acked);

      let loaded;
      if (kind === 'level') {
        const store = await LevelStorage.open(dir);
        loaded = await store.load();
        const report = store.loadReport;
        await store.close();
        expect(report, `LevelDB batches are atomic, so nothing may need repair (${where})`).toEqual({
          staleEntriesRemoved: 0,
          droppedEntries: [],
          truncatedBecause: null,
        });
      } else {
        // A torn last frame may be cut (it was never acknowledged); which state survived is checked below.
        const store = await WalStorage.open(dir);
        loaded = await store.load();
        await store.close();
      }
      const got = describeState(loaded);
      const prefix = allowed.findIndex((s) => describeState(s) === got);
      expect(
        prefix,
        `${where}\nloaded:   ${summarize(loaded)}\nexpected one of:\n${allowed.map((s) => '  ' + summarize(s)).join('\n')}`,
      ).toBeGreaterThanOrEqual(0);

      state = allowed[prefix]!;
      totalAcked += log.acked;
    }
    // The test only proves something if the child got real work acknowledged before the kills.
    expect(totalAcked).toBeGreaterThan(ROUNDS);
  });
});
