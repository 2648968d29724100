// Lock leader, linearizable reads: a get waits for its read barrier (ReadIndex) and is then judged at the
// leader's now — never behind the log's time; a lease past its deadline by that now reads free.
import { describe, expect, it } from 'vitest';
import { LeaderRig } from './leader-rig.js';

describe('lock leader: reads', () => {
  it('a get is answered only after its read barrier passed, judged at the leader now', () => {
    const rig = new LeaderRig().ready();
    rig.acquire('k', 'a', { ttlMs: 1000 });
    rig.commitAll();
    const g = rig.get('k');
    expect(rig.reads).toEqual([g]);
    expect(rig.answers.has(g)).toBe(false);
    rig.nowMs += 400;
    rig.step({ type: 'readDone', callId: g });
    expect(rig.answers.get(g)).toMatchObject({ held: true, owner: 'a', ttlMs: 600 });
  });

  it('a lease past its deadline by the leader now reads free before its expire applied', () => {
    const rig = new LeaderRig().ready();
    rig.acquire('k', 'a', { ttlMs: 1000 });
    rig.commitAll();
    rig.nowMs += 1000;
    const g = rig.get('k');
    rig.step({ type: 'readDone', callId: g });
    expect(rig.answers.get(g)).toMatchObject({ held: false, owner: '', lastToken: rig.machine.get('k').lastToken });
  });

  it('a failed read barrier fails the get UNAVAILABLE', () => {
    const rig = new LeaderRig().ready();
    const g = rig.get('k');
    rig.step({ type: 'readFailed', callId: g, error: { kind: 'read-timeout', message: 'no quorum' } });
    expect(rig.failures.get(g)).toMatchObject({ kind: 'unavailable', message: 'no quorum' });
  });
});
