// Groups a V8 .cpuprofile's self time by who spent it — native work, socket writes, GC, grpc-js, protobufjs,
// other packages, node's own JavaScript, leasehold's code — and lists the top functions of each group.
// Issue 37 asks for the leader's and a follower's profile "grouped by package"; the bench's `--profile DIR`
// writes one .cpuprofile per node (pids.txt says which node and row).
//   node scripts/profile-groups.mjs FILE.cpuprofile [topN]
//   node scripts/profile-groups.mjs --json FILE.cpuprofile   (the groups' shares as JSON, for a table)
//   node scripts/profile-groups.mjs --skip-ms 8000 FILE.cpuprofile   (leave out the first 8 s: start-up)
import { readFileSync } from 'node:fs';

/** The group a sampled frame's self time belongs to; `caller` is the calling frame's callFrame, if any. */
export function groupOf(functionName, url, caller) {
  if (functionName === '(garbage collector)') return 'gc';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'native (program)';
  // fs.write() reaches the same native writeBuffer as a socket write: the WAL's appends (an O_DSYNC
  // descriptor). The call only queues the write on libuv's threadpool (0.04 ms a call measured alone); what
  // more a profile shows there under load is, we think, the caller preempted by the thread it woke (two
  // cores, three nodes), which the sampler counts as self time. Either way it is not a socket write.
  if (!url && functionName === 'writeBuffer' && caller?.url === 'node:fs') return 'file writes (fs.write: the WAL)';
  // A native frame of the stream machinery: libuv's socket write called from JavaScript.
  if (!url && /^(writeBuffer|writev|writeUtf8String|writeLatin1String)$/.test(functionName)) return 'socket writes';
  if (!url) return 'native (other)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) {
    const name = pkg[1];
    if (name === '@grpc/grpc-js') return 'grpc-js';
    if (name === 'protobufjs' || name.startsWith('@protobufjs/') || name === '@grpc/proto-loader' || name === 'long') return 'protobufjs';
    return `package ${name}`;
  }
  if (url.startsWith('node:')) return 'node internals';
  if (/\/(dist|build)\/src\//.test(url) || /\/src\//.test(url)) return 'leasehold';
  return 'other';
}

export function summarise(profile, skipMs = 0) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n);
  const groups = new Map();
  const fns = new Map();
  let total = 0;
  let idle = 0;
  let atUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const n = byId.get(profile.samples[i]);
    const dt = profile.timeDeltas[i] ?? 0;
    atUs += dt;
    if (atUs < skipMs * 1000) continue;
    const g = groupOf(n.callFrame.functionName, n.callFrame.url, parentOf.get(n.id)?.callFrame);
    if (g === 'idle') {
      idle += dt;
      continue;
    }
    total += dt;
    groups.set(g, (groups.get(g) ?? 0) + dt);
    const f = `${g} | ${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`;
    fns.set(f, (fns.get(f) ?? 0) + dt);
  }
  return { busyMs: total / 1000, idleMs: idle / 1000, groups, fns };
}

function main() {
  const args = process.argv.slice(2);
  const json = args[0] === '--json';
  if (json) args.shift();
  let skipMs = 0;
  if (args[0] === '--skip-ms') {
    skipMs = Number(args[1]);
    args.splice(0, 2);
  }
  const file = args[0];
  if (!file) {
    console.error('usage: node scripts/profile-groups.mjs [--json] FILE.cpuprofile [topN]');
    process.exit(64);
  }
  const s = summarise(JSON.parse(readFileSync(file, 'utf8')), skipMs);
  const shares = [...s.groups].sort((a, b) => b[1] - a[1]).map(([g, us]) => [g, (100 * us) / (s.busyMs * 1000)]);
  if (json) {
    console.log(
      JSON.stringify({ busyMs: Math.round(s.busyMs), groups: Object.fromEntries(shares.map(([g, p]) => [g, Number(p.toFixed(1))])) }),
    );
    return;
  }
  console.log(`busy ${Math.round(s.busyMs)} ms, idle ${Math.round(s.idleMs)} ms`);
  for (const [g, p] of shares) console.log(`${p.toFixed(1).padStart(6)} %  ${g}`);
  const top = Number(args[1] ?? 25);
  console.log(`\ntop ${top} functions (self):`);
  for (const [f, us] of [...s.fns].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * us) / (s.busyMs * 1000)).toFixed(1).padStart(6)} %  ${f}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();
