// PeerTransport's "peer unreachable" report (onPeerUnreachable): a working link whose stream breaks and
// whose reconnect is refused — what a killed process looks like — is reported, once. Real gRPC on loopback.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PeerTransport } from '../../../src/transport/grpc.js';
import { RaftClient } from '../../../src/transport/proto.js';
import type { Message, NodeId } from '../../../src/raft/core/types.js';
import type { NodeLogger } from '../../../src/raft/logger.js';
import { freePorts, waitFor } from '../../integration/harness.js';

const quiet: NodeLogger = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };
const hb = (from: string, to: string, seq: number): Message => ({ type: 'AppendEntries', from, to, term: 1, prevLogIndex: seq, prevLogTerm: 1, entries: [], leaderCommit: 0, round: seq });

const closers: Array<() => void> = [];
afterEach(() => {
  while (closers.length > 0) closers.pop()!();
});

interface Member {
  transport: PeerTransport;
  server: grpc.Server;
  received: Message[];
  reports: NodeId[];
}

async function member(id: string, port: number, peers: Map<string, string>): Promise<Member> {
  const received: Message[] = [];
  const reports: NodeId[] = [];
  const transport = new PeerTransport({ selfId: id, peers, queueLimit: 100, maxMessageBytes: 1 << 20, logger: quiet, traceMessages: false, onPeerUnreachable: (p) => reports.push(p) });
  transport.setIdentity({ clusterId: 'c1', members: new Set(['a', 'b']) });
  const server = new grpc.Server();
  server.addService(RaftClient.service, transport.handlers((m) => received.push(m)));
  await new Promise<void>((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  closers.push(() => {
    server.forceShutdown();
    transport.close();
  });
  return { transport, server, received, reports };
}

/** a and b, each having heard the other (so each link counts as working). */
async function pair() {
  const [pa, pb] = (await freePorts(2)) as [number, number];
  const peers = new Map([['a', `127.0.0.1:${pa}`], ['b', `127.0.0.1:${pb}`]]);
  const a = await member('a', pa, peers);
  const b = await member('b', pb, peers);
  // Resent until through, as Raft would: a message written before the peer listened is lost.
  let seq = 0;
  await waitFor('both links to carry a message', () => {
    seq++;
    if (b.received.length === 0) a.transport.send([hb('a', 'b', seq)]);
    if (a.received.length === 0) b.transport.send([hb('b', 'a', seq)]);
    return a.received.length > 0 && b.received.length > 0;
  }, 10_000, 20);
  return { a, b };
}

describe('PeerTransport: peer unreachable reports', () => {
  it('reports a peer whose process is gone (sockets closed, port refusing) — once', async () => {
    const { a, b } = await pair();
    // kill -9 in miniature: b's sockets close and nothing listens on its port any more.
    b.server.forceShutdown();
    b.transport.close();
    await waitFor('a to report b unreachable', () => a.reports.length > 0, 5_000, 5);
    expect(a.reports).toEqual(['b']);
    // The reconnects that keep failing are not reported again. A link reconnects only when it has something
    // to send, so keep sending (as Raft's heartbeats would): the retries then run on the backoff schedule
    // (50, 100, 200 ms ...) — wait until a few of them must have run.
    const t0 = Date.now();
    let seq = 1000;
    await waitFor('a few reconnect rounds', () => {
      a.transport.send([hb('a', 'b', ++seq)]);
      return Date.now() - t0 > 400;
    }, 2_000, 20);
    expect(a.reports).toEqual(['b']);
  });

});
