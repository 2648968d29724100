// The layering rules in eslint.config.js must be able to fail: feed each one an import it exists to
// refuse (and one it must allow) and check what the linter says. `npm run lint` checks the real tree.
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: process.cwd() });

async function verdict(file: string, specifier: string): Promise<string[]> {
  const [result] = await eslint.lintText(`import { x } from '${specifier}';\nexport { x };\n`, { filePath: file });
  return result!.messages.map((m) => `${m.ruleId ?? 'fatal'}: ${m.message}`);
}

const refused: Array<[file: string, specifier: string]> = [
  // the Raft core: nothing outside src/raft/core
  ['src/raft/core/raft.ts', '../storage/types.js'],
  ['src/raft/core/raft.ts', '../node.js'],
  ['src/raft/core/raft.ts', '../env.js'],
  ['src/raft/core/raft.ts', '../../lock/index.js'],
  ['src/raft/core/raft.ts', 'node:events'],
  ['src/raft/core/raft.ts', 'events'],
  ['src/raft/core/raft.ts', 'pino'],
  ['src/raft/core/raft.ts', './../storage/types.js'],
  ['src/raft/core/raft.ts', './sub/../../storage/types.js'],
  // the lock machine and lock-leader logic: pure, only src/lock and the core
  ['src/lock/machine.ts', 'node:fs'],
  ['src/lock/machine.ts', '@grpc/grpc-js'],
  ['src/lock/machine.ts', '../raft/node.js'],
  ['src/lock/machine.ts', '../raft/env.js'],
  ['src/lock/machine.ts', '../raft/storage/types.js'],
  ['src/lock/machine.ts', '../wire/lock.js'],
  ['src/lock/machine.ts', '../server/assembly/runtime.js'],
  ['src/lock/machine.ts', '../client/index.js'],
  ['src/lock/machine.ts', '../config/types.js'],
  ['src/lock/machine.ts', '../fencing/index.js'],
  ['src/lock/machine.ts', '../cli/main.js'],
  ['src/lock/machine.ts', '../raft/core/../node.js'],
  ['src/lock/leader/term-start.ts', 'node:timers'],
  ['src/lock/leader/term-start.ts', '../../lock-on-raft/lock-service.js'],
  ['src/lock/leader/term-start.ts', '../../server/client-api/grpc-server.js'],
  ['src/lock/leader/term-start.ts', '../../raft/node.js'],
  ['src/lock/leader/deep/er/still.ts', '../../../../wire/lock.js'],
  // the client: its own files and the wire contract only
  ['src/client/client.ts', '../server/assembly/runtime.js'],
  ['src/client/client.ts', '../lock/validate.js'],
  ['src/client/client.ts', '../raft/core/types.js'],
  ['src/client/client.ts', '../transport/grpc.js'],
  ['src/client/client.ts', '../wire/raft.js'],
  ['src/client/client.ts', '../wire/raft-encode.js'],
  ['src/client/client.ts', '../wire/raft-decode.js'],
  ['src/client/client.ts', '../wire/load.js'],
  // the wire contract sits below everything that speaks it
  ['src/wire/lock.ts', '../server/client-api/grpc-server.js'],
  ['src/wire/lock.ts', '../client/index.js'],
  ['src/wire/raft.ts', '../transport/grpc.js'],
  ['src/wire/raft-decode.ts', '../raft/storage/types.js'],
  // storage and transport sit below the server
  ['src/raft/storage/leveldb.ts', '../../server/assembly/runtime.js'],
  ['src/raft/storage/leveldb.ts', '../../client/index.js'],
  ['src/raft/storage/leveldb.ts', '../../cli/main.js'],
  ['src/transport/grpc.ts', '../server/client-api/grpc-server.js'],
  ['src/transport/grpc.ts', '../client/rpc.js'],
  ['src/transport/grpc.ts', '../cli/serve.js'],
  // the lock machine on Raft: the lock, the core's types and the driver's interfaces only
  ['src/lock-on-raft/lock-service.ts', '../server/client-api/lock-calls.js'],
  ['src/lock-on-raft/lock-service.ts', '../raft/node.js'],
  ['src/lock-on-raft/lock-service.ts', '../raft/storage/types.js'],
  ['src/lock-on-raft/lock-service.ts', '../transport/grpc.js'],
  ['src/lock-on-raft/lock-service.ts', '../wire/lock.js'],
  ['src/lock-on-raft/lock-fsm.ts', '@grpc/grpc-js'],
  ['src/lock-on-raft/lock-fsm.ts', 'node:timers'],
  // test faults: loaded dynamically by the node assembly only, and wrapping only the driver's env and storage
  ['src/server/client-api/health.ts', '../../test-faults/spec.js'],
  ['src/server/observability/metrics.ts', '../../test-faults/clock.js'],
  ['src/server/assembly/runtime.ts', '../../test-faults/switch.js'],
  ['src/test-faults/switch.ts', '../server/assembly/runtime.js'],
  ['src/test-faults/switch.ts', '../lock/machine.js'],
  // the server's rooms: the client API and observability never reach up into the node assembly, nor
  // the client API into observability
  ['src/server/client-api/grpc-server.ts', '../assembly/runtime.js'],
  ['src/server/client-api/cluster-api.ts', '../observability/metrics.js'],
  ['src/server/observability/dashboard-routes.ts', '../assembly/runtime.js'],
  ['src/server/observability/metrics.ts', '../assembly/node-credentials.js'],
  // the server never imports the client
  ['src/server/client-api/grpc-server.ts', '../../client/errors.js'],
  ['src/server/assembly/runtime.ts', '../../client/index.js'],
  ['src/server/observability/metrics.ts', '../../client/index.js'],
  ['src/lock-on-raft/lock-service.ts', '../client/errors.js'],
];

const allowed: Array<[file: string, specifier: string]> = [
  ['src/raft/core/raft.ts', './types.js'],
  ['src/lock/machine.ts', './types.js'],
  ['src/lock/machine.ts', '../raft/core/types.js'],
  ['src/lock/leader/term-start.ts', '../machine.js'],
  ['src/lock/leader/term-start.ts', '../../raft/core/types.js'],
  ['src/client/client.ts', '../wire/lock.js'],
  ['src/client/rpc.ts', '../wire/cluster.js'],
  ['src/client/lock-stream.ts', '../wire/scalars.js'],
  ['src/wire/raft-decode.ts', '../raft/core/types.js'],
  ['src/transport/peer-link.ts', '../wire/raft-encode.js'],
  ['src/client/client.ts', '@grpc/grpc-js'],
  ['src/client/client.ts', 'node:crypto'],
  ['src/raft/storage/leveldb.ts', '../core/types.js'],
  ['src/transport/grpc.ts', '../raft/peer-sender.js'],
  ['src/server/assembly/runtime.ts', '../../wire/load.js'],
  ['src/server/assembly/runtime.ts', '../client-api/grpc-server.js'],
  ['src/server/assembly/runtime.ts', '../observability/metrics.js'],
  ['src/server/observability/dashboard-api.ts', '../client-api/holders-view.js'],
  ['src/server/client-api/lock-calls.ts', '../../lock-on-raft/lock-service.js'],
  ['src/server/observability/instrument.ts', '../../lock-on-raft/lock-service.js'],
  ['src/lock-on-raft/lock-service.ts', '../lock/leader/index.js'],
  ['src/lock-on-raft/lock-service.ts', '../raft/env.js'],
  ['src/lock-on-raft/lock-service.ts', '../transport/call-end.js'],
  ['src/lock-on-raft/lock-fsm.ts', '../state/lock-store.js'],
  ['src/test-faults/disk.ts', '../raft/storage/rules.js'],
  ['src/test-faults/switch.ts', 'node:fs'],
  ['src/cli/main.ts', '../client/client.js'],
];

describe('layering lint rules', () => {
  it.each(refused)('%s may not import %s', async (file, specifier) => {
    const messages = await verdict(file, specifier);
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.every((m) => m.startsWith('@typescript-eslint/no-restricted-imports:'))).toBe(true);
  });

  it.each(allowed)('%s may import %s', async (file, specifier) => {
    expect(await verdict(file, specifier)).toEqual([]);
  });

  it('type-only imports and re-exports are held to the same rules', async () => {
    for (const code of [`import type { Status } from '../node.js';\n`, `export * from '../storage/types.js';\n`]) {
      const [result] = await eslint.lintText(code, { filePath: 'src/raft/core/raft.ts' });
      expect(result!.messages.map((m) => m.ruleId)).toEqual(['@typescript-eslint/no-restricted-imports']);
    }
  });

  it('a file nested deeper than the rules are written for fails instead of escaping them', async () => {
    const messages = await verdict('src/lock/a/b/c/d/too-deep.ts', './sibling.js');
    expect(messages.join('\n')).toMatch(/MAX_DEPTH/);
  });

  it('an eslint-disable comment does not switch the layering off', async () => {
    const code = `// eslint-disable-next-line\nimport { x } from 'node:fs';\nexport { x };\n`;
    const [result] = await eslint.lintText(code, { filePath: 'src/lock/machine.ts' });
    expect(result!.messages.map((m) => m.ruleId)).toContain('@typescript-eslint/no-restricted-imports');
  });
});
