// A scratch copy of src/lock (a planted bug, lock-mutants.ts) loaded as ONE bundle, for the mutant sweep.
// loadLockModule (lock-module.ts) imports a copy file by file through vitest's module runner: ~60 files, each
// transformed and evaluated on its own, about 0.6 s a copy — 25 s of the 42-mutant sweep, for code that
// differs from src/lock by a line or two. Here esbuild bundles the copy's four entry points into one
// CommonJS file (its modules scope-hoisted as ESM, so their evaluation order and cycles are the ESM ones),
// and Node's own require loads it: ~0.1 s. The code run is the same copy: the same TypeScript, the same
// class-field semantics as the project's ES2022 target; only the loading differs. SIM_LOCK=<dir> (a human
// replaying a mutant's seed) still loads the copy file by file.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { LockLeaderClass, LockMachineClass, LockMachineLike, LockModule } from './lock-module.js';
import type { RecordsModule } from '../../src/state/lock-store.js';

/** What the bundle exports: the four modules loadLockModule imports. */
interface BundleExports {
  machine: { LockMachine?: LockMachineClass };
  commands: Partial<Pick<LockModule, 'encodeCommand' | 'decodeCommand'>>;
  leader: { LockLeader?: LockLeaderClass };
  records: RecordsModule<LockMachineLike> | null;
}

const ENTRY = '.sim-bundle-entry.ts';
const BUNDLE = '.sim-bundle.cjs';

/** The lock module of the copy at `dir` (machine.ts, commands.ts, leader/index.ts, store-records.ts). */
export async function bundleLockModule(dir: string): Promise<LockModule> {
  const { build } = await import('esbuild');
  writeFileSync(
    join(dir, ENTRY),
    "export * as machine from './machine.js';\n" +
      "export * as commands from './commands.js';\n" +
      "export * as leader from './leader/index.js';\n" +
      "export * as records from './store-records.js';\n",
  );
  await build({
    entryPoints: [join(dir, ENTRY)],
    outfile: join(dir, BUNDLE),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'es2022',
    // As tsc compiles src/lock (tsconfig.json: target ES2022, so define semantics for class fields).
    tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
    logLevel: 'silent',
  });
  // Node's require, not vitest's: the bundle is plain JavaScript and needs no transform.
  const b = createRequire(import.meta.url)(join(dir, BUNDLE)) as BundleExports;
  if (!b.machine.LockMachine || !b.commands.encodeCommand || !b.commands.decodeCommand || !b.leader.LockLeader) {
    throw new Error(
      `${dir}: expected machine.ts (LockMachine), commands.ts (encodeCommand, decodeCommand) and leader/index.ts (LockLeader)`,
    );
  }
  return {
    label: dir,
    LockMachine: b.machine.LockMachine,
    LockLeader: b.leader.LockLeader,
    encodeCommand: b.commands.encodeCommand,
    decodeCommand: b.commands.decodeCommand,
    ...(b.records?.StoreRecords !== undefined ? { records: b.records } : {}),
  };
}
