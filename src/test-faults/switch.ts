// The node-side switch of the test faults: started only when the node runs with env
// LEASEHOLD_TEST_FAULTS=<path> (runtime.ts imports this module lazily, so without the variable none of it
// is even loaded). It polls the file every POLL_MS (absent file = no faults), applies each new setting to
// the node's FaultClock, FaultyStorage and snapshot chunk corruption, and reports what it applied and what the node's clock reads in
// <path>.state.json, so a test can see the skew it asked for.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { NodeEnv } from '../raft/env.js';
import type { RaftStorage } from '../raft/storage/types.js';
import { FaultClock, trueNowMs } from './clock.js';
import { FaultyStorage } from './disk.js';
import { parseTestFaults, type TestFaults } from './spec.js';
import type { StateMachine } from '../raft/fsm.js';
import { corruptingFsm, corruptionOf, type ChunkCorruption } from './snapshot.js';

const POLL_MS = 20;
/** How often the state file is refreshed even without a change (the clock readings move). */
const REPORT_MS = 250;

export interface TestFaultSwitch {
  env: NodeEnv;
  wrapStorage(storage: RaftStorage): RaftStorage;
  /** The state machine with snapshot chunks corrupted on their way into its store (snapshot.corruptStreams). */
  wrapFsm<R>(fsm: StateMachine<R>): StateMachine<R>;
  stop(): void;
}

/** What the node writes to <path>.state.json. */
export interface TestFaultState {
  pid: number;
  /** True time (this host's performance.timeOrigin + now) when the report was written. */
  trueMs: number;
  /** The node's NodeEnv.nowMs() at that moment, and its wall clock. */
  nowMs: number;
  wallMs: number;
  applied: TestFaults;
  /** Why the last read of the file was not applied, if it was not. */
  error: string | null;
}

export const stateFileOf = (path: string) => `${path}.state.json`;
export const crashMarkerOf = (path: string) => `${path}.crashed`;

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

export function startTestFaults(path: string, logger: Logger): TestFaultSwitch {
  let text = readText(path);
  let applied: TestFaults = {};
  let error: string | null = null;
  const parse = (t: string | null): TestFaults | null => {
    if (t === null || t.trim() === '') return {};
    try {
      error = null;
      return parseTestFaults(t);
    } catch (err) {
      error = (err as Error).message;
      logger.error({ path, err: error }, 'test faults: malformed fault file; keeping the previous setting');
      return null;
    }
  };
  applied = parse(text) ?? {};
  // The clock is anchored here, before the driver reads it: a wall offset in the file at start is this
  // node's clock offset for its whole life.
  const clock = new FaultClock(applied.clock ?? {});
  let storage: FaultyStorage | null = null;
  // A crash is one-shot: the restart from the same, unchanged file must not crash again.
  const crashedOn = readText(crashMarkerOf(path));
  let crashArmable = crashedOn === null || crashedOn !== text;

  const report = () => {
    const state: TestFaultState = { pid: process.pid, trueMs: trueNowMs(), nowMs: clock.nowMs(), wallMs: clock.wallMs(), applied, error };
    const file = stateFileOf(path);
    try {
      writeFileSync(`${file}.tmp`, JSON.stringify(state));
      renameSync(`${file}.tmp`, file);
    } catch {
      // The harness removed the directory (the run ended): nothing to report to.
    }
  };
  const corruption: ChunkCorruption = { left: 0 };
  const apply = (next: TestFaults) => {
    applied = next;
    clock.set(next.clock ?? {});
    corruption.left = corruptionOf(next.snapshot);
    if (storage && crashArmable) storage.arm(next.disk?.crashAfterBatches);
    logger.warn({ faults: next }, 'TEST FAULTS applied');
    report();
  };
  logger.warn(
    { path, faults: applied, existed: existsSync(path) },
    'TEST FAULTS ENABLED (LEASEHOLD_TEST_FAULTS): this node takes its clock and disk faults from a file. Never run production like this',
  );
  clock.set(applied.clock ?? {});
  corruption.left = corruptionOf(applied.snapshot);
  report();

  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let lastReportMs = trueNowMs();
  const poll = async () => {
    if (stopped) return;
    let now: string | null;
    try {
      now = await readFile(path, 'utf8');
    } catch {
      now = null;
    }
    if (now !== text) {
      text = now;
      crashArmable = true;
      const next = parse(now);
      if (next) apply(next);
      else report();
    } else if (trueNowMs() - lastReportMs >= REPORT_MS) {
      lastReportMs = trueNowMs();
      report();
    }
    if (!stopped) {
      timer = setTimeout(() => void poll(), POLL_MS);
      timer.unref();
    }
  };
  timer = setTimeout(() => void poll(), POLL_MS);
  timer.unref();

  return {
    env: clock.env(),
    wrapStorage(inner) {
      storage = new FaultyStorage(inner, {
        current: () => applied.disk ?? {},
        crash: (after) => {
          // Remember what we crashed on, then die like a power cut: no exit handlers, no flushing.
          try {
            writeFileSync(crashMarkerOf(path), text ?? '');
          } catch {
            // nowhere to write: the crash still happens
          }
          process.stderr.write(`TEST FAULTS: disk.crashAfterBatches=${after} reached; SIGKILL self (pid ${process.pid})\n`);
          process.kill(process.pid, 'SIGKILL');
        },
      });
      if (crashArmable) storage.arm(applied.disk?.crashAfterBatches);
      return storage;
    },
    wrapFsm(fsm) {
      return corruptingFsm(fsm, corruption);
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
