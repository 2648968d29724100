// The article's ten failure scenarios (SPEC.md), at simulation level: a simulated cluster of real Raft
// cores and real lock machines, controlled virtual time and scripted faults (lock-harness.ts). Every run is
// also watched by the lock oracle and the Raft invariants, as in the seeded sweep. Each scenario asserts
// who owns the lock, which token is current, whether the write is allowed, whether a retry is safe and how
// the system recovers.
import { describe, expect, it } from 'vitest';
import { BUILD_LEVEL, type LockResult } from '../../src/lock/index.js';
import { LockScenario as Scenario, type ScenarioOptions, type Sent } from './lock-harness.js';
import { loadLockModule } from './lock-module.js';
import type { LockReplica } from './lock-workload.js';

const TTL = 1_000;
// SIM_LOCK=/abs/scratch/dir runs the scenarios against a scratch copy with a planted bug (they must fail).
const module = await loadLockModule(process.env['SIM_LOCK']);
class LockScenario extends Scenario {
  constructor(opts: ScenarioOptions = {}) {
    super({ module, ...opts });
  }
}

describe('the article failure scenarios, in the simulated cluster', () => {
  it('1. two clients acquire the same lock at the same moment: exactly one succeeds', async () => {
    const scn = await new LockScenario({ seed: 101 }).start();
    const alice = scn.client('alice');
    const bob = scn.client('bob');
    // Both proposals reach the leader in the same instant (one event): the log orders them.
    const t0 = scn.now;
    const ca = alice.acquireCommand('orders', TTL);
    const cb = bob.acquireCommand('orders', TTL);
    const sa = await scn.send(ca);
    const sb = await scn.send(cb);
    const ra = alice.onAcquire(await scn.answer(sa), 'orders', TTL, t0);
    const rb = bob.onAcquire(await scn.answer(sb), 'orders', TTL, t0);
    if (ra.type !== 'acquire' || rb.type !== 'acquire') throw new Error('acquire results expected');
    expect([ra.acquired, rb.acquired].filter(Boolean)).toHaveLength(1);
    const [winner, loser, won, lost] = ra.acquired ? [alice, bob, ra, rb] : [bob, alice, rb, ra];
    // Owner and token.
    expect(won.token).toBe(BigInt(Math.min(sa.index, sb.index)));
    expect(lost).toMatchObject({ acquired: false, token: 0n, holderOwner: winner.owner });
    expect(lost.holderTtlMs).toBeGreaterThan(0);
    expect(lost.holderTtlMs).toBeLessThanOrEqual(TTL);
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: winner.owner, token: won.token, lastToken: won.token });
    // Writes: the winner's is taken, the loser holds no lease and does not write.
    expect(winner.write()).toBe('accepted');
    expect(loser.state).toBe('IDLE');
    expect(loser.write()).toBe('not-attempted');
    // Retries: the winner's retry (same request_id) returns the same token, issues none; the loser's is re-judged.
    const again = await scn.request(ra.acquired ? ca : cb);
    expect(again).toMatchObject({ type: 'acquire', acquired: true, token: won.token, replayed: true });
    expect(await scn.request(ra.acquired ? cb : ca)).toMatchObject({ acquired: false, holderOwner: winner.owner });
    expect(await scn.leaseCount()).toBe(1);
    expect((await scn.get('orders')).lastToken).toBe(won.token);
    // Recovery: the winner releases; the loser gets the lock with a higher token.
    expect(await winner.release()).toMatchObject({ released: true });
    const next = await loser.acquire('orders', TTL);
    expect(next.acquired).toBe(true);
    expect(next.token).toBeGreaterThan(won.token);
    expect(loser.write()).toBe('accepted');
    expect(winner.zombieWrite(won.token)).toBe('refused');
  });

  it('2. the holder dies without releasing: the lock frees itself after its TTL, with a higher token', async () => {
    const scn = await new LockScenario({ seed: 102 }).start();
    const alice = scn.client('alice');
    const bob = scn.client('bob');
    const grantedAt = scn.now;
    const first = await alice.acquire('orders', 300);
    expect(first.acquired).toBe(true);
    expect(alice.write()).toBe('accepted');
    // alice dies: no renew, no release. Before the TTL ran out the lock is still hers.
    await scn.advance(150);
    const early = await bob.acquire('orders', TTL);
    expect(early).toMatchObject({ acquired: false, holderOwner: 'alice' });
    expect(early.holderTtlMs).toBeLessThanOrEqual(300 - 150 + 5);
    await scn.advance(grantedAt + 300 * 0.95 - scn.now);
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: 'alice', token: first.token });
    // After the TTL the leader's housekeeping expires it (an `expire` entry); nobody had to release it.
    await scn.runUntil(() => scn.peek('orders')?.held === false, 'the lease expiring', 500);
    expect(scn.now - grantedAt).toBeGreaterThanOrEqual(300);
    await scn.runUntil(() => scn.workload.oracle.stats.expired === 1, 'the expire entry applying', 200);
    expect(await scn.leaseCount()).toBe(0);
    expect(await scn.get('orders')).toMatchObject({ held: false, lastToken: first.token });
    // Retrying bob's refused request_id replays the refusal (its first outcome) — even now that the key is
    // free, so a late duplicate can never grant a lock its sender was told it did not get.
    const refusedId = bob.lastRequestId;
    expect(await scn.request(bob.acquireCommand('orders', TTL, refusedId))).toMatchObject({
      acquired: false,
      replayed: true,
      holderOwner: 'alice',
    });
    expect(await scn.get('orders')).toMatchObject({ held: false, lastToken: first.token });
    // bob gets it with a new request (a higher token); alice's late write is fenced off once bob's has landed.
    const second = await bob.acquire('orders', TTL);
    expect(second.acquired).toBe(true);
    expect(second.token).toBeGreaterThan(first.token);
    expect(bob.write()).toBe('accepted');
    expect(alice.state).toBe('LOST');
    expect(alice.write()).toBe('not-attempted');
    expect(alice.zombieWrite()).toBe('refused');
    // bob's retry of that acquire (same request_id) is safe: same token.
    expect(await scn.request(bob.acquireCommand('orders', TTL, bob.lastRequestId))).toMatchObject({
      acquired: true,
      token: second.token,
      replayed: true,
    });
  });

  it('3. renew after the lease ran out is refused and the client is LOST; it recovers with a new acquire', async () => {
    for (const housekeeping of [true, false]) {
      // With housekeeping the leader has already removed the lease (NOT_HELD); when it has not run yet
      // (a housekeeping period far beyond the test), the lease is still there past its deadline (EXPIRED).
      // Either way: refused.
      const scn = await new LockScenario({ seed: 103, lockProfile: { housekeepingEveryTicks: housekeeping ? 1 : 1e7 } }).start();
      // With housekeeping the leader raises the cluster to the level this build reads (7: no renew is
      // remembered); without it, it never ticks and the cluster stays at level 1 (a renew's record replays).
      const leader = await scn.readyLeader();
      const level = () => (leader.sm as LockReplica).machine.clusterLevel;
      if (housekeeping) await scn.runUntil(() => level() === BUILD_LEVEL, `the cluster at level ${BUILD_LEVEL}`);
      const alice = scn.client('alice');
      const first = await alice.acquire('orders', 200);
      expect(alice.state).toBe('ACTIVE');
      await scn.advance(260); // a pause past the TTL
      expect(alice.state).toBe('LOST'); // the client's own deadline passed: it stops writing by itself
      expect(alice.write()).toBe('not-attempted');
      const rid = scn.newRequestId();
      const renew = await alice.renew(rid);
      expect(renew).toMatchObject({ renewed: false, reason: housekeeping ? 'NOT_HELD' : 'EXPIRED' });
      expect(alice.state).toBe('LOST');
      expect(await scn.get('orders')).toMatchObject({ held: false, lastToken: first.token });
      // Retrying the renew is safe and changes nothing. Below level 7 its refusal is replayed; from 7 no renew
      // is remembered, so the retry is judged again and refused for the same reason (a lease that ran out never
      // comes back: LEASES.md "Renews without a dedup record").
      expect(level()).toBe(housekeeping ? BUILD_LEVEL : 1);
      expect(await alice.renew(rid)).toMatchObject({
        renewed: false,
        replayed: !housekeeping,
        reason: housekeeping ? 'NOT_HELD' : 'EXPIRED',
      });
      expect(await scn.get('orders')).toMatchObject({ held: false, lastToken: first.token });
      // Recovery: a new acquire (new handle, new token).
      const again = await alice.acquire('orders', 200);
      expect(again.acquired).toBe(true);
      expect(again.token).toBeGreaterThan(first.token);
      expect(alice.state).toBe('ACTIVE');
      expect(alice.write()).toBe('accepted');
      expect(alice.zombieWrite(first.token)).toBe('refused');
    }
  });

  it('4. the acquire response is lost: a retry with the same request_id gets the same token, no orphan lease', async () => {
    const scn = await new LockScenario({ seed: 104 }).start();
    const alice = scn.client('alice');
    const cmd = alice.acquireCommand('orders', TTL);
    const lost = await scn.request(cmd); // applied, but the answer never reaches alice
    expect(lost).toMatchObject({ acquired: true, replayed: false });
    expect(alice.state).toBe('IDLE');
    const sentAt = scn.now;
    const retry = alice.onAcquire(await scn.request(cmd), 'orders', TTL, sentAt);
    expect(retry).toMatchObject({ acquired: true, replayed: true, token: (lost as { token: bigint }).token });
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: 'alice', token: alice.token, lastToken: alice.token });
    expect(await scn.leaseCount()).toBe(1); // no second lease, no second token
    expect(alice.write()).toBe('accepted');
    // Also after a failover: the dedup table is replicated state.
    const leader = await scn.readyLeader();
    scn.crash(leader);
    const next = await scn.readyLeader();
    expect(next).not.toBe(leader);
    expect(await scn.request(cmd)).toMatchObject({ acquired: true, replayed: true, token: alice.token });
    expect(await scn.get('orders')).toMatchObject({ owner: 'alice', token: alice.token, lastToken: alice.token });
    // Recovery / cleanup: release leaves nothing behind.
    expect(await alice.release()).toMatchObject({ released: true });
    expect(await scn.get('orders')).toMatchObject({ held: false, lastToken: alice.token });
    expect(await scn.leaseCount()).toBe(0);
  });

  it('5. the release response is lost: the retry is safe, and changes nothing once the lock moved on', async () => {
    const scn = await new LockScenario({ seed: 105 }).start();
    const alice = scn.client('alice');
    const bob = scn.client('bob');
    const first = await alice.acquire('orders', TTL);
    const rid = scn.newRequestId();
    const cmd = { type: 'release', timeMs: 0, key: 'orders', owner: 'alice', token: first.token, requestId: rid } as const;
    expect(await scn.request(cmd)).toMatchObject({ released: true, replayed: false }); // answer lost
    expect(await scn.request(cmd)).toMatchObject({ released: true, replayed: true }); // the retry: same answer
    expect(await scn.get('orders')).toMatchObject({ held: false, lastToken: first.token });
    // The lock moves on; a late duplicate of alice's release must not free bob's lock.
    const second = await bob.acquire('orders', TTL);
    expect(second.token).toBeGreaterThan(first.token);
    expect(await scn.request(cmd)).toMatchObject({ released: true, replayed: true });
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: 'bob', token: second.token });
    // Nor may a fresh release with alice's old token.
    expect(await scn.request({ ...cmd, requestId: scn.newRequestId() })).toMatchObject({ released: false, reason: 'WRONG_OWNER' });
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: 'bob', token: second.token });
    expect(bob.write()).toBe('accepted');
    expect(await bob.renew()).toMatchObject({ renewed: true });
  });

  it('6. the old holder writes after a newer token exists: the fenced resource refuses it', async () => {
    const scn = await new LockScenario({ seed: 106 }).start();
    const alice = scn.client('alice');
    const bob = scn.client('bob');
    const first = await alice.acquire('orders', 200);
    expect(alice.write()).toBe('accepted');
    await scn.advance(400); // alice is paused (GC) past her TTL; the lease expires
    const second = await bob.acquire('orders', TTL);
    expect(second).toMatchObject({ acquired: true });
    expect(second.token).toBeGreaterThan(first.token);
    expect(bob.write()).toBe('accepted');
    // alice wakes up and writes with the token she checked before the pause.
    expect(alice.zombieWrite()).toBe('refused');
    expect(scn.resource.last('orders')).toBe(second.token);
    // Her handle is LOST (deadline passed), so through the client she would not even try.
    expect(alice.state).toBe('LOST');
    expect(alice.write()).toBe('not-attempted');
    expect(await alice.renew()).toMatchObject({ renewed: false, reason: 'WRONG_OWNER' });
    expect(await scn.get('orders')).toMatchObject({ owner: 'bob', token: second.token });
    // Recovery: once bob releases, alice re-acquires with a newer token and writes again.
    expect(await bob.release()).toMatchObject({ released: true });
    const third = await alice.acquire('orders', TTL);
    expect(third.token).toBeGreaterThan(second.token);
    expect(alice.write()).toBe('accepted');
    expect(bob.zombieWrite(second.token)).toBe('refused');
  });

  it("7. the old holder tries to release the new holder's lock: refused, the new lock stays", async () => {
    const scn = await new LockScenario({ seed: 107 }).start();
    const alice = scn.client('alice');
    const bob = scn.client('bob');
    const first = await alice.acquire('orders', 200);
    await scn.advance(400);
    const second = await bob.acquire('orders', TTL);
    expect(second.acquired).toBe(true);
    expect(await alice.release(undefined, first.token)).toMatchObject({ released: false, reason: 'WRONG_OWNER' });
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: 'bob', token: second.token });
    expect(bob.write()).toBe('accepted');
    // The same for a token bob's own re-acquire superseded: only the current token releases.
    const third = await bob.acquire('orders', TTL);
    expect(third.token).toBeGreaterThan(second.token);
    expect(await bob.release(undefined, second.token)).toMatchObject({ released: false, reason: 'WRONG_TOKEN' });
    expect(await bob.renew(undefined, second.token)).toMatchObject({ renewed: false, reason: 'WRONG_TOKEN' });
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: 'bob', token: third.token });
    expect(bob.write()).toBe('accepted');
    // Recovery: the real holder's release works.
    expect(await bob.release()).toMatchObject({ released: true });
    expect(await scn.get('orders')).toMatchObject({ held: false, lastToken: third.token });
  });

  it('8. the whole service restarts: locks, tokens and remembered requests survive; tokens keep increasing', async () => {
    const scn = await new LockScenario({ seed: 108, profile: { snapshotEvery: 4 } }).start();
    const alice = scn.client('alice');
    const bob = scn.client('bob');
    const carol = scn.client('carol');
    const aliceRid = scn.newRequestId();
    const a = await alice.acquire('orders', 5_000, aliceRid);
    const b = await bob.acquire('invoices', 5_000);
    expect(await bob.release()).toMatchObject({ released: true });
    const c = await carol.acquire('invoices', 5_000);
    for (let i = 0; i < 6; i++) expect(await alice.renew()).toMatchObject({ renewed: true }); // grow the log past snapshots
    const issued = [a.token, b.token, c.token];
    const before = { orders: await scn.get('orders'), invoices: await scn.get('invoices') };
    // Power loss: every node at once; then they come back from their durable state only.
    for (const n of scn.sim.nodes) scn.crash(n);
    await scn.advance(300);
    for (const n of scn.sim.nodes) scn.restart(n);
    await scn.readyLeader();
    expect(scn.sim.stats.compactions).toBeGreaterThan(0); // the restart went through snapshots
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: 'alice', token: a.token, lastToken: before.orders.lastToken });
    expect(await scn.get('invoices')).toMatchObject({ held: true, owner: 'carol', token: c.token, lastToken: before.invoices.lastToken });
    // The holders keep going; the remembered acquire still answers its retry with the same token.
    expect(await alice.renew()).toMatchObject({ renewed: true });
    expect(alice.write()).toBe('accepted');
    expect(await scn.request(alice.acquireCommand('orders', 5_000, aliceRid))).toMatchObject({
      acquired: true,
      replayed: true,
      token: a.token,
    });
    // Tokens keep increasing after the restart.
    const d = await scn.client('dave').acquire('reports', 5_000);
    expect(d.acquired).toBe(true);
    for (const t of issued) expect(d.token).toBeGreaterThan(t);
    expect(await carol.release()).toMatchObject({ released: true });
    const e = await bob.acquire('invoices', 5_000);
    expect(e.token).toBeGreaterThan(c.token);
    await scn.runUntil(() => scn.converged(), 'all replicas converging');
  });

  it("9. failover: the new leader's tokens are all greater, and leases are not cut short by its clock", async () => {
    const scn = await new LockScenario({ seed: 109 }).start();
    const old = await scn.readyLeader();
    // The followers' clocks run 5 and 10 seconds ahead of the leader's (they have stamped nothing yet).
    let ahead = 0;
    for (const n of scn.sim.nodes)
      if (n !== old)
        scn.workload.clock.nodes[n.idx] = { offsetMs: scn.workload.clock.nodes[old.idx]!.offsetMs + (ahead += 5_000), rate: 1 };
    const alice = scn.client('alice');
    const bob = scn.client('bob');
    const issued: bigint[] = [];
    const a = await alice.acquire('orders', TTL);
    issued.push(a.token);
    for (let i = 0; i < 3; i++) {
      const r = await bob.acquire('invoices', TTL);
      issued.push(r.token);
      await bob.release();
    }
    const crashedAt = scn.now;
    scn.crash(old);
    const leader = await scn.readyLeader();
    expect(leader).not.toBe(old);
    // The new leader's clock is >= 5 s ahead: without the lease extension at its termStart, alice's lease
    // would look long expired. It is extended to a full TTL from the new leader's start instead.
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: 'alice', token: a.token });
    expect(await bob.acquire('orders', TTL)).toMatchObject({ acquired: false, holderOwner: 'alice' });
    const renewedAt = scn.now;
    expect(await alice.renew()).toMatchObject({ renewed: true });
    expect(alice.write()).toBe('accepted');
    // Every token the new leader issues is greater than every earlier one.
    const carol = scn.client('carol');
    const c = await carol.acquire('reports', TTL);
    for (const t of issued) expect(c.token).toBeGreaterThan(t);
    // Recovery: the old leader restarts, rejoins as a follower and catches up.
    scn.restart(old);
    await scn.runUntil(() => scn.converged(), 'the old leader catching up');
    expect(old.raft.status().role).toBe('follower');
    // Without renewals the lease still ends — a full TTL after the last renew, not earlier.
    await scn.runUntil(() => scn.peek('orders')?.held === false, 'the lease expiring under the new leader', 3 * TTL);
    expect(scn.now - renewedAt).toBeGreaterThanOrEqual(TTL - 1);
    expect(scn.now - crashedAt).toBeGreaterThan(TTL);
    const next = await bob.acquire('orders', TTL);
    expect(next.acquired).toBe(true);
    expect(next.token).toBeGreaterThan(c.token);
  });

  it('10. requests arrive with different delays and out of order: the results match one total order', async () => {
    const scn = await new LockScenario({ seed: 110, nodes: 5 }).start();
    const leader0 = await scn.readyLeader();
    // Ten clients send at t = 0, 1, 2, ... ms; network delays make them ARRIVE in another order, and a
    // leader change in the middle makes some of them retry (same request_id) on the new leader.
    const owners = ['ann', 'ben', 'cat', 'dan', 'eve', 'fay', 'gus', 'hal', 'ivy', 'jon'];
    const delays = [9, 2, 14, 5, 1, 11, 3, 8, 13, 6];
    const arrivals = owners.map((owner, i) => ({ owner, at: scn.now + i + delays[i]!, rid: `${owner}-1` }));
    arrivals.sort((x, y) => x.at - y.at);
    const sent = new Map<string, Sent>();
    for (const [k, a] of arrivals.entries()) {
      if (a.at > scn.now) await scn.advance(a.at - scn.now);
      if (k === 5) {
        scn.crash(leader0); // in-flight requests may be lost with it: those clients retry
        await scn.readyLeader();
      }
      sent.set(a.owner, await scn.send({ type: 'acquire', timeMs: 0, key: 'orders', owner: a.owner, ttlMs: 60_000, requestId: a.rid }));
    }
    const results = new Map<string, LockResult>();
    for (const a of arrivals) {
      let s = sent.get(a.owner)!;
      let r: LockResult | null = null;
      for (let attempt = 0; r === null && attempt < 3; attempt++) {
        try {
          r = await scn.answer(s);
        } catch {
          s = await scn.send({ type: 'acquire', timeMs: 0, key: 'orders', owner: a.owner, ttlMs: 60_000, requestId: a.rid }); // retry, same request_id
        }
      }
      results.set(a.owner, r!);
    }
    // Then the winner releases and every loser tries again, all at once.
    const winner = owners.find((o) => (results.get(o) as { acquired: boolean }).acquired)!;
    const won = results.get(winner) as Extract<LockResult, { type: 'acquire' }>;
    const rel = await scn.send({ type: 'release', timeMs: 0, key: 'orders', owner: winner, token: won.token, requestId: `${winner}-2` });
    const second: { o: string; s: Sent }[] = [];
    for (const o of owners.filter((x) => x !== winner).reverse())
      second.push({ o, s: await scn.send({ type: 'acquire', timeMs: 0, key: 'orders', owner: o, ttlMs: 60_000, requestId: `${o}-2` }) });
    await scn.answer(rel);
    for (const { o, s } of second) results.set(`${o}#2`, await scn.answer(s));

    // One total order: replay the committed log through a sequential model of the lock and compare.
    const leader = await scn.readyLeader();
    const rep = leader.sm as LockReplica;
    const model = new SequentialLockModel();
    let acquiredCount = 0;
    for (let i = 1; i <= leader.applied; i++) {
      const e = rep.results!.get(i);
      if (e === undefined || (e.type !== 'acquire' && e.type !== 'release')) continue;
      const cmd = scn.workload.module.decodeCommand(scn.sim.nodes[leader.idx]!.durable.entry(i)?.data ?? new Uint8Array()) as never;
      const expected = model.apply(i, cmd);
      expect(summarize(e), `entry ${i}`).toEqual(expected);
      if (e.type === 'acquire' && e.acquired && !e.replayed) acquiredCount++;
    }
    // Exactly one of the ten first attempts won; after the release exactly one of the nine others did.
    expect([...results.entries()].filter(([k, r]) => !k.includes('#') && r.type === 'acquire' && r.acquired)).toHaveLength(1);
    const round2 = [...results.entries()].filter(([k, r]) => k.includes('#') && r.type === 'acquire' && r.acquired);
    expect(round2).toHaveLength(1);
    expect(acquiredCount).toBe(2);
    const holder = round2[0]![0].replace('#2', '');
    const token2 = (round2[0]![1] as { token: bigint }).token;
    expect(token2).toBeGreaterThan(won.token);
    expect(await scn.get('orders')).toMatchObject({ held: true, owner: holder, token: token2 });
    // Every answer a client got is the one the log produced at that index (no answer from a stale order).
    for (const [k, r] of results) {
      const owner = k.replace('#2', '');
      if (r.type !== 'acquire' || owner === holder || owner === winner) continue;
      expect(r.acquired, k).toBe(false);
    }
  });
});

describe('regression: leader checkpoints stay bounded when the leader cannot commit', () => {
  // An earlier lock-service rule proposed a checkpoint whenever leases existed and nothing was PROPOSED for
  // checkpointIdleMs — whether or not the previous checkpoint committed. A leader that cannot commit (cut
  // off with CheckQuorum off, or behind a quorum slower than checkpointIdleMs) appended them faster than
  // they commit, without bound (the seeded sweep found it: seed 439 reached 150 uncommitted checkpoints).
  // The lock leader (src/lock/leader/housekeeping.ts) keeps one in flight; its unit test plants the old
  // rule. Here the shipped service runs behind a cut-off leader for 2 s with a 10 ms idle period.
  it('checkpoints from a leader that cannot commit: at most one in flight', async () => {
    const scn = await new LockScenario({
      seed: 111,
      lockProfile: { checkpointIdleMs: 10 },
      profile: { raft: { checkQuorum: false } },
    }).start();
    await scn.client('alice').acquire('orders', 60_000);
    const leader = await scn.readyLeader();
    // The leader's one-off proposals done first — the version gate's clusterLevel and a memberRan per member
    // (machine.ts) — so what is left to count is checkpoints.
    const machine = () => (leader.sm as LockReplica).machine;
    await scn.runUntil(
      () => machine().clusterLevel >= 2 && scn.sim.nodes.every((n) => machine().hasRun?.(n.id) === true),
      "the cluster level raised to this build's and every member recorded as having run",
    );
    const before = leader.raft.status();
    scn.isolate(leader);
    await scn.advance(2_000);
    const st = leader.raft.status();
    expect(st.role).toBe('leader'); // CheckQuorum off: it never notices
    expect(st.commitIndex).toBe(before.commitIndex);
    expect(st.lastIndex - st.commitIndex).toBeLessThanOrEqual(1);
    scn.heal();
    await scn.runUntil(() => scn.converged(), 'recovery after the partition heals');
  });
});

/** The lock without time (TTLs far longer than the test): what a single serial server would answer. */
class SequentialLockModel {
  private holder: { owner: string; token: bigint } | null = null;
  private readonly seen = new Map<string, string>();

  apply(index: number, cmd: { type: string; owner: string; token?: bigint; requestId: string }): string {
    const id = `${cmd.owner}/${cmd.requestId}`;
    const remembered = this.seen.get(id);
    if (remembered !== undefined) return `${remembered} (replayed)`;
    let out: string;
    if (cmd.type === 'acquire') {
      if (this.holder === null || this.holder.owner === cmd.owner) {
        this.holder = { owner: cmd.owner, token: BigInt(index) };
        out = `acquired ${index}`;
        this.seen.set(id, out);
      } else {
        out = `refused, held by ${this.holder.owner}`;
      }
    } else {
      const ok = this.holder !== null && this.holder.owner === cmd.owner && this.holder.token === cmd.token;
      out = ok ? 'released' : 'refused';
      if (ok) {
        this.holder = null;
        this.seen.set(id, out);
      }
    }
    return out;
  }
}

function summarize(r: LockResult): string {
  if (r.type === 'acquire')
    return r.acquired ? `acquired ${r.token}${r.replayed ? ' (replayed)' : ''}` : `refused, held by ${r.holderOwner}`;
  if (r.type === 'release') return r.released ? `released${r.replayed ? ' (replayed)' : ''}` : 'refused';
  return r.type;
}
