// One peer link (etcd's rafthttp peer): the long-lived client stream that carries this node's one-way Raft
// messages to one peer, its bounded outbound queue, reconnect with backoff, the probe that tells a killed
// peer from a broken stream (peer-probe.ts), and the Forward stream (forward.ts) for lock calls to it while it leads.
// - A bounded outbound queue: a dead peer costs at most `queueLimit` messages; when full, the oldest are
//   dropped (Raft retransmits whatever matters).
// - Reconnect with exponential backoff and jitter; HTTP/2 flow control pushes back through write().
// - Batches: to a peer whose build reads them (it announced LEVEL_PEER_BATCHES), what this node has for it
//   in one turn of the event loop leaves at the turn's end as one gRPC message (RaftMessage.batch). A
//   leader under load has ~3 messages a turn for each follower, a follower ~3 acknowledgements for the
//   leader (counted with 16 clients), and each gRPC message costs a stream write, an HTTP/2 frame and
//   a wake-up on the other side whatever its size.
import * as grpc from '@grpc/grpc-js';
import type { Message, NodeId } from '../raft/core/types.js';
import { mark } from '../trace/stages.js';
import { encodeRaftFrame } from '../wire/raft-encode.js';
import { ForwardStream } from './forward.js';
import { probeGone } from './peer-probe.js';
import { type RaftStub, raftGrpcService } from '../wire/raft.js';
import type { NodeLogger } from '../raft/logger.js';

/** How long after a broken stream a failed reconnect still counts as "the peer is gone"; later, the
 *  election timeout (500-1000 ms at the defaults) has done the job anyway. */
const GONE_PROBE_MS = 1000;

/** The first reconnect waits 25-50 ms (with jitter): a peer back from a restart or a short cut is redialled
 *  well within a heartbeat (100 ms at the defaults). */
const BACKOFF_MIN_MS = 50;
/** The longest wait between reconnects: a peer back from a long outage is redialled within about two
 *  election timeouts (500-1000 ms at the defaults), not after grpc's 120 s (see NODE_CHANNEL_BACKOFF). */
const BACKOFF_MAX_MS = 2000;
/** Each failed reconnect doubles the backoff (up to BACKOFF_MAX_MS): from 50 ms, 2 s is six failures away. */
const BACKOFF_GROWTH = 2;

/** The cluster level a message carries when its build announces none (a build before the gate): proto3's
 *  default, what such a build's messages decode to. */
export const NO_LEVEL_ANNOUNCED = 0;

/** A batch holds at most this many messages... */
export const BATCH_MAX_MESSAGES = 64;
/** ...and messages whose sizes (batchBytesOf) add up to at most this. A message larger than it alone
 *  (entries or a snapshot chunk of up to raft.maxBytesPerMessage, which the config keeps below the gRPC
 *  limit) leaves on its own, as it would without batches, so a batch never exceeds what one message may. */
export const BATCH_MAX_BYTES = 64 * 1024;

/** An upper bound on a message's encoded size, for BATCH_MAX_BYTES: its payload bytes plus a generous
 *  allowance per entry and per message for the header, varints and field tags. */
export function batchBytesOf(m: Message): number {
  let bytes = 128 + m.from.length + m.to.length;
  if (m.type === 'AppendEntries') for (const e of m.entries) bytes += 48 + e.data.length;
  else if (m.type === 'InstallSnapshot') bytes += 256 + m.chunk.length;
  else if (m.type === 'ReadIndexRequest' || m.type === 'ReadIndexResponse') bytes += m.ctx.length;
  return bytes;
}

/** Written slots are freed once there are more than this many and they are most of the queue: copying the
 *  unwritten tail is then paid for by the writes that freed them, and below it they waste little memory. */
const COMPACT_AFTER_SLOTS = 1024;

/** The longest a channel to another node waits between its own connection attempts. grpc keeps a channel
 *  that failed to connect retrying in the background, and until the next attempt succeeds every call on it
 *  fails at once with the last error: at a restart of the whole cluster each node's channels fail while the
 *  peers are still loading their state (seconds at a million locks), and with a 2 s ceiling the first
 *  pre-vote after every node was up waited 0.6-2.4 s for the next attempt. Half the shortest election
 *  timeout (500 ms at the defaults) keeps that wait within one campaign; the price is four refused connects
 *  a second to a peer that is down, while it is down. */
const CHANNEL_BACKOFF_MAX_MS = 250;

/** Reconnect backoff for every channel a node opens to another node — peer streams and the forwarding of
 *  client calls alike. grpc's default (1 s, x1.6, up to 120 s) left a follower unable to forward for
 *  13.5 s after a 45 s cut of the leader had healed. */
export const NODE_CHANNEL_BACKOFF = {
  'grpc.initial_reconnect_backoff_ms': BACKOFF_MIN_MS,
  'grpc.max_reconnect_backoff_ms': CHANNEL_BACKOFF_MAX_MS,
} as const;

/** What a link reads of the transport's options (grpc.ts's PeerTransportOptions extends it). */
export interface PeerLinkOptions {
  selfId: NodeId;
  queueLimit: number;
  maxMessageBytes: number;
  logger: NodeLogger;
  /** TLS: the channel credentials peers are dialed with (the CA, and this node's certificate to present).
   *  Each peer's server certificate must then name the peer's id (CN or DNS SAN), not its address. */
  credentials?: grpc.ChannelCredentials;
  /** The stream to this peer failed and a fresh connection attempt failed too (PeerLink.confirmGone says
   *  why that pair): the process is most likely gone. The runtime passes it to RaftNode.peerUnreachable. */
  onPeerUnreachable?: (peer: NodeId) => void;
  /** The highest cluster level this build reads (src/lock/versions.ts), announced on every message we send;
   *  NO_LEVEL_ANNOUNCED (peer-link.ts; the default) = announce nothing, as a build before the gate. */
  clusterLevel?: number;
  /** A monotonic clock (ms) for the link's timing rules (PeerLink.markAlive); tests drive it. */
  nowMs?: () => number;
}

export class PeerLink {
  private client!: RaftStub;
  private stream: grpc.ClientWritableStream<unknown> | null = null;
  /** Outbound messages; slots before `head` are already written (no O(n) shift per message). */
  private queue: Message[] = [];
  private head = 0;
  /** Set while the queue overflows, so the drop is logged once per episode, not per message. */
  private overflowing = false;
  private writable = true;
  private backoffMs = BACKOFF_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private closed = false;
  /** A confirmGone() probe is watching the channel (one at a time). */
  private probingGone = false;
  /** Lock calls we forward to this peer while it leads, on the same channel as our Raft stream. */
  private forward: ForwardStream | null = null;
  /** The newest inbound stream (PeerTransport's count) when we last reported this peer gone: messages on
   *  streams up to it are what the peer said before it went, flushed late, and prove nothing (markAlive). */
  private reportedGoneAtStream = 0;
  /** When (opts.nowMs) we last reported this peer gone. */
  private reportedGoneAtMs = 0;
  /** The newest inbound stream when our stream last broke: while the probe runs, messages on streams up to
   *  it prove nothing either (see markAlive). */
  private brokeAtStream = 0;

  constructor(
    readonly peerId: NodeId,
    readonly address: string,
    private readonly opts: PeerLinkOptions,
    private readonly clusterId: () => string,
    /** How many inbound peer streams the transport has accepted so far. */
    private readonly inboundStreams: () => number,
    /** Whether the peer's build reads batched messages (its latest message announced LEVEL_PEER_BATCHES). */
    private readonly readsBatches: () => boolean = () => false,
  ) {
    this.connect(opts.credentials);
  }

  /** (Re)creates the channel, e.g. with reloaded certificates, and opens the stream at once: it stays
   *  open even while we have nothing to say. Followers never message each other until an election, and
   *  a pre-vote (or the first forwarded call) to a peer whose connection was still to be set up waited
   *  20-60 ms for TCP and HTTP/2 just when the leader was gone; an open call also keeps grpc from idling
   *  the channel. After a break the stream reopens on demand (the next message). */
  connect(credentials: grpc.ChannelCredentials | undefined): void {
    const opts = this.opts;
    if (this.client) {
      this.stream?.cancel();
      this.stream = null;
      this.forward?.close();
      this.forward = null;
      this.client.close();
    }
    this.client = raftGrpcService.client(this.address, credentials ?? grpc.credentials.createInsecure(), {
      // With TLS the peer proves it is `peerId`: its certificate must name the id, whatever address it has.
      ...(credentials ? { 'grpc.ssl_target_name_override': this.peerId, 'grpc.default_authority': this.peerId } : {}),
      'grpc.max_send_message_length': opts.maxMessageBytes,
      'grpc.max_receive_message_length': opts.maxMessageBytes,
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      ...NODE_CHANNEL_BACKOFF,
    });
    this.open();
  }

  /** The stream our forwarded lock calls to this peer ride on (opened on first use). */
  forwardStream(): ForwardStream {
    this.forward ??= new ForwardStream(this.client, () => ({ from: this.opts.selfId, clusterId: this.clusterId() }), this.peerId);
    return this.forward;
  }

  enqueue(m: Message): void {
    if (this.closed) return;
    if (this.queue.length - this.head >= this.opts.queueLimit) {
      this.head++; // drop the oldest: Raft retransmits whatever still matters
      if (!this.overflowing) {
        this.overflowing = true;
        this.opts.logger.warn(
          { nodeId: this.opts.selfId, peer: this.peerId, queueLimit: this.opts.queueLimit },
          'peer queue full; dropping its oldest messages',
        );
      }
    }
    this.queue.push(m);
    if (this.batching()) {
      // setImmediate runs after the I/O callbacks of this turn: every message they produce joins the batch.
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flushAtTurnEnd);
      }
      return;
    }
    this.flush();
    this.compact(); // also while disconnected, when flush() returns before writing anything
  }

  private readonly flushAtTurnEnd = (): void => {
    this.flushScheduled = false;
    this.flush();
    this.compact();
  };

  /** Streams this link has opened (the first, then one per reconnect attempt): diagnostics and tests. */
  streamsOpened = 0;
  /** gRPC messages written (a batch counts once) and Raft messages in them: diagnostics and tests. */
  framesWritten = 0;
  messagesWritten = 0;
  /** A flush at the end of this turn is scheduled (batching peers only). */
  private flushScheduled = false;
  /** Our stream broke and nothing has arrived from the peer since: it may have restarted as a build that
   *  does not read batches, so none are sent until it has spoken (markAlive). */
  private batchesUnconfirmed = false;

  private open(): void {
    if (this.stream || this.closed || this.reconnectTimer) return;
    this.streamsOpened++;
    const stream = this.client.Stream((err) => {
      // The stream ended (peer restarted, network cut, or it refused a message): reconnect later.
      // CANCELLED counts too unless we cancelled it ourselves (connect() drops it first): a peer that shuts
      // down (SIGTERM, or under load even a closing socket) may end our stream that way.
      const current = this.stream === stream;
      if (current) this.stream = null;
      if (this.closed) return;
      if (err && (err.code !== grpc.status.CANCELLED || current)) {
        this.opts.logger.debug({ nodeId: this.opts.selfId, peer: this.peerId, code: err.code, err: err.details }, 'peer stream ended');
        // The peer may come back as another build: no batches until it has announced its level again.
        this.batchesUnconfirmed = true;
        // Only the break of a link that worked is news; the failed retries after it are not re-reported.
        const wasAlive = this.alive;
        this.markDown();
        if (wasAlive) {
          this.brokeAtStream = this.inboundStreams();
          this.confirmGone();
        }
      }
      this.scheduleReconnect();
    }) as grpc.ClientWritableStream<unknown>;
    stream.on('error', () => {}); // reported through the callback above
    stream.on('drain', () => {
      this.writable = true;
      this.flush();
    });
    this.stream = stream;
    this.writable = true;
  }

  /** Our stream to the peer ended with an error: probe whether the peer is gone (peer-probe.ts), and
   *  report it once per break of a working link. */
  private confirmGone(): void {
    const report = this.opts.onPeerUnreachable;
    if (!report || this.probingGone) return;
    this.probingGone = true;
    probeGone(
      this.client.getChannel(),
      GONE_PROBE_MS,
      () => this.closed,
      (gone) => {
        this.probingGone = false;
        if (!gone) return;
        this.opts.logger.info(
          { nodeId: this.opts.selfId, peer: this.peerId, address: this.address },
          'peer unreachable: stream broken and reconnect failed',
        );
        this.reportedGoneAtStream = this.inboundStreams();
        this.reportedGoneAtMs = this.nowMs();
        report(this.peerId);
      },
    );
  }

  private scheduleReconnect(): void {
    if (this.reconnectTimer || this.closed) return;
    // "Equal jitter": half the backoff for sure, the other half at random, so links that broke together
    // (a restarted peer, a healed partition) do not all redial at once.
    const delay = this.backoffMs / 2 + Math.random() * (this.backoffMs / 2);
    this.backoffMs = Math.min(this.backoffMs * BACKOFF_GROWTH, BACKOFF_MAX_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      // Only with something to send: reopening an idle link to a dead peer on every timer would grow the
      // backoff (ours and grpc's) to 2 s while it is down, and its first messages after it comes back would
      // wait that long (a pre-vote answer held 1.2 s in the failover bench).
      if (this.head < this.queue.length) this.flush();
    }, delay);
    this.reconnectTimer.unref?.();
  }

  private flush(): void {
    if (this.closed) return;
    if (!this.stream) this.open();
    const stream = this.stream;
    if (!stream) return;
    const level = this.opts.clusterLevel ?? NO_LEVEL_ANNOUNCED;
    const batches = this.batching();
    while (this.writable && this.head < this.queue.length) {
      const batch = batches && this.head + 1 < this.queue.length ? this.takeBatch() : [this.queue[this.head++]!];
      const bytes = encodeRaftFrame(batch, this.clusterId(), level);
      this.messagesWritten += batch.length;
      this.framesWritten++;
      mark('peer.write');
      this.writable = stream.write(bytes);
    }
    this.compact();
  }

  private batching(): boolean {
    return !this.batchesUnconfirmed && this.readsBatches();
  }

  /** The queued messages from `head` that fit one batch (at least one), taken off the queue. */
  private takeBatch(): Message[] {
    const first = this.queue[this.head++]!;
    const batch = [first];
    let bytes = batchBytesOf(first);
    while (this.head < this.queue.length && batch.length < BATCH_MAX_MESSAGES) {
      const next = this.queue[this.head]!;
      const size = batchBytesOf(next);
      if (bytes + size > BATCH_MAX_BYTES) break;
      bytes += size;
      batch.push(next);
      this.head++;
    }
    return batch;
  }

  /** Free written or dropped slots: all at once when empty, else once they are most of the array. */
  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
      this.overflowing = false;
    } else if (this.head > COMPACT_AFTER_SLOTS && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private alive = false;

  private nowMs(): number {
    return this.opts.nowMs?.() ?? performance.now();
  }

  /** Whether the outbound stream to this peer works (it has answered since the last failure). */
  get connected(): boolean {
    return this.alive;
  }

  /** A message arrived from this peer on inbound stream number `stream`: the link works, so reset the
   *  backoff. Not from a stream the peer opened before we reported it gone: a dying peer's last messages
   *  (its stream flushed on the way out) arrived after the report and re-armed it, and the next failed
   *  reconnect reported the same death twice (the peer-unreachable test met it under load). */
  markAlive(stream: number): void {
    this.batchesUnconfirmed = false; // its level is the one this message announced (PeerTransport.heard)
    // ...but only for as long as such late flushing can last: messages that still arrive on that old stream a
    // probe's length after the report come from a peer that is alive (the report was wrong: e.g. our stream
    // broke at start-up while its stream to us stayed up), and without this the link read as down — in
    // metrics and on the dashboard — for as long as the peer's stream lived (operations test, 1 of 3 loaded
    // runs).
    if (stream <= this.reportedGoneAtStream && this.nowMs() - this.reportedGoneAtMs < GONE_PROBE_MS) return;
    // The same while the probe still runs: a message the dying peer flushed before the break, arriving
    // during the probe, re-armed the link before the report, and the next failed reconnect reported the
    // same death again (the peer-unreachable test under CI load, ['b', 'b'] at the first report).
    if (this.probingGone && stream <= this.brokeAtStream) return;
    this.backoffMs = BACKOFF_MIN_MS;
    if (this.reconnectTimer && !this.stream) {
      // It talks to us, so it is up: reconnect now rather than when the backoff (up to 2 s) runs out.
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = null;
      this.flush();
    }
    if (!this.alive) {
      this.alive = true;
      this.opts.logger.info({ nodeId: this.opts.selfId, peer: this.peerId, address: this.address }, 'peer connected');
    }
  }

  markDown(): void {
    if (this.alive) {
      this.alive = false;
      this.opts.logger.info({ nodeId: this.opts.selfId, peer: this.peerId, address: this.address }, 'peer disconnected');
    }
  }

  close(): void {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.forward?.close();
    this.stream?.end();
    this.stream = null;
    this.client.close();
  }
}
