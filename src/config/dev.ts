import { resolve } from 'node:path';
import { stringify } from 'yaml';
import { ConfigError } from './errors.js';
import type { ClusterConfig, SettingsOverrides } from './types.js';
import { validateConfig } from './validate.js';

export const DEV_NODE_COUNT = 3;

function checkBasePort(basePort: number): void {
  if (!Number.isInteger(basePort) || basePort < 1 || basePort + DEV_NODE_COUNT - 1 > 65535) {
    throw new ConfigError('<dev>', [{ path: 'basePort', message: `must be an integer in 1-${65536 - DEV_NODE_COUNT}, got ${basePort}` }]);
  }
}

function devNodes(basePort: number, dataDirOf: (id: string) => string) {
  return Array.from({ length: DEV_NODE_COUNT }, (_, i) => ({
    id: `n${i + 1}`,
    address: `127.0.0.1:${basePort + i}`,
    dataDir: dataDirOf(`n${i + 1}`),
  }));
}

/**
 * A local cluster on loopback for `leasehold dev` and tests: nodes n1..n3 at 127.0.0.1:basePort..+2,
 * data under baseDir/n1..n3, every setting at its default unless overridden. Validated like a file.
 */
export function devConfig(baseDir: string, basePort: number, overrides: SettingsOverrides = {}): ClusterConfig {
  checkBasePort(basePort);
  const root = resolve(baseDir);
  const nodes = devNodes(basePort, (id) => resolve(root, id));
  return validateConfig({ nodes, ...overrides }, { source: '<dev>', baseDir: root });
}

/**
 * The same cluster as a YAML file meant to sit in the data directory itself: dataDir entries are
 * relative (./n1, ...), so they resolve next to the file wherever it is. Only the given overrides are
 * written; everything else stays at the defaults of the running build.
 */
export function devConfigYaml(basePort: number, overrides: SettingsOverrides = {}): string {
  checkBasePort(basePort);
  const doc = { nodes: devNodes(basePort, (id) => `./${id}`), ...overrides };
  // Validate what we are about to write, so a bad override fails here rather than in three children.
  validateConfig(doc, { source: '<dev>', baseDir: '/' });
  return (
    '# A local leasehold cluster written by `leasehold dev`. Every node reads this file;\n' +
    '# see cluster.example.yaml for all settings and their defaults.\n' +
    stringify(doc)
  );
}
