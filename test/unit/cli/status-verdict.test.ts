// SPEC "`leasehold status`": exit 0 only when the endpoints that answered agree on one leader (which
// itself answers as a leader with a quorum); 2 otherwise.
import { describe, expect, it } from 'vitest';
import { judgeStatus, type StatusRow } from '../../../src/cli/cluster-commands.js';
import type { StatusResponse } from '../../../src/wire/cluster.js';

function st(
  node: string,
  leader: string,
  role: StatusResponse['role'] = leader === node ? 'LEADER' : 'FOLLOWER',
  serving = true,
): StatusRow {
  return {
    endpoint: `${node}:1`,
    status: {
      node_id: node,
      role,
      term: '3',
      leader_id: leader,
      commit_index: '9',
      applied_index: '9',
      members: [],
      cluster_id: 'c',
      serving,
      health: serving ? 'ok' : 'no quorum',
      cluster_level: 2,
      build_level: 2,
    },
  };
}
const down = (node: string): StatusRow => ({ endpoint: `${node}:1`, error: 'UNAVAILABLE' });

describe('status verdict', () => {
  it('0 when every answer names the same leader and the leader serves', () => {
    expect(judgeStatus([st('a', 'a'), st('b', 'a'), st('c', 'a')]).code).toBe(0);
  });
  it('0 with a follower down, as long as the leader holds a quorum', () => {
    expect(judgeStatus([st('a', 'a'), st('b', 'a'), down('c')]).code).toBe(0);
  });
  it('2 when nobody answers', () => {
    expect(judgeStatus([down('a'), down('b')])).toMatchObject({ code: 2, reason: 'no endpoint answered' });
  });
  it('2 when a node knows no leader', () => {
    expect(judgeStatus([st('a', 'a'), st('b', '')]).code).toBe(2);
  });
  it('2 when nodes disagree on the leader', () => {
    expect(judgeStatus([st('a', 'a'), st('b', 'b')]).code).toBe(2);
  });
  it('2 when the named leader did not answer', () => {
    expect(judgeStatus([down('a'), st('b', 'a'), st('c', 'a')])).toMatchObject({ code: 2, reason: 'the leader a did not answer' });
  });
  it('2 when the leader has lost its quorum (health NOT_SERVING) though it still calls itself leader', () => {
    expect(judgeStatus([st('a', 'a', 'LEADER', false), down('b'), down('c')]).code).toBe(2);
  });
});
