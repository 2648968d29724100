import { describe, expect, it } from 'vitest';
import { idleResultOf, idleTable } from '../../../scripts/bench/idle.js';

describe('bench idle workload', () => {
  it('turns CPU seconds over the window into % of one core, per member', () => {
    const r = idleResultOf('leasehold', 1, 10, [
      { node: 'n1', cpuSeconds: 0.31 },
      { node: 'n2', cpuSeconds: 0.12 },
    ]);
    expect(r.nodes).toEqual([
      { node: 'n1', cpuPercent: expect.closeTo(3.1, 6) },
      { node: 'n2', cpuPercent: expect.closeTo(1.2, 6) },
    ]);
  });

  it('judges the goal by the busiest leasehold member, and not for etcd', () => {
    const over = idleResultOf('leasehold', 1, 10, [
      { node: 'n1', cpuSeconds: 0.1 },
      { node: 'n2', cpuSeconds: 0.25 },
    ]);
    const under = idleResultOf('leasehold', 2, 10, [
      { node: 'n1', cpuSeconds: 0.1 },
      { node: 'n2', cpuSeconds: 0.2 },
    ]);
    const etcd = idleResultOf('etcd-v3lock', 1, 10, [{ node: 'e1', cpuSeconds: 0.5 }]);
    const lines = idleTable([over, under, etcd]).split('\n');
    expect(lines[1]).toContain('n1 1.0 %, n2 2.5 %');
    expect(lines[1]).toContain('max 2.5 %; goal not met');
    expect(lines[2]).toContain('max 2.0 %; goal met');
    expect(lines[3]).toContain('max 5.0 %)');
    expect(lines[3]).not.toContain('goal');
  });
});
