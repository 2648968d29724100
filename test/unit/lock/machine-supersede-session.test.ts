// Cluster level 4 (versions.ts): an owner's acquire supersedes its own live hold only under the same
// session (or both under none). Under another, the hold counts as another holder's — the request waits or
// is refused — because the client that holds it may never have sent this request (a late duplicate past
// the dedup window, under an old session that elections kept alive: lock simulation seed 3516).
import { describe, expect, it } from 'vitest';
import { Feed } from './feed.js';

/** A machine at cluster `level` (1: a fresh one, from before the gate). */
function atLevel(level: number): Feed {
  const feed = new Feed();
  feed.at(1000);
  if (level > 1) feed.raiseLevel(level);
  return feed;
}

describe('supersede only under the same session (level 4)', () => {
  it("a mutex hold under a session stands against its owner's acquire under another session or none", () => {
    const feed = atLevel(4);
    const s1 = feed.openSession('a', 5000);
    const s2 = feed.openSession('a', 5000);
    const held = feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId));
    const other = feed.expect('acquire', feed.underSession('k', 'a', s2.sessionId));
    expect(other).toMatchObject({ acquired: false, holderOwner: 'a' });
    const bare = feed.acquire('k', 'a', 1000);
    expect(bare).toMatchObject({ acquired: false, holderOwner: 'a' });
    expect(feed.machine.get('k')).toMatchObject({ held: true, token: held.token, sessionId: s1.sessionId });
    // Under its own session it supersedes, as before: a new token, the old one dead.
    const again = feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId));
    expect(again.acquired).toBe(true);
    expect(again.token).toBeGreaterThan(held.token);
    expect(feed.renewSession(s1.sessionId).renewed).toBe(true);
    expect(feed.release('k', 'a', held.token).released).toBe(false);
  });

  it("a hold under no session stands against its owner's acquire under a session; without sessions it supersedes", () => {
    const feed = atLevel(4);
    const s = feed.openSession('a', 5000);
    const held = feed.acquire('k', 'a', 10_000);
    expect(feed.expect('acquire', feed.underSession('k', 'a', s.sessionId))).toMatchObject({ acquired: false, holderOwner: 'a' });
    expect(feed.machine.get('k')).toMatchObject({ token: held.token });
    expect(feed.machine.get('k').sessionId).toBeUndefined();
    const again = feed.acquire('k', 'a', 10_000);
    expect(again.acquired).toBe(true);
    expect(again.token).toBeGreaterThan(held.token);
  });

  it("the owner's acquire under another session waits in line and is granted when the old hold ends", () => {
    const feed = atLevel(4);
    const s1 = feed.openSession('a', 5000);
    const s2 = feed.openSession('a', 5000);
    const held = feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId));
    const queued = feed.expect('acquire', feed.underSession('k', 'a', s2.sessionId, { waitMs: 2000 }));
    expect(queued.acquired).toBe(false);
    expect(queued.waitTicket).toBeDefined();
    expect(feed.machine.get('k').token).toBe(held.token);
    const end = feed.closeSession(s1.sessionId, 'a');
    expect(end.released).toEqual(['k']);
    const granted = (end.decided ?? []).find((d) => d.key === 'k');
    expect(granted?.outcome).toMatchObject({ acquired: true });
    expect(feed.machine.get('k')).toMatchObject({ held: true, owner: 'a', sessionId: s2.sessionId });
  });

  it('a semaphore slot under a session is neither superseded nor doubled by its owner under another', () => {
    const feed = atLevel(4);
    const s1 = feed.openSession('a', 5000);
    const s2 = feed.openSession('a', 5000);
    const held = feed.expect('acquire', feed.many('sem', 'a', { limit: 2, sessionId: s1.sessionId }));
    const other = feed.expect('acquire', feed.many('sem', 'a', { limit: 2, sessionId: s2.sessionId }));
    expect(other.acquired).toBe(false);
    const queued = feed.expect('acquire', feed.many('sem', 'a', { limit: 2, sessionId: s2.sessionId, waitMs: 2000, requestId: 'w' }));
    expect(queued.waitTicket).toBeDefined();
    // A free slot does not let the line's head in beside its own hold under another session.
    expect(feed.machine.grantableKeys(10)).toEqual([]);
    expect(feed.machine.get('sem').holders?.map((h) => h.token)).toEqual([held.token]);
    // Under the same session it supersedes in place.
    const again = feed.expect('acquire', feed.many('sem', 'a', { limit: 2, sessionId: s1.sessionId }));
    expect(again.acquired).toBe(true);
    expect(feed.machine.get('sem').holders?.map((h) => h.token)).toEqual([again.token]);
    const end = feed.closeSession(s1.sessionId, 'a');
    expect((end.decided ?? []).find((d) => d.key === 'sem')?.outcome.acquired).toBe(true);
    expect(feed.machine.get('sem').holders?.map((h) => h.sessionId)).toEqual([s2.sessionId]);
  });

  it("below level 4 the owner's acquire supersedes its hold whatever the session (the old rule, kept until every member reads 4)", () => {
    for (const level of [1, 3]) {
      const feed = atLevel(level);
      const s1 = feed.openSession('a', 5000);
      const s2 = feed.openSession('a', 5000);
      const held = feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId));
      const other = feed.expect('acquire', feed.underSession('k', 'a', s2.sessionId));
      expect(other.acquired, `level ${level}`).toBe(true);
      expect(other.token).toBeGreaterThan(held.token);
      expect(feed.machine.get('k').sessionId).toBe(s2.sessionId);
    }
  });

  it('the rule survives a snapshot: a restored level-4 machine refuses as the original does', async () => {
    const { LockMachine } = await import('../../../src/lock/index.js');
    const feed = atLevel(4);
    const s1 = feed.openSession('a', 5000);
    const s2 = feed.openSession('a', 5000);
    feed.expect('acquire', feed.underSession('k', 'a', s1.sessionId));
    expect(feed.machine.clusterLevel).toBe(4);
    const copy = new Feed(LockMachine.restore(feed.machine.snapshot()));
    copy.term = feed.term;
    copy.timeMs = feed.timeMs;
    expect(copy.expect('acquire', copy.underSession('k', 'a', s2.sessionId)).acquired).toBe(false);
    expect(feed.expect('acquire', feed.underSession('k', 'a', s2.sessionId)).acquired).toBe(false);
  });
});
