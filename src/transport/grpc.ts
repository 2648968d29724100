// The peer transport over gRPC: one long-lived client stream per peer carries this node's one-way Raft
// messages to it (see proto/leasehold/v1/raft.proto). Replies come back on the peer's own stream to us.
// - A bounded outbound queue per peer: a dead peer costs at most `queueLimit` messages; when full, the
//   oldest are dropped (Raft retransmits whatever matters).
// - Reconnect with exponential backoff and jitter; HTTP/2 flow control pushes back through write().
// - Incoming messages are validated by the codec; a malformed one ends that stream with INVALID_ARGUMENT
//   and never reaches the core.
// - Identity (SPEC "Identity"): every message carries our cluster id; a message from another cluster or
//   from an id that is not a current member is dropped and logged once per sender. Without TLS this is
//   a guard against misconfiguration (a node of another cluster, a removed node), not authentication.
// - Membership changes at runtime: setMembers() opens links to new members and closes removed ones.
import { mark } from '../trace/stages.js';
import * as grpc from '@grpc/grpc-js';
import type { Message, NodeId } from '../raft/core/types.js';
import type { NodeLogger } from '../raft/logger.js';
import type { PeerSender } from '../raft/transport.js';
import { messageFromWire, messageToWire } from './codec.js';
import { ForwardSession } from './forward.js';
import type { PeerCertificate } from 'node:tls';
import type { PeerAuthenticator, PeerVerdict } from './peer-auth.js';
import { RaftClient, type RaftHandlers, type WireForwardedAnswer, type WireForwardedCall, type WireInput, type WireRaftMessage } from './proto.js';

export interface PeerTransportOptions {
  selfId: NodeId;
  peers: Map<NodeId, string>;
  queueLimit: number;
  maxMessageBytes: number;
  logger: NodeLogger;
  /** Per-message traffic logs (debug level); off unless the log level is debug. */
  traceMessages: boolean;
  /** A sender of our cluster that is not in our configuration: our log may be stale (a node added while
   *  we were down, now leading). Called at most once per sender per few seconds; the runtime asks the
   *  members and, when they vouch for it, calls vouch(). */
  onUnknownSender?: (from: NodeId) => void;
  /** TLS: the channel credentials peers are dialed with (the CA, and this node's certificate to present).
   *  Each peer's server certificate must then name the peer's id (CN or DNS SAN), not its address. */
  credentials?: grpc.ChannelCredentials;
  /** TLS: judges every incoming stream by its client certificate, and each message's `from`. */
  authenticator?: PeerAuthenticator;
  /** nodes[].peerDialOverrides: dial these members here instead of the address setPeers() gives. */
  dialOverrides?: ReadonlyMap<NodeId, string>;
  /** The stream to this peer failed and a fresh connection attempt failed too (PeerLink.confirmGone says
   *  why that pair): the process is most likely gone. The runtime passes it to RaftNode.peerUnreachable. */
  onPeerUnreachable?: (peer: NodeId) => void;
}

/** Serves one lock call a follower forwarded to us (the client API behind it); resolves with the answer. */
export type ForwardedCallHandler = (
  call: WireForwardedCall,
  peer: { certificate: PeerCertificate | undefined; remote: string },
  signal: AbortSignal,
) => Promise<WireInput<WireForwardedAnswer>>;

/** Who may speak to us: our cluster id ('' while joining: anyone) and the current members. */
export interface PeerIdentity {
  clusterId: string;
  /** Empty while joining: we know no configuration yet. */
  members: ReadonlySet<NodeId>;
  /** The leader we follow: heard even when our log already removes it (it leads until that commits). */
  leaderId?: NodeId | null;
}

/** How long after a broken stream a failed reconnect still counts as "the peer is gone"; later, the
 *  election timeout (500-1000 ms at the defaults) has done the job anyway. */
const GONE_PROBE_MS = 1000;

const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;

/** Reconnect backoff for every channel a node opens to another node — peer streams and the forwarding of
 *  client calls alike. grpc's default (1 s, x1.6, up to 120 s) left a follower unable to forward for
 *  13.5 s after a 45 s cut of the leader had healed (issue 12). */
export const NODE_CHANNEL_BACKOFF = {
  'grpc.initial_reconnect_backoff_ms': BACKOFF_MIN_MS,
  'grpc.max_reconnect_backoff_ms': BACKOFF_MAX_MS,
} as const;

class PeerLink {
  private client!: RaftClient;
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
  private forwarding: ForwardSession | null = null;
  /** The newest inbound stream (PeerTransport's count) when we last reported this peer gone: messages on
   *  streams up to it are what the peer said before it went, flushed late, and prove nothing (markAlive). */
  private reportedGoneAtStream = 0;

  constructor(
    readonly peerId: NodeId,
    readonly address: string,
    private readonly opts: PeerTransportOptions,
    private readonly clusterId: () => string,
    /** How many inbound peer streams the transport has accepted so far. */
    private readonly inboundStreams: () => number,
  ) {
    this.connect(opts.credentials);
  }

  /** (Re)creates the channel, e.g. with reloaded certificates, and opens the stream at once: it stays
   *  open even while we have nothing to say. Followers never message each other until an election, and
   *  a pre-vote (or the first forwarded call) to a peer whose connection was still to be set up waited
   *  20-60 ms for TCP and HTTP/2 just when the leader was gone; an open call also keeps grpc from idling
   *  the channel. After a break the stream reopens on demand (the next message), as before. */
  connect(credentials: grpc.ChannelCredentials | undefined): void {
    const opts = this.opts;
    if (this.client) {
      this.stream?.cancel();
      this.stream = null;
      this.forwarding?.close();
      this.forwarding = null;
      this.client.close();
    }
    this.client = new RaftClient(this.address, credentials ?? grpc.credentials.createInsecure(), {
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
  forwardSession(): ForwardSession {
    this.forwarding ??= new ForwardSession(this.client, () => ({ from: this.opts.selfId, clusterId: this.clusterId() }), this.peerId);
    return this.forwarding;
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
      // CANCELLED counts too unless we cancelled it ourselves (connect() drops it first): a peer that shuts
      // down (SIGTERM, or under load even a closing socket) may end our stream that way.
      const current = this.stream === stream;
      if (current) this.stream = null;
      if (this.closed) return;
      if (err && (err.code !== grpc.status.CANCELLED || current)) {
        this.opts.logger.debug({ nodeId: this.opts.selfId, peer: this.peerId, code: err.code, err: err.details }, 'peer stream ended');
        // Only the break of a link that worked is news; the failed retries after it are not re-reported.
        const wasAlive = this.alive;
        this.markDown();
        if (wasAlive) this.confirmGone();
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

  /**
   * Our stream to the peer ended with an error: find out at once whether the peer is gone. A broken
   * stream alone is weak evidence (a peer restarting, a reset connection, a stream it refused); a broken
   * stream AND a fresh connection attempt that fails (TRANSIENT_FAILURE: refused, nobody listens) is
   * what a killed process looks like — its kernel closed the sockets and its port is closed. That pair
   * is reported, once per break of a working link. A connection that comes back (READY) is not a report; a
   * silent peer (a machine that vanished, a network that drops packets) gives no signal and the
   * election timeout handles it. A false report is harmless to Raft (Raft.leaderUnreachable: Pre-Vote
   * first), so this only has to be good evidence, not proof.
   */
  private confirmGone(): void {
    const report = this.opts.onPeerUnreachable;
    if (!report || this.probingGone) return;
    this.probingGone = true;
    const channel = this.client.getChannel();
    const deadline = Date.now() + GONE_PROBE_MS;
    const watch = (): void => {
      if (this.closed) return void (this.probingGone = false);
      const state = channel.getConnectivityState(true); // true: start a connection attempt if idle
      if (state === grpc.connectivityState.TRANSIENT_FAILURE) {
        this.probingGone = false;
        this.opts.logger.info({ nodeId: this.opts.selfId, peer: this.peerId, address: this.address }, 'peer unreachable: stream broken and reconnect failed');
        this.reportedGoneAtStream = this.inboundStreams();
        report(this.peerId);
        return;
      }
      if (state === grpc.connectivityState.SHUTDOWN) return void (this.probingGone = false);
      // READY may still be the old connection's state for a moment: keep watching until the deadline.
      channel.watchConnectivityState(state, deadline, (err) => {
        if (err) this.probingGone = false; // deadline: no verdict
        else watch();
      });
    };
    watch();
  }

  private scheduleReconnect(): void {
    if (this.reconnectTimer || this.closed) return;
    const delay = this.backoffMs / 2 + Math.random() * (this.backoffMs / 2);
    this.backoffMs = Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      // Only with something to send: reopening an idle link to a dead peer on every timer grew the
      // backoff (ours and grpc's) to 2 s while it was down, and its first messages after it came back
      // waited that long (a pre-vote answer held 1.2 s, seen in the failover bench).
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
      const wire = messageToWire(m, this.clusterId());
      mark('peer.write');
      this.writable = stream.write(wire);
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

  /** A message arrived from this peer on inbound stream number `stream`: the link works, so reset the
   *  backoff. Not from a stream the peer opened before we reported it gone: a dying peer's last messages
   *  (its stream flushed on the way out) arrived after the report and re-armed it, and the next failed
   *  reconnect reported the same death twice (issue 22: the peer-unreachable test, 5 of 12 loaded runs). */
  markAlive(stream: number): void {
    if (stream <= this.reportedGoneAtStream) return;
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
    this.forwarding?.close();
    this.stream?.end();
    this.stream = null;
    this.client.close();
  }
}

export class PeerTransport implements PeerSender {
  private links = new Map<NodeId, PeerLink>();
  private identity: PeerIdentity = { clusterId: '', members: new Set() };
  /** Senders already logged as refused, with the reason (one line per sender and reason). */
  private refusedLogged = new Set<string>();
  /** Senders the current members vouched for though our configuration does not list them (yet). */
  private vouched = new Set<NodeId>();
  private lastAsked = new Map<NodeId, number>();
  private closed = false;
  /** Inbound Raft streams accepted so far (each one numbered: PeerLink.markAlive). */
  private inboundStreams = 0;

  constructor(private readonly opts: PeerTransportOptions) {
    this.setPeers(opts.peers);
  }

  /** The peer addresses to dial: links to new ids open, links to ids no longer listed close, and a
   *  changed address gets a new link. */
  setPeers(advertised: Map<NodeId, string>): void {
    if (this.closed) return;
    const overrides = this.opts.dialOverrides;
    const peers = overrides?.size ? new Map([...advertised].map(([id, address]) => [id, overrides.get(id) ?? address])) : advertised;
    for (const [id, link] of this.links) {
      if (peers.get(id) !== link.address) {
        link.close();
        this.links.delete(id);
      }
    }
    for (const [id, address] of peers) {
      if (id !== this.opts.selfId && !this.links.has(id)) this.links.set(id, new PeerLink(id, address, this.opts, () => this.identity.clusterId, () => this.inboundStreams));
    }
  }

  setIdentity(identity: PeerIdentity): void {
    this.identity = identity;
    // Our own configuration speaks now; vouching was only for while it lagged.
    for (const id of this.vouched) if (identity.members.has(id)) this.vouched.delete(id);
  }

  /** The leader we now follow (see PeerIdentity.leaderId). */
  setLeader(leaderId: NodeId | null): void {
    this.identity = { ...this.identity, leaderId };
  }

  /** Why a message from `from` stamped with `clusterId` must be refused, or null. */
  private refusal(from: NodeId, clusterId: string): string | null {
    const ours = this.identity.clusterId;
    // '' is a joining node that has not yet learned the id from our log: the member check below decides.
    if (ours !== '' && clusterId !== '' && clusterId !== ours) return `it belongs to cluster '${clusterId}', we are '${ours}'`;
    if (this.identity.members.size > 0 && !this.identity.members.has(from) && from !== this.identity.leaderId && !this.vouched.has(from)) {
      const now = Date.now();
      if (this.opts.onUnknownSender && now - (this.lastAsked.get(from) ?? 0) > 3000 && this.lastAsked.size < 1000) {
        this.lastAsked.set(from, now);
        this.opts.onUnknownSender(from);
      }
      return 'it is not a member of this cluster';
    }
    return null;
  }

  /** The members say `id` is one of them (our log has not caught up): hear it. */
  vouch(id: NodeId): void {
    this.vouched.add(id);
  }

  /** New credentials (certificate reload): every peer link reconnects with them. */
  setCredentials(credentials: grpc.ChannelCredentials): void {
    for (const link of this.links.values()) link.connect(credentials);
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

  /** Where lock calls for the leader `to` go (null: not a peer we have a link to). */
  forward(to: NodeId): ForwardSession | null {
    return this.links.get(to)?.forwardSession() ?? null;
  }

  /** Who serves the lock calls followers forward to us (the runtime sets it once the client API exists). */
  setForwardedCallHandler(handler: ForwardedCallHandler): void {
    this.forwardedCallHandler = handler;
  }

  private forwardedCallHandler: ForwardedCallHandler | null = null;

  /** Server side: the Raft service handlers feeding decoded messages to `deliver`. */
  handlers(deliver: (m: Message) => void): RaftHandlers {
    const selfId = this.opts.selfId;
    return {
      Forward: (call) => this.serveForwardStream(call),
      Stream: (call, callback) => {
        const streamNumber = ++this.inboundStreams;
        let received = 0;
        let failed = false;
        const auth = this.opts.authenticator;
        const remote = call.getPeer();
        let verdict: PeerVerdict | null = null;
        if (auth) {
          verdict = auth.acceptStream(call.getAuthContext().sslPeerCertificate, remote);
          if (!verdict.ok) {
            failed = true;
            callback({ code: grpc.status.PERMISSION_DENIED, details: `peer stream refused: ${verdict.reason}` });
            return;
          }
        }
        call.on('data', (wire: WireRaftMessage) => {
          mark('peer.read');
          if (failed) return;
          // The server registers this service behind the strict decoder (src/server/strict-decode.ts),
          // which turns an undecodable message into this marker instead of a half-decoded object.
          const invalid = (wire as { __invalid?: unknown }).__invalid;
          if (typeof invalid === 'string') {
            failed = true;
            callback({ code: grpc.status.INVALID_ARGUMENT, details: `malformed raft message: ${invalid}` });
            return;
          }
          let m: Message;
          try {
            m = messageFromWire(wire);
          } catch (err) {
            failed = true;
            callback({ code: grpc.status.INVALID_ARGUMENT, details: `malformed raft message: ${(err as Error).message}` });
            return;
          }
          if (auth && verdict?.ok) {
            const v = auth.acceptFrom(verdict, m.from, remote);
            if (!v.ok) {
              failed = true;
              callback({ code: grpc.status.PERMISSION_DENIED, details: `peer message refused: ${v.reason}` });
              return;
            }
          }
          if (m.to !== selfId) {
            failed = true;
            callback({ code: grpc.status.INVALID_ARGUMENT, details: `raft message for ${m.to} reached ${selfId}` });
            return;
          }
          const refused = this.refusal(m.from, typeof wire.cluster_id === 'string' ? wire.cluster_id : '');
          if (refused !== null) {
            const key = `${m.from}|${refused}`;
            if (!this.refusedLogged.has(key) && this.refusedLogged.size < 10_000) {
              this.refusedLogged.add(key);
              this.opts.logger.warn({ nodeId: selfId, from: m.from, reason: refused }, `refusing raft messages from ${m.from}: ${refused}`);
            }
            return;
          }
          received++;
          this.links.get(m.from)?.markAlive(streamNumber);
          deliver(m);
        });
        call.on('end', () => {
          if (!failed) callback(null, { received: String(received) });
        });
        call.on('error', () => {});
      },
    };
  }

  /** One follower's Forward stream: the same admission as a Raft stream (certificate, `from`, cluster id,
   *  membership), then every call goes to the client API and its answer back, matched by call_id. */
  private serveForwardStream(call: grpc.ServerDuplexStream<WireForwardedCall, WireInput<WireForwardedAnswer>>): void {
    const auth = this.opts.authenticator;
    const remote = call.getPeer();
    const certificate = call.getAuthContext().sslPeerCertificate;
    const inFlight = new Map<string, AbortController>();
    let open = true;
    const refuse = (code: grpc.status, details: string) => {
      if (!open) return;
      open = false;
      for (const a of inFlight.values()) a.abort();
      inFlight.clear();
      call.emit('error', { code, details });
    };
    let verdict: PeerVerdict | null = null;
    if (auth) {
      verdict = auth.acceptStream(certificate, remote);
      if (!verdict.ok) {
        refuse(grpc.status.PERMISSION_DENIED, `forward stream refused: ${verdict.reason}`);
        return;
      }
    }
    call.on('data', (wire: WireForwardedCall) => {
      mark('fwd.recv');
      if (!open) return;
      const invalid = (wire as { __invalid?: unknown }).__invalid;
      if (typeof invalid === 'string') return refuse(grpc.status.INVALID_ARGUMENT, `malformed forwarded call: ${invalid}`);
      if (auth && verdict?.ok) {
        const v = auth.acceptFrom(verdict, wire.from, remote);
        if (!v.ok) return refuse(grpc.status.PERMISSION_DENIED, `forwarded call refused: ${v.reason}`);
      }
      const refused = this.refusal(wire.from, wire.cluster_id);
      if (refused !== null) return refuse(grpc.status.PERMISSION_DENIED, `forwarded call from ${wire.from} refused: ${refused}`);
      if (wire.cancel) {
        inFlight.get(wire.call_id)?.abort();
        inFlight.delete(wire.call_id);
        return;
      }
      const handler = this.forwardedCallHandler;
      if (handler === null || inFlight.has(wire.call_id)) {
        call.write({ call_id: wire.call_id, code: grpc.status.UNAVAILABLE, details: handler === null ? `${this.opts.selfId} is not serving lock calls yet` : `call_id ${wire.call_id} is already in flight` });
        return;
      }
      const abort = new AbortController();
      inFlight.set(wire.call_id, abort);
      handler(wire, { certificate, remote }, abort.signal).then(
        (answer) => {
          if (inFlight.get(wire.call_id) !== abort) return; // cancelled, or the stream went away
          inFlight.delete(wire.call_id);
          mark('fwd.answer');
          if (open) call.write(answer);
        },
        () => {},
      );
    });
    const gone = () => {
      open = false;
      for (const a of inFlight.values()) a.abort();
      inFlight.clear();
    };
    call.on('end', () => {
      gone();
      call.end();
    });
    call.on('cancelled', gone);
    call.on('error', gone);
  }

  close(): void {
    this.closed = true;
    for (const link of this.links.values()) link.close();
    this.links.clear();
  }
}
