// SPEC "Identity": the cluster id is derived from the bootstrap members; a node with an empty data dir
// refuses to bootstrap when its peers report a running cluster.
import { describe, expect, it } from 'vitest';
import { AlreadyBootstrappedError, checkFirstBoot, clusterIdFor, type PeerAnswer } from '../../../src/server/assembly/identity.js';
import type { StatusResponse } from '../../../src/wire/cluster.js';

function answer(node: string, term: string, members: string[], commit = term === '0' ? '0' : '5', seen = true): PeerAnswer {
  const status: StatusResponse = {
    node_id: node,
    role: 'FOLLOWER',
    term,
    leader_id: '',
    commit_index: commit,
    applied_index: commit,
    cluster_id: 'c1',
    serving: false,
    health: '',
    cluster_level: 2,
    build_level: 2,
    members: members.map((id) => ({ id, address: `${id}:1`, voter: true, learner: false, match_index: '0', seen, ran: false })),
  };
  return { address: `${node}:1`, status };
}

describe('cluster id', () => {
  it('is the same for the same members in any order, and differs for other members', () => {
    const a = clusterIdFor([
      { id: 'n1', address: 'h:1' },
      { id: 'n2', address: 'h:2' },
    ]);
    expect(
      clusterIdFor([
        { id: 'n2', address: 'h:2' },
        { id: 'n1', address: 'h:1' },
      ]),
    ).toBe(a);
    expect(
      clusterIdFor([
        { id: 'n1', address: 'h:1' },
        { id: 'n2', address: 'h:3' },
      ]),
    ).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('first boot with an empty data dir', () => {
  it('goes on when no peer answers, or the peers are bootstrapping too (term 0)', () => {
    expect(() => checkFirstBoot('n3', '/d', [])).not.toThrow();
    expect(() => checkFirstBoot('n3', '/d', [answer('n1', '0', ['n1', 'n2', 'n3'])])).not.toThrow();
  });
  it('refuses when a running cluster already counts this node as a member, and says how to replace it', () => {
    const run = () => checkFirstBoot('n3', '/data/n3', [answer('n1', '4', ['n1', 'n2', 'n3'])]);
    expect(run).toThrow(AlreadyBootstrappedError);
    expect(run).toThrow(/leasehold members remove n3.*members add <new-id>.*--join/);
  });
  it('goes on when the cluster lists this node but never heard from it (a staggered first start of a new cluster)', () => {
    expect(() => checkFirstBoot('n3', '/d', [answer('n1', '4', ['n1', 'n2', 'n3'], '5', false)])).not.toThrow();
  });

  it('refuses when the cluster never heard from it but its leader has a match index for it', () => {
    const a = answer('n1', '4', ['n1', 'n2', 'n3'], '5', false);
    a.status.members.find((m) => m.id === 'n3')!.match_index = '17';
    expect(() => checkFirstBoot('n3', '/d', [a])).toThrow(AlreadyBootstrappedError);
  });

  it('refuses when a peer restarted since this node last ran (never heard from it, no match index) but its log records that it ran', () => {
    const a = answer('n1', '4', ['n1', 'n2', 'n3'], '5', false);
    a.status.members.find((m) => m.id === 'n3')!.ran = true;
    expect(() => checkFirstBoot('n3', '/d', [a])).toThrow(AlreadyBootstrappedError);
  });

  it('refuses when a running cluster does not know this node: it must be added and started with --join', () => {
    expect(() => checkFirstBoot('n9', '/d', [answer('n1', '4', ['n1', 'n2', 'n3'])])).toThrow(/members add n9 .*--join/);
  });
});
