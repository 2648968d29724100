#!/usr/bin/env node
// Launcher for scripts/sim-sweep.ts (see the usage comment there): Node 20 cannot run TypeScript, so
// compile the sweep and only what it imports (test/sim, src/raft/core — pure, no other layers) with the
// project's tsc into a temporary directory, then run it with the same arguments.
//   node scripts/sim-sweep.mjs --seeds 20000
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = mkdtempSync(join(tmpdir(), 'leasehold-sim-sweep-'));
const args = process.argv.slice(2);

// A scratch core given with --core x.ts is compiled along with the sweep and passed on as its .js.
const inputs = [join(root, 'scripts/sim-sweep.ts')];
const coreAt = args.indexOf('--core');
if (coreAt >= 0 && args[coreAt + 1]?.endsWith('.ts')) {
  const core = resolve(args[coreAt + 1]);
  inputs.push(core);
  args[coreAt + 1] = join(out, core.replace(/\.ts$/, '.js'));
}

try {
  // The emitted files are ESM (.js import suffixes, NodeNext): mark the output tree as a module package.
  writeFileSync(join(out, 'package.json'), '{"type":"module"}\n');
  execFileSync(
    process.execPath,
    [
      join(root, 'node_modules/typescript/bin/tsc'),
      '--outDir',
      out,
      '--rootDir',
      '/',
      // esnext + bundler: always ESM output, also for a scratch core outside this package.
      '--module',
      'esnext',
      '--moduleResolution',
      'bundler',
      '--target',
      'es2022',
      '--strict',
      '--skipLibCheck',
      '--types',
      'node',
      '--typeRoots',
      join(root, 'node_modules/@types'),
      ...inputs,
    ],
    { stdio: 'inherit', cwd: root },
  );
  const entry = join(out, root, 'scripts/sim-sweep.js');
  const r = spawnSync(process.execPath, [entry, ...args], { stdio: 'inherit', cwd: root });
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
