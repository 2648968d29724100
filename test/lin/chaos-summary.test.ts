// The chaos run's bookkeeping, without processes: which operations count as during / after which fault,
// availability, recovery figures (a node that never served again must show, not vanish into a median),
// and --faults parsing.
import { describe, expect, it } from 'vitest';
import { formatSummary, summarizeRun } from './chaos-summary.js';
import type { Op } from './history.js';
import { FAULT_GROUPS, FAULT_KINDS, parseFaults, type FaultRecord } from './nemesis.js';

let index = 0;
function op(invokeMs: number, outcome: Op['outcome'], via: Op['via'] = 'handle'): Op {
  return { index: index++, process: 'w1', type: 'acquire', key: 'k', invokeMs, completeMs: invokeMs + 5, outcome, via };
}

describe('summarizeRun', () => {
  const faults: FaultRecord[] = [
    { kind: 'isolate-leader', targets: ['n1'], startMs: 100, endMs: 200, recoveryMs: { n1: 40, n2: 10, n3: 15 } },
    { kind: 'kill-node', targets: ['n2'], startMs: 300, endMs: 400, recoveryMs: { n1: 5, n2: 900, n3: 7 } },
    { kind: 'isolate-leader', targets: ['n3'], startMs: 500, endMs: 600, recoveryMs: { n1: 8, n2: null, n3: 20 } },
  ];
  const ops = [
    op(50, 'ok'), // before any fault
    op(120, 'ok'),
    op(150, 'info'),
    op(199, 'fail'), // during fault 0
    op(250, 'ok'), // after fault 0
    op(310, 'info'), // during fault 1
    op(450, 'ok'),
    op(460, 'ok'), // after fault 1
    op(550, 'ok'), // during fault 2
    op(700, 'fail'), // after fault 2 (to the end)
    op(130, 'ok', 'probe'), // probes and final reads never count
    op(710, 'ok', 'final'),
  ];
  const s = summarizeRun(faults, ops, 800);

  it("buckets the workers' operations by the fault in place, or the last one healed", () => {
    const iso = s.byKind['isolate-leader']!;
    expect(iso.faults).toBe(2);
    expect(iso.during).toEqual({ ops: 4, ok: 0.5, answered: 0.75 });
    expect(iso.after).toEqual({ ops: 2, ok: 0.5, answered: 1 });
    const kill = s.byKind['kill-node']!;
    expect(kill.during).toEqual({ ops: 1, ok: 0, answered: 0 });
    expect(kill.after).toEqual({ ops: 2, ok: 1, answered: 1 });
    expect(s.noFault.ops).toBe(5);
    expect(s.total.ops).toBe(10);
  });

  it('recovery: the slowest node per fault; a node that never served again makes the max unknown and is counted', () => {
    const iso = s.byKind['isolate-leader']!.recoveryMs;
    expect(iso.notRecovered).toBe(1);
    expect(iso.max).toBeNull();
    expect(iso.median).toBe(40);
    expect(iso.slowest).toEqual({ node: 'n2', ms: null, faultIndex: 2 });
    const kill = s.byKind['kill-node']!.recoveryMs;
    expect(kill).toEqual({ median: 900, max: 900, notRecovered: 0, slowest: { node: 'n2', ms: 900, faultIndex: 1 } });
    expect(formatSummary(s)).toMatch(/isolate-leader\s+2 .* 1 NOT\s+n2 \(fault #2\)/);
  });

  it('a fault that could not be carried out is counted as such', () => {
    const failed = summarizeRun([{ kind: 'add-voter', targets: [], startMs: 0, endMs: 10, error: 'refused' }], [], 20);
    expect(failed.byKind['add-voter']).toMatchObject({ faults: 1, failedToInject: 1, during: { ops: 0, ok: null } });
  });
});

describe('parseFaults', () => {
  it('takes all, group names and kinds; none is empty', () => {
    expect(parseFaults('all')).toEqual([...FAULT_KINDS]);
    expect(parseFaults('none')).toEqual([]);
    expect(parseFaults('partitions,kill-leader')).toEqual([...FAULT_GROUPS.partitions, 'kill-leader']);
    expect(new Set(FAULT_KINDS).size).toBe(FAULT_KINDS.length);
  });
  it('names what it does not know', () => {
    expect(() => parseFaults('kills,partition')).toThrow(/unknown fault kind or group "partition"/);
  });
});
