// The peer transport's outbound queue is bounded: a dead peer costs at most queueLimit messages (plus
// slots not yet compacted), and the overflow is logged once per episode, not per message.
import { describe, expect, it } from 'vitest';
import { PeerTransport } from '../../../src/transport/grpc.js';
import type { Message } from '../../../src/raft/core/types.js';
import { freePorts } from '../../integration/harness.js';

describe('PeerTransport outbound queue', () => {
  it('stays bounded for an unreachable peer and warns once', async () => {
    const [deadPort] = await freePorts(1);
    const warnings: string[] = [];
    const noop = () => {};
    const transport = new PeerTransport({
      selfId: 'a',
      peers: new Map([['a', '127.0.0.1:1'], ['b', `127.0.0.1:${deadPort}`]]),
      queueLimit: 100,
      maxMessageBytes: 1 << 20,
      logger: { info: noop, debug: noop, error: noop, warn: (_o: object, msg: string) => warnings.push(msg) },
      traceMessages: false,
    });
    const hb = (i: number): Message => ({ type: 'AppendEntries', from: 'a', to: 'b', term: 1, prevLogIndex: i, prevLogTerm: 1, entries: [], leaderCommit: 0, round: i });
    const link = (transport as unknown as { links: Map<string, { queue: unknown[]; head: number; reconnectTimer: unknown }> }).links.get('b')!;
    for (let i = 0; i < 20_000; i++) transport.send([hb(i)]);
    expect(link.queue.length - link.head).toBeLessThanOrEqual(100);
    expect(link.queue.length).toBeLessThanOrEqual(2 * 100 + 1100);
    expect(warnings.filter((w) => w.includes('peer queue full'))).toHaveLength(1);
    // Once the connection attempt has failed, sends queue up while a reconnect is pending: still bounded.
    const deadline = Date.now() + 5000;
    while (link.reconnectTimer === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(link.reconnectTimer).not.toBeNull();
    for (let i = 0; i < 20_000; i++) transport.send([hb(i)]);
    expect(link.queue.length - link.head).toBeLessThanOrEqual(100);
    expect(link.queue.length).toBeLessThanOrEqual(2 * 100 + 1100);
    // One warning per overflow episode, not per message: this batch either continues the first episode or
    // starts a second one (if the first batch drained into the stream before the connection failed).
    const overflowWarnings = warnings.filter((w) => w.includes('peer queue full')).length;
    expect(overflowWarnings).toBeGreaterThanOrEqual(1);
    expect(overflowWarnings).toBeLessThanOrEqual(2);
    transport.close();
  });
});
