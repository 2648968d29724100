// Runtime membership with real processes, driven through the CLI an operator would use (SPEC
// "Membership", "Joining", "Identity", "Health", `leasehold status` exit codes). One cluster, one story:
// grow 3 -> 5 and shrink back under client load; a removed node restarts and disturbs nothing; a wiped
// node is refused and replaced under a new id; the leader is removed; health and status without quorum.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RpcError } from '../../src/client/rpc.js';
import type { AcquireResponse, GetResponse, ReleaseResponse } from '../../src/wire/lock.js';
import type { StatusResponse } from '../../src/wire/cluster.js';
import { MAIN_JS, TestCluster, waitFor } from './harness.js';

interface CliResult {
  code: number;
  out: string;
}

describe('runtime membership (real processes, through the CLI)', () => {
  let c: TestCluster;
  const cli = (args: string[], endpoints: string[], timeoutMs = 90_000): CliResult => {
    const r = spawnSync(process.execPath, [MAIN_JS, ...args, '--endpoints', endpoints.join(',')], { encoding: 'utf8', timeout: timeoutMs });
    return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
  };
  /** Nodes currently voting or learning, as `members list` prints them. */
  const membersOf = (endpoints: string[]): { voters: string[]; learners: string[] } => {
    const r = cli(['members', 'list', '--json'], endpoints);
    expect(r.code, r.out).toBe(0);
    const list = JSON.parse(r.out).members as { id: string; learner: boolean }[];
    return {
      voters: list
        .filter((m) => !m.learner)
        .map((m) => m.id)
        .sort(),
      learners: list
        .filter((m) => m.learner)
        .map((m) => m.id)
        .sort(),
    };
  };
  const caughtUp = (id: string) =>
    waitFor(`${id} to catch up`, async () => {
      const s = await c.status(id);
      return s.leader_id !== '' && Number(s.applied_index) > 0 ? s : null;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n--- ${id}'s log ---\n${c.logOf(id).slice(-3000)}`);
    });

  beforeAll(async () => {
    c = await TestCluster.create({ size: 3, spare: 3 });
    c.startAll();
    await c.waitForLeader(c.bootstrapIds);
  });
  afterAll(async () => {
    await c?.stop();
  });

  it('grows 3 -> 5 (a learner promoted, then a voter added directly) and shrinks back to 3 under client load: no acknowledged acquire lost, tokens strictly increasing', async () => {
    const eps = c.endpoints(['n1', 'n2', 'n3']);
    // Client load: 3 workers, each acquiring and releasing its own key through every bootstrap node.
    let stop = false;
    const acked = new Map<string, bigint[]>();
    let errors = 0;
    const worker = async (w: number) => {
      const pool = c.pool(['n1', 'n2', 'n3']);
      const key = `load-${w}`;
      acked.set(key, []);
      try {
        while (!stop) {
          try {
            const a = await pool.call<AcquireResponse>(
              'Acquire',
              { key, owner: `w${w}`, ttl_ms: '5000', wait_ms: '3000', request_id: `w${w}-${acked.get(key)!.length}-${Date.now()}` },
              Date.now() + 8000,
            );
            if (!a.acquired) continue;
            acked.get(key)!.push(BigInt(a.token));
            await pool.call<ReleaseResponse>(
              'Release',
              { key, owner: `w${w}`, token: a.token, request_id: `r${w}-${a.token}` },
              Date.now() + 8000,
            );
          } catch (err) {
            if (!(err instanceof RpcError)) throw err;
            errors++;
          }
        }
      } finally {
        pool.close();
      }
    };
    const load = [0, 1, 2].map(worker);
    try {
      let r = cli(['members', 'add', 'n4', c.endpoint('n4'), '--learner'], eps);
      expect(r.code, r.out).toBe(0);
      c.start('n4', { join: true });
      await caughtUp('n4');
      expect(membersOf(eps)).toEqual({ voters: ['n1', 'n2', 'n3'], learners: ['n4'] });
      r = cli(['members', 'promote', 'n4'], eps);
      expect(r.code, r.out).toBe(0);

      r = cli(['members', 'add', 'n5', c.endpoint('n5')], eps);
      expect(r.code, r.out).toBe(0);
      c.start('n5', { join: true });
      await caughtUp('n5');
      expect(membersOf(eps)).toEqual({ voters: ['n1', 'n2', 'n3', 'n4', 'n5'], learners: [] });
      // Every member, the new ones included, sees the same five voters.
      for (const id of ['n1', 'n2', 'n3', 'n4', 'n5']) {
        await waitFor(`${id} to see 5 voters`, async () => (await c.status(id)).members.filter((m) => !m.learner).length === 5);
      }

      for (const id of ['n4', 'n5']) {
        r = cli(['members', 'remove', id], eps);
        expect(r.code, r.out).toBe(0);
      }
      expect(membersOf(eps)).toEqual({ voters: ['n1', 'n2', 'n3'], learners: [] });
    } finally {
      stop = true;
      await Promise.all(load);
    }
    // Tokens per key strictly increase, and nothing acknowledged was lost: the machine's last_token is at
    // least the last token each worker was granted.
    const pool = c.pool(['n1', 'n2', 'n3']);
    try {
      let total = 0;
      for (const [key, tokens] of acked) {
        total += tokens.length;
        for (let i = 1; i < tokens.length; i++)
          expect(tokens[i]! > tokens[i - 1]!, `${key}: ${tokens[i - 1]} then ${tokens[i]}`).toBe(true);
        const g = await pool.call<GetResponse>('Get', { key }, Date.now() + 5000);
        if (tokens.length > 0) expect(BigInt(g.last_token) >= tokens[tokens.length - 1]!).toBe(true);
      }
      expect(total).toBeGreaterThan(20); // the load really ran through the changes
      expect(errors).toBeLessThan(total); // transient UNAVAILABLE during a change is allowed, not a stall
    } finally {
      pool.close();
    }
  }, 120_000);

  it('a removed node that restarts changes neither the leader nor the term', async () => {
    const before = await c.waitForLeader(['n1', 'n2', 'n3']);
    await c.kill('n4');
    c.start('n4', { join: true }); // it has data now: --join is ignored, it restarts with its old log
    const until = Date.now() + 3000; // ten election timeouts of this cluster (tickMs 50 x 6)
    while (Date.now() < until) {
      const now = await c.waitForLeader(['n1', 'n2', 'n3']);
      expect(now).toEqual(before);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(c.logOf('n1') + c.logOf('n2') + c.logOf('n3')).toMatch(/refusing raft messages from n(4|5): it is not a member/);
    await c.kill('n4');
    await c.kill('n5');
  }, 30_000);

  it('a wiped node is refused on a plain start; removing it and adding a new id with --join replaces it', async () => {
    const { leader } = await c.waitForLeader(['n1', 'n2', 'n3']);
    const victim = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;
    const rest = ['n1', 'n2', 'n3'].filter((id) => id !== victim);
    await c.kill(victim);
    rmSync(join(c.dir, victim), { recursive: true, force: true });
    const child = c.start(victim);
    const exitCode = await new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    expect(exitCode).not.toBe(0);
    expect(c.logOf(victim)).toMatch(new RegExp(`node ${victim} is already a member .*leasehold members remove ${victim}`));
    expect(membersOf(c.endpoints(rest)).voters).toContain(victim); // the refusal changed nothing

    let r = cli(['members', 'remove', victim], c.endpoints(rest));
    expect(r.code, r.out).toBe(0);
    r = cli(['members', 'add', 'n6', c.endpoint('n6'), '--learner'], c.endpoints(rest));
    expect(r.code, r.out).toBe(0);
    c.start('n6', { join: true });
    await caughtUp('n6');
    r = cli(['members', 'promote', 'n6'], c.endpoints(rest));
    expect(r.code, r.out).toBe(0);
    expect(membersOf(c.endpoints(rest))).toEqual({ voters: [...rest, 'n6'].sort(), learners: [] });
    // The old id is gone for good.
    r = cli(['members', 'add', victim, c.endpoint(victim)], c.endpoints(rest));
    expect(r.code, r.out).toBe(3);
    expect(r.out).toMatch(/never reused/);
  }, 90_000);

  it('transfer-leader hands leadership to the named voter, and with no name to another voter', async () => {
    const voters = membersOf(c.endpoints(c.ids.filter((id) => c.procs.has(id)))).voters;
    const { leader } = await c.waitForLeader(voters);
    const target = voters.find((id) => id !== leader)!;
    let r = cli(['transfer-leader', target], c.endpoints(voters));
    expect(r.code, r.out).toBe(0);
    expect((await c.waitForLeader(voters)).leader).toBe(target);
    r = cli(['transfer-leader'], c.endpoints(voters));
    expect(r.code, r.out).toBe(0);
    expect((await c.waitForLeader(voters)).leader).not.toBe(target);
    r = cli(['transfer-leader', 'nope'], c.endpoints(voters));
    expect(r.code, r.out).toBe(3);
  }, 30_000);

  it('removing the leader: it answers, hands over and steps down; the rest go on', async () => {
    const voters = membersOf(c.endpoints(c.ids.filter((id) => c.procs.has(id)))).voters;
    const { leader, term } = await c.waitForLeader(voters);
    const r = cli(['members', 'remove', leader], c.endpoints(voters));
    expect(r.code, r.out).toBe(0);
    const rest = voters.filter((id) => id !== leader);
    const next = await c.waitForLeader(rest);
    expect(next.leader).not.toBe(leader);
    expect(BigInt(next.term) > BigInt(term)).toBe(true);
    expect(membersOf(c.endpoints(rest))).toEqual({ voters: rest, learners: [] });
    const pool = c.pool(rest);
    try {
      const a = await pool.call<AcquireResponse>(
        'Acquire',
        { key: 'after-leader-removal', owner: 'o', ttl_ms: '5000', wait_ms: '0', request_id: 'alr-1' },
        Date.now() + 8000,
      );
      expect(a.acquired).toBe(true);
    } finally {
      pool.close();
    }
    await c.kill(leader);
  }, 60_000);

  it('without a quorum: health NOT_SERVING, `status` exits 2 and names the node that did not answer; with one, exit 0', async () => {
    const alive = [...c.procs.keys()].sort();
    expect(alive.length).toBe(2);
    let r = cli(['status'], c.endpoints(alive), 10_000);
    expect(r.code, r.out).toBe(0);
    const health = async (id: string) => {
      const client = new grpc.Client(c.endpoint(id), grpc.credentials.createInsecure());
      try {
        return await new Promise<string>((resolve, reject) =>
          client.makeUnaryRequest(
            '/grpc.health.v1.Health/Check',
            () => Buffer.from([0x0a, 0x00]), // HealthCheckRequest { service: "" }
            (b: Buffer) => (b.length >= 2 && b[0] === 0x08 ? (['UNKNOWN', 'SERVING', 'NOT_SERVING'][b[1]!] ?? 'UNKNOWN') : 'UNKNOWN'),
            {},
            (e, v) => (e ? reject(e) : resolve(v!)),
          ),
        );
      } finally {
        client.close();
      }
    };
    expect(await health(alive[0]!)).toBe('SERVING');
    await c.kill(alive[1]!);
    await waitFor(`${alive[0]} NOT_SERVING`, async () => (await health(alive[0]!)) === 'NOT_SERVING', 10_000);
    r = cli(['status'], c.endpoints(alive), 10_000);
    expect(r.code, r.out).toBe(2);
    expect(r.out).toContain(`did not answer: ${c.endpoint(alive[1]!)}`);
    const s: StatusResponse = await c.status(alive[0]!);
    expect(s.serving).toBe(false);
  }, 60_000);
});
