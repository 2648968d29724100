#!/usr/bin/env node
// House rule: the Raft core and the lock state machine are pure. No Node built-ins, no I/O, no timers,
// no wall clock, no ambient randomness. Time arrives as ticks or leader-stamped entry times; randomness
// arrives as an injected seeded Rng. The lock machine on Raft (src/lock-on-raft) imports the driver's
// interfaces, but takes its time and timers from them all the same (CLOCK_FREE_DIRS: every rule but the
// layer rules, which eslint.config.js keeps for it). This check fails the build when a rule is broken.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const PURE_DIRS = ['src/raft/core', 'src/lock'];
/** Impure by their imports (the driver's interfaces; eslint.config.js says which), but given time, timers
 *  and randomness like the pure layers: the lock service runs on the simulator's virtual clock. */
const CLOCK_FREE_DIRS = ['src/lock-on-raft'];
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

/** FORBIDDEN without the layer rules: what the clock-free directories are held to. */
const CLOCK_RULES = FORBIDDEN.filter(([, why]) => why !== 'imports an impure layer');

export function violations(files, rules = FORBIDDEN) {
  const found = [];
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const code = line
        .replace(/\/\/.*$/, '')
        .replace(/^\s*\*.*$/, '')
        .replace(/^\s*\/\*.*$/, '');
      for (const [re, why] of rules) {
        if (re.test(code)) found.push(`${file}:${i + 1}: ${why}: ${line.trim()}`);
      }
    });
  }
  return found;
}

const filesOf = (roots) => roots.flatMap((d) => (statSync(d).isDirectory() ? walk(d) : [d]));
const custom = process.argv.length > 2;
const roots = custom ? process.argv.slice(2) : PURE_DIRS;
const files = filesOf(roots);
const clockFree = custom ? [] : filesOf(CLOCK_FREE_DIRS);
const found = [...violations(files), ...violations(clockFree, CLOCK_RULES)];
if (found.length > 0) {
  console.error('purity check failed — the Raft core and lock machine must stay pure, the lock machine on Raft clock-free:');
  for (const f of found) console.error('  ' + f);
  process.exit(1);
}
console.log(`purity check: ${files.length} files in ${roots.join(', ')} are pure`);
if (!custom)
  console.log(`purity check: ${clockFree.length} files in ${CLOCK_FREE_DIRS.join(', ')} take time, timers and randomness as arguments`);
