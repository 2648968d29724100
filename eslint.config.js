// The layering of ARCHITECTURE.md as lint rules: which parts of src/ may import which. Only imports are
// checked here; scripts/check-purity.mjs also keeps Date, Math.random, timers and I/O out of the pure layers.
//
// no-restricted-imports sees the import specifier as written, not the file it resolves to, so each layer
// is expanded into one config block per directory depth below its root, with the target directories
// written as relative specifiers from that depth. Every relative specifier in src/ must be in normal form
// (no `a/../b`, no `./../b`), or a path could leave a layer without matching.
import path from 'node:path';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** Depths below a layer root the rules are written for; a file deeper than this fails the lint. */
const MAX_DEPTH = 3;

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Regex source matching a specifier from `fromDir` that resolves to `target` (a directory or a .ts file). */
function specifierTo(fromDir, target) {
  let rel = path.posix.relative(fromDir, target.replace(/\.ts$/, '.js'));
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return target.endsWith('.ts') ? `${escape(rel)}$` : `${escape(rel)}(/|$)`;
}

const nonNormal = {
  regex: String.raw`(^|/)(?!\.\.(/|$))[^/]+/\.\.?(/|$)`,
  caseSensitive: true,
  message: 'write relative imports in normal form (no "a/../b" or "./../b"): the layering rules match specifiers as written.',
};

/**
 * Each layer: its root directory and what its imports may reach. `only` lists the directories (or .ts
 * files) outside the root that it may import; anything else that climbs out of the root is refused.
 * `never` lists directories it must not import. `packages: false` refuses every bare specifier:
 * `node:*`, Node built-ins and npm packages alike.
 */
const layers = [
  {
    root: 'src/raft/core',
    only: [],
    packages: false,
    why: 'the Raft core is pure and self-contained: it imports nothing outside src/raft/core (no Node, no npm packages, no storage, transport, driver, server or client). Time and randomness come in as ticks and an injected Rng.',
  },
  {
    root: 'src/lock',
    only: ['src/raft/core'],
    packages: false,
    why: 'the lock state machine and lock-leader logic are pure: they import only src/lock and the Raft core types (no Node, no npm packages, no storage, transport, driver, server, client, cli, config or fencing). Time comes from leader-stamped entries.',
  },
  {
    root: 'src/client',
    only: ['src/wire/lock.ts', 'src/wire/cluster.ts', 'src/wire/scalars.ts', 'src/wire/caller-mux.ts'],
    packages: true,
    why: "the client speaks only the wire contract: besides its own files it may import src/wire/lock.ts, cluster.ts and scalars.ts (the message types, services and wire constants of Lock and Cluster) and caller-mux.ts (the caller's side of a call_id-multiplexed stream, shared with the followers' Forward stream), nothing from server, raft, lock or transport, nor the peer service (src/wire/raft*.ts).",
  },
  {
    root: 'src/wire',
    never: ['src/server', 'src/client', 'src/cli', 'src/transport', 'src/raft/storage', 'src/config', 'src/fencing'],
    packages: true,
    why: "the wire contract sits below everything that speaks it: it never imports server, client, cli, transport, storage, config or fencing (only the core's types it converts to and from).",
  },
  {
    root: 'src/state',
    only: ['src/lock', 'src/raft/core', 'src/raft/env.ts'],
    packages: true,
    why: "the applied store keeps the lock machine's records in a LevelDB it is handed: it imports the lock machine's records (src/lock), the core's types and the driver's scheduler type (and Node's crypto for backups), nothing of server, transport, storage, client or cli.",
  },
  {
    root: 'src/lock-on-raft',
    only: [
      'src/lock',
      'src/raft/core',
      'src/raft/env.ts',
      'src/raft/errors.ts',
      'src/raft/logger.ts',
      'src/raft/fsm.ts',
      'src/state/lock-store.ts',
      'src/transport/call-end.ts',
    ],
    packages: false,
    why: "the lock machine on Raft (the lock service and the state machine adapter) joins the pure lock leader and machine to a Raft node: it imports src/lock, the Raft core's types, the driver's interfaces (env, errors, logger, fsm), the applied store's interface and how a call ended (transport/call-end.ts); no server, client, cli, wire or npm package. Time and timers come from the injected NodeEnv.",
  },
  {
    root: 'src/raft/storage',
    never: ['src/server', 'src/client', 'src/cli'],
    packages: true,
    why: 'storage sits below the server: it never imports server, client or cli.',
  },
  {
    root: 'src/transport',
    never: ['src/server', 'src/client', 'src/cli'],
    packages: true,
    why: 'transport sits below the server: it never imports server, client or cli.',
  },
  // The server's rooms (src/server/README.md). Each block replaces the rule for its files, so each lists
  // the server's own refusals (src/client; src/test-faults, which the assembly loads with a dynamic import
  // only) besides its room's.
  {
    root: 'src/server',
    never: ['src/client', 'src/test-faults'],
    packages: true,
    why: 'the server shares only the wire contract (src/wire) with the client: it never imports src/client; test faults (src/test-faults) are loaded by the node assembly with a dynamic import only, never a static one.',
  },
  {
    root: 'src/server/assembly',
    never: ['src/client', 'src/test-faults'],
    packages: true,
    why: 'the node assembly builds a node from every room below it, but never imports src/client (the server shares only the wire contract with it), and loads test faults (src/test-faults) with a dynamic import only, never a static one.',
  },
  {
    root: 'src/server/client-api',
    never: ['src/client', 'src/test-faults', 'src/cli', 'src/server/assembly', 'src/server/observability'],
    packages: true,
    why: 'the client API (the Lock and Cluster services) is built by the node assembly and read by observability: it never imports them (nor the cli, src/client or test faults).',
  },
  {
    root: 'src/server/observability',
    never: ['src/client', 'src/test-faults', 'src/cli', 'src/server/assembly'],
    packages: true,
    why: 'observability (metrics, instrumentation, the dashboard) is built by the node assembly: it never imports it (nor the cli, src/client or test faults); it may read the client API and the lock machine on Raft.',
  },
  {
    root: 'src/test-faults',
    only: ['src/raft/env.ts', 'src/raft/core', 'src/raft/storage', 'src/raft/fsm.ts'],
    packages: true,
    why: "test faults wrap the driver's env, storage and state machine: they import those interfaces (and the core's types), nothing of the server, client or cli.",
  },
];

function patternsAt(layer, dir, depth) {
  const patterns = [nonNormal];
  if (layer.packages === false) {
    patterns.push({ regex: String.raw`^(?!\.)`, caseSensitive: true, message: layer.why });
  }
  if (layer.only) {
    const allowed = layer.only.map((t) => specifierTo(dir, t));
    const lookahead = allowed.length > 0 ? `(?!(${allowed.join('|')}))` : '';
    patterns.push({ regex: `^${lookahead}(\\.\\./){${depth + 1}}`, caseSensitive: true, message: layer.why });
  }
  for (const target of layer.never ?? []) {
    patterns.push({ regex: `^${specifierTo(dir, target)}`, caseSensitive: true, message: layer.why });
  }
  return patterns;
}

const restrict = (patterns) => ({ '@typescript-eslint/no-restricted-imports': ['error', { patterns }] });

function layerBlocks(layer) {
  const blocks = [];
  for (let depth = 0; depth <= MAX_DEPTH; depth++) {
    // Any directory name stands for the nested levels: the specifiers depend only on how deep a file is.
    const dir = [layer.root, ...Array(depth).fill('nested')].join('/');
    const files = [`${layer.root}/${'*/'.repeat(depth)}*.ts`];
    blocks.push({ files, rules: restrict(patternsAt(layer, dir, depth)) });
  }
  blocks.push({
    files: [`${layer.root}/${'*/'.repeat(MAX_DEPTH + 1)}**/*.ts`],
    rules: restrict([
      {
        regex: '.*',
        message: `nested deeper than the layering rules in eslint.config.js cover (MAX_DEPTH = ${MAX_DEPTH}): raise MAX_DEPTH.`,
      },
    ]),
  });
  return blocks;
}

export default defineConfig(
  { ignores: ['dist/**', 'node_modules/**'] },
  {
    files: ['src/**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    // An eslint-disable comment must not be a way around the layering.
    linterOptions: { noInlineConfig: true },
    rules: restrict([nonNormal]),
  },
  ...layers.flatMap(layerBlocks),
);
