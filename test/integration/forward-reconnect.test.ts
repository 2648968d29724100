// A follower forwards client calls to the leader. It used to do so with a unary call to the leader's
// client port, on a channel with grpc's default backoff (1 s x1.6 up to 120 s): chaos runs saw acquires
// through the old leader's follower fail for 13.5 s after a 45 s cut had healed (issue 12). The fix gave
// that channel the peer transport's backoff (50 ms .. 2 s: 4.8 s -> 0.8 s to recover here). Since issue 8
// forwarded calls ride the follower's peer link to the leader (raft.proto Forward), so they no longer
// depend on the leader's client port at all: this test now holds that stronger line — a cut of the
// client port fails none of them — and still checks the calls after the heal.
//
// Set-up: every node advertises `address` (a TCP forwarder we can close) and binds `listen` (its real
// port); Raft traffic runs on `peerAddress`, so the cut touches only the client port and the leader keeps
// leading. The test calls the follower on its real port.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointPool, RpcError } from '../../src/client/rpc.js';
import type { AcquireResponse } from '../../src/wire/lock.js';
import { TestCluster, freePorts } from './harness.js';

class Forwarder {
  private server: Server | null = null;
  private sockets = new Set<Socket>();
  constructor(
    readonly port: number,
    readonly target: number,
  ) {}
  async open(): Promise<void> {
    const server = createServer((inbound) => {
      const outbound = connect(this.target, '127.0.0.1');
      for (const s of [inbound, outbound]) {
        this.sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => this.sockets.delete(s));
      }
      inbound.pipe(outbound);
      outbound.pipe(inbound);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.port, '127.0.0.1', () => resolve()));
    this.server = server;
  }
  /** Refuse connections (ECONNREFUSED) and cut the open ones. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
  }
}

describe('a follower forwarding to a leader whose client port is unreachable', () => {
  let c: TestCluster;
  let real: number[];
  const forwarders: Forwarder[] = [];
  beforeAll(async () => {
    real = await freePorts(3);
    c = await TestCluster.create({ size: 3, peerListeners: true, nodeYaml: (_id, i) => `listen: 127.0.0.1:${real[i]}` });
    for (let i = 0; i < 3; i++) {
      const f = new Forwarder(c.ports[i]!, real[i]!);
      await f.open();
      forwarders.push(f);
    }
    c.startAll();
    await c.waitForLeader();
  });
  afterAll(async () => {
    for (const f of forwarders) await f.close();
    await c?.stop();
  });

  it("forwarded calls ride the peer link: a cut of the leader's client port fails none of them", async () => {
    const { leader } = await c.waitForLeader();
    const follower = c.ids.find((id) => id !== leader)!;
    const direct = new EndpointPool({ endpoints: [`127.0.0.1:${real[c.ids.indexOf(follower)]}`], attemptTimeoutMs: 1000 });
    const acquire = (n: number) =>
      direct.call<AcquireResponse>(
        'Acquire',
        { key: `fwd-${n}`, owner: 'o', ttl_ms: '5000', wait_ms: '0', request_id: `fwd-${n}` },
        Date.now() + 1000,
        undefined,
        false,
      );
    try {
      // Set-up, not the claim: right after the election the follower's peer link to the leader may still be
      // in its connect backoff (it was dialled before the leader listened), so this first call may retry
      // (fresh-clone CI run, 2026-12-03: ECONNREFUSED on it, with no retry allowed). The claim below is
      // about calls made once the link is up.
      const warm = await direct.call<AcquireResponse>(
        'Acquire',
        { key: 'fwd-0', owner: 'o', ttl_ms: '5000', wait_ms: '0', request_id: 'fwd-0' },
        Date.now() + 10_000,
      );
      expect(warm.acquired).toBe(true);
      const cut = forwarders[c.ids.indexOf(leader)]!;
      await cut.close();
      // 5 s of forwarded calls while clients cannot reach the leader at all.
      const cutUntil = Date.now() + 5_000;
      const failures: string[] = [];
      let calls = 0;
      for (let n = 1; Date.now() < cutUntil; n++) {
        calls++;
        await acquire(n).then(
          (r) => {
            if (!r.acquired) failures.push(`fwd-${n}: not acquired`);
          },
          (err: unknown) => {
            if (!(err instanceof RpcError)) throw err;
            failures.push(`fwd-${n}: ${err.message}`);
          },
        );
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(calls).toBeGreaterThan(10);
      expect(failures).toEqual([]);
      // The cut touched only the client port: the followers still follow the same leader.
      for (const id of c.ids.filter((x) => x !== leader)) expect((await c.status(id)).leader_id).toBe(leader);
      await cut.open();
      const healedAt = Date.now();
      let recoveredMs = -1;
      for (let n = 1000; Date.now() - healedAt < 15_000; n++) {
        const ok = await acquire(n).then(
          (r) => r.acquired,
          () => false,
        );
        if (ok) {
          recoveredMs = Date.now() - healedAt;
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      console.info(`forwarded call ok ${recoveredMs} ms after the leader's client port came back`);
      expect(recoveredMs).toBeGreaterThanOrEqual(0);
      expect(recoveredMs).toBeLessThan(2500);
    } finally {
      direct.close();
    }
  }, 60_000);
});
