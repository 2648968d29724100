// PeerTransport's "peer unreachable" report (onPeerUnreachable): a working link whose stream breaks and
// whose reconnect is refused — what a killed process looks like — is reported, once. Real gRPC on loopback.
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PeerTransport } from '../../src/transport/grpc.js';
import { encodeRaftFrame } from '../../src/wire/raft-encode.js';
import { decodeRaftFrame } from '../../src/wire/raft-decode.js';
import { type RaftHandlers, raftGrpcService } from '../../src/wire/raft.js';
import type { Message, NodeId } from '../../src/raft/core/types.js';
import type { NodeLogger } from '../../src/raft/logger.js';
import { freePorts, waitFor } from './harness.js';

const quiet: NodeLogger = { info: () => {}, debug: () => {}, warn: () => {}, error: () => {} };
const hb = (from: string, to: string, seq: number): Message => ({
  type: 'AppendEntries',
  from,
  to,
  term: 1,
  prevLogIndex: seq,
  prevLogTerm: 1,
  entries: [],
  leaderCommit: 0,
  round: seq,
});

/** `m` as the Raft stream's handler gets it from the wire: encoded by the sender, decoded by the service. */
const asReceived = (m: Message) => decodeRaftFrame(encodeRaftFrame([m], 'c1', 0));

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

/** A member's server, listening before any transport dials (see pair()); its transport comes later. */
async function listen(port: number): Promise<{ server: grpc.Server; serve(transport: PeerTransport, received: Message[]): void }> {
  let handlers: ReturnType<PeerTransport['handlers']> | null = null;
  const server = new grpc.Server();
  const lazy: RaftHandlers = {
    Stream: (call, cb) => handlers!.Stream(call, cb),
    Forward: (call) => handlers!.Forward(call),
  };
  server.addService(raftGrpcService.definition(), lazy);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return { server, serve: (transport, received) => (handlers = transport.handlers((m) => received.push(m))) };
}

/** The links' clock (PeerTransportOptions.nowMs): a test moves it by hand. */
const clock = { ms: 0 };

function member(id: string, listening: Awaited<ReturnType<typeof listen>>, peers: Map<string, string>): Member {
  const received: Message[] = [];
  const reports: NodeId[] = [];
  const transport = new PeerTransport({
    selfId: id,
    peers,
    queueLimit: 100,
    maxMessageBytes: 1 << 20,
    logger: quiet,
    traceMessages: false,
    onPeerUnreachable: (p) => reports.push(p),
    nowMs: () => clock.ms,
  });
  transport.setIdentity({ clusterId: 'c1', members: new Set(['a', 'b']) });
  listening.serve(transport, received);
  const server = listening.server;
  closers.push(() => {
    server.forceShutdown();
    transport.close();
  });
  return { transport, server, received, reports };
}

/** a and b, each having heard the other (so each link counts as working). Both listen before either
 *  transport dials: a link that dialled a port nobody listened on yet left its channel in TRANSIENT_FAILURE,
 *  and once the peer's own messages had marked the link alive, that stale state read as "reconnect
 *  refused" and b was reported gone during set-up — the other half of the flaky ['b', 'b'] (issue 22). */
async function pair() {
  const [pa, pb] = (await freePorts(2)) as [number, number];
  const peers = new Map([
    ['a', `127.0.0.1:${pa}`],
    ['b', `127.0.0.1:${pb}`],
  ]);
  const [la, lb] = await Promise.all([listen(pa), listen(pb)]);
  const a = member('a', la, peers);
  const b = member('b', lb, peers);
  // Resent until through, as Raft would: a message written before the peer listened is lost.
  let seq = 0;
  await waitFor(
    'both links to carry a message',
    () => {
      seq++;
      if (b.received.length === 0) a.transport.send([hb('a', 'b', seq)]);
      if (a.received.length === 0) b.transport.send([hb('b', 'a', seq)]);
      return a.received.length > 0 && b.received.length > 0;
    },
    10_000,
    20,
  );
  return { a, b };
}

describe('PeerTransport: peer unreachable reports', () => {
  it('reports a peer whose process is gone (sockets closed, port refusing) — once', async () => {
    const { a, b } = await pair();
    expect(a.reports).toEqual([]); // nothing reported while setting up
    // kill -9 in miniature: b's sockets close and nothing listens on its port any more.
    b.server.forceShutdown();
    b.transport.close();
    await waitFor('a to report b unreachable', () => a.reports.length > 0, 5_000, 5);
    expect(a.reports).toEqual(['b']);
    // The reconnects that keep failing are not reported again. A link reconnects only when it has something
    // to send, so keep sending (as Raft's heartbeats would) until three more reconnect attempts have run.
    const opened = a.transport.streamsOpenedTo('b');
    let seq = 1000;
    await waitFor(
      'three reconnect attempts after the report',
      () => {
        a.transport.send([hb('a', 'b', ++seq)]);
        return a.transport.streamsOpenedTo('b') >= opened + 3;
      },
      5_000,
      20,
    );
    expect(a.reports).toEqual(['b']);
  });
});

describe('PeerTransport: what a report of a gone peer takes back', () => {
  /** An inbound Raft stream as the server hands it to the handler: we emit its messages ourselves. */
  function inboundStream(): EventEmitter & { getPeer(): string } {
    return Object.assign(new EventEmitter(), { getPeer: () => 'ipv4:127.0.0.1:1' });
  }

  // The race behind the flaky test above (issue 22: 5 of 12 loaded runs reported ['b', 'b']): a dying peer's
  // stream to us flushes its last messages on the way out; arriving after our report, they marked the link
  // alive again, and the next failed reconnect reported the same death a second time. Driven by hand here:
  // no timing decides it.
  it('a message on a stream the peer opened before the report does not revive the link; one on a new stream does', async () => {
    const { a, b } = await pair();
    const serve = a.transport.handlers(() => {}).Stream as unknown as (call: EventEmitter, cb: () => void) => void;
    const before = inboundStream();
    serve(before, () => {}); // b's stream to us, open while b still lived
    b.server.forceShutdown();
    b.transport.close();
    await waitFor('a to report b unreachable', () => a.reports.length > 0, 5_000, 5);
    expect(a.transport.peerStates().get('b')).toBe(false);
    // b's last heartbeat, flushed late on the old stream: no sign of life.
    before.emit('data', asReceived(hb('b', 'a', 7)));
    expect(a.transport.peerStates().get('b')).toBe(false);
    // A stream opened after the report (b restarted and dialled us): b is back.
    const after = inboundStream();
    serve(after, () => {});
    after.emit('data', asReceived(hb('b', 'a', 8)));
    expect(a.transport.peerStates().get('b')).toBe(true);
    expect(a.reports).toEqual(['b']);
  });

  it("messages that go on arriving on the old stream a probe's length after the report revive the link: the peer lives", async () => {
    const { a, b } = await pair();
    const serve = a.transport.handlers(() => {}).Stream as unknown as (call: EventEmitter, cb: () => void) => void;
    const old = inboundStream();
    serve(old, () => {}); // b's stream to us, which stays up
    b.server.forceShutdown(); // our stream to b breaks and a reconnect fails: reported gone
    await waitFor('a to report b unreachable', () => a.reports.length > 0, 5_000, 5);
    clock.ms += 999;
    old.emit('data', asReceived(hb('b', 'a', 7)));
    expect(a.transport.peerStates().get('b')).toBe(false); // could still be a dying peer's late flush
    clock.ms += 1;
    old.emit('data', asReceived(hb('b', 'a', 8)));
    expect(a.transport.peerStates().get('b')).toBe(true); // a second after the report: it is alive
    b.transport.close();
  });
});
