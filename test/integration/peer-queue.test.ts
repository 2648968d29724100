// The peer transport's outbound queue, judged by what a real peer receives and what is logged, not by its
// private fields: messages arrive in the order they were sent; when the peer cannot take them the queue
// holds at most `queueLimit`, dropping the oldest (Raft retransmits whatever still matters); the overflow
// is logged once per episode, not per message. Loopback sockets only; waits are on conditions with deadlines.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILD_LEVEL, LEVEL_PEER_BATCHES } from '../../src/lock/versions.js';
import { PeerTransport } from '../../src/transport/grpc.js';
import { BATCH_MAX_MESSAGES, BATCH_MAX_BYTES } from '../../src/transport/peer-link.js';
import { raftGrpcService } from '../../src/wire/raft.js';
import type { Message } from '../../src/raft/core/types.js';
import type { NodeLogger } from '../../src/raft/logger.js';
import { freePorts, waitFor } from './harness.js';

const QUEUE_LIMIT = 100;
const BURST = 20_000;
const OVERFLOW_WARNING = 'peer queue full; dropping its oldest messages';

/** A heartbeat whose prevLogIndex is its sequence number, so the receiver can tell which ones arrived. */
const heartbeat = (seq: number): Message => ({
  type: 'AppendEntries',
  from: 'a',
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

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

function sender(port: number, logger: NodeLogger): PeerTransport {
  const transport = new PeerTransport({
    selfId: 'a',
    peers: new Map([
      ['a', '127.0.0.1:1'],
      ['b', `127.0.0.1:${port}`],
    ]),
    queueLimit: QUEUE_LIMIT,
    maxMessageBytes: 1 << 20,
    logger,
    traceMessages: false,
  });
  closers.push(() => transport.close());
  return transport;
}

/** Peer b: a real gRPC server with the Raft service, recording the sequence number of each message. */
async function startPeer(port: number): Promise<number[]> {
  const received: number[] = [];
  const transport = new PeerTransport({
    selfId: 'b',
    peers: new Map([['b', `127.0.0.1:${port}`]]),
    queueLimit: QUEUE_LIMIT,
    maxMessageBytes: 1 << 20,
    logger: recordingLogger(),
    traceMessages: false,
  });
  const server = new grpc.Server();
  server.addService(
    raftGrpcService.definition(),
    transport.handlers((m) => received.push(m.type === 'AppendEntries' ? m.prevLogIndex : -1)),
  );
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  closers.push(() => {
    server.forceShutdown();
    transport.close();
  });
  return received;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/**
 * What may arrive from a burst of `BURST` sends that the peer could not take at once: the few the stream
 * accepted before pushing back (its buffer is far below QUEUE_LIMIT) and the newest QUEUE_LIMIT, in order.
 * Everything in between was dropped.
 */
function expectOnlyEndsOfBurst(received: number[], offset: number): void {
  const fromBurst = received.filter((s) => s >= offset && s < offset + BURST).map((s) => s - offset);
  expect(fromBurst).toEqual([...fromBurst].sort((x, y) => x - y));
  expect(fromBurst.filter((s) => s >= QUEUE_LIMIT && s < BURST - QUEUE_LIMIT)).toEqual([]);
}

describe('PeerTransport outbound queue', () => {
  it('delivers in order; a burst the stream cannot take keeps only the newest queueLimit; one warning per overflow episode', async () => {
    const [port] = await freePorts(1);
    const received = await startPeer(port!);
    const logger = recordingLogger();
    const transport = sender(port!, logger);

    for (let seq = 0; seq < BURST; seq++) transport.send([heartbeat(seq)]);
    expect(logger.warnings.filter((w) => w === OVERFLOW_WARNING)).toHaveLength(1);
    await waitFor('the newest message of the first burst to arrive', () => received.includes(BURST - 1));
    expectOnlyEndsOfBurst(received, 0);
    // Nothing of the newest queueLimit is lost: the queue dropped only from its old end.
    expect(received.slice(-QUEUE_LIMIT)).toEqual(range(BURST - QUEUE_LIMIT, BURST));

    // The queue drained, so the episode is over: a second burst is a second episode and warns once more.
    for (let seq = BURST; seq < 2 * BURST; seq++) transport.send([heartbeat(seq)]);
    expect(logger.warnings.filter((w) => w === OVERFLOW_WARNING)).toHaveLength(2);
    await waitFor('the newest message of the second burst to arrive', () => received.includes(2 * BURST - 1));
    expectOnlyEndsOfBurst(received, BURST);
    expect(received.slice(-QUEUE_LIMIT)).toEqual(range(2 * BURST - QUEUE_LIMIT, 2 * BURST));

    // Messages sent one at a time, each taken before the next, all arrive, in order, with no warning.
    for (let seq = 2 * BURST; seq < 2 * BURST + 20; seq++) {
      transport.send([heartbeat(seq)]);
      await waitFor(`message ${seq} to arrive`, () => received.includes(seq), 5000, 5);
    }
    expect(received.slice(-20)).toEqual(range(2 * BURST, 2 * BURST + 20));
    expect(logger.warnings.filter((w) => w === OVERFLOW_WARNING)).toHaveLength(2);
  });

  it('a peer that is down costs one warning per outage, not one per message or per reconnect; once it is back, new messages get through in order', async () => {
    const [port] = await freePorts(1);
    const logger = recordingLogger();
    const transport = sender(port!, logger);

    for (let seq = 0; seq < BURST; seq++) transport.send([heartbeat(seq)]);
    expect(logger.warnings.filter((w) => w === OVERFLOW_WARNING)).toHaveLength(1);

    const received = await startPeer(port!);
    // Reconnecting has backoff, and what is written to a stream that then fails is lost: keep offering a
    // fresh message until messages sent after the peer came back arrive.
    let next = BURST;
    await waitFor(
      'messages sent after the peer came back to arrive',
      () => {
        if (received.filter((s) => s >= BURST).length >= 3) return true;
        transport.send([heartbeat(next++)]);
        return false;
      },
      15_000,
      100,
    );
    // Whatever survived of the outage's burst is one of its ends (never its middle), and all is in order.
    expectOnlyEndsOfBurst(received, 0);
    expect(received).toEqual([...received].sort((x, y) => x - y));
    expect(logger.warnings.filter((w) => w === OVERFLOW_WARNING)).toHaveLength(1);
  });
});

describe('PeerTransport dialOverrides (nodes[].peerDialOverrides)', () => {
  it('dials an overridden member at the override, also after setPeers() hands it the advertised address again', async () => {
    const [deadPort, port] = await freePorts(2);
    const received = await startPeer(port!);
    const transport = new PeerTransport({
      selfId: 'a',
      // The advertised address goes nowhere: only the override reaches b.
      peers: new Map([['b', `127.0.0.1:${deadPort}`]]),
      queueLimit: QUEUE_LIMIT,
      maxMessageBytes: 1 << 20,
      logger: recordingLogger(),
      traceMessages: false,
      dialOverrides: new Map([['b', `127.0.0.1:${port}`]]),
    });
    closers.push(() => transport.close());
    transport.send([heartbeat(1)]);
    await waitFor('the message to reach b through the override', () => received.includes(1));
    // A configuration change re-announces b at its advertised address: the link stays on the override.
    transport.setPeers(new Map([['b', `127.0.0.1:${deadPort}`]]));
    transport.send([heartbeat(2)]);
    await waitFor('the next message to arrive the same way', () => received.includes(2));
  });
});

/** An append carrying `bytes` of entry data, numbered like heartbeat() by its prevLogIndex. */
const bigAppend = (seq: number, bytes: number): Message =>
  ({
    ...heartbeat(seq),
    entries: [{ index: seq + 1, term: 1, kind: 'normal', data: new Uint8Array(bytes).fill(seq % 251) }],
  }) as Message;

/** Two nodes that both serve: `b` records what it receives, and announces `bLevel` in what it sends `a`. */
async function pair(
  bLevel: number,
): Promise<{ a: PeerTransport; b: PeerTransport; received: Message[]; before: { frames: number; messages: number } }> {
  const [portA, portB] = await freePorts(2);
  const peers = new Map([
    ['a', `127.0.0.1:${portA}`],
    ['b', `127.0.0.1:${portB}`],
  ]);
  const received: Message[] = [];
  const heardByA: Message[] = [];
  const make = (id: string, level: number, deliver: (m: Message) => void, port: number) => {
    const transport = new PeerTransport({
      selfId: id,
      peers,
      queueLimit: 10_000,
      maxMessageBytes: 4 << 20,
      logger: recordingLogger(),
      traceMessages: false,
      clusterLevel: level,
    });
    const server = new grpc.Server({ 'grpc.max_receive_message_length': 4 << 20 });
    server.addService(raftGrpcService.definition(), transport.handlers(deliver));
    closers.push(() => {
      server.forceShutdown();
      transport.close();
    });
    return new Promise<PeerTransport>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve(transport))),
    );
  };
  const a = await make('a', BUILD_LEVEL, (m) => heardByA.push(m), portA!);
  const b = await make('b', bLevel, (m) => received.push(m), portB!);
  // a's stream to b is up (it was first dialled before b listened: a broken stream makes a wait for b's
  // word again), then a learns b's level from a message b sends it.
  // What is written to a stream that then fails is lost: offer again until it arrives.
  await waitFor('b to hear from a', () => received.length > 0 || (a.send([heartbeat(0)]), false), 15_000, 50);
  await waitFor(
    'a to hear from b',
    () => heardByA.length > 0 || (b.send([{ ...heartbeat(0), from: 'b', to: 'a' } as Message]), false),
    15_000,
    50,
  );
  received.length = 0;
  const before = a.writtenTo('b');
  return { a, b, received, before };
}

describe('PeerTransport batches (RaftMessage.batch)', () => {
  it('to a peer that reads them: what is sent in one turn leaves in few gRPC messages, and every message arrives once, in order, whole', async () => {
    const { a, received, before } = await pair(BUILD_LEVEL);
    // One turn: 3,000 heartbeats with big appends among them (a message above BATCH_MAX_BYTES leaves alone),
    // so batches are cut by count, by bytes and by the big ones.
    const sent: Message[] = [];
    for (let seq = 1; seq <= 3000; seq++)
      sent.push(seq % 500 === 0 ? bigAppend(seq, BATCH_MAX_BYTES + 1) : seq % 97 === 0 ? bigAppend(seq, 20_000) : heartbeat(seq));
    for (const m of sent) a.send([m]);
    await waitFor('the last message to arrive', () => received.some((m) => m.type === 'AppendEntries' && m.prevLogIndex === 3000));
    expect(received).toEqual(sent);
    const frames = a.writtenTo('b').frames - before.frames;
    expect(a.writtenTo('b').messages - before.messages).toBe(3000);
    // At most BATCH_MAX_MESSAGES a frame; 20 KB appends close a batch after three of them.
    expect(frames).toBeGreaterThanOrEqual(3000 / BATCH_MAX_MESSAGES);
    expect(frames).toBeLessThan(300);
  });

  it('to a peer whose build does not read them (level 5): one gRPC message per Raft message, as before', async () => {
    const { a, received, before } = await pair(LEVEL_PEER_BATCHES - 1);
    const sent = Array.from({ length: 500 }, (_, i) => heartbeat(i + 1));
    for (const m of sent) a.send([m]);
    await waitFor('the last message to arrive', () => received.length === 500);
    expect(received).toEqual(sent);
    expect(a.writtenTo('b')).toEqual({ frames: before.frames + 500, messages: before.messages + 500 });
  });
});
