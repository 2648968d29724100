// Validation of a raw config value (from YAML, or built in code by devConfig) against the schema table.
// Collects every problem instead of stopping at the first, so one run of `leasehold serve` shows them all.
import { NODE_ID_RULE, isNodeId } from './node-id.js';
import { isIPv4, isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { ConfigError, type ConfigIssue } from './errors.js';
import {
  MESSAGE_OVERHEAD_BYTES,
  AUTH_KEYS,
  NODE_KEYS,
  OPTIONAL_NODE_KEYS,
  SECTION_NAMES,
  TLS_KEYS,
  SETTINGS_SCHEMA,
  TOP_LEVEL_KEYS,
  type Rule,
  type SectionName,
} from './schema.js';
import {
  CLIENT_AUTH_MODES,
  type AuthSettings,
  type ClientAuthMode,
  type ClusterConfig,
  type ClusterSettings,
  type NodeConfig,
  type TlsSettings,
} from './types.js';

export type PathSegment = string | number;

export interface Position {
  line: number;
  column: number;
}

export interface ValidateContext {
  /** Names the config in messages: a file path or a label. */
  source: string;
  /** Relative dataDir paths resolve against this directory. */
  baseDir: string;
  /** Where a key path sits in the source text, when there is one. */
  locate?: (path: readonly PathSegment[]) => Position | undefined;
}

function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out === '' ? seg : `.${seg}`;
  return out;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  return `${typeof value} ${String(value)}`;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---- "did you mean" ----

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

const normalize = (s: string): string => s.toLowerCase().replace(/[-_\s]/g, '');

/** The closest known key, if it is close enough to be a typo (or the same word in another case style). */
function closestKey(key: string, candidates: readonly string[]): string | undefined {
  const k = normalize(key);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(k, normalize(c));
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  const allowed = Math.max(1, Math.floor(k.length / 4));
  return bestDistance <= allowed ? best : undefined;
}

/** Where else a misplaced key lives, e.g. `minTtlMs` under raft: -> `lock.minTtlMs`. */
function elsewhere(key: string, except: SectionName | null): string | undefined {
  for (const section of SECTION_NAMES) {
    if (section === except) continue;
    const match = closestKey(key, Object.keys(SETTINGS_SCHEMA[section]));
    if (match !== undefined && normalize(match) === normalize(key)) return `${section}.${match}`;
  }
  return undefined;
}

function unknownKeyMessage(key: string, known: readonly string[], section: SectionName | null): string {
  const close = closestKey(key, known);
  if (close !== undefined) return `unknown key (did you mean ${close}?)`;
  const other = elsewhere(key, section);
  if (other !== undefined) return `unknown key here (did you mean ${other}?)`;
  return `unknown key (expected one of: ${known.join(', ')})`;
}

// ---- addresses ----

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

export interface HostPort {
  /** Without brackets for IPv6. */
  host: string;
  port: number;
}

/** Splits `host:port` (`[v6]:port` for IPv6). Returns a reason string when it is not a usable address. */
export function parseAddress(address: string): HostPort | string {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):([0-9]+)$/.exec(address);
  if (!m) {
    return isIPv6(address)
      ? `IPv6 addresses need brackets and a port, e.g. [${address}]:7001`
      : `expected host:port (e.g. 127.0.0.1:7001), got ${JSON.stringify(address)}`;
  }
  const host = m[1] ?? m[2]!;
  if (m[1] !== undefined && !isIPv6(host)) return `${JSON.stringify(host)} in brackets is not an IPv6 address`;
  if (m[2] !== undefined && !isIPv4(host) && !HOSTNAME.test(host)) return `${JSON.stringify(host)} is not a valid host name or IP address`;
  const port = Number(m[3]);
  if (!(port >= 1 && port <= 65535)) return `port ${m[3]} is out of range 1-65535`;
  return { host, port };
}

/** Hosts that certainly name the same machine compare equal (for the shared-dataDir check). */
function machineOf(host: string): string {
  const h = host.toLowerCase();
  if (h === 'localhost' || h === '::1' || /^127\./.test(h)) return 'loopback';
  return h;
}

function resolveDir(dir: string, baseDir: string): string {
  if (dir === '~' || dir.startsWith('~/')) return join(homedir(), dir.slice(1));
  return isAbsolute(dir) ? resolve(dir) : resolve(baseDir, dir);
}

// ---- the validator ----

class Validator {
  readonly issues: ConfigIssue[] = [];
  constructor(private readonly ctx: ValidateContext) {}

  report(path: readonly PathSegment[], message: string): void {
    const pos = this.ctx.locate?.(path);
    this.issues.push({ path: formatPath(path), message, ...(pos ? { line: pos.line, column: pos.column } : {}) });
  }

  checkKeys(value: Record<string, unknown>, path: readonly PathSegment[], known: readonly string[], section: SectionName | null): void {
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) this.report([...path, key], unknownKeyMessage(key, known, section));
    }
  }

  setting(section: SectionName, key: string, rule: Rule, value: unknown): unknown {
    const path = [section, key];
    if (value === undefined) return rule.default;
    switch (rule.kind) {
      case 'int':
        if (typeof value !== 'number' || !Number.isInteger(value)) {
          const hint = typeof value === 'string' && /^[0-9_]+$/.test(value) ? ' (write digits only, no quotes or _)' : '';
          this.report(path, `expected an integer, got ${describe(value)}${hint}`);
          return rule.default;
        }
        if (value < rule.min || value > rule.max) {
          this.report(path, `must be between ${rule.min} and ${rule.max}, got ${value}`);
          return rule.default;
        }
        return value;
      case 'bool':
        if (typeof value !== 'boolean') {
          this.report(path, `expected true or false, got ${describe(value)}`);
          return rule.default;
        }
        return value;
      case 'enum':
        if (typeof value !== 'string' || !rule.values.includes(value)) {
          this.report(path, `expected one of ${rule.values.join(', ')}; got ${describe(value)}`);
          return rule.default;
        }
        return value;
      case 'address': {
        if (value === null || value === '') return null;
        if (typeof value !== 'string') {
          this.report(path, `expected host:port (e.g. 127.0.0.1:9464), or nothing to leave it off; got ${describe(value)}`);
          return rule.default;
        }
        const parsed = parseAddress(value);
        if (typeof parsed === 'string') {
          this.report(path, parsed);
          return rule.default;
        }
        return value;
      }
    }
  }

  section<S extends SectionName>(name: S, value: unknown): ClusterSettings[S] {
    const rules = SETTINGS_SCHEMA[name] as Record<string, Rule>;
    const raw: Record<string, unknown> = {};
    if (value === undefined || value === null) {
      // `raft:` with nothing under it: every default.
    } else if (!isMapping(value)) {
      this.report([name], `expected a mapping of settings, got ${describe(value)}`);
    } else {
      this.checkKeys(value, [name], Object.keys(rules), name);
      Object.assign(raw, value);
    }
    const out = Object.fromEntries(Object.entries(rules).map(([key, rule]) => [key, this.setting(name, key, rule, raw[key])]));
    return Object.freeze(out) as unknown as ClusterSettings[S];
  }

  nodes(value: unknown): NodeConfig[] {
    if (value === undefined) {
      this.report(['nodes'], 'missing: the config must list the cluster members as `nodes:` entries of { id, address, dataDir }');
      return [];
    }
    if (value === null || (Array.isArray(value) && value.length === 0)) {
      this.report(['nodes'], 'the list is empty: a cluster needs at least one node (three or more to survive a failure)');
      return [];
    }
    if (!Array.isArray(value)) {
      this.report(['nodes'], `expected a list of { id, address, dataDir }, got ${describe(value)}`);
      return [];
    }
    const nodes: NodeConfig[] = [];
    const seenIds = new Map<string, number>();
    const seenAddresses = new Map<string, number>();
    const seenDirs = new Map<string, number>();
    value.forEach((entry, i) => {
      const path = ['nodes', i];
      if (!isMapping(entry)) {
        this.report(path, `expected a mapping { id, address, dataDir }, got ${describe(entry)}`);
        return;
      }
      this.checkKeys(entry, path, [...NODE_KEYS, ...OPTIONAL_NODE_KEYS], null);
      const text = (key: string, optional = false): string | undefined => {
        const v = entry[key];
        if (optional && v === undefined) return undefined;
        if (v === undefined || v === null) {
          this.report([...path, key], 'missing required key');
          return undefined;
        }
        if (typeof v !== 'string') {
          const hint = typeof v === 'number' ? ` (quote it: "${v}")` : '';
          this.report([...path, key], `expected a string, got ${describe(v)}${hint}`);
          return undefined;
        }
        if (v.trim() === '') {
          this.report([...path, key], 'must not be empty');
          return undefined;
        }
        return v;
      };
      const id = text('id');
      const address = text('address');
      const dataDir = text('dataDir');
      const peerAddress = text('peerAddress', true);
      // A node's address or peerAddress, parsed; each must differ from every other address in the config.
      const claimAddress = (key: 'address' | 'peerAddress', address: string): HostPort | undefined => {
        const parsed = parseAddress(address);
        if (typeof parsed === 'string') {
          this.report([...path, key], parsed);
          return undefined;
        }
        const canonical = `${parsed.host.toLowerCase()}:${parsed.port}`;
        if (seenAddresses.has(canonical)) {
          this.report([...path, key], `duplicate address ${address} (also nodes[${seenAddresses.get(canonical)}])`);
        } else {
          seenAddresses.set(canonical, i);
        }
        return parsed;
      };
      if (peerAddress !== undefined) claimAddress('peerAddress', peerAddress);

      if (id !== undefined) {
        if (!isNodeId(id)) {
          this.report([...path, 'id'], `${JSON.stringify(id)} is not a valid node id: use ${NODE_ID_RULE}`);
        } else if (seenIds.has(id)) {
          this.report([...path, 'id'], `duplicate id ${id} (also nodes[${seenIds.get(id)}])`);
        } else {
          seenIds.set(id, i);
        }
      }
      const hostPort = address !== undefined ? claimAddress('address', address) : undefined;
      let resolvedDir: string | undefined;
      if (dataDir !== undefined) {
        resolvedDir = resolveDir(dataDir, this.ctx.baseDir);
        // Nodes on different machines may well use the same path; two nodes on one machine must not
        // share a LevelDB directory (the second would fail to lock it, or worse, share a log).
        if (hostPort !== undefined) {
          const where = `${machineOf(hostPort.host)}\u0000${resolvedDir}`;
          if (seenDirs.has(where)) {
            this.report(
              [...path, 'dataDir'],
              `${resolvedDir} is also the data directory of nodes[${seenDirs.get(where)}] on the same host`,
            );
          } else {
            seenDirs.set(where, i);
          }
        }
      }
      const optionalAddress = (key: 'listen' | 'metricsAddress', example: string): string | undefined => {
        const v = entry[key];
        if (v === undefined || v === null) return undefined;
        const parsed = typeof v === 'string' ? parseAddress(v) : `expected host:port, e.g. ${example}; got ${describe(v)}`;
        if (typeof parsed === 'string') {
          this.report([...path, key], parsed);
          return undefined;
        }
        return v as string;
      };
      const listen = optionalAddress('listen', '0.0.0.0:7001');
      const metricsAddress = optionalAddress('metricsAddress', '127.0.0.1:9464');
      const peerDialOverrides = this.dialOverrides(entry['peerDialOverrides'], [...path, 'peerDialOverrides'], id, peerAddress);
      const join = entry['join'];
      if (join !== undefined && join !== null && typeof join !== 'boolean')
        this.report([...path, 'join'], `expected true or false, got ${describe(join)}`);
      if (id !== undefined && address !== undefined && resolvedDir !== undefined) {
        nodes.push(
          Object.freeze({
            id,
            address,
            dataDir: resolvedDir,
            ...(peerAddress !== undefined ? { peerAddress } : {}),
            ...(listen !== undefined ? { listen } : {}),
            ...(metricsAddress !== undefined ? { metricsAddress } : {}),
            ...(peerDialOverrides !== undefined ? { peerDialOverrides } : {}),
            ...(join === true ? { join: true as const } : {}),
          }),
        );
      }
    });
    // One address serves a member's Raft and client traffic only without a peerAddress: an override for a
    // member with a separate peer listener would send one of the two to the wrong port.
    value.forEach((entry, i) => {
      const overrides = isMapping(entry) && isMapping(entry['peerDialOverrides']) ? Object.keys(entry['peerDialOverrides']) : [];
      for (const member of overrides) {
        const target = nodes.find((n) => n.id === member);
        if (target?.peerAddress !== undefined)
          this.report(
            ['nodes', i, 'peerDialOverrides', member],
            `${member} has a separate peerAddress; peerDialOverrides is for members that serve Raft and clients on one address`,
          );
      }
    });
    // The cluster bootstraps with the nodes not marked `join`: with none of them, nothing could start it.
    if (nodes.length > 0 && nodes.every((n) => n.join === true))
      this.report(
        ['nodes'],
        'every node has join: true; at least one must be an initial member (join: false or left out) to bootstrap the cluster',
      );
    return nodes;
  }

  /** nodes[].peerDialOverrides: { memberId: host:port }, never this node itself. */
  dialOverrides(
    value: unknown,
    path: readonly PathSegment[],
    selfId: string | undefined,
    selfPeerAddress: string | undefined,
  ): Readonly<Record<string, string>> | undefined {
    if (value === undefined || value === null) return undefined;
    if (!isMapping(value)) {
      this.report(path, `expected a mapping { memberId: host:port }, got ${describe(value)}`);
      return undefined;
    }
    if (selfPeerAddress !== undefined)
      this.report(path, 'not together with peerAddress: the overrides assume one address per member for Raft and clients');
    const out: Record<string, string> = {};
    for (const [member, address] of Object.entries(value)) {
      if (!isNodeId(member)) this.report([...path, member], `${JSON.stringify(member)} is not a valid node id`);
      else if (member === selfId) this.report([...path, member], 'a node does not dial itself');
      const parsed =
        typeof address === 'string' ? parseAddress(address) : `expected host:port, e.g. 127.0.0.1:7101; got ${describe(address)}`;
      if (typeof parsed === 'string') this.report([...path, member], parsed);
      else out[member] = address as string;
    }
    return Object.freeze(out);
  }

  /** `tls:` — absent or null means plaintext; when given, cert, key and ca are required paths. */
  tls(value: unknown): TlsSettings | null {
    if (value === undefined || value === null) return null;
    if (!isMapping(value)) {
      this.report(['tls'], `expected a mapping { cert, key, ca, clientAuth }, got ${describe(value)}`);
      return null;
    }
    this.checkKeys(value, ['tls'], TLS_KEYS, null);
    const path = (key: string): string => {
      const v = value[key];
      if (typeof v !== 'string' || v.trim() === '') {
        // ca is required too: peers verify each other against it (and clients' certificates with clientAuth).
        this.report(
          ['tls', key],
          v === undefined || v === null ? 'missing required key (a PEM file path)' : `expected a PEM file path, got ${describe(v)}`,
        );
        return '';
      }
      return resolveDir(v, this.ctx.baseDir);
    };
    const cert = path('cert');
    const key = path('key');
    const ca = path('ca');
    let clientAuth: ClientAuthMode = 'none';
    const mode = value['clientAuth'];
    if (mode !== undefined) {
      if (typeof mode !== 'string' || !(CLIENT_AUTH_MODES as readonly string[]).includes(mode)) {
        this.report(['tls', 'clientAuth'], `expected one of ${CLIENT_AUTH_MODES.join(', ')}; got ${describe(mode)}`);
      } else {
        clientAuth = mode as ClientAuthMode;
      }
    }
    return Object.freeze({ cert, key, ca, clientAuth });
  }

  auth(value: unknown, tls: TlsSettings | null): AuthSettings {
    let ownerBinding = false;
    let admins: string[] = [];
    if (value !== undefined && value !== null) {
      if (!isMapping(value)) {
        this.report(['auth'], `expected a mapping { ownerBinding, admins }, got ${describe(value)}`);
      } else {
        this.checkKeys(value, ['auth'], AUTH_KEYS, null);
        const v = value['ownerBinding'];
        if (v !== undefined && typeof v !== 'boolean') this.report(['auth', 'ownerBinding'], `expected true or false, got ${describe(v)}`);
        else ownerBinding = v === true;
        const a = value['admins'];
        if (a !== undefined && a !== null) {
          if (!Array.isArray(a) || a.some((x) => typeof x !== 'string' || x === ''))
            this.report(['auth', 'admins'], `expected a list of certificate CNs (non-empty strings), got ${describe(a)}`);
          else admins = a as string[];
        }
      }
    }
    // Owner binding compares the owner with the certificate CN: without a required, verified client
    // certificate there is no CN to compare with, and the option would protect nothing.
    if (ownerBinding && tls?.clientAuth !== 'require') {
      this.report(
        ['auth', 'ownerBinding'],
        `needs tls.clientAuth: require (got ${tls === null ? 'no tls section' : `tls.clientAuth: ${tls.clientAuth}`}): the owner is checked against the client certificate's CN`,
      );
    }
    return Object.freeze({ ownerBinding, admins: Object.freeze(admins) });
  }

  /** Rules that involve two keys; reported at the key a user would change. */
  crossChecks(s: ClusterSettings, raw: Record<string, unknown>): void {
    const given = (section: SectionName, key: string): boolean =>
      isMapping(raw[section]) && (raw[section] as Record<string, unknown>)[key] !== undefined;
    if (s.raft.heartbeatTicks >= s.raft.electionTicks) {
      const at: [SectionName, string] = given('raft', 'heartbeatTicks') ? ['raft', 'heartbeatTicks'] : ['raft', 'electionTicks'];
      this.report(
        at,
        `raft.heartbeatTicks (${s.raft.heartbeatTicks}) must be less than raft.electionTicks (${s.raft.electionTicks}), or followers time out between heartbeats`,
      );
    }
    if (!s.raft.preVote && !s.raft.checkQuorum) {
      // With neither, nothing stops a node that was removed (or cut off) and comes back with a higher
      // term from deposing a healthy leader over and over (a livelock the Raft simulator can reach):
      // Pre-Vote makes it ask first, CheckQuorum gives followers the leader lease to ignore it.
      const at: [SectionName, string] = given('raft', 'checkQuorum') ? ['raft', 'checkQuorum'] : ['raft', 'preVote'];
      this.report(
        at,
        'raft.preVote and raft.checkQuorum cannot both be false: a node rejoining with a higher term (a removed node, one back from a partition) could then depose a healthy leader again and again; keep at least one on (both, by default)',
      );
    }
    if (s.lock.minTtlMs > s.lock.maxTtlMs) {
      const at: [SectionName, string] = given('lock', 'minTtlMs') ? ['lock', 'minTtlMs'] : ['lock', 'maxTtlMs'];
      this.report(at, `lock.minTtlMs (${s.lock.minTtlMs}) must not exceed lock.maxTtlMs (${s.lock.maxTtlMs})`);
    }
    for (const key of ['maxBytesPerMessage', 'snapshotChunkBytes'] as const) {
      const limit = s.limits.maxMessageBytes - MESSAGE_OVERHEAD_BYTES;
      if (s.raft[key] > limit) {
        const at: [SectionName, string] = given('raft', key) ? ['raft', key] : ['limits', 'maxMessageBytes'];
        this.report(
          at,
          `raft.${key} (${s.raft[key]}) must leave ${MESSAGE_OVERHEAD_BYTES} bytes of room below limits.maxMessageBytes (${s.limits.maxMessageBytes}), i.e. be at most ${limit}`,
        );
      }
    }
  }
}

/** Validates a raw config value (parsed YAML, or an object built in code) and applies the defaults. */
export function validateConfig(raw: unknown, ctx: ValidateContext): ClusterConfig {
  const v = new Validator(ctx);
  if (!isMapping(raw)) {
    const what = raw === null || raw === undefined ? 'an empty document' : describe(raw);
    v.report([], `expected a mapping with a \`nodes:\` list at the top level, got ${what}`);
    throw new ConfigError(ctx.source, v.issues);
  }
  v.checkKeys(raw, [], TOP_LEVEL_KEYS, null);
  const nodes = v.nodes(raw['nodes']);
  const settings: ClusterSettings = {
    raft: v.section('raft', raw['raft']),
    lock: v.section('lock', raw['lock']),
    limits: v.section('limits', raw['limits']),
    watch: v.section('watch', raw['watch']),
    log: v.section('log', raw['log']),
    metrics: v.section('metrics', raw['metrics']),
  };
  v.crossChecks(settings, raw);
  const tls = v.tls(raw['tls']);
  const auth = v.auth(raw['auth'], tls);
  if (v.issues.length > 0) throw new ConfigError(ctx.source, v.issues);
  return Object.freeze({ nodes: Object.freeze(nodes), ...settings, tls, auth, source: ctx.source });
}
