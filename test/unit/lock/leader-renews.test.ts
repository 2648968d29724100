// The lock leader's renews of one turn (cluster level 7, renew-turn.ts): every renew it admits waits for the
// driver's turnEnd and travels in one `renews` entry with the turn's others, each caller answered with its
// own renew's outcome; a call on a key with a renew waiting goes into the log after it; below level 7 a
// renew is a lone entry of its own, proposed at once.
import { describe, expect, it } from 'vitest';
import type { LockCommand, RenewResult } from '../../../src/lock/index.js';
import { BUILD_LEVEL, LEVEL_RENEWS_ENTRY } from '../../../src/lock/versions.js';
import { LeaderRig } from './leader-rig.js';

function atLevel(level: number, config: ConstructorParameters<typeof LeaderRig>[0] = {}): LeaderRig {
  const rig = new LeaderRig(config).ready();
  rig.step({ type: 'members', readLevel: level, ran: [] });
  rig.advance(10).advance(10);
  rig.commitAll();
  expect(rig.machine.clusterLevel).toBe(level);
  return rig;
}

function renewAnswer(rig: LeaderRig, callId: number): string {
  const a = rig.answers.get(callId) as RenewResult | undefined;
  if (a === undefined) return `failed:${rig.failures.get(callId)?.kind ?? 'not settled'}`;
  return `${a.renewed}|${a.reason}|${a.expiresAtMs}@${a.index}`;
}

function renewsOf(command: LockCommand | undefined) {
  if (command?.type !== 'renews') throw new Error(`expected a renews proposal, got ${command?.type}`);
  return command.renews;
}

describe(`lock leader: the renews of one turn in one entry (level ${LEVEL_RENEWS_ENTRY})`, () => {
  it('several renews, mixed outcomes: one entry at the turn end, each caller its own answer', () => {
    const rig = atLevel(BUILD_LEVEL);
    const a = rig.hold('a', 'alice');
    const b = rig.hold('b', 'bob');
    const c = rig.hold('c', 'carol');
    const proposedBefore = rig.proposed.length;
    const ok = rig.renew('a', 'alice', a.token, { ttlMs: 500, timeoutMs: 4000 });
    const wrongToken = rig.renew('b', 'bob', b.token + 100n, { timeoutMs: 3000 });
    const wrongOwner = rig.renew('c', 'mallory', c.token);
    const notHeld = rig.renew('nobody', 'x', 1n);
    // Collected, not proposed: the leader asked the driver once for the turn's end.
    expect(rig.proposed.length).toBe(proposedBefore);
    expect(rig.collecting).toBe(1);
    rig.turnEnd();
    expect(rig.pending).toHaveLength(1);
    const entry = rig.pending[0]!;
    expect(renewsOf(entry.command)).toEqual([
      { key: 'a', owner: 'alice', token: a.token, ttlMs: 500 },
      { key: 'b', owner: 'bob', token: b.token + 100n, ttlMs: 10_000 },
      { key: 'c', owner: 'mallory', token: c.token, ttlMs: 10_000 },
      { key: 'nobody', owner: 'x', token: 1n, ttlMs: 10_000 },
    ]);
    expect(entry.command.timeMs).toBe(rig.nowMs);
    // No caller waits for the entry longer than its own call allows.
    expect(entry.timeoutMs).toBe(3000);
    rig.commitAll();
    const index = rig.machine.appliedIndex;
    expect([ok, wrongToken, wrongOwner, notHeld].map((id) => renewAnswer(rig, id))).toEqual([
      `true|UNSPECIFIED|${rig.nowMs + 500}@${index}`,
      `false|WRONG_TOKEN|0@${index}`,
      `false|WRONG_OWNER|0@${index}`,
      `false|NOT_HELD|0@${index}`,
    ]);
    // A new turn asks again.
    rig.renew('a', 'alice', a.token);
    expect(rig.collecting).toBe(2);
  });

  it('a lone renew in a turn takes the same path: one renews entry of one', () => {
    const rig = atLevel(BUILD_LEVEL);
    const a = rig.hold('a', 'alice');
    const call = rig.renew('a', 'alice', a.token, { ttlMs: 700 });
    expect(rig.pendingOf('renew')).toHaveLength(0);
    rig.turnEnd();
    expect(renewsOf(rig.pending[0]?.command)).toHaveLength(1);
    rig.commitAll();
    expect(renewAnswer(rig, call)).toBe(`true|UNSPECIFIED|${rig.nowMs + 700}@${rig.machine.appliedIndex}`);
  });

  it('a renew, then a re-acquire of its key in the same turn: the renew goes into the log first, then the acquire supersedes', () => {
    const rig = atLevel(BUILD_LEVEL);
    const old = rig.hold('k', 'alice');
    const renew = rig.renew('k', 'alice', old.token, { ttlMs: 900 });
    const again = rig.acquire('k', 'alice', { ttlMs: 300 });
    expect(rig.pending.map((p) => p.command.type)).toEqual(['renews', 'acquire']);
    rig.turnEnd(); // nothing left to propose
    expect(rig.pending).toHaveLength(2);
    rig.commitAll();
    expect(renewAnswer(rig, renew)).toMatch(/^true\|UNSPECIFIED/);
    const granted = rig.acquired(again);
    expect(granted.acquired).toBe(true);
    expect(rig.machine.get('k')).toMatchObject({ token: granted.token, expiresAtMs: granted.expiresAtMs });
  });

  it('a re-acquire, then a renew of the token it superseded in the same turn: the renew is WRONG_TOKEN and the new hold keeps its deadline', () => {
    const rig = atLevel(BUILD_LEVEL);
    const old = rig.hold('k', 'alice');
    const again = rig.acquire('k', 'alice', { ttlMs: 300 });
    const stale = rig.renew('k', 'alice', old.token, { ttlMs: 60_000 });
    rig.turnEnd();
    // The entry carries the renew's own token, never one read off the state.
    expect(renewsOf(rig.pendingOf('renews')[0]?.command)).toEqual([{ key: 'k', owner: 'alice', token: old.token, ttlMs: 60_000 }]);
    rig.commitAll();
    const granted = rig.acquired(again);
    expect(renewAnswer(rig, stale)).toBe(`false|WRONG_TOKEN|0@${rig.machine.appliedIndex}`);
    expect(rig.machine.get('k')).toMatchObject({ held: true, token: granted.token, expiresAtMs: granted.expiresAtMs });
  });

  it('a renew of a token superseded before its turn: the entry carries the old token and is refused WRONG_TOKEN', () => {
    const rig = atLevel(BUILD_LEVEL);
    const old = rig.hold('k', 'alice');
    const granted = rig.hold('k', 'alice');
    const stale = rig.renew('k', 'alice', old.token, { ttlMs: 60_000 });
    rig.turnEnd();
    expect(renewsOf(rig.pending[0]?.command)[0]!.token).toBe(old.token);
    rig.commitAll();
    expect(renewAnswer(rig, stale)).toMatch(/^false\|WRONG_TOKEN/);
    expect(rig.machine.get('k').expiresAtMs).toBe(granted.expiresAtMs);
  });

  it('a renew, then a release of its key in the same turn: renewed, then released', () => {
    const rig = atLevel(BUILD_LEVEL);
    const a = rig.hold('k', 'alice');
    const renew = rig.renew('k', 'alice', a.token);
    const release = rig.release('k', 'alice', a.token);
    expect(rig.pending.map((p) => p.command.type)).toEqual(['renews', 'release']);
    rig.commitAll();
    expect(renewAnswer(rig, renew)).toMatch(/^true\|UNSPECIFIED/);
    expect(rig.answers.get(release)).toMatchObject({ type: 'release', released: true });
  });

  it('more renews than renewsPerEntry: several entries, in arrival order, each caller its own answer', () => {
    const rig = atLevel(BUILD_LEVEL, { renewsPerEntry: 2 });
    const holds = ['a', 'b', 'c', 'd', 'e'].map((k) => ({ k, t: rig.hold(k, `o-${k}`).token }));
    const calls = holds.map(({ k, t }, i) => rig.renew(k, `o-${k}`, i === 3 ? t + 1n : t, { ttlMs: 100 * (i + 1) }));
    rig.turnEnd();
    expect(rig.pending.map((p) => renewsOf(p.command).map((r) => r.key))).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    rig.commitAll();
    const last = rig.machine.appliedIndex;
    expect(calls.map((id) => renewAnswer(rig, id))).toEqual([
      `true|UNSPECIFIED|${rig.nowMs + 100}@${last - 2}`,
      `true|UNSPECIFIED|${rig.nowMs + 200}@${last - 2}`,
      `true|UNSPECIFIED|${rig.nowMs + 300}@${last - 1}`,
      `false|WRONG_TOKEN|0@${last - 1}`,
      `true|UNSPECIFIED|${rig.nowMs + 500}@${last}`,
    ]);
  });

  it('a failed entry fails every caller; a renew whose caller went away before the turn end is not proposed', () => {
    const rig = atLevel(BUILD_LEVEL);
    const a = rig.hold('a', 'alice');
    const b = rig.hold('b', 'bob');
    const gone = rig.renew('a', 'alice', a.token);
    const first = rig.renew('b', 'bob', b.token);
    rig.cancel(gone);
    expect(rig.failures.get(gone)).toMatchObject({ kind: 'unavailable', message: 'the caller went away' });
    rig.turnEnd();
    expect(renewsOf(rig.pending[0]?.command).map((r) => r.key)).toEqual(['b']);
    rig.failProposal('dropped');
    expect(rig.failures.get(first)).toMatchObject({ kind: 'unavailable' });
  });

  it('leadership lost before the turn end: the collected renews fail UNAVAILABLE naming the new leader, nothing is proposed', () => {
    const rig = atLevel(BUILD_LEVEL);
    const a = rig.hold('a', 'alice');
    const call = rig.renew('a', 'alice', a.token);
    rig.stepDown('n2');
    expect(rig.failures.get(call)).toMatchObject({ kind: 'unavailable', leaderId: 'n2' });
    rig.turnEnd();
    expect(rig.pending).toHaveLength(0);
  });

  it('a renew of a hold under a session is refused for its caller alone (renew the session)', () => {
    const rig = atLevel(BUILD_LEVEL);
    const open = rig.session({ op: 'openSession', owner: 'sam', ttlMs: 60_000 });
    rig.commitAll();
    const sessionId = Number((rig.answers.get(open) as { sessionId: bigint }).sessionId);
    const held = rig.acquire('s', 'sam', { sessionId });
    rig.commitAll();
    const a = rig.hold('a', 'alice');
    const underSession = rig.renew('s', 'sam', rig.acquired(held).token);
    const ok = rig.renew('a', 'alice', a.token);
    rig.turnEnd();
    rig.commitAll();
    expect(rig.failures.get(underSession)).toMatchObject({ kind: 'rejected', message: expect.stringMatching(/renew the session/) });
    expect(renewAnswer(rig, ok)).toMatch(/^true\|UNSPECIFIED/);
  });
});

describe(`lock leader: renews below level ${LEVEL_RENEWS_ENTRY}`, () => {
  it('a renew is a lone entry with its request id, proposed at once; no turn end is asked for', () => {
    const rig = atLevel(LEVEL_RENEWS_ENTRY - 1);
    const a = rig.hold('a', 'alice');
    const call = rig.renew('a', 'alice', a.token, { requestId: 'r-1', ttlMs: 400 });
    expect(rig.collecting).toBe(0);
    expect(rig.pending.map((p) => p.command)).toEqual([
      { type: 'renew', timeMs: rig.nowMs, key: 'a', owner: 'alice', token: a.token, ttlMs: 400, requestId: 'r-1' },
    ]);
    rig.commitAll();
    expect(renewAnswer(rig, call)).toBe(`true|UNSPECIFIED|${rig.nowMs + 400}@${rig.machine.appliedIndex}`);
  });

  it('a rolling upgrade: lone renews while a member reads 6, renews entries once the log is at 7', () => {
    const rig = atLevel(LEVEL_RENEWS_ENTRY - 1);
    const a = rig.hold('a', 'alice');
    rig.renew('a', 'alice', a.token);
    expect(rig.pending.map((p) => p.command.type)).toEqual(['renew']);
    rig.commitAll();
    // The last member announces 7: the leader raises the level; only the applied level counts.
    rig.step({ type: 'members', readLevel: LEVEL_RENEWS_ENTRY, ran: [] });
    rig.advance(10);
    expect(rig.pending.map((p) => p.command)).toEqual([{ type: 'clusterLevel', timeMs: rig.nowMs, level: LEVEL_RENEWS_ENTRY }]);
    rig.renew('a', 'alice', a.token);
    expect(rig.pending.map((p) => p.command.type)).toEqual(['clusterLevel', 'renew']);
    rig.commitAll();
    expect(rig.machine.clusterLevel).toBe(LEVEL_RENEWS_ENTRY);
    const call = rig.renew('a', 'alice', a.token);
    rig.turnEnd();
    expect(rig.pending.map((p) => p.command.type)).toEqual(['renews']);
    rig.commitAll();
    expect(renewAnswer(rig, call)).toMatch(/^true\|UNSPECIFIED/);
  });

  it('at level 1 too (a cluster of builds from before the gate)', () => {
    const rig = new LeaderRig().ready();
    const a = rig.hold('a', 'alice');
    rig.renew('a', 'alice', a.token);
    expect(rig.collecting).toBe(0);
    expect(rig.pendingOf('renew')).toHaveLength(1);
  });
});
