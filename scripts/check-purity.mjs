#!/usr/bin/env node
// House rule: the Raft core and the lock state machine are pure. No Node built-ins, no I/O, no timers,
// no wall clock, no ambient randomness. Time arrives as ticks or leader-stamped entry times; randomness
// arrives as an injected seeded Rng. This check fails the build when that rule is broken.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const PURE_DIRS = ['src/raft/core', 'src/lock'];
const FORBIDDEN = [
  [/from\s+['"]node:/, 'imports a Node built-in'],
  [/from\s+['"](fs|path|os|net|http|https|crypto|child_process|timers|worker_threads|dgram|process)['"]/, 'imports a Node built-in'],
  [/\brequire\s*\(/, 'uses require()'],
  [/\bimport\s*\(/, 'uses dynamic import()'],
  [/\bDate\b/, 'uses Date (time must come from ticks or entry stamps)'],
  [/\bperformance\s*\./, 'uses performance (wall clock)'],
  [/\bMath\.random\b/, 'uses Math.random (use the injected Rng)'],
  [/\b(setTimeout|setInterval|setImmediate|queueMicrotask|clearTimeout|clearInterval)\b/, 'uses timers'],
  [/\bprocess\s*\./, 'uses process'],
  [/\bglobalThis\b/, 'reaches globalThis'],
  [/\bcrypto\s*\./, 'uses crypto'],
  [/\bconsole\s*\./, 'writes to the console (I/O)'],
  [/from\s+['"]\.\.\/\.\.\/(storage|transport|wire|server|client|cli|config)/, 'imports an impure layer'],
  [/from\s+['"]\.\.\/(raft\/storage|raft\/node|transport|wire|server|client|cli|config|fencing)/, 'imports an impure layer'],
  // Any depth (src/lock/leader is two levels down): the driver, its env and errors, storage, transport,
  // the wire module (gRPC, proto files), server, client, cli, config and fencing are all impure layers.
  [/from\s+['"](\.\.\/)+(raft\/)?(storage|node|env|errors|transport|wire|server|client|cli|config|fencing)\b/, 'imports an impure layer'],
];

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

export function violations(files) {
  const found = [];
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const code = line
        .replace(/\/\/.*$/, '')
        .replace(/^\s*\*.*$/, '')
        .replace(/^\s*\/\*.*$/, '');
      for (const [re, why] of FORBIDDEN) {
        if (re.test(code)) found.push(`${file}:${i + 1}: ${why}: ${line.trim()}`);
      }
    });
  }
  return found;
}

const roots = process.argv.length > 2 ? process.argv.slice(2) : PURE_DIRS;
const files = roots.flatMap((d) => (statSync(d).isDirectory() ? walk(d) : [d]));
const found = violations(files);
if (found.length > 0) {
  console.error('purity check failed — the Raft core and lock machine must stay pure:');
  for (const f of found) console.error('  ' + f);
  process.exit(1);
}
console.log(`purity check: ${files.length} files in ${roots.join(', ')} are pure`);
