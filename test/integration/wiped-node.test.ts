// Issue 22, finding 2: the first-boot check's blind spot. A member whose data dir was wiped must not
// rejoin as the voter it was (it forgot its votes and its log) — also when every peer restarted since it
// last ran, so that none has heard from it in its current life and no leader has a match index for it.
// From cluster level 2 the log records who ran (a memberRan entry per member), and Status says so
// (Member.ran), so every peer refuses it whatever it has restarted since.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster, waitFor } from './harness.js';

describe('a wiped member, after all its peers restarted', () => {
  let c: TestCluster;
  beforeAll(async () => {
    c = await TestCluster.create();
    c.startAll();
    await c.waitForLeader();
  });
  afterAll(async () => {
    await c?.stop();
  });

  it("is refused on a plain start: the peers' logs record that it ran", async () => {
    // Every node's log records every member as having run (the leader proposes it once they acknowledge).
    await waitFor(
      'every member recorded as having run, on every node',
      async () => {
        const sts = await Promise.all(c.ids.map((id) => c.status(id)));
        return sts.every((st) => st.members.length === 3 && st.members.every((m) => m.ran)) ? true : null;
      },
      10_000,
    );
    const { leader } = await c.waitForLeader();
    const victim = c.ids.find((id) => id !== leader)!;
    const rest = c.ids.filter((id) => id !== victim);
    await c.kill(victim);
    rmSync(join(c.dir, victim), { recursive: true, force: true });
    // Both peers restart: neither has heard from the victim since, and the new leader has no match for it.
    for (const id of rest) await c.kill(id);
    for (const id of rest) c.start(id);
    await c.waitForLeader(rest);
    for (const id of rest) {
      const me = (await c.status(id)).members.find((m) => m.id === victim)!;
      expect({ seen: me.seen, match: me.match_index, ran: me.ran }).toEqual({ seen: false, match: '0', ran: true });
    }
    const child = c.start(victim);
    // It checks its peers before it starts serving: refused within a few seconds, or it was let back in.
    const exitCode = await new Promise<number | null | 'still running'>((r) => {
      const timer = setTimeout(() => r('still running'), 15_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        r(code);
      });
    });
    expect(exitCode, 'the wiped node was let back in as the voter it was').not.toBe('still running');
    expect(exitCode).not.toBe(0);
    expect(c.logOf(victim)).toMatch(new RegExp(`node ${victim} is already a member .*leasehold members remove ${victim}`));
  }, 60_000);
});
