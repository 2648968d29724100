// The peer transport over gRPC: one long-lived client stream per peer carries this node's one-way Raft
// messages to it (see proto/leasehold/v1/raft.proto). Replies come back on the peer's own stream to us.
// - A bounded outbound queue per peer: a dead peer costs at most `queueLimit` messages; when full, the
//   oldest are dropped (Raft retransmits whatever matters).
// - Reconnect with exponential backoff and jitter; HTTP/2 flow control pushes back through write().
// - Incoming messages are validated by the codec; a malformed one ends that stream with INVALID_ARGUMENT
//   and never reaches the core.
import * as grpc from '@grpc/grpc-js';
import type { Message, NodeId } from '../raft/core/types.js';
import type { NodeLogger } from '../raft/logger.js';
import type { PeerSender } from '../raft/transport.js';
import { messageFromWire, messageToWire } from './codec.js';
import { RaftClient, type RaftHandlers, type WireRaftMessage } from './proto.js';

export interface PeerTransportOptions {
  selfId: NodeId;
  peers: Map<NodeId, string>;
  queueLimit: number;
  maxMessageBytes: number;
  logger: NodeLogger;
  /** Per-message traffic logs (debug level); off unless the log level is debug. */
  traceMessages: boolean;
}

const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;

class PeerLink {
  private client: RaftClient;
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

  constructor(
    readonly peerId: NodeId,
    readonly address: string,
    private readonly opts: PeerTransportOptions,
  ) {
    this.client = new RaftClient(address, grpc.credentials.createInsecure(), {
      'grpc.max_send_message_length': opts.maxMessageBytes,
      'grpc.max_receive_message_length': opts.maxMessageBytes,
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      'grpc.initial_reconnect_backoff_ms': BACKOFF_MIN_MS,
      'grpc.max_reconnect_backoff_ms': BACKOFF_MAX_MS,
    });
  }

  enqueue(m: Message): void {
    if (this.closed) return;
    if (this.queue.length - this.head >= this.opts.queueLimit) {
      this.head++; // drop the oldest: Raft retransmits whatever still matters
      if (!this.overflowing) {
        this.overflowing = true;
        this.opts.logger.warn({ nodeId: this.opts.selfId, peer: this.peerId, queueLimit: this.opts.queueLimit }, 'peer queue full; dropping its oldest messages');
      }
    }
    this.queue.push(m);
    this.flush();
    this.compact(); // also while disconnected, when flush() returns before writing anything
  }

  private open(): void {
    if (this.stream || this.closed || this.reconnectTimer) return;
    const stream = this.client.Stream((err) => {
      // The stream ended (peer restarted, network cut, or it refused a message): reconnect later.
      if (this.stream === stream) this.stream = null;
      if (this.closed) return;
      if (err && err.code !== grpc.status.CANCELLED) {
        this.opts.logger.debug({ nodeId: this.opts.selfId, peer: this.peerId, code: err.code, err: err.details }, 'peer stream ended');
        this.markDown();
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

  private scheduleReconnect(): void {
    if (this.reconnectTimer || this.closed) return;
    const delay = this.backoffMs / 2 + Math.random() * (this.backoffMs / 2);
    this.backoffMs = Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.head < this.queue.length) this.flush();
    }, delay);
    this.reconnectTimer.unref?.();
  }

  private flush(): void {
    if (this.closed) return;
    if (!this.stream) this.open();
    const stream = this.stream;
    if (!stream) return;
    while (this.writable && this.head < this.queue.length) {
      const m = this.queue[this.head++]!;
      this.writable = stream.write(messageToWire(m));
    }
    this.compact();
  }

  /** Free written or dropped slots: all at once when empty, else once they are most of the array. */
  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
      this.overflowing = false;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private alive = false;

  /** Whether the outbound stream to this peer works (it has answered since the last failure). */
  get connected(): boolean {
    return this.alive;
  }

  /** A message arrived from this peer: the link works, so reset the backoff. */
  markAlive(): void {
    this.backoffMs = BACKOFF_MIN_MS;
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
    this.stream?.end();
    this.stream = null;
    this.client.close();
  }
}

export class PeerTransport implements PeerSender {
  private links = new Map<NodeId, PeerLink>();

  constructor(private readonly opts: PeerTransportOptions) {
    for (const [id, address] of opts.peers) {
      if (id !== opts.selfId) this.links.set(id, new PeerLink(id, address, opts));
    }
  }

  /** Each peer and whether its outbound stream is connected (metrics, quorum warnings). */
  peerStates(): Map<NodeId, boolean> {
    return new Map([...this.links].map(([id, link]) => [id, link.connected]));
  }

  send(messages: Message[]): void {
    for (const m of messages) {
      const link = this.links.get(m.to);
      if (link) link.enqueue(m);
      if (this.opts.traceMessages) this.opts.logger.debug({ nodeId: this.opts.selfId, to: m.to, type: m.type, term: m.term }, 'raft send');
    }
  }

  /** Server side: the Raft service handlers feeding decoded messages to `deliver`. */
  handlers(deliver: (m: Message) => void): RaftHandlers {
    const selfId = this.opts.selfId;
    return {
      Stream: (call, callback) => {
        let received = 0;
        let failed = false;
        call.on('data', (wire: WireRaftMessage) => {
          if (failed) return;
          let m: Message;
          try {
            m = messageFromWire(wire);
          } catch (err) {
            failed = true;
            callback({ code: grpc.status.INVALID_ARGUMENT, details: `malformed raft message: ${(err as Error).message}` });
            return;
          }
          if (m.to !== selfId) {
            failed = true;
            callback({ code: grpc.status.INVALID_ARGUMENT, details: `raft message for ${m.to} reached ${selfId}` });
            return;
          }
          received++;
          this.links.get(m.from)?.markAlive();
          deliver(m);
        });
        call.on('end', () => {
          if (!failed) callback(null, { received: String(received) });
        });
        call.on('error', () => {});
      },
    };
  }

  close(): void {
    for (const link of this.links.values()) link.close();
  }
}
