// SPEC "Identity": a node refuses Raft messages from another cluster and from ids that are not members,
// says so in its log once per sender, and keeps taking its members' messages. Real gRPC on loopback.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { PeerTransport } from '../../src/transport/grpc.js';
import { raftGrpcService } from '../../src/wire/raft.js';
import type { Message } from '../../src/raft/core/types.js';
import type { NodeLogger } from '../../src/raft/logger.js';
import { freePorts, waitFor } from './harness.js';

const hb = (from: string, seq: number): Message => ({
  type: 'AppendEntries',
  from,
  to: 'b',
  term: 1,
  prevLogIndex: seq,
  prevLogTerm: 1,
  entries: [],
  leaderCommit: 0,
  round: seq,
});

function recordingLogger(): NodeLogger & { warnings: string[] } {
  const noop = () => {};
  const warnings: string[] = [];
  return { warnings, info: noop, debug: noop, error: noop, warn: (_o: object, msg: string) => warnings.push(msg) };
}

const closers: Array<() => void> = [];
afterEach(() => {
  while (closers.length > 0) closers.pop()!();
});

async function receiver(port: number, logger: NodeLogger) {
  const received: { from: string; seq: number }[] = [];
  const transport = new PeerTransport({
    selfId: 'b',
    peers: new Map(),
    queueLimit: 100,
    maxMessageBytes: 1 << 20,
    logger,
    traceMessages: false,
  });
  transport.setIdentity({ clusterId: 'cluster-1', members: new Set(['a', 'b', 'c']) });
  const server = new grpc.Server();
  server.addService(
    raftGrpcService.definition(),
    transport.handlers((m) => received.push({ from: m.from, seq: m.type === 'AppendEntries' ? m.prevLogIndex : -1 })),
  );
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  closers.push(() => {
    server.forceShutdown();
    transport.close();
  });
  return { received, transport };
}

function sender(selfId: string, clusterId: string, port: number): PeerTransport {
  const t = new PeerTransport({
    selfId,
    peers: new Map([['b', `127.0.0.1:${port}`]]),
    queueLimit: 100,
    maxMessageBytes: 1 << 20,
    logger: recordingLogger(),
    traceMessages: false,
  });
  t.setIdentity({ clusterId, members: new Set() });
  closers.push(() => t.close());
  return t;
}

describe('PeerTransport identity checks', () => {
  it('drops messages of another cluster and of non-members, logging once per sender; members get through', async () => {
    const [port] = await freePorts(1);
    const logger = recordingLogger();
    const { received } = await receiver(port!, logger);
    const other = sender('a', 'cluster-2', port!);
    const stranger = sender('evil', 'cluster-1', port!);
    const member = sender('c', 'cluster-1', port!);
    for (let i = 0; i < 5; i++) {
      other.send([hb('a', i)]);
      stranger.send([hb('evil', i)]);
    }
    member.send([hb('c', 99)]);
    await waitFor('both refusals to be logged', () => logger.warnings.length >= 2);
    for (let i = 0; i < 5; i++) other.send([hb('a', 10 + i)]);
    member.send([hb('c', 100)]);
    await waitFor('the second member message', () => received.some((r) => r.seq === 100));
    expect(received.map((r) => r.from)).toEqual(['c', 'c']);
    expect(logger.warnings.filter((w) => w.includes("refusing raft messages from a: it belongs to cluster 'cluster-2'"))).toHaveLength(1);
    expect(logger.warnings.filter((w) => w.includes('refusing raft messages from evil: it is not a member'))).toHaveLength(1);
  });

  it('the leader we follow is heard even when our configuration no longer lists it', async () => {
    const [port] = await freePorts(1);
    const { received, transport } = await receiver(port!, recordingLogger());
    transport.setIdentity({ clusterId: 'cluster-1', members: new Set(['b', 'c']), leaderId: 'a' });
    sender('a', 'cluster-1', port!).send([hb('a', 7)]);
    await waitFor('the leaving leader', () => received.some((r) => r.from === 'a'));
  });
});

describe('PeerTransport: a sender our stale configuration does not list', () => {
  it('asks the runtime once, and hears the sender after the members vouch for it', async () => {
    const [port] = await freePorts(1);
    const asked: string[] = [];
    const received: string[] = [];
    const transport = new PeerTransport({
      selfId: 'b',
      peers: new Map(),
      queueLimit: 100,
      maxMessageBytes: 1 << 20,
      logger: recordingLogger(),
      traceMessages: false,
      onUnknownSender: (from) => asked.push(from),
    });
    transport.setIdentity({ clusterId: 'cluster-1', members: new Set(['a', 'b', 'c']) });
    const server = new grpc.Server();
    server.addService(
      raftGrpcService.definition(),
      transport.handlers((m) => received.push(`${m.from}:${m.type === 'AppendEntries' ? m.prevLogIndex : -1}`)),
    );
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    closers.push(() => {
      server.forceShutdown();
      transport.close();
    });
    const d = sender('d', 'cluster-1', port!);
    d.send([hb('d', 1), hb('d', 2)]);
    await waitFor('the runtime to be asked about d', () => asked.length > 0);
    expect(asked).toEqual(['d']); // once, not per message
    expect(received).toEqual([]);
    transport.vouch('d');
    d.send([hb('d', 3)]);
    await waitFor('d to be heard', () => received.includes('d:3'));
  });
});
