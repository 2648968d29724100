import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  DEFAULT_SETTINGS,
  devConfig,
  devConfigYaml,
  findNode,
  initialMembers,
  LOCK_WIRE_CAPS,
  loadConfig,
  parseAddress,
  parseConfig,
  SETTINGS_SCHEMA,
  stringifyConfig,
} from '../../../src/config/index.js';
import { WIRE_LIMITS } from '../../../src/lock/commands.js';
import { clusterIdFor } from '../../../src/server/assembly/identity.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const EXAMPLE = join(REPO, 'cluster.example.yaml');

const MINIMAL = `
nodes:
  - id: n1
    address: 127.0.0.1:7001
    dataDir: /var/lib/leasehold/n1
  - id: n2
    address: 127.0.0.1:7002
    dataDir: /var/lib/leasehold/n2
  - id: n3
    address: 127.0.0.1:7003
    dataDir: /var/lib/leasehold/n3
`;

/** MINIMAL plus extra YAML appended at the top level. */
const withExtra = (extra: string): string => `${MINIMAL}${extra}\n`;

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

const parseText = (text: string) => parseConfig(text, '/etc/leasehold/cluster.yaml');
const errorOf = (text: string) => configError(() => parseText(text));

describe('parseConfig: the smallest valid file and the defaults', () => {
  it('a nodes: list alone is a complete config, every setting at its default', () => {
    const config = parseText(MINIMAL);
    expect(config.nodes).toEqual([
      { id: 'n1', address: '127.0.0.1:7001', dataDir: '/var/lib/leasehold/n1' },
      { id: 'n2', address: '127.0.0.1:7002', dataDir: '/var/lib/leasehold/n2' },
      { id: 'n3', address: '127.0.0.1:7003', dataDir: '/var/lib/leasehold/n3' },
    ]);
    expect(config.source).toBe('/etc/leasehold/cluster.yaml');
    expect({
      raft: config.raft,
      lock: config.lock,
      limits: config.limits,
      watch: config.watch,
      log: config.log,
      metrics: config.metrics,
    }).toEqual(DEFAULT_SETTINGS);
  });

  it('has the documented defaults', () => {
    expect(DEFAULT_SETTINGS).toEqual({
      raft: {
        tickMs: 50,
        electionTicks: 10,
        heartbeatTicks: 2,
        preVote: true,
        checkQuorum: true,
        maxInflight: 64,
        maxEntriesPerMessage: 256,
        maxBytesPerMessage: 1048576,
        snapshotEvery: 10000,
        snapshotChunkBytes: 1048576,
      },
      lock: {
        minTtlMs: 100,
        maxTtlMs: 3600000,
        dedupWindowMs: 600000,
        maxWaitMs: 300000,
        maxLockDelayMs: 60000,
        maxValueBytes: 1024,
        checkpointIdleMs: 1000,
        freeKeyRetentionMs: 600000,
      },
      limits: {
        maxMessageBytes: 4194304,
        peerQueueMessages: 10000,
        maxKeyBytes: 512,
        maxOwnerBytes: 256,
        maxWaitersPerKey: 10000,
        maxWaiters: 100000,
        maxHeldPerOwner: 100000,
        maxHeld: 1000000,
        maxKeys: 1000000,
        maxSessions: 100000,
        maxHoldsPerSession: 10000,
      },
      watch: { historyEvents: 10000, maxWatchers: 10000 },
      log: { level: 'info', format: 'auto' },
      metrics: { address: null, openScrape: false, loopLagResolutionMs: 50 },
    });
  });

  it('keeps given settings and defaults the rest of their section; an empty section is all defaults', () => {
    const config = parseText(withExtra('raft:\n  tickMs: 50\n  preVote: false\nlock:\nlog: { level: debug }'));
    expect(config.raft).toEqual({ ...DEFAULT_SETTINGS.raft, tickMs: 50, preVote: false });
    expect(config.lock).toEqual(DEFAULT_SETTINGS.lock);
    expect(config.log.level).toBe('debug');
  });

  it('is deeply frozen', () => {
    const config = parseText(MINIMAL);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.nodes)).toBe(true);
    expect(Object.isFrozen(config.nodes[0])).toBe(true);
    expect(Object.isFrozen(config.raft)).toBe(true);
  });

  it('resolves a relative dataDir against the config file directory, not the working directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-config-'));
    mkdirSync(join(dir, 'etc'));
    const file = join(dir, 'etc', 'cluster.yaml');
    writeFileSync(
      file,
      'nodes:\n  - { id: a, address: "localhost:7001", dataDir: ./data/a }\n  - { id: b, address: "localhost:7002", dataDir: ../b }\n  - { id: c, address: "localhost:7003", dataDir: "~/lh/c" }\n',
    );
    const config = loadConfig(file);
    expect(config.nodes.map((n) => n.dataDir)).toEqual([join(dir, 'etc', 'data', 'a'), join(dir, 'b'), join(homedir(), 'lh', 'c')]);
    expect(parseConfig('nodes: [{ id: a, address: "h:1", dataDir: d }]', 'x.yaml', { baseDir: '/srv' }).nodes[0]!.dataDir).toBe('/srv/d');
  });

  it('accepts host names, IPv4 and bracketed IPv6 addresses; the same dataDir on different hosts is fine', () => {
    const config = parseText(`
nodes:
  - { id: a, address: "db-1.internal:7001", dataDir: /var/lib/leasehold }
  - { id: b, address: "10.0.0.2:7001", dataDir: /var/lib/leasehold }
  - { id: c, address: "[fd00::3]:7001", dataDir: /var/lib/leasehold }
`);
    expect(config.nodes.map((n) => n.address)).toEqual(['db-1.internal:7001', '10.0.0.2:7001', '[fd00::3]:7001']);
  });

  it('a single-node cluster is valid', () => {
    expect(parseText('nodes: [{ id: solo, address: "127.0.0.1:7001", dataDir: /d }]').nodes).toHaveLength(1);
  });
});

describe('cluster.example.yaml', () => {
  it('parses, and shows every setting at its default', () => {
    const config = loadConfig(EXAMPLE);
    expect(config.nodes.map((n) => [n.id, n.address, n.dataDir])).toEqual([
      ['n1', '127.0.0.1:7001', join(REPO, 'data', 'n1')],
      ['n2', '127.0.0.1:7002', join(REPO, 'data', 'n2')],
      ['n3', '127.0.0.1:7003', join(REPO, 'data', 'n3')],
    ]);
    expect({
      raft: config.raft,
      lock: config.lock,
      limits: config.limits,
      watch: config.watch,
      log: config.log,
      metrics: config.metrics,
    }).toEqual(DEFAULT_SETTINGS);
  });

  it('documents every key of the schema, written out explicitly (none left to defaults)', () => {
    const raw = parseYaml(readFileSync(EXAMPLE, 'utf8')) as Record<string, Record<string, unknown>>;
    for (const [section, rules] of Object.entries(SETTINGS_SCHEMA)) {
      expect(Object.keys(raw[section] ?? {}).sort(), section).toEqual(Object.keys(rules).sort());
    }
    expect(Object.keys(raw).sort()).toEqual(['limits', 'lock', 'log', 'metrics', 'nodes', 'raft', 'watch']);
    // tls, auth and peerAddress are off by default, so the example shows them commented out, in full.
    const text = readFileSync(EXAMPLE, 'utf8');
    for (const line of [
      '# tls:',
      '#   cert:',
      '#   key:',
      '#   ca:',
      '#   clientAuth: require',
      '# auth:',
      '#   ownerBinding: true',
      '#   admins: [',
      '#   peerAddress:',
    ])
      expect(text).toContain(line);
  });
});

describe('parseConfig errors name the key path (and the line)', () => {
  it('a mistyped key, with a suggestion and its position', () => {
    const e = errorOf(withExtra('raft:\n  electonTicks: 20'));
    expect(e.issues).toHaveLength(1);
    expect(e.path).toBe('raft.electonTicks');
    expect(e.issues[0]).toMatchObject({ line: 13, column: 3 });
    expect(e.message).toBe('/etc/leasehold/cluster.yaml:13:3: raft.electonTicks: unknown key (did you mean electionTicks?)');
  });

  it('a snake_case or wrongly cased key suggests the real one', () => {
    expect(errorOf(withExtra('raft:\n  election_ticks: 20')).message).toContain(
      'raft.election_ticks: unknown key (did you mean electionTicks?)',
    );
    expect(errorOf(withExtra('lock:\n  MinTTLms: 20')).message).toContain('lock.MinTTLms: unknown key (did you mean minTtlMs?)');
  });

  it('a key in the wrong section points to the right one', () => {
    expect(errorOf(withExtra('raft:\n  maxTtlMs: 20')).message).toContain('raft.maxTtlMs: unknown key here (did you mean lock.maxTtlMs?)');
  });

  it('an unknown key with nothing close lists what is allowed', () => {
    expect(errorOf(withExtra('limits:\n  colour: blue')).message).toContain(
      'limits.colour: unknown key (expected one of: maxMessageBytes, peerQueueMessages, maxKeyBytes, maxOwnerBytes, maxWaitersPerKey, maxWaiters, maxHeldPerOwner, maxHeld, maxKeys, maxSessions, maxHoldsPerSession)',
    );
    expect(errorOf(withExtra('raftt:\n  tickMs: 5')).message).toContain('raftt: unknown key (did you mean raft?)');
    expect(errorOf(withExtra('tickMs: 5')).message).toContain('tickMs: unknown key here (did you mean raft.tickMs?)');
  });

  it('wrong types', () => {
    const e = errorOf(
      withExtra('raft:\n  tickMs: fast\n  preVote: yes\n  maxInflight: 1.5\nlog:\n  level: loud\nlimits:\n  maxKeyBytes: "100"'),
    );
    expect(e.issues.map((i) => `${i.path}: ${i.message}`)).toEqual([
      'raft.tickMs: expected an integer, got string "fast"',
      'raft.preVote: expected true or false, got string "yes"',
      'raft.maxInflight: expected an integer, got number 1.5',
      'limits.maxKeyBytes: expected an integer, got string "100" (write digits only, no quotes or _)',
      'log.level: expected one of fatal, error, warn, info, debug, trace, silent; got string "loud"',
    ]);
    expect(errorOf(withExtra('raft: 5')).message).toContain('raft: expected a mapping of settings, got number 5');
    expect(errorOf(withExtra('raft:\n  tickMs:')).message).toContain('raft.tickMs: expected an integer, got nothing');
  });

  it('values out of range', () => {
    expect(errorOf(withExtra('raft:\n  tickMs: 0')).message).toContain('raft.tickMs: must be between 1 and 60000, got 0');
    expect(errorOf(withExtra('limits:\n  maxKeyBytes: 1024')).message).toContain('limits.maxKeyBytes: must be between 1 and 512, got 1024');
    expect(errorOf(withExtra('lock:\n  maxWaitMs: -1')).message).toContain('lock.maxWaitMs: must be between 0 and');
  });

  it('settings that contradict each other', () => {
    expect(errorOf(withExtra('raft:\n  heartbeatTicks: 10')).message).toContain(
      'raft.heartbeatTicks: raft.heartbeatTicks (10) must be less than raft.electionTicks (10)',
    );
    expect(errorOf(withExtra('raft:\n  electionTicks: 2\n  heartbeatTicks: 2')).path).toBe('raft.heartbeatTicks');
    // Pre-Vote and CheckQuorum both off: refused at the key given, with the reason (issue 22 item 3).
    const both = errorOf(withExtra('raft:\n  preVote: false\n  checkQuorum: false'));
    expect(both.path).toBe('raft.checkQuorum');
    expect(both.message).toContain('raft.preVote and raft.checkQuorum cannot both be false');
    expect(errorOf(withExtra('raft:\n  preVote: false\n  checkQuorum: false')).message).toMatch(/depose a healthy leader/);
    expect(parseText(withExtra('raft:\n  preVote: false')).raft.checkQuorum).toBe(true);
    expect(parseText(withExtra('raft:\n  checkQuorum: false')).raft.preVote).toBe(true);
    expect(errorOf(withExtra('lock:\n  minTtlMs: 5000\n  maxTtlMs: 1000')).path).toBe('lock.minTtlMs');
    expect(errorOf(withExtra('limits:\n  maxMessageBytes: 1048576')).issues.map((i) => i.path)).toEqual([
      'limits.maxMessageBytes',
      'limits.maxMessageBytes',
    ]);
    expect(errorOf(withExtra('raft:\n  snapshotChunkBytes: 4194304')).message).toContain(
      'raft.snapshotChunkBytes: raft.snapshotChunkBytes (4194304) must leave 65536 bytes of room below limits.maxMessageBytes (4194304)',
    );
  });

  it('a duplicate node id or address names both entries', () => {
    const e = errorOf(`
nodes:
  - { id: n1, address: "127.0.0.1:7001", dataDir: /d/1 }
  - { id: n2, address: "127.0.0.1:7001", dataDir: /d/2 }
  - { id: n1, address: "127.0.0.1:7003", dataDir: /d/3 }
`);
    expect(e.issues.map((i) => `${i.path}: ${i.message}`)).toEqual([
      'nodes[1].address: duplicate address 127.0.0.1:7001 (also nodes[0])',
      'nodes[2].id: duplicate id n1 (also nodes[0])',
    ]);
    expect(e.message).toContain('/etc/leasehold/cluster.yaml:4:');
    expect(errorOf('nodes:\n  - { id: a, address: "Host:1", dataDir: /1 }\n  - { id: b, address: "host:1", dataDir: /2 }').path).toBe(
      'nodes[1].address',
    );
  });

  it('two nodes on one host sharing a dataDir', () => {
    const e = errorOf(`
nodes:
  - { id: a, address: "127.0.0.1:7001", dataDir: /d }
  - { id: b, address: "localhost:7002", dataDir: /d/../d }
`);
    expect(e.message).toContain('nodes[1].dataDir: /d is also the data directory of nodes[0] on the same host');
  });

  it('a missing, empty or mistyped node field', () => {
    const e = errorOf(`
nodes:
  - { id: n1, address: "127.0.0.1:7001" }
  - { id: 2, address: "127.0.0.1:7002", dataDir: "" }
  - { id: "n 3", address: "127.0.0.1:7003", dataDir: /d, data_dir: /e }
  - just-a-string
`);
    expect(e.issues.map((i) => `${i.path}: ${i.message}`)).toEqual([
      'nodes[0].dataDir: missing required key',
      'nodes[1].id: expected a string, got number 2 (quote it: "2")',
      'nodes[1].dataDir: must not be empty',
      'nodes[2].data_dir: unknown key (did you mean dataDir?)',
      `nodes[2].id: "n 3" is not a valid node id: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`,
      'nodes[3]: expected a mapping { id, address, dataDir }, got string "just-a-string"',
    ]);
  });

  it('bad addresses', () => {
    const addressError = (address: string) =>
      errorOf(`nodes:\n  - { id: a, address: ${JSON.stringify(address)}, dataDir: /d }`).issues[0]!.message;
    expect(addressError('localhost')).toBe('expected host:port (e.g. 127.0.0.1:7001), got "localhost"');
    expect(addressError('localhost:0')).toBe('port 0 is out of range 1-65535');
    expect(addressError('localhost:65536')).toBe('port 65536 is out of range 1-65535');
    expect(addressError('localhost:http')).toBe('expected host:port (e.g. 127.0.0.1:7001), got "localhost:http"');
    expect(addressError('bad_host:7001')).toBe('"bad_host" is not a valid host name or IP address');
    expect(addressError('::1')).toBe('IPv6 addresses need brackets and a port, e.g. [::1]:7001');
    expect(addressError('[db]:7001')).toBe('"db" in brackets is not an IPv6 address');
    expect(addressError('http://h:1')).toMatch(/^expected host:port/);
  });

  it('an empty nodes list, a missing one, an empty document, a list at the top', () => {
    expect(errorOf('nodes: []').message).toContain('nodes: the list is empty');
    expect(errorOf('nodes:').message).toContain('nodes: the list is empty');
    expect(errorOf('raft:\n  tickMs: 10\n').message).toContain('nodes: missing');
    expect(errorOf('').message).toBe(
      '/etc/leasehold/cluster.yaml: expected a mapping with a `nodes:` list at the top level, got an empty document',
    );
    expect(errorOf('- a\n- b\n').message).toContain('got a list');
    expect(errorOf('nodes: { id: a }').message).toContain('nodes: expected a list of { id, address, dataDir }, got a mapping');
  });

  it('reports every problem at once', () => {
    const e = errorOf(withExtra('raft:\n  electonTicks: 1\n  tickMs: -5\nlock:\n  minTtlMs: x'));
    expect(e.issues.map((i) => i.path)).toEqual(['raft.electonTicks', 'raft.tickMs', 'lock.minTtlMs']);
    expect(e.message.split('\n')).toHaveLength(3);
  });

  it('YAML syntax errors and duplicate keys, with line numbers', () => {
    const dup = errorOf(withExtra('raft:\n  tickMs: 1\n  tickMs: 2'));
    expect(dup.message).toBe('/etc/leasehold/cluster.yaml:14:3: duplicate key (each key may appear once per mapping)');
    const bad = errorOf('nodes: [ { id: a\n');
    expect(bad.message).toMatch(/^\/etc\/leasehold\/cluster\.yaml:\d+:\d+: invalid YAML: /);
    expect(errorOf('a: 1\n---\nb: 2\n').message).toContain('invalid YAML');
  });

  it('aliases resolve like the values they point to', () => {
    const config = parseText(`
nodes:
  - { id: a, address: "h1:1", dataDir: &dir /srv/leasehold }
  - { id: b, address: "h2:1", dataDir: *dir }
raft: &r { tickMs: 7 }
`);
    expect(config.nodes.map((n) => n.dataDir)).toEqual(['/srv/leasehold', '/srv/leasehold']);
    expect(config.raft.tickMs).toBe(7);
  });
});

describe('loadConfig, findNode, stringifyConfig', () => {
  it('a missing file is a ConfigError naming it', () => {
    const e = configError(() => loadConfig('/nonexistent/cluster.yaml'));
    expect(e.message).toBe('/nonexistent/cluster.yaml: cannot read the config file: no such file');
  });

  it('findNode returns the entry or lists the ids there are', () => {
    const config = parseText(MINIMAL);
    expect(findNode(config, 'n2').address).toBe('127.0.0.1:7002');
    expect(configError(() => findNode(config, 'n9')).message).toBe(
      '/etc/leasehold/cluster.yaml: nodes: no node with id "n9" (the config has n1, n2, n3)',
    );
  });

  it('stringifyConfig writes YAML that parses back to an equal config', () => {
    const config = parseText(withExtra('raft:\n  tickMs: 25\nlog:\n  level: warn'));
    const again = parseConfig(stringifyConfig(config), config.source);
    expect(again).toEqual(config);
  });
});

describe('devConfig', () => {
  it('builds a 3-node loopback cluster with data under baseDir', () => {
    const config = devConfig('/tmp/lh', 7100);
    expect(config.nodes).toEqual([
      { id: 'n1', address: '127.0.0.1:7100', dataDir: '/tmp/lh/n1' },
      { id: 'n2', address: '127.0.0.1:7101', dataDir: '/tmp/lh/n2' },
      { id: 'n3', address: '127.0.0.1:7102', dataDir: '/tmp/lh/n3' },
    ]);
    expect(config.raft).toEqual(DEFAULT_SETTINGS.raft);
    expect(config.source).toBe('<dev>');
    expect(devConfig('data', 7001).nodes[0]!.dataDir).toBe(resolve('data', 'n1'));
  });

  it('takes validated per-section overrides', () => {
    const fast = devConfig('/tmp/lh', 7100, { raft: { tickMs: 10, electionTicks: 5 }, log: { level: 'silent' } });
    expect(fast.raft).toEqual({ ...DEFAULT_SETTINGS.raft, tickMs: 10, electionTicks: 5 });
    expect(fast.log.level).toBe('silent');
    expect(configError(() => devConfig('/tmp/lh', 7100, { raft: { heartbeatTicks: 50 } })).path).toBe('raft.heartbeatTicks');
  });

  it('round-trips through YAML (what `leasehold dev` could hand to each process)', () => {
    const config = devConfig('/tmp/lh', 7100);
    expect(parseConfig(stringifyConfig(config), '<dev>')).toEqual(config);
  });

  it('devConfigYaml: a file for the data directory itself, relative dataDirs resolving next to it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'leasehold-dev-'));
    const file = join(dir, 'cluster.yaml');
    writeFileSync(file, devConfigYaml(7001));
    const fromFile = loadConfig(file);
    expect({ ...fromFile, source: '<dev>' }).toEqual(devConfig(dir, 7001));
    const text = devConfigYaml(7001, { raft: { tickMs: 20 } });
    expect(text).toContain('dataDir: ./n1');
    expect(parseConfig(text, file).raft.tickMs).toBe(20);
    expect(configError(() => devConfigYaml(7001, { lock: { minTtlMs: 0 } })).path).toBe('lock.minTtlMs');
  });

  it('refuses a port range that does not fit', () => {
    expect(configError(() => devConfig('/tmp/lh', 65534)).message).toBe('<dev>: basePort: must be an integer in 1-65533, got 65534');
    expect(() => devConfig('/tmp/lh', 0)).toThrow(ConfigError);
    expect(() => devConfig('/tmp/lh', 70.5)).toThrow(ConfigError);
  });
});

describe('schema', () => {
  it('limits never exceed the fixed caps of the lock command encoding', () => {
    expect(LOCK_WIRE_CAPS).toEqual({
      maxKeyBytes: WIRE_LIMITS.maxKeyBytes,
      maxOwnerBytes: WIRE_LIMITS.maxOwnerBytes,
      maxTtlMs: WIRE_LIMITS.maxTtlMs,
      maxValueBytes: WIRE_LIMITS.maxValueBytes,
    });
  });

  it('parseAddress splits host and port', () => {
    expect(parseAddress('127.0.0.1:7001')).toEqual({ host: '127.0.0.1', port: 7001 });
    expect(parseAddress('[::1]:7001')).toEqual({ host: '::1', port: 7001 });
    expect(typeof parseAddress('nope')).toBe('string');
  });
});

describe('tls, auth and peerAddress (issue 11)', () => {
  it('tls: paths resolve against the file, clientAuth defaults to none; absent means plaintext', () => {
    expect(parseText(MINIMAL).tls).toBeNull();
    const c = parseText(withExtra('tls:\n  cert: certs/n1.pem\n  key: /k.pem\n  ca: ca.pem'));
    expect(c.tls).toEqual({ cert: '/etc/leasehold/certs/n1.pem', key: '/k.pem', ca: '/etc/leasehold/ca.pem', clientAuth: 'none' });
    expect(parseText(withExtra('tls: { cert: a, key: b, ca: c, clientAuth: require }')).tls?.clientAuth).toBe('require');
  });

  it('tls errors name the field', () => {
    expect(errorOf(withExtra('tls:\n  cert: a\n  key: b')).message).toContain('tls.ca: missing required key (a PEM file path)');
    expect(errorOf(withExtra('tls: { cert: a, key: b, ca: c, clientAuth: always }')).message).toContain(
      'tls.clientAuth: expected one of none, request, require; got string "always"',
    );
    expect(errorOf(withExtra('tls: { cert: a, key: b, ca: c, certs: d }')).message).toContain(
      'tls.certs: unknown key (did you mean cert?)',
    );
    expect(errorOf(withExtra('tls: { cert: 5, key: b, ca: c }')).message).toContain('tls.cert: expected a PEM file path, got number 5');
  });

  it('auth.ownerBinding needs tls.clientAuth: require', () => {
    expect(errorOf(withExtra('auth: { ownerBinding: true }')).message).toContain(
      'auth.ownerBinding: needs tls.clientAuth: require (got no tls section)',
    );
    expect(errorOf(withExtra('tls: { cert: a, key: b, ca: c, clientAuth: request }\nauth: { ownerBinding: true }')).message).toContain(
      '(got tls.clientAuth: request)',
    );
    expect(
      parseText(withExtra('tls: { cert: a, key: b, ca: c, clientAuth: require }\nauth: { ownerBinding: true }')).auth.ownerBinding,
    ).toBe(true);
    expect(parseText(MINIMAL).auth.ownerBinding).toBe(false);
    expect(errorOf(withExtra('auth: { ownerBinding: "yes" }')).message).toContain(
      'auth.ownerBinding: expected true or false, got string "yes"',
    );
    // auth.admins (SPEC "Revoke"): a list of certificate CNs.
    expect(
      parseText(withExtra('tls: { cert: a, key: b, ca: c, clientAuth: require }\nauth: { ownerBinding: true, admins: [ops-1, ops-2] }'))
        .auth.admins,
    ).toEqual(['ops-1', 'ops-2']);
    expect(parseText(MINIMAL).auth.admins).toEqual([]);
    expect(errorOf(withExtra('auth: { admins: ops }')).message).toContain('auth.admins: expected a list of certificate CNs');
  });

  it('peerAddress is optional, validated and must not collide with any address', () => {
    const ok = parseText(
      'nodes:\n  - { id: a, address: "127.0.0.1:7001", peerAddress: "127.0.0.1:8001", dataDir: /a }\n  - { id: b, address: "127.0.0.1:7002", dataDir: /b }',
    );
    expect(ok.nodes.map((n) => n.peerAddress)).toEqual(['127.0.0.1:8001', undefined]);
    const e = errorOf(
      'nodes:\n  - { id: a, address: "127.0.0.1:7001", peerAddress: "127.0.0.1:7002", dataDir: /a }\n  - { id: b, address: "127.0.0.1:7002", dataDir: /b }',
    );
    expect(e.message).toContain('nodes[1].address: duplicate address 127.0.0.1:7002 (also nodes[0])');
    expect(errorOf('nodes:\n  - { id: a, address: "127.0.0.1:7001", peerAddress: "nope", dataDir: /a }').message).toContain(
      'nodes[0].peerAddress: expected host:port',
    );
  });
});

describe('nodes[].peerDialOverrides (chaos runs: a proxy per node-to-node link)', () => {
  const two = (overrides: string, bPeer = '') =>
    `nodes:\n  - { id: a, address: "127.0.0.1:7001", dataDir: /a, peerDialOverrides: ${overrides} }\n  - { id: b, address: "127.0.0.1:7002", dataDir: /b${bPeer} }`;
  it('is node-local and optional; members not in the file (added later) may be named', () => {
    const c = parseText(two('{ b: "127.0.0.1:9002", n9: "127.0.0.1:9009" }'));
    expect(c.nodes[0]!.peerDialOverrides).toEqual({ b: '127.0.0.1:9002', n9: '127.0.0.1:9009' });
    expect(c.nodes[1]!.peerDialOverrides).toBeUndefined();
  });
  it('bad entries name the key', () => {
    expect(errorOf(two('{ b: "nope" }')).message).toContain('nodes[0].peerDialOverrides.b: expected host:port');
    expect(errorOf(two('{ a: "127.0.0.1:9001" }')).message).toContain('nodes[0].peerDialOverrides.a: a node does not dial itself');
    expect(errorOf(two('{ "-x": "127.0.0.1:9001" }')).message).toContain('is not a valid node id');
    expect(errorOf(two('[b]')).message).toContain('nodes[0].peerDialOverrides: expected a mapping');
    expect(errorOf(two('{ b: 9002 }')).message).toContain('nodes[0].peerDialOverrides.b: expected host:port');
    expect(errorOf(two('{ b: "127.0.0.1:9002" }', ', peerAddress: "127.0.0.1:8002"')).message).toContain(
      'nodes[0].peerDialOverrides.b: b has a separate peerAddress',
    );
  });
});

describe('nodes[].join (members a deployment may grow to, listed before they are added)', () => {
  const three = (cJoin: string, bJoin = '') =>
    `nodes:\n  - { id: a, address: "a:7001", dataDir: /d }\n  - { id: b, address: "b:7001", dataDir: /d${bJoin} }\n  - { id: c, address: "c:7001", dataDir: /d${cJoin} }`;
  it('a node marked join is not an initial member; the cluster id is derived from the initial members only', () => {
    const c = parseText(three(', join: true'));
    expect(c.nodes.map((n) => n.id)).toEqual(['a', 'b', 'c']);
    expect(c.nodes[2]!.join).toBe(true);
    expect(c.nodes[0]!.join).toBeUndefined();
    expect(initialMembers(c.nodes).map((n) => n.id)).toEqual(['a', 'b']);
    // Listing later members does not change the id a new cluster gets (a staggered first start of an
    // initial member, or a restore, must agree with the members that bootstrapped).
    const two = parseText('nodes:\n  - { id: a, address: "a:7001", dataDir: /d }\n  - { id: b, address: "b:7001", dataDir: /d }');
    expect(clusterIdFor(initialMembers(c.nodes))).toBe(clusterIdFor(two.nodes));
    expect(clusterIdFor(c.nodes)).not.toBe(clusterIdFor(two.nodes));
    // join: false is the default, written out or not; stringifyConfig keeps the flag.
    expect(parseText(three(', join: false')).nodes[2]!.join).toBeUndefined();
    expect(parseConfig(stringifyConfig(c), 'again.yaml').nodes[2]!.join).toBe(true);
  });
  it('refuses a join that is not a boolean, and a file whose every node joins', () => {
    expect(errorOf(three(', join: "yes"')).message).toContain('nodes[2].join: expected true or false, got string "yes"');
    const all = 'nodes:\n  - { id: a, address: "a:7001", dataDir: /d, join: true }';
    expect(errorOf(all).message).toContain('nodes: every node has join: true; at least one must be an initial member');
  });
});

describe("metrics, log.format and a node's listen address", () => {
  const base = 'nodes:\n  - { id: n1, address: "n1:7001", dataDir: /d, listen: "0.0.0.0:7001" }\n';
  it('metrics is off by default; metrics.address is a host:port; listen is kept apart from the advertised address', () => {
    const off = parseConfig(base, 'x.yaml');
    expect(off.metrics.address).toBeNull();
    expect(off.log.format).toBe('auto');
    expect(off.nodes[0]).toEqual({ id: 'n1', address: 'n1:7001', dataDir: '/d', listen: '0.0.0.0:7001' });
    const on = parseConfig(`${base}metrics: { address: "127.0.0.1:9464" }\nlog: { format: json }\n`, 'x.yaml');
    expect(on.metrics.address).toBe('127.0.0.1:9464');
    expect(on.log.format).toBe('json');
  });

  it('bad values name the key', () => {
    const err = (text: string) => {
      try {
        parseConfig(text, 'x.yaml');
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(err(`${base}metrics: { address: 9464 }\n`)).toMatch(/metrics\.address: expected host:port/);
    expect(err(`${base}metrics: { address: "localhost" }\n`)).toMatch(/metrics\.address: expected host:port/);
    expect(err(`${base}log: { format: colour }\n`)).toMatch(/log\.format: expected one of auto, json, pretty/);
    expect(err('nodes:\n  - { id: n1, address: "n1:7001", dataDir: /d, listen: "0.0.0.0" }\n')).toMatch(
      /nodes\[0\]\.listen: expected host:port/,
    );
  });
});
