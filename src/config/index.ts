// Cluster configuration: YAML load + validation with messages that name the key, and the dev builder. Who
// may import it: the server (a node's settings), the CLI (serve, dev) and tests. It imports only Node and
// the yaml package, nothing of the rest of src/.
export { devConfig, devConfigYaml, DEV_NODE_COUNT } from './dev.js';
export { ConfigError, type ConfigIssue } from './errors.js';
export { initialMembers } from './initial-members.js';
export { findNode, loadConfig, parseConfig, stringifyConfig, type ParseOptions } from './load.js';
export { DEFAULT_SETTINGS, LOCK_WIRE_CAPS, MESSAGE_OVERHEAD_BYTES, SETTINGS_SCHEMA } from './schema.js';
export * from './types.js';
export { parseAddress, type HostPort } from './validate.js';
