import { describe, expect, it } from 'vitest';
import { Network } from './harness.js';

describe('raft smoke', () => {
  it('elects a leader and replicates', () => {
    const net = new Network(['a', 'b', 'c']);
    net.elect('a');
    expect(net.node('a').raft.role).toBe('leader');
    const r = net.propose('a', 'x');
    expect(r.ok).toBe(true);
    net.tickAll(2);
    for (const n of net.nodes.values()) expect(n.appliedData()).toEqual(['x']);
  });
  it('single node commits alone', () => {
    const net = new Network(['a']);
    net.elect('a');
    expect(net.node('a').raft.role).toBe('leader');
    net.propose('a', 'y');
    expect(net.node('a').appliedData()).toEqual(['y']);
  });
});
