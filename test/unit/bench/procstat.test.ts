import { describe, expect, it } from 'vitest';
import { compactionsInLog, roleChangesInLog } from '../../../scripts/bench/node-log.js';
import { cpuTicksOf, rssKbOf, runDelayNsOf } from '../../../scripts/bench/procstat.js';

describe('bench /proc and log parsing', () => {
  it('utime + stime are fields 14 and 15 of stat(5), also when the command name has spaces and parens', () => {
    const stat = '4242 (node (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 11 0 900 1000 200';
    expect(cpuTicksOf(stat)).toBe(1234 + 567);
  });

  it('run_delay is the second field of schedstat (ns waiting for a CPU)', () => {
    expect(runDelayNsOf('8123456789 1450000000 51234\n')).toBe(1_450_000_000);
  });

  it('VmRSS in kB', () => {
    expect(rssKbOf('Name:\tnode\nVmPeak:\t  999 kB\nVmRSS:\t  123456 kB\n')).toBe(123456);
    expect(rssKbOf('Name:\tzombie\n')).toBe(0);
  });

  it('compaction and follower-snapshot lines of a pino log: counted, the last size kept, cut lines skipped', () => {
    const log = [
      '{"level":30,"msg":"raft role/term changed","term":"2"}',
      '{"level":30,"nodeId":"n1","index":5000,"storeIndex":7500,"msg":"log compacted below the applied store"}',
      '{"level":30,"nodeId":"n1","index":9000,"bytes":1000,"msg":"snapshot made for a follower behind the log"}',
      '{"level":30,"nodeId":"n1","index":10000,"storeIndex":12500,"msg":"log compacted below the applied store"}',
      '{"level":30,"nodeId":"n1","index":19000,"bytes":2500,"msg":"snapshot made for a follower behind the log"}',
      '{"level":30,"index":30000,"bytes":99,"msg":"snapshot made for a foll',
      '{"level":30,"index":30000,"msg":"log compacted below the appl',
    ].join('\n');
    expect(compactionsInLog(log)).toEqual({ compactions: 2, followerSnapshots: 2, lastSnapshotBytes: 2500 });
    const none = compactionsInLog('{"msg":"serving"}');
    expect(none).toMatchObject({ compactions: 0, followerSnapshots: 0 });
    expect(none.lastSnapshotBytes).toBeNaN();
  });

  it('role changes: entries into leader, pre-candidate and candidate, other lines ignored', () => {
    const line = (role: string, term: number, leaderId: string | null) =>
      JSON.stringify({ level: 30, nodeId: 'n2', role, term, leaderId, msg: 'raft role/term changed' });
    const log = [
      line('follower', 1, null),
      line('follower', 1, 'n3'),
      '{"level":40,"reason":"no word from leader n3","msg":"health: NOT_SERVING"}',
      line('pre-candidate', 1, null),
      line('follower', 1, 'n3'), // the pre-vote found the leader alive: no term change
      line('pre-candidate', 1, null),
      line('candidate', 2, null),
      line('leader', 2, 'n2'),
    ].join('\n');
    expect(roleChangesInLog(log)).toEqual({ becameLeader: 1, preVotes: 2, votes: 1 });
    expect(roleChangesInLog('')).toEqual({ becameLeader: 0, preVotes: 0, votes: 0 });
  });
});
