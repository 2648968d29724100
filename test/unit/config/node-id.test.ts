// One node-id rule for the config file and `members add` (issue 22 item 8): an id the config accepts is
// never refused when the same node is added, and the other way round — checked at the length boundary.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../src/config/index.js';
import { NODE_ID_MAX_LENGTH } from '../../../src/config/node-id.js';
import { checkAddress, checkNodeId } from '../../../src/server/client-api/membership.js';

const configWith = (id: string) => `
nodes:
  - id: ${id}
    address: 127.0.0.1:7001
    dataDir: /tmp/a
  - id: n2
    address: 127.0.0.1:7002
    dataDir: /tmp/b
  - id: n3
    address: 127.0.0.1:7003
    dataDir: /tmp/c
`;

function configAccepts(id: string): boolean {
  try {
    parseConfig(configWith(id), '/etc/leasehold/cluster.yaml');
    return true;
  } catch (err) {
    if (err instanceof ConfigError) return false;
    throw err;
  }
}

function membershipAccepts(id: string): boolean {
  try {
    checkNodeId(id);
    return true;
  } catch {
    return false;
  }
}

describe('node ids: the config and members add judge them alike', () => {
  it.each([
    ['n1'],
    ['a'.repeat(NODE_ID_MAX_LENGTH - 1)],
    ['a'.repeat(NODE_ID_MAX_LENGTH)],
    ['a'.repeat(NODE_ID_MAX_LENGTH + 1)],
    ['node-1.zone_a'],
    ['-leading-dash'],
    ['has space'],
  ])('%s', (id) => {
    expect(configAccepts(id)).toBe(membershipAccepts(id));
  });

  it('the boundary is 63 characters (a DNS label), in both', () => {
    expect(membershipAccepts('a'.repeat(63))).toBe(true);
    expect(configAccepts('a'.repeat(63))).toBe(true);
    expect(membershipAccepts('a'.repeat(64))).toBe(false);
    expect(configAccepts('a'.repeat(64))).toBe(false);
  });
});

describe('addresses: members add takes what the config file takes (one parser)', () => {
  const configAddress = (address: string): boolean => {
    try {
      parseConfig(configWith('n1').replace('127.0.0.1:7001', JSON.stringify(address)), '/etc/leasehold/cluster.yaml');
      return true;
    } catch (err) {
      if (err instanceof ConfigError) return false;
      throw err;
    }
  };
  const membersAddress = (address: string): boolean => {
    try {
      checkAddress(address);
      return true;
    } catch {
      return false;
    }
  };
  it.each([
    ['127.0.0.1:7001'],
    ['[::1]:7001'],
    ['node-1.example.com:7001'],
    ['[1.2.3.4]:7001'],
    ['host:0'],
    ['host:65536'],
    ['host'],
    ['::1:7001'],
    ['bad_host!:7001'],
  ])('%s', (address) => {
    expect(membersAddress(address)).toBe(configAddress(address));
  });
});
